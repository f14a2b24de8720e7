// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

absl::StatusOr<Listener> PrepareListener(const ControlOptions& o) {
  Listener l;
  const bool tls = !o.tls_cert.empty() || !o.tls_key.empty();
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (!o.tls_client_ca.empty() && !tls) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (!o.tls_client_names.empty() && o.tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-names needs --tls-client-ca (and --tls-cert, --tls-key): names are "
        "checked on client certificates the CA verified");
  }
  if (absl::Status s = CheckLimitOptions(o.limits); !s.ok()) return s;
  if (absl::Status s = CheckHealthListen(o); !s.ok()) return s;
  const bool abstract = absl::StartsWith(o.listen, "unix-abstract:");
  l.abstract_socket = abstract;
  l.unix_socket = absl::StartsWith(o.listen, "unix:");
  std::string port;
  if (!l.unix_socket && !abstract && !SplitHostPort(o.listen, &l.host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: '", o.listen, "' is not host:port or unix:/path"));
  }
  const bool local = IsLocalAddress(o.listen);
  if (!local && !tls && !o.insecure_remote) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve the control API on ",
        abstract ? "abstract unix socket '" : "non-loopback address '", o.listen,
        "' without TLS: give --tls-cert and --tls-key (and --tls-client-ca so that mutations "
        "are possible), listen on 127.0.0.1 or a unix:/path socket, or pass --insecure-remote "
        "to accept plaintext from the network (reads only; changes stay loopback-only)"));
  }
  if (tls) {
    const TlsFiles files{o.tls_cert, o.tls_key, o.tls_client_ca};
    if (absl::Status st = CheckTlsFiles(files); !st.ok()) return st;
    if (o.tls_reload_interval < std::chrono::seconds(1) ||
        o.tls_reload_interval > std::chrono::seconds(86400)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-reload-interval: ", o.tls_reload_interval.count(),
                       " is out of range; write 1..86400 seconds"));
    }
    l.credentials = ReloadingServerCredentials(files, o.tls_reload_interval);
    l.access.listener = AccessPolicy::Listener::kTls;
    l.access.client_ca = !o.tls_client_ca.empty();
    l.access.allowed_names = o.tls_client_names;
    l.description = o.tls_client_ca.empty()      ? "(TLS, read-only)"
                    : o.tls_client_names.empty() ? "(mTLS for mutations)"
                                                 : "(mTLS for mutations, allowed names)";
  } else {
    l.credentials = grpc::InsecureServerCredentials();
    l.access.listener = l.unix_socket ? AccessPolicy::Listener::kUnixPath
                        : abstract    ? AccessPolicy::Listener::kAbstract
                                      : AccessPolicy::Listener::kPlaintext;
    l.description = local ? "(local plaintext)"
                          : "(INSECURE remote plaintext: reads open, changes loopback-only)";
  }
  if (l.unix_socket) {
    l.unix_path = o.listen.substr(5);
    if (absl::StartsWith(l.unix_path, "//")) l.unix_path = l.unix_path.substr(2);
    struct stat st;
    if (::lstat(l.unix_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      if (UnixSocketAnswers(l.unix_path)) {
        return absl::UnavailableError(absl::StrCat("--listen: unix socket '", l.unix_path,
                                                   "' is in use by a running process"));
      }
      ::unlink(l.unix_path.c_str());
    }
  }
  return l;
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
  if (o.health_listen == o.listen && port != "0") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--health-listen: '", o.health_listen, "' is --listen's address; give it its own port"));
  }
  return absl::OkStatus();
}

UnixSocketUmask::UnixSocketUmask(const Listener& l) {
  if (!l.unix_socket) return;
  old_ = ::umask(0117);  // sockets are created 0777 & ~umask = 0660
  set_ = true;
}

UnixSocketUmask::~UnixSocketUmask() {
  if (set_) ::umask(static_cast<mode_t>(old_));
}

}  // namespace skbnf::control
