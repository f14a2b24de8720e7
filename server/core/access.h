// SPDX-License-Identifier: BSD-3-Clause
// Access: who is calling the control API, proven by the transport, and which role that gives.
//
// Roles (issue 31), each including the ones below it:
//
//   role     may call
//   read     GetInfo, ListPorts, ListStrategies, GetStrategy, GetStats, WatchStats, ListRoutes,
//            DiffConfig, GetBufferAges, SetStrategy{validate_only}
//   operate  + SetStrategy, TuneStrategy, AuditPool, PauseWorker, ResumeWorker, SetLatency
//   admin    + AddRoute, DeleteRoute (anything that changes where packets go)
//
// grpc.health.v1 and reflection need no role (they tell nothing about the data plane). A call
// without its role is PERMISSION_DENIED "<rpc> needs role <r> (caller <who> has <role>)", and
// the refusal is audited (change_log.h, throttled).
//
// Identities come only from what the transport proves, and nothing else grants a role:
//
//   transport                    identity                       role from
//   unix:/path (skbnfd accepts   SO_PEERCRED uid, gid and the   --roles uid:N / gid:N (gid: the
//   it and hands the connection  supplementary groups          primary or any supplementary
//   to gRPC, control_plane.cc)   (SO_PEERGROUPS), at connect()  group); a peer whose uid is
//                                                               skbnfd's own is admin unless
//                                                               --roles names that uid
//   unix-abstract:name           the same credentials           --roles uid:/gid: only (no file
//                                                               mode keeps anyone out)
//   TLS, client certificate      its DNS and URI subject        --roles dns:NAME / uri:URI
//   verified against             alternative names (SPIFFE ids  (exact match)
//   --tls-client-ca              are URI SANs)
//   TCP from loopback            nothing (in Kubernetes every   --loopback-role only (loudly
//   (127.0.0.0/8, ::1)           container of the pod, kubectl  logged), or admin in skbnfd's
//                                port-forward and a sidecar's   demo (no EAL arguments, no
//                                127.0.0.6 are loopback)        --config: said at start-up)
//   anything else                nothing                        -
//
// A caller matching several bindings gets the highest of their roles. The owner rule ("same
// uid as skbnfd: admin") is the contract's documented decision: that uid can already ptrace or
// kill skbnfd, so refusing it protects nothing; --roles=uid:<own>=read lowers it.
//
// The caller's identity is what the audit trail records and what the per-identity limits
// (limits.h) count by.
#ifndef SKBNF_SERVER_CORE_ACCESS_H_
#define SKBNF_SERVER_CORE_ACCESS_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace skbnf::control {

enum class Role : int { kNone = 0, kRead = 1, kOperate = 2, kAdmin = 3 };
// "none", "read", "operate", "admin".
absl::string_view RoleName(Role r);
// "read" | "operate" | "admin" (and "none" when `allow_none`); nullopt otherwise.
std::optional<Role> ParseRoleName(absl::string_view text, bool allow_none);
// The role `rpc` (a skbnf.v1.Control method name) needs; kAdmin for a name it does not know (a
// new RPC without its line fails closed). SetStrategy with validate_only is a read.
Role RequiredRole(absl::string_view rpc, bool validate_only = false);
// Every method RequiredRole knows (tests compare it with the service's descriptor).
std::vector<std::string> KnownRpcs();

struct RoleBinding {
  enum class Kind { kDns, kUri, kUid, kGid };
  Kind kind = Kind::kDns;
  std::string name;  // kDns, kUri
  uint32_t id = 0;   // kUid, kGid
  Role role = Role::kNone;
  std::string Subject() const;  // "dns:ops.example", "uid:1000"
};
// --roles: SUBJECT=ROLE[,SUBJECT=ROLE...], SUBJECT one of dns:NAME, uri:URI, uid:N, gid:N.
// InvalidArgument naming --roles, the entry and what to write.
absl::StatusOr<std::vector<RoleBinding>> ParseRoles(absl::string_view text);

