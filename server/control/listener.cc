// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/control/tls_reload.h"

namespace skbnf::control {
namespace {

bool UnixSocketAnswers(const std::string& path) {
  sockaddr_un sa = {};
  if (path.size() >= sizeof(sa.sun_path)) return false;
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool answers = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  ::close(fd);
  return answers;
}

}  // namespace

bool SplitHostPort(const std::string& addr, std::string* host, std::string* port) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return false;
  *host = addr.substr(0, colon);
  *port = addr.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  int p = 0;
  return absl::SimpleAtoi(*port, &p) && p >= 0 && p <= 65535;
}

bool IsLocalAddress(const std::string& addr) {
  // unix-abstract: is not local: no file, no permissions, open to the whole network namespace.
  if (absl::StartsWith(addr, "unix:")) return true;
  std::string host, port;
  if (!SplitHostPort(addr, &host, &port)) return false;
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, dotted quad.
  int a = 0, b = 0, c = 0, d = 0;
  char tail = 0;
  if (std::sscanf(host.c_str(), "%d.%d.%d.%d%c", &a, &b, &c, &d, &tail) == 4) {
    return a == 127 && b >= 0 && b < 256 && c >= 0 && c < 256 && d >= 0 && d < 256;
  }
  return false;
}

namespace {

std::vector<std::string> SplitListen(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(a));
  }
  return out;
}

bool HasTls(const ControlOptions& o) { return !o.tls_cert.empty() || !o.tls_key.empty(); }

// One --listen address: its syntax and the plaintext rule.
absl::StatusOr<Listener> CheckAddress(const ControlOptions& o, const std::string& addr) {
  Listener l;
  l.address = addr;
  const bool tls = HasTls(o);
  if (absl::StartsWith(addr, "unix-abstract:")) {
    l.kind = Listener::Kind::kUnixAbstract;
    l.unix_path = addr.substr(std::strlen("unix-abstract:"));
    if (l.unix_path.empty() || l.unix_path.size() > 100) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen: '", addr, "': write unix-abstract:NAME with a name of 1..100 bytes"));
    }
  } else if (absl::StartsWith(addr, "unix:")) {
    l.kind = Listener::Kind::kUnixPath;
    l.unix_path = addr.substr(5);
    if (absl::StartsWith(l.unix_path, "//")) l.unix_path = l.unix_path.substr(2);
    if (l.unix_path.empty() || l.unix_path[0] != '/' ||
        l.unix_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen: '", addr, "': write unix:/absolute/path (at most ",
                       sizeof(sockaddr_un{}.sun_path) - 1, " bytes)"));
    }
  } else {
    std::string port;
    if (!SplitHostPort(addr, &l.host, &port)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen: '", addr,
                       "' is not host:port, unix:/path or unix-abstract:name (several: "
                       "comma-separated, e.g. --listen=unix:/run/skbnf/control.sock,"
                       "127.0.0.1:50051)"));
    }
  }
  const bool local = IsLocalAddress(addr);
  // Unix sockets are plaintext (skbnfd accepts them itself); TCP is TLS when configured.
  if (!local && !o.insecure_remote && (l.kind == Listener::Kind::kUnixAbstract || !tls)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve the control API on ",
        l.kind == Listener::Kind::kUnixAbstract ? "abstract unix socket '"
                                                : "non-loopback address '",
        addr,
        "' without TLS: give --tls-cert and --tls-key (and --tls-client-ca with --roles so that "
        "clients get a role), listen on 127.0.0.1 or a unix:/path socket, or pass "
        "--insecure-remote to accept plaintext from the network (no role for remote clients)"));
  }
  return l;
}

absl::Status CheckMetricsAddr(const std::string& a) {
  if (a.empty() || a == "off") return absl::OkStatus();
  std::string host, port;
  if (!SplitHostPort(a, &host, &port) || port.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-addr: '", a,
        "' is not [host]:port; write e.g. 127.0.0.1:9478, $(POD_IP):9478, :9478 (every address) "
        "or off"));
  }
  return absl::OkStatus();
}

