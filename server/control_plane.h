// ControlPlane: starts the gRPC server (skbnf.v1.Control, grpc.health.v1, reflection) and the
// Prometheus exposer over a Backend, and stops them. skbnfd's main (or any daemon) does:
//
//   std::vector<char*> args = skbnf::control::ParseFlags(argc, argv);   // absl flags below
//   ... bring up the data plane, which implements skbnf::control::Backend ...
//   auto cp = skbnf::control::ControlPlane::Start(backend, skbnf::control::OptionsFromFlags());
//   if (!cp.ok()) { std::cerr << cp.status() << "\n"; return 1; }
//   skbnf::control::WaitForSignal();   // SIGINT / SIGTERM
//   (*cp)->Shutdown();
//
// Flags (defined in control_plane.cc; dashes or underscores both accepted via ParseFlags):
//   --listen=127.0.0.1:50051   gRPC address: host:port, or unix:/path (port 0 picks one)
//   --tls-cert, --tls-key      PEM server certificate and key (required off loopback)
//   --tls-client-ca            PEM CA bundle; clients it signed may mutate on a TLS listener
//   --insecure-remote          allow plaintext on a non-loopback address (everyone may mutate)
//   --metrics-addr=:9478       Prometheus endpoint [host]:port (path /metrics); "off" disables
//   --ready-file               once both servers listen, write {"grpc": ..., "metrics_port": N}
//
// Listener rules (why): the API can change how every packet buffer is managed, so by default it
// is reachable only from this host. Off-host access is encrypted (TLS) and mutations are
// limited to clients holding a certificate from the operator's CA (mTLS), as P4Runtime and
// gNMI deployments do; clients without a certificate may still read (stats, info). A TLS
// listener without --tls-client-ca is read-only. --insecure-remote is the explicit escape hatch
// for lab setups.
#ifndef SKBNF_SERVER_CONTROL_PLANE_H_
#define SKBNF_SERVER_CONTROL_PLANE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend.h"

namespace skbnf::control {

struct ControlOptions {
  std::string listen = "127.0.0.1:50051";
  std::string tls_cert, tls_key, tls_client_ca;  // file paths
  bool insecure_remote = false;
  std::string metrics_addr = ":9478";  // "" or "off": no exporter
  std::string ready_file;
};

// The absl flags above, as options.
ControlOptions OptionsFromFlags();

// Rewrites "--some-flag" to "--some_flag" (up to a "--" terminator) and runs
// absl::ParseCommandLine. Returns the positional arguments (argv[0] first).
std::vector<char*> ParseFlags(int argc, char** argv);

// Loopback (127.0.0.0/8, ::1, localhost) or unix socket.
bool IsLocalAddress(const std::string& addr);

class ControlPlane {
 public:
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Start(Backend& backend,
                                                             const ControlOptions& options);
  ~ControlPlane();  // Shutdown()
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The gRPC address clients use (host:port with the chosen port, or unix:/path).
  const std::string& grpc_address() const;
  int metrics_port() const;  // 0 when disabled
  void Shutdown();

  struct Impl;

 private:
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Blocks until SIGINT or SIGTERM (installs handlers; call once, from main).
void WaitForSignal();

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_PLANE_H_
