// Flags of the control plane (gRPC listener, TLS, Prometheus endpoint, ready file): the
// "control plane" group of --help. server/listener.h says why the listener rules are as they are.
#include "absl/flags/flag.h"
#include "server/control_plane.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address: host:port (port 0 picks a free one) or unix:/path. Anything but "
          "loopback or a unix socket needs --tls-cert/--tls-key (or --insecure-remote).");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (chain) for the gRPC listener.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: on a TLS listener, only clients presenting a certificate it signed may "
          "call mutating RPCs (mTLS). Without it a TLS listener is read-only.");
ABSL_FLAG(bool, insecure_remote, false,
          "Allow a plaintext gRPC listener on a non-loopback address, with mutations open to "
          "anyone who can connect. For isolated labs only.");
ABSL_FLAG(std::string, metrics_addr, ":9478",
          "Prometheus endpoint [host]:port, served at /metrics (port 0 picks a free one); "
          "'off' disables it.");
ABSL_FLAG(std::string, ready_file, "",
          "When set, written once both servers listen: {\"grpc\":ADDR,\"metrics_port\":N}.");

namespace skbnf::control {

ControlOptions OptionsFromFlags() {
  ControlOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.insecure_remote = absl::GetFlag(FLAGS_insecure_remote);
  o.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  o.ready_file = absl::GetFlag(FLAGS_ready_file);
  return o;
}

}  // namespace skbnf::control