// --metrics-tls-cert/-key/-client-ca: together, with /metrics on, files readable and matching.
absl::Status CheckMetricsTls(const ControlOptions& o) {
  const bool cert = !o.metrics_tls_cert.empty(), key = !o.metrics_tls_key.empty();
  if (cert != key) {
    return absl::InvalidArgumentError(
        "--metrics-tls-cert and --metrics-tls-key must be given together (the PEM certificate "
        "chain and its private key, e.g. a kubernetes.io/tls Secret's tls.crt and tls.key)");
  }
  if (!o.metrics_tls_client_ca.empty() && !cert) {
    return absl::InvalidArgumentError(
        "--metrics-tls-client-ca needs --metrics-tls-cert and --metrics-tls-key: client "
        "certificates are asked for in a TLS handshake");
  }
  if (!cert) return absl::OkStatus();
  if (o.metrics_addr.empty() || o.metrics_addr == "off") {
    return absl::InvalidArgumentError(
        "--metrics-tls-cert: /metrics is off (--metrics-addr=off); drop the --metrics-tls-* "
        "flags or write --metrics-addr=host:port");
  }
  return CheckTlsFiles(TlsFiles{o.metrics_tls_cert, o.metrics_tls_key, o.metrics_tls_client_ca},
                       "metrics-tls-");
}

// --roles plus the deprecated --tls-client-names, and the loopback role.
absl::Status BuildPolicy(const ControlOptions& o, Listeners& out) {
  absl::StatusOr<std::vector<RoleBinding>> roles = ParseRoles(o.roles);
  if (!roles.ok()) return roles.status();
  out.access.roles = *std::move(roles);
  for (const RoleBinding& b : out.access.roles) {
    const bool cert = b.kind == RoleBinding::Kind::kDns || b.kind == RoleBinding::Kind::kUri;
    if (cert && o.tls_client_ca.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--roles: ", b.Subject(),
          " names a client certificate, and without --tls-client-ca (and --tls-cert, --tls-key) "
          "no certificate is verified: add them, or bind uid:/gid: for unix-socket peers"));
    }
  }
  if (!o.tls_client_names.empty()) {
    std::vector<std::string> as_roles;
    for (const std::string& n : o.tls_client_names) {
      RoleBinding b;
      b.kind = absl::StrContains(n, "://") ? RoleBinding::Kind::kUri : RoleBinding::Kind::kDns;
      b.name = b.kind == RoleBinding::Kind::kDns ? absl::AsciiStrToLower(n) : n;
      b.role = Role::kAdmin;
      as_roles.push_back(absl::StrCat(b.Subject(), "=admin"));
      out.access.roles.push_back(std::move(b));
    }
    out.warnings.push_back(absl::StrCat(
        "--tls-client-names is deprecated: read as --roles=", absl::StrJoin(as_roles, ","),
        " (write --roles instead; it also grants read and operate)"));
  }
  if (!o.loopback_role.empty()) {
    std::optional<Role> r = ParseRoleName(o.loopback_role, true);
    if (!r) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--loopback-role: '", o.loopback_role, "' is not none, read, operate or admin"));
    }
    out.access.loopback_role = *r;
  } else if (o.demo) {
    out.access.loopback_role = Role::kAdmin;
  }
  if (out.access.loopback_role != Role::kNone) {
    out.warnings.push_back(absl::StrCat(
        "WARNING: every TCP client on loopback (127.0.0.0/8, ::1) gets role ",
        RoleName(out.access.loopback_role),
        o.loopback_role.empty() ? " (skbnfd's demo: no EAL arguments, no --config; "
                                  "--loopback-role=none refuses it)"
                                : " (--loopback-role)",
        ": any process of this host - in Kubernetes any container of the pod, kubectl "
        "port-forward, a sidecar proxy (Istio's 127.0.0.6) - may use it"));
  }
  out.access.owner_uid = ::geteuid();
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckControlOptions(const ControlOptions& o) {
  Listeners unused;
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (!o.tls_client_ca.empty() && !HasTls(o)) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (!o.tls_client_names.empty() && o.tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-names needs --tls-client-ca (and --tls-cert, --tls-key): names are "
        "checked on client certificates the CA verified");
  }
  if ((HasTls(o) || !o.metrics_tls_cert.empty()) && (o.tls_reload_interval < std::chrono::seconds(1) ||
                    o.tls_reload_interval > std::chrono::seconds(86400))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-reload-interval: ", o.tls_reload_interval.count(),
                     " is out of range; write 1..86400 seconds"));
  }
  if (o.buffer_census_every < std::chrono::milliseconds(100) ||
      o.buffer_census_every > std::chrono::hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--buffer-census-every: ", o.buffer_census_every.count(),
                     " ms is out of range; write 100ms..1h, e.g. --buffer-census-every=2s"));
  }
  if (absl::Status s = CheckLimitOptions(o.limits); !s.ok()) return s;
  if (absl::Status s = CheckHealthListen(o); !s.ok()) return s;
  if (absl::Status s = CheckMetricsAddr(o.metrics_addr); !s.ok()) return s;
  if (absl::Status s = CheckMetricsTls(o); !s.ok()) return s;
  if (o.audit_log.empty()) {
    return absl::InvalidArgumentError(
        "--audit-log: empty; write - (stderr) or the path of a file to append to");
  }
  const std::vector<std::string> addrs = SplitListen(o.listen);
  if (addrs.empty()) {
    return absl::InvalidArgumentError(
        "--listen: empty; write host:port, unix:/path or unix-abstract:name (several: "
        "comma-separated)");
  }
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (std::find(addrs.begin(), addrs.begin() + static_cast<long>(i), addrs[i]) !=
        addrs.begin() + static_cast<long>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen: '", addrs[i], "' is given twice"));
    }
    absl::StatusOr<Listener> l = CheckAddress(o, addrs[i]);
    if (!l.ok()) return l.status();
  }
  return BuildPolicy(o, unused);
}