struct AccessPolicy {
  std::vector<RoleBinding> roles;
  Role loopback_role = Role::kNone;  // TCP peers on loopback
  uid_t owner_uid = 0;               // skbnfd's uid: admin on unix:/path unless roles name it
};

// What SO_PEERCRED (and SO_PEERGROUPS) said about a unix-socket peer when it connected.
struct PeerCredentials {
  int32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups (may be empty)
  bool path_socket = true;       // unix:/path (false: unix-abstract:)
};
// Reads them from a connected unix socket; nullopt when the kernel does not say.
std::optional<PeerCredentials> ReadPeerCredentials(int fd, bool path_socket);

// The unix-socket connections skbnfd accepted and handed to gRPC, by file descriptor: gRPC
// names such a connection's peer "fd:N" (grpc_server_add_channel_from_fd, gRPC 1.51
// src/core/ext/transport/chttp2/server/chttp2_server.cc), and keeps N open until the transport
// is destroyed, which a call in progress prevents (each grpc_chttp2_stream holds a ref on its
// transport, and ~grpc_chttp2_transport is what destroys the endpoint: chttp2_transport.cc), so
// while a handler runs, N is its connection's and nobody else's. A new connection on a reused
// N replaces the entry before gRPC sees it.
class UnixPeers {
 public:
  void Record(int fd, PeerCredentials c) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<PeerCredentials> Find(int fd) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<int, PeerCredentials> by_fd_ ABSL_GUARDED_BY(mu_);
};

struct Caller {
  enum class Transport { kInProcess, kTcp, kUnix, kOther };
  std::string peer;  // gRPC's peer: "ipv4:127.0.0.1:41234", "fd:12", ...
  Transport transport = Transport::kOther;
  bool loopback = false;       // TCP peer address is loopback
  bool verified_cert = false;  // TLS client certificate verified against the client CA
  std::vector<std::string> dns_names, uri_names;  // its DNS and URI SANs
  std::vector<std::string> names;                 // every SAN (for logs)
  std::string common_name;                        // its subject CN
  std::optional<PeerCredentials> cred;            // unix-socket peers
  Role role = Role::kNone;
  std::string granted_by;  // what gave `role`: "uid:1000", "dns:ops", "--loopback-role", ...

  // "uid:1000 gid:1000 pid:4242", "cert CN=ops dns:ops.example", "loopback 127.0.0.1", "-".
  std::string Identity() const;
  // What per-identity limits count by: the proven identity ("uid:1000", "cert:dns:..."), every
  // loopback TCP peer together ("loopback"), else the peer's address.
  std::string ClientKey() const;
};

// "ipv4:127.0.0.1:5" / "ipv6:[::1]:5" / "ipv6:%5B::ffff:127.0.0.1%5D:5" -> true.
bool IsLoopbackPeer(absl::string_view peer);
// The caller's identity and role under `policy`; `peers` resolves "fd:N" (may be null).
Caller IdentifyCaller(const grpc::ServerContext& ctx, const AccessPolicy& policy,
                      const UnixPeers* peers);
// The role from the facts already in `c` (transport, names, credentials).
void ResolveRole(const AccessPolicy& policy, Caller& c);

// The listener's policy and its unix peers: what every handler asks.
class Access {
 public:
  Access(AccessPolicy policy, const UnixPeers* peers) : policy_(std::move(policy)), peers_(peers) {}
  Caller Identify(const grpc::ServerContext& ctx) const {
    return IdentifyCaller(ctx, policy_, peers_);
  }
  const AccessPolicy& policy() const { return policy_; }

 private:
  AccessPolicy policy_;
  const UnixPeers* peers_;
};

// OK, or PERMISSION_DENIED "<rpc> needs role <r> (caller <who> has <role>)" plus how to get it.
grpc::Status Authorize(const Caller& caller, absl::string_view rpc, Role needed);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_ACCESS_H_
