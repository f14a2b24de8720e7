// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/access.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace skbnf::control {
namespace {

struct RpcRole {
  const char* rpc;
  Role role;
};
// The one table of who may call what (the header's). SetStrategy{validate_only} is a read.
constexpr RpcRole kRpcRoles[] = {
    {"GetInfo", Role::kRead},         {"ListPorts", Role::kRead},
    {"ListStrategies", Role::kRead},  {"GetStrategy", Role::kRead},
    {"GetStats", Role::kRead},        {"WatchStats", Role::kRead},
    {"ListRoutes", Role::kRead},      {"SetStrategy", Role::kOperate},
    {"TuneStrategy", Role::kOperate}, {"AuditPool", Role::kOperate},
    {"PauseWorker", Role::kOperate},  {"ResumeWorker", Role::kOperate},
    {"AddRoute", Role::kAdmin},       {"DeleteRoute", Role::kAdmin},
    {"DiffConfig", Role::kRead},      {"SetLatency", Role::kOperate},
    {"GetBufferAges", Role::kRead},
};

// "ipv4:1.2.3.4:5" -> "1.2.3.4"; "ipv6:[::1]:5" (or %5B..%5D) -> "::1"; "" otherwise.
std::string PeerHost(absl::string_view peer) {
  std::string p = absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}, {"%25", "%"}});
  absl::string_view v = p;
  if (absl::ConsumePrefix(&v, "ipv4:")) {
    size_t colon = v.rfind(':');
    return std::string(colon == absl::string_view::npos ? v : v.substr(0, colon));
  }
  if (absl::ConsumePrefix(&v, "ipv6:")) {
    if (absl::ConsumePrefix(&v, "[")) {
      size_t close = v.find(']');
      if (close == absl::string_view::npos) return "";
      std::string host(v.substr(0, close));
      size_t zone = host.find('%');
      return zone == std::string::npos ? host : host.substr(0, zone);
    }
  }
  return "";
}

absl::Status BadRoles(absl::string_view entry, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--roles: '", entry, "': ", why,
      "; write SUBJECT=ROLE[,SUBJECT=ROLE...], SUBJECT one of dns:NAME, uri:URI, uid:N, gid:N "
      "and ROLE one of read, operate, admin, e.g. "
      "--roles=uid:1000=admin,dns:ops.example.com=operate,uri:spiffe://cluster.local/ns/mon/sa/"
      "prom=read"));
}

bool ValidName(absl::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c <= ' ' || c == ',' || c == 0x7f) return false;
  }
  return true;
}

// The binding's subject matches the caller?
bool Matches(const RoleBinding& b, const Caller& c) {
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  switch (b.kind) {
    case RoleBinding::Kind::kDns:
      return c.verified_cert && has(c.dns_names, b.name);
    case RoleBinding::Kind::kUri:
      return c.verified_cert && has(c.uri_names, b.name);
    case RoleBinding::Kind::kUid:
      return c.cred.has_value() && c.cred->uid == b.id;
    case RoleBinding::Kind::kGid:
      return c.cred.has_value() &&
             (c.cred->gid == b.id || std::find(c.cred->groups.begin(), c.cred->groups.end(),
                                               b.id) != c.cred->groups.end());
  }
  return false;
}

// How a caller without the role gets one, for the denial message.
std::string HowToGetRole(const Caller& c) {
  switch (c.transport) {
    case Caller::Transport::kUnix:
      if (c.cred.has_value() && !c.cred->path_socket) {
        return "on an abstract unix socket only --roles=uid:N=ROLE or gid:N=ROLE grants a role "
               "(no file mode keeps anyone out, so skbnfd's own uid gets nothing by default)";
      }
      return "--roles=uid:N=ROLE or gid:N=ROLE grants unix-socket peers a role";
    case Caller::Transport::kTcp:
      if (c.verified_cert) return "--roles=dns:NAME=ROLE or uri:URI=ROLE grants a certificate one";
      if (c.loopback) {
        return "loopback TCP grants no role (every process of the host or pod can reach it): "
               "use the unix socket (--listen=unix:/path), a client certificate (mTLS with "
               "--roles), or start skbnfd with --loopback-role=ROLE";
      }
      return "only a client certificate verified against --tls-client-ca and named in --roles "
             "grants a remote client a role";
    default:
      return "this transport proves no identity";
  }
}

}  // namespace

absl::string_view RoleName(Role r) {
  switch (r) {
    case Role::kNone:
      return "none";
    case Role::kRead:
      return "read";
    case Role::kOperate:
      return "operate";
    case Role::kAdmin:
      return "admin";
  }
  return "none";
}

