// SPDX-License-Identifier: BSD-3-Clause
// TLS material of the control listener, re-read while skbnfd runs (certificate rotation).
//
// Why: cert-manager renews a certificate (by default when 2/3 of its life has passed) by
// rewriting the Secret, and the kubelet updates the Secret volume in place. A listener that read
// its files once serves the old certificate until it expires, and then every pod that mounts
// the Secret fails its clients (and any TLS probe) at the same moment.
//
// How: the listener's credentials are gRPC's own file watcher,
// grpc::experimental::FileWatcherCertificateProvider (grpcpp/security/tls_certificate_provider.h,
// gRPC 1.51) behind grpc::experimental::TlsServerCredentials (grpcpp/security/
// server_credentials.h, options in grpcpp/security/tls_credentials_options.h). Its thread re-reads
// the key, the certificate chain and the client CA bundle by path every --tls-reload-interval
// seconds (default 10; the kubelet itself refreshes a Secret volume only every sync period, about
// a minute) and hands changed contents to new handshakes; connections already open keep theirs.
// Reading by path is what a Secret volume needs: the kubelet's AtomicWriter writes the new files
// into a fresh timestamped directory and then renames the `..data` symlink over the old one, so
// tls.crt -> ..data/tls.crt switches to the new generation in one rename. gRPC stats the key and
// certificate before and after reading them and retries when a modification time changed in
// between (grpc_tls_certificate_provider.cc, ReadIdentityKeyCertPairFromFiles), so a key and a
// certificate from two generations are never served together; writers that replace the two
// files one after the other without such a swap are not safe (write both, then rename).
//
// Start-up still reads and checks every file (PEM parses, the key belongs to the certificate,
// the CA bundle holds at least one certificate) so a wrong path or file stops skbnfd with a
// message naming the flag, rather than failing every handshake later.
//
// TlsCertificateWatch reads the same files on the same interval for what gRPC does not report:
// the served certificate's notAfter as skbnf_tls_certificate_expiry_timestamp_seconds (below)
// and one log line per change ("TLS certificate loaded: serial ..., notAfter ..., sha256 ...").
// A file that cannot be read or parsed is logged once and leaves the gauge at its last value.
#ifndef SKBNF_SERVER_CONTROL_TLS_RELOAD_H_
#define SKBNF_SERVER_CONTROL_TLS_RELOAD_H_

#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "server/core/periodic.h"

namespace skbnf::control {

struct TlsFiles {
  std::string cert, key, client_ca;  // paths; client_ca "" when not set
};

// What a PEM certificate says, for logs and the expiry gauge.
struct CertFacts {
  int64_t not_after = 0;  // Unix seconds
  std::string serial;     // hex
  std::string sha256;     // fingerprint of the DER, hex
};

// The first certificate of a PEM text (a chain's leaf). InvalidArgument when there is none.
absl::StatusOr<CertFacts> ReadCertFacts(const std::string& pem);
// The earliest notAfter of every certificate in a PEM bundle (a CA file may hold several).
absl::StatusOr<CertFacts> EarliestExpiry(const std::string& pem);

// Start-up check of the files (InvalidArgument naming --<prefix>cert / --<prefix>key /
// --<prefix>client-ca: --tls-cert..., or --metrics-tls-cert... with prefix "metrics-tls-").
absl::Status CheckTlsFiles(const TlsFiles& files, const std::string& prefix = "tls-");

// Credentials that re-read `files` every `reload_interval` (>= 1 s). With a client CA, a client
// certificate is requested and, when presented, verified against it (certificate-less clients
// may still read: access.h).
std::shared_ptr<grpc::ServerCredentials> ReloadingServerCredentials(
    const TlsFiles& files, std::chrono::seconds reload_interval);

// skbnf_tls_certificate_expiry_timestamp_seconds{certificate="server"} (--tls-cert's leaf) and
// {certificate="client_ca"} (the earliest-expiring certificate of --tls-client-ca, when set);
// likewise "metrics" and "metrics_client_ca" for /metrics' own files (metrics_tls.h; `metrics`
// empty: none): Unix seconds of notAfter, re-read every `interval`. An alert fires well before.
class TlsCertificateWatch : public prometheus::Collectable {
 public:
  TlsCertificateWatch(TlsFiles files, std::chrono::seconds interval, TlsFiles metrics = {});
  ~TlsCertificateWatch() override;
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void Reload();

  const TlsFiles files_;
  const TlsFiles metrics_;
  mutable absl::Mutex mu_;
  std::map<std::string, CertFacts> facts_ ABSL_GUARDED_BY(mu_);  // by label value
  std::map<std::string, std::string> errors_;  // last error logged per file; Reload() only
  std::unique_ptr<Periodic> thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_TLS_RELOAD_H_