absl::StatusOr<Listeners> PrepareListeners(const ControlOptions& o) {
  if (absl::Status s = CheckControlOptions(o); !s.ok()) return s;
  Listeners out;
  if (absl::Status s = BuildPolicy(o, out); !s.ok()) return s;
  const bool tls = HasTls(o);
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials;
  std::string tcp_description;
  if (tls) {
    const TlsFiles files{o.tls_cert, o.tls_key, o.tls_client_ca};
    if (absl::Status st = CheckTlsFiles(files); !st.ok()) return st;
    tcp_credentials = ReloadingServerCredentials(files, o.tls_reload_interval);
    tcp_description = o.tls_client_ca.empty() ? "(TLS; no client certificates, so no roles)"
                                              : "(mTLS: roles from --roles dns:/uri:)";
  } else {
    tcp_credentials = grpc::InsecureServerCredentials();
  }
  for (const std::string& addr : SplitListen(o.listen)) {
    absl::StatusOr<Listener> l = CheckAddress(o, addr);
    if (!l.ok()) return l.status();
    switch (l->kind) {
      case Listener::Kind::kTcp:
        l->credentials = tcp_credentials;
        l->description = tls ? tcp_description
                         : IsLocalAddress(addr)
                             ? "(loopback plaintext)"
                             : "(INSECURE remote plaintext: no role for remote clients)";
        break;
      case Listener::Kind::kUnixPath: {
        l->description = "(unix socket 0660; roles from the peer's uid/gid)";
        struct stat st;
        if (::lstat(l->unix_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
          if (UnixSocketAnswers(l->unix_path)) {
            return absl::UnavailableError(absl::StrCat("--listen: unix socket '", l->unix_path,
                                                       "' is in use by a running process"));
          }
          ::unlink(l->unix_path.c_str());
        }
        break;
      }
      case Listener::Kind::kUnixAbstract:
        l->description = "(abstract unix socket; roles from --roles uid:/gid: only)";
        break;
    }
    out.listeners.push_back(*std::move(l));
  }
  return out;
}

absl::Status CheckHealthListen(const ControlOptions& o) {
  if (o.health_listen.empty()) return absl::OkStatus();
  std::string host, port;
  if (!SplitHostPort(o.health_listen, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--health-listen: '", o.health_listen,
        "' is not host:port; write e.g. 0.0.0.0:50052 (the port of the kubelet's gRPC probes), "
        "or leave it empty for none"));
  }
  const std::vector<std::string> addrs = SplitListen(o.listen);
  if (std::find(addrs.begin(), addrs.end(), o.health_listen) != addrs.end() && port != "0") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--health-listen: '", o.health_listen, "' is --listen's address; give it its own port"));
  }
  return absl::OkStatus();
}

}  // namespace skbnf::control
