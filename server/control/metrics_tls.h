// SPDX-License-Identifier: BSD-3-Clause
// /metrics over HTTPS (--metrics-tls-cert, --metrics-tls-key, optional --metrics-tls-client-ca):
// a small OpenSSL server of our own around prometheus-cpp's text serialiser, in place of
// prometheus-cpp's Exposer, which serves plaintext /metrics only.
//
// Why not the Exposer's civetweb with ssl_certificate and "PORTs": Debian 12's libcivetweb1
// 1.15+dfsg-4 is built against the OpenSSL 1.1 API and dlopen()s "libssl.so" (the unversioned
// name only libssl-dev installs, so a runtime image without it has no TLS at all). With
// Debian's OpenSSL 3 behind that name the handshake succeeds but the first request crashes the
// process: civetweb's OpenSSL 1.1 table (src/openssl_dl.inl, v1.15) resolves
// SSL_get_peer_certificate, which OpenSSL 3 exports only as SSL_get1_peer_certificate, and
// ssl_get_client_cert_info (src/civetweb.c, v1.15) calls the NULL pointer on every HTTPS
// connection. Seen with a 30-line Exposer: a SIGSEGV at address 0 in a civetweb-worker thread.
//
// What it does: one thread accepts on --metrics-addr, handshakes (TLS 1.2 or later; with a
// client CA, a client certificate verified against it is required, else the handshake fails),
// reads one request and answers GET (or HEAD) /metrics with every registered collectable in the
// text exposition format 0.0.4, then closes the connection (Prometheus reconnects per scrape).
// Other paths: 404; other methods: 405; plaintext HTTP on the port: the handshake fails and
// nothing is written. Connections are served one at a time, each read bounded by a 5 s socket
// timeout and the request by 5 s in all, so a client that stalls delays a scrape by seconds
// (the NetworkPolicy admits only Prometheus to this port).
//
// Rotation: every `reload_interval` (--tls-reload-interval) the three files' inode, size and
// modification time are compared with the last loaded ones (stat follows the Secret volume's
// ..data symlink, so its swap counts as a change); changed files are loaded into a new SSL_CTX
// for the next handshakes. A generation that does not load (a half-written file, a key that does
// not match) is logged once and the previous one keeps being served.
#ifndef SKBNF_SERVER_CONTROL_METRICS_TLS_H_
#define SKBNF_SERVER_CONTROL_METRICS_TLS_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "server/control/tls_reload.h"

namespace skbnf::control {

class MetricsTlsServer {
 public:
  // `bind`: host:port, [v6]:port or :port (every address); port 0 picks one. Errors name
  // --metrics-addr or the --metrics-tls-* flag.
  static absl::StatusOr<std::unique_ptr<MetricsTlsServer>> Start(
      const std::string& bind, const TlsFiles& files, std::chrono::seconds reload_interval);
  ~MetricsTlsServer();  // stops the thread; a connection being served ends within 5 s
  MetricsTlsServer(const MetricsTlsServer&) = delete;
  MetricsTlsServer& operator=(const MetricsTlsServer&) = delete;

  void RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& c);
  int port() const { return port_; }

  struct Ctx;  // the loaded SSL_CTX and the files' identities

 private:
  MetricsTlsServer() = default;
  void Run();
  void MaybeReload();
  void Serve(int fd);
  std::string Body() const;

  TlsFiles files_;
  std::chrono::seconds reload_interval_{10};
  std::chrono::steady_clock::time_point last_check_;
  std::string last_error_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // pipe: the destructor writes to stop Run()
  int port_ = 0;
  std::shared_ptr<Ctx> ctx_;  // Run()'s thread only, after Start()
  mutable absl::Mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_METRICS_TLS_H_
