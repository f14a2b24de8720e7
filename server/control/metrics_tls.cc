// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/metrics_tls.h"

#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"
#include "server/control/listener.h"

namespace skbnf::control {

namespace {

constexpr int kIoTimeoutSeconds = 5;
constexpr size_t kMaxRequestBytes = 8192;

struct CtxDeleter {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslDeleter {
  void operator()(SSL* s) const { SSL_free(s); }
};

std::string OpensslError() {
  unsigned long e = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (e == 0) return "unknown error";
  std::array<char, 256> buf{};
  ERR_error_string_n(e, buf.data(), buf.size());
  return buf.data();
}

// Identity of one file as stat() sees it through symlinks.
std::string FileStamp(const std::string& path) {
  if (path.empty()) return "";
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec);
}

std::string Stamps(const TlsFiles& f) {
  return absl::StrCat(FileStamp(f.cert), "|", FileStamp(f.key), "|", FileStamp(f.client_ca));
}

}  // namespace

struct MetricsTlsServer::Ctx {
  std::unique_ptr<SSL_CTX, CtxDeleter> ctx;
  std::string stamps;
};

namespace {

absl::StatusOr<std::shared_ptr<MetricsTlsServer::Ctx>> LoadCtx(const TlsFiles& f) {
  auto out = std::make_shared<MetricsTlsServer::Ctx>();
  out->stamps = Stamps(f);
  if (absl::Status s = CheckTlsFiles(f, "metrics-tls-"); !s.ok()) return s;
  out->ctx.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* c = out->ctx.get();
  if (c == nullptr) return absl::InternalError("metrics TLS: SSL_CTX_new: " + OpensslError());
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(c, f.cert.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-tls-cert: '", f.cert, "': ", OpensslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(c, f.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(c) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-tls-key: '", f.key, "': ", OpensslError()));
  }
  if (!f.client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca.c_str());
    if (SSL_CTX_load_verify_locations(c, f.client_ca.c_str(), nullptr) != 1 || names == nullptr) {
      if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-tls-client-ca: '", f.client_ca, "': ", OpensslError()));
    }
    SSL_CTX_set_client_CA_list(c, names);  // takes ownership
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return out;
}

absl::StatusOr<int> Listen(const std::string& bind, int* port) {
  std::string host, service;
  if (!SplitHostPort(bind, &host, &service)) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-addr: '", bind, "' is not host:port"));
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-addr: cannot resolve '", bind, "': ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
    const std::string err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("--metrics-addr: cannot listen on '", bind, "': ", err));
  }
  sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  *port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

bool WriteAll(SSL* ssl, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    size_t n = 0;
    if (SSL_write_ex(ssl, s.data() + off, s.size() - off, &n) != 1) return false;
    off += n;
  }
  return true;
}

// HEAD: the headers of GET, no body.
std::string Response(const std::string& status, const std::string& type, const std::string& body,
                     bool head) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
                      head ? std::string() : body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsTlsServer>> MetricsTlsServer::Start(
    const std::string& bind, const TlsFiles& files, std::chrono::seconds reload_interval) {
  absl::StatusOr<std::shared_ptr<Ctx>> ctx = LoadCtx(files);
  if (!ctx.ok()) return ctx.status();
  std::unique_ptr<MetricsTlsServer> s(new MetricsTlsServer());
  s->files_ = files;
  s->reload_interval_ = reload_interval;
  s->last_check_ = std::chrono::steady_clock::now();
  s->ctx_ = *std::move(ctx);
  absl::StatusOr<int> fd = Listen(bind, &s->port_);
  if (!fd.ok()) return fd.status();
  s->listen_fd_ = *fd;
  if (::pipe2(s->wake_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("metrics TLS: pipe: ", std::strerror(errno)));
  }
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

MetricsTlsServer::~MetricsTlsServer() {
  if (thread_.joinable()) {
    char c = 0;
    (void)::write(wake_[1], &c, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void MetricsTlsServer::RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& c) {
  absl::MutexLock l(&mu_);
  collectables_.push_back(c);
}

std::string MetricsTlsServer::Body() const {
  std::vector<prometheus::MetricFamily> families;
  {
    absl::MutexLock l(&mu_);
    for (const std::weak_ptr<prometheus::Collectable>& w : collectables_) {
      if (std::shared_ptr<prometheus::Collectable> c = w.lock()) {
        std::vector<prometheus::MetricFamily> f = c->Collect();
        families.insert(families.end(), std::make_move_iterator(f.begin()),
                        std::make_move_iterator(f.end()));
      }
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

void MetricsTlsServer::MaybeReload() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < reload_interval_) return;
  last_check_ = now;
  if (Stamps(files_) == ctx_->stamps) return;
  absl::StatusOr<std::shared_ptr<Ctx>> next = LoadCtx(files_);
  if (!next.ok()) {
    if (std::string e(next.status().message()); e != last_error_) {
      std::cerr << "skbnf-control: metrics TLS: not reloaded, still serving the previous "
                   "certificate: "
                << e << "\n";
      last_error_ = e;
    }
    return;
  }
  last_error_.clear();
  ctx_ = *std::move(next);
  std::cerr << "skbnf-control: metrics TLS: reloaded " << files_.cert << "\n";
}

void MetricsTlsServer::Run() {
  // A scraper that hangs up mid-response makes OpenSSL's write() raise SIGPIPE in this thread:
  // blocked here, so it never kills a process that does not ignore it (skbnfd does: eal.cc).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  for (;;) {
    std::array<pollfd, 2> p = {pollfd{listen_fd_, POLLIN, 0}, pollfd{wake_[0], POLLIN, 0}};
    const int n = ::poll(p.data(), p.size(), 1000);
    if (n < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    MaybeReload();
    if (n <= 0 || (p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv = {kIoTimeoutSeconds, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    Serve(fd);
    ::close(fd);
  }
}

void MetricsTlsServer::Serve(int fd) {
  std::unique_ptr<SSL, SslDeleter> ssl(SSL_new(ctx_->ctx.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), fd) != 1 || SSL_accept(ssl.get()) != 1) {
    ERR_clear_error();  // plaintext, no or an unverified client certificate, a timeout
    return;
  }
  std::string req;
  std::array<char, 2048> buf{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kIoTimeoutSeconds);
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < kMaxRequestBytes) {
    if (std::chrono::steady_clock::now() > deadline) return;  // a trickling client
    size_t got = 0;
    if (SSL_read_ex(ssl.get(), buf.data(), buf.size(), &got) != 1) {
      ERR_clear_error();
      return;
    }
    req.append(buf.data(), got);
  }
  const std::string line = req.substr(0, req.find("\r\n"));
  const bool head = absl::StartsWith(line, "HEAD ");
  std::string out;
  if (!head && !absl::StartsWith(line, "GET ")) {
    out = Response("405 Method Not Allowed", "text/plain", "GET /metrics only\n", false);
  } else {
    const size_t start = line.find(' ') + 1;
    const std::string target = line.substr(start, line.find(' ', start) - start);
    if (target != "/metrics" && !absl::StartsWith(target, "/metrics?")) {
      out = Response("404 Not Found", "text/plain", "not found: GET /metrics\n", head);
    } else {
      out = Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", Body(), head);
    }
  }
  if (WriteAll(ssl.get(), out)) SSL_shutdown(ssl.get());
  ERR_clear_error();
}

}  // namespace skbnf::control