std::optional<Role> ParseRoleName(absl::string_view text, bool allow_none) {
  for (Role r : {Role::kRead, Role::kOperate, Role::kAdmin}) {
    if (text == RoleName(r)) return r;
  }
  if (allow_none && text == "none") return Role::kNone;
  return std::nullopt;
}

Role RequiredRole(absl::string_view rpc, bool validate_only) {
  if (rpc == "SetStrategy" && validate_only) return Role::kRead;
  for (const RpcRole& r : kRpcRoles) {
    if (rpc == r.rpc) return r.role;
  }
  return Role::kAdmin;
}

std::vector<std::string> KnownRpcs() {
  std::vector<std::string> out;
  for (const RpcRole& r : kRpcRoles) out.emplace_back(r.rpc);
  return out;
}

std::string RoleBinding::Subject() const {
  switch (kind) {
    case Kind::kDns:
      return absl::StrCat("dns:", name);
    case Kind::kUri:
      return absl::StrCat("uri:", name);
    case Kind::kUid:
      return absl::StrCat("uid:", id);
    case Kind::kGid:
      return absl::StrCat("gid:", id);
  }
  return "";
}

absl::StatusOr<std::vector<RoleBinding>> ParseRoles(absl::string_view text) {
  std::vector<RoleBinding> out;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    const size_t eq = entry.rfind('=');
    if (eq == absl::string_view::npos) return BadRoles(entry, "no '=ROLE'");
    absl::string_view subject = entry.substr(0, eq);
    std::optional<Role> role = ParseRoleName(entry.substr(eq + 1), false);
    if (!role) {
      return BadRoles(entry, absl::StrCat("'", entry.substr(eq + 1),
                                          "' is not a role (read, operate or admin)"));
    }
    RoleBinding b;
    b.role = *role;
    absl::string_view value = subject;
    if (absl::ConsumePrefix(&value, "dns:")) {
      b.kind = RoleBinding::Kind::kDns;
      if (!ValidName(value)) return BadRoles(entry, "dns: needs a name");
      b.name = absl::AsciiStrToLower(value);  // DNS names compare case-insensitively
    } else if (absl::ConsumePrefix(&value, "uri:")) {
      b.kind = RoleBinding::Kind::kUri;
      if (!ValidName(value) || value.find(':') == absl::string_view::npos) {
        return BadRoles(entry, "uri: needs a URI with a scheme, e.g. spiffe://trust/ns/x/sa/y");
      }
      b.name = std::string(value);
    } else if (absl::ConsumePrefix(&value, "uid:") || absl::ConsumePrefix(&value, "gid:")) {
      b.kind = absl::StartsWith(subject, "uid:") ? RoleBinding::Kind::kUid : RoleBinding::Kind::kGid;
      if (!absl::SimpleAtoi(value, &b.id) || value.empty() || value[0] == '+' ||
          value[0] == '-') {
        return BadRoles(entry, absl::StrCat("'", value,
                                            "' is not a numeric id (names are not resolved: "
                                            "write the number, e.g. `id -u NAME`)"));
      }
    } else {
      return BadRoles(entry, absl::StrCat("'", subject,
                                          "' is not a subject (dns:, uri:, uid: or gid:)"));
    }
    for (const RoleBinding& o : out) {
      if (o.Subject() == b.Subject()) {
        return BadRoles(entry, absl::StrCat(b.Subject(), " is given twice"));
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::optional<PeerCredentials> ReadPeerCredentials(int fd, bool path_socket) {
  ucred uc = {};
  socklen_t len = sizeof(uc);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0 || len != sizeof(uc)) {
    return std::nullopt;
  }
  PeerCredentials c;
  c.pid = uc.pid;
  c.uid = uc.uid;
  c.gid = uc.gid;
  c.path_socket = path_socket;
#ifdef SO_PEERGROUPS
  std::vector<gid_t> groups(64);
  socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  int rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen);
  if (rc != 0 && errno == ERANGE) {
    groups.resize(glen / sizeof(gid_t) + 1);
    glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen);
  }
  if (rc == 0) {
    for (size_t i = 0; i < glen / sizeof(gid_t); ++i) c.groups.push_back(groups[i]);
  }
#endif
  return c;
}

void UnixPeers::Record(int fd, PeerCredentials c) {
  absl::MutexLock l(&mu_);
  by_fd_[fd] = std::move(c);
}

