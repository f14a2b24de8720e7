// SPDX-License-Identifier: BSD-3-Clause
// Listener policy of the gRPC control API: where it may listen (--listen: one address or
// several, comma-separated, all serving the same API) and with which credentials. Who may do
// what through them is access.h's (roles from what the transport proves).
//
// Why: the API can change how every packet buffer is managed and where every packet goes, so
// by default it is reachable only from this host, and a connection gets a role only from an
// identity the transport proves: a unix socket peer's uid/gid (SO_PEERCRED), a client
// certificate's SANs (mTLS), never an address. Off-host access is encrypted (TLS): TCP
// listeners use --tls-cert/--tls-key when given. --insecure-remote is the explicit escape hatch
// for lab setups: plaintext from the network, and still no role for a remote client.
//
// Unix sockets: skbnfd binds, listens and accepts them itself and hands each connection to gRPC
// (grpc::AddInsecureChannelFromFd), so it can read the peer's credentials (control_plane.cc). A
// socket someone still accepts on belongs to a running daemon and is never taken over; one
// nobody answers is left over from a daemon that died and is replaced. The socket is
// owner+group only (0660) from the moment it exists (umask 0117 around bind(), no chmod window).
// An abstract unix socket (unix-abstract:) has no file and no permissions: anyone in the network
// namespace can connect, so it still needs TLS or --insecure-remote to be served, and only
// --roles uid:/gid: entries give its peers a role.
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
  // --listen: one or more of host:port, unix:/path, unix-abstract:name, comma-separated.
  std::string listen = "127.0.0.1:50051";
  std::string tls_cert, tls_key, tls_client_ca;  // file paths
  // How often the TLS files are re-read (tls_reload.h): certificate rotation.
  std::chrono::seconds tls_reload_interval{10};
  // Plaintext grpc.health.v1-only listener (host:port) for the kubelet's gRPC probes; "": none.
  std::string health_listen;
  // Deprecated (--tls-client-names): each NAME is --roles dns:NAME=admin (uri:NAME=admin when it
  // has a scheme), said at start-up.
  std::vector<std::string> tls_client_names;
  std::string roles;          // --roles (access.h: ParseRoles)
  std::string loopback_role;  // --loopback-role: "" or none, read, operate, admin
  // skbnfd's demo (no EAL arguments, no --config): loopback gets admin unless --loopback-role
  // was given, and /metrics stays on every address unless --metrics-addr was given.
  bool demo = false;
  bool insecure_remote = false;
  LimitOptions limits;
  std::string metrics_addr = "127.0.0.1:9478";  // "" or "off": no exporter
  // /metrics over HTTPS (metrics_tls.h): both or neither; client CA: mTLS. Re-read every
  // tls_reload_interval.
  std::string metrics_tls_cert, metrics_tls_key, metrics_tls_client_ca;
  std::string audit_log = "-";                  // "-": stderr; else a file appended to
  // How often the buffer census runs while the strategy tracks (server/core/buffer_ages.h).
  std::chrono::milliseconds buffer_census_every{2000};
  std::string ready_file;
};

// Loopback (127.0.0.0/8, ::1, localhost) or a unix socket with a path (not unix-abstract:).
bool IsLocalAddress(const std::string& addr);
// Splits "host:port" / "[v6]:port"; false when malformed.
bool SplitHostPort(const std::string& addr, std::string* host, std::string* port);

// Checks --health-listen ("" = off): host:port only. InvalidArgument naming the flag.
absl::Status CheckHealthListen(const ControlOptions& o);

// One checked listen address.
struct Listener {
  enum class Kind { kTcp, kUnixPath, kUnixAbstract };
  Kind kind = Kind::kTcp;
  std::string address;  // as given in --listen
  std::shared_ptr<grpc::ServerCredentials> credentials;  // kTcp (unix: skbnfd accepts itself)
  std::string unix_path;    // kUnixPath: the file; kUnixAbstract: the name
  std::string host;         // kTcp: host part
  std::string description;  // "(local plaintext)", "(mTLS)", "(unix socket 0660, SO_PEERCRED)"
};

// Every listener of --listen, the one role policy they share, and what start-up must say.
struct Listeners {
  std::vector<Listener> listeners;
  AccessPolicy access;
  std::vector<std::string> warnings;  // logged at start-up (loopback roles, deprecated flags)
};

// Applies the rules above to `o` before anything listens: InvalidArgument / FailedPrecondition
// naming the flag and what to write; Unavailable when a unix socket is in use by a running
// process.
absl::StatusOr<Listeners> PrepareListeners(const ControlOptions& o);
// The flag checks alone (no file is touched): what skbnfd runs before EAL, so a bad control
// flag stops start-up (exit 2) before the data plane starts.
absl::Status CheckControlOptions(const ControlOptions& o);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_LISTENER_H_
