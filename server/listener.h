// Listener policy of the gRPC control API: where it may listen and with which credentials, and
// who may mutate through it.
//
// Why: the API can change how every packet buffer is managed, so by default it is reachable
// only from this host (loopback or a unix socket). Off-host access is encrypted (TLS) and
// mutations are limited to clients holding a certificate from the operator's CA (mTLS), as
// P4Runtime and gNMI deployments do; clients without a certificate may still read (stats,
// info). A TLS listener without --tls-client-ca is read-only. --insecure-remote is the explicit
// escape hatch for lab setups.
//
// Unix sockets: a socket someone still accepts on belongs to a running daemon and is never
// taken over; one nobody answers is left over from a daemon that died and is replaced. The
// socket is made owner+group only (0660).
#ifndef SKBNF_SERVER_LISTENER_H_
#define SKBNF_SERVER_LISTENER_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/control_service.h"

namespace skbnf::control {

struct ControlOptions {
  std::string listen = "127.0.0.1:50051";
  std::string tls_cert, tls_key, tls_client_ca;  // file paths
  bool insecure_remote = false;
  std::string metrics_addr = ":9478";  // "" or "off": no exporter
  std::string ready_file;
};

// Loopback (127.0.0.0/8, ::1, localhost) or unix socket.
bool IsLocalAddress(const std::string& addr);
// Splits "host:port" / "[v6]:port"; false when malformed.
bool SplitHostPort(const std::string& addr, std::string* host, std::string* port);

// The checked listener: credentials, mutation policy, and what to tell the operator.
struct Listener {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  MutationPolicy policy = MutationPolicy::kAnyClient;
  bool unix_socket = false;
  std::string unix_path;    // when unix_socket
  std::string host;         // host part of a host:port listen address
  std::string description;  // "(local plaintext)", "(mTLS for mutations)", ...
};

// Applies the rules above to `o` before anything listens: InvalidArgument / FailedPrecondition
// naming the flag; Unavailable when a unix socket is in use by a running process.
absl::StatusOr<Listener> PrepareListener(const ControlOptions& o);
// After the server listens on a unix socket: restrict it to owner and group.
void RestrictUnixSocket(const Listener& l);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_LISTENER_H_