std::optional<PeerCredentials> UnixPeers::Find(int fd) const {
  absl::MutexLock l(&mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second;
}

bool IsLoopbackPeer(absl::string_view peer) {
  const std::string host = PeerHost(peer);
  if (host.empty()) return false;
  in_addr a4;
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    return (ntohl(a4.s_addr) >> 24) == 127;
  }
  in6_addr a6;
  if (::inet_pton(AF_INET6, host.c_str(), &a6) != 1) return false;
  static const in6_addr kLoop = IN6ADDR_LOOPBACK_INIT;
  if (std::equal(a6.s6_addr, a6.s6_addr + 16, kLoop.s6_addr)) return true;
  // ::ffff:127.x.y.z (a v4 client of a dual-stack listener).
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kMapped, kMapped + 12, a6.s6_addr) && a6.s6_addr[12] == 127;
}

std::string Caller::Identity() const {
  if (cred.has_value()) {
    return absl::StrCat("uid:", cred->uid, " gid:", cred->gid, " pid:", cred->pid);
  }
  if (verified_cert) {
    std::string out = absl::StrCat("cert CN=", common_name.empty() ? "-" : common_name);
    for (const std::string& n : dns_names) absl::StrAppend(&out, " dns:", n);
    for (const std::string& n : uri_names) absl::StrAppend(&out, " uri:", n);
    return out;
  }
  if (transport == Transport::kInProcess) return peer;
  if (loopback) return absl::StrCat("loopback ", PeerHost(peer));
  return "-";
}

std::string Caller::ClientKey() const {
  if (cred.has_value()) return absl::StrCat("uid:", cred->uid);
  if (verified_cert) return Identity();
  if (loopback) return "loopback";
  std::string host = PeerHost(peer);
  return host.empty() ? peer : host;
}

void ResolveRole(const AccessPolicy& policy, Caller& c) {
  c.role = Role::kNone;
  c.granted_by.clear();
  bool owner_named = false;
  for (const RoleBinding& b : policy.roles) {
    if (b.kind == RoleBinding::Kind::kUid && b.id == policy.owner_uid) owner_named = true;
    if (Matches(b, c) && b.role > c.role) {
      c.role = b.role;
      c.granted_by = b.Subject();
    }
  }
  if (c.cred.has_value() && c.cred->path_socket && c.cred->uid == policy.owner_uid &&
      !owner_named && c.role < Role::kAdmin) {
    c.role = Role::kAdmin;
    c.granted_by = absl::StrCat("skbnfd's own uid ", policy.owner_uid);
  }
  if (c.transport == Caller::Transport::kTcp && c.loopback && policy.loopback_role > c.role) {
    c.role = policy.loopback_role;
    c.granted_by = "--loopback-role";
  }
}

Caller IdentifyCaller(const grpc::ServerContext& ctx, const AccessPolicy& policy,
                      const UnixPeers* peers) {
  Caller c;
  c.peer = ctx.peer();
  absl::string_view p = c.peer;
  int fd = -1;
  if (absl::ConsumePrefix(&p, "fd:") && absl::SimpleAtoi(p, &fd)) {
    c.transport = Caller::Transport::kUnix;
    if (peers != nullptr) c.cred = peers->Find(fd);
  } else if (absl::StartsWith(c.peer, "ipv4:") || absl::StartsWith(c.peer, "ipv6:")) {
    c.transport = Caller::Transport::kTcp;
    c.loopback = IsLoopbackPeer(c.peer);
  }
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  // With client-certificate verification on, the TLS layer sets a peer identity only for a
  // certificate that chains to --tls-client-ca.
  if (c.transport == Caller::Transport::kTcp && auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_SAN_PROPERTY_NAME)) {
      c.names.emplace_back(v.data(), v.size());
    }
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_PEER_DNS_PROPERTY_NAME)) {
      c.dns_names.push_back(absl::AsciiStrToLower(absl::string_view(v.data(), v.size())));
    }
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      c.uri_names.emplace_back(v.data(), v.size());
    }
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) {
      c.common_name.assign(v.data(), v.size());
    }
    c.verified_cert = true;
  }
  ResolveRole(policy, c);
  return c;
}

grpc::Status Authorize(const Caller& caller, absl::string_view rpc, Role needed) {
  if (caller.role >= needed) return grpc::Status::OK;
  std::string who = caller.cred.has_value() ? absl::StrCat("uid:", caller.cred->uid)
                    : caller.verified_cert  ? caller.Identity()
                    : caller.loopback       ? absl::StrCat("loopback TCP ", PeerHost(caller.peer))
                                            : caller.peer;
  return grpc::Status(
      grpc::StatusCode::PERMISSION_DENIED,
      absl::StrCat(rpc, " needs role ", RoleName(needed), " (caller ", who, " has ",
                   RoleName(caller.role), "); ", HowToGetRole(caller)));
}

}  // namespace skbnf::control
