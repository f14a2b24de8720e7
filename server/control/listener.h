// SPDX-License-Identifier: BSD-3-Clause
// Listener policy of the gRPC control API: where it may listen and with which credentials, and
// who may mutate through it (the per-call decision is access.h's).
//
// Why: the API can change how every packet buffer is managed, so by default it is reachable
// only from this host (loopback or a unix socket). Off-host access is encrypted (TLS) and
// mutations are limited to clients holding a certificate from the operator's CA (mTLS), as
// P4Runtime and gNMI deployments do; clients without a certificate may still read (stats,
// info). A TLS listener without --tls-client-ca is read-only. --insecure-remote is the explicit
// escape hatch for lab setups: plaintext from the network, but still only loopback clients may
// change anything.
//
// Unix sockets: a socket someone still accepts on belongs to a running daemon and is never
// taken over; one nobody answers is left over from a daemon that died and is replaced. The
// socket is owner+group only (0660) from the moment it exists: gRPC binds it inside
// BuildAndStart, so the control plane sets the umask to 0117 around that call (UnixSocketUmask)
// instead of a chmod after listen(), which would leave a window in which anyone could connect.
// An abstract unix socket (unix-abstract:) has no file and no permissions: anyone in the network
// namespace can connect, so it counts as remote (TLS or --insecure-remote; no plaintext changes).
//
// TLS files are re-read while skbnfd runs (certificate rotation: tls_reload.h).
//
// The health-only listener (--health-listen, off by default) is plaintext on any address: the
// kubelet's gRPC probe cannot speak TLS (kubernetes/kubernetes pkg/probe/grpc/grpc.go dials with
// grpc.WithInsecure(): "credentials are currently not supported"), and it carries grpc.health.v1
// and nothing else (no skbnf.v1.Control, no reflection), so it tells a caller only what the probe
// needs: SERVING or NOT_SERVING per service (health.h).
#ifndef SKBNF_SERVER_CONTROL_LISTENER_H_
#define SKBNF_SERVER_CONTROL_LISTENER_H_

#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/control/limits.h"
#include "server/core/access.h"

namespace skbnf::control {

struct ControlOptions {
  std::string listen = "127.0.0.1:50051";
  std::string tls_cert, tls_key, tls_client_ca;  // file paths
  // How often the TLS files are re-read (tls_reload.h): certificate rotation.
  std::chrono::seconds tls_reload_interval{10};
  // Plaintext grpc.health.v1-only listener (host:port) for the kubelet's gRPC probes; "": none.
  std::string health_listen;
  std::vector<std::string> tls_client_names;  // SANs allowed to change; empty: any verified
  bool insecure_remote = false;
  LimitOptions limits;
  std::string metrics_addr = ":9478";  // "" or "off": no exporter
  std::string ready_file;
};

// Loopback (127.0.0.0/8, ::1, localhost) or a unix socket with a path (not unix-abstract:).
bool IsLocalAddress(const std::string& addr);
// Splits "host:port" / "[v6]:port"; false when malformed.
bool SplitHostPort(const std::string& addr, std::string* host, std::string* port);

// Checks --health-listen ("" = off): host:port only. InvalidArgument naming the flag.
absl::Status CheckHealthListen(const ControlOptions& o);

// The checked listener: credentials, mutation policy, and what to tell the operator.
struct Listener {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  AccessPolicy access;
  bool unix_socket = false;      // unix:/path
  bool abstract_socket = false;  // unix-abstract:name
  std::string unix_path;         // when unix_socket
  std::string host;              // host part of a host:port listen address
  std::string description;       // "(local plaintext)", "(mTLS for mutations)", ...
};

// Applies the rules above to `o` before anything listens: InvalidArgument / FailedPrecondition
// naming the flag; Unavailable when a unix socket is in use by a running process.
absl::StatusOr<Listener> PrepareListener(const ControlOptions& o);
// Sets the umask so that a unix socket bound while it lives is created 0660 (owner and group);
// restores the previous one when destroyed. Process-wide: hold it only around BuildAndStart.
class UnixSocketUmask {
 public:
  explicit UnixSocketUmask(const Listener& l);
  ~UnixSocketUmask();
  UnixSocketUmask(const UnixSocketUmask&) = delete;
  UnixSocketUmask& operator=(const UnixSocketUmask&) = delete;

 private:
  bool set_ = false;
  unsigned old_ = 0;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_LISTENER_H_
