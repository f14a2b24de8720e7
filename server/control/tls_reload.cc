// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/tls_reload.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "prometheus/metric_family.h"
#include "server/core/metric_families.h"

namespace skbnf::control {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;
using Cert = std::unique_ptr<X509, X509Deleter>;

Bio MemBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

CertFacts FactsOf(X509* x) {
  CertFacts f;
  struct tm t = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &t) == 1) f.not_after = timegm(&t);
  const ASN1_INTEGER* serial = X509_get0_serialNumber(x);
  f.serial = Hex(serial->data, static_cast<size_t>(serial->length));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(x, EVP_sha256(), md, &n) == 1) f.sha256 = Hex(md, n);
  return f;
}

std::string Utc(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm = {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

absl::StatusOr<CertFacts> ReadCertFacts(const std::string& pem) {
  Bio bio = MemBio(pem);
  Cert x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (x == nullptr) return absl::InvalidArgumentError("no PEM certificate in it");
  return FactsOf(x.get());
}

absl::StatusOr<CertFacts> EarliestExpiry(const std::string& pem) {
  Bio bio = MemBio(pem);
  std::optional<CertFacts> earliest;
  while (true) {
    Cert x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (x == nullptr) break;
    CertFacts f = FactsOf(x.get());
    if (!earliest.has_value() || f.not_after < earliest->not_after) earliest = f;
  }
  if (!earliest.has_value()) return absl::InvalidArgumentError("no PEM certificate in it");
  return *earliest;
}

absl::Status CheckTlsFiles(const TlsFiles& files, const std::string& prefix) {
  const std::string cert_flag = prefix + "cert", key_flag = prefix + "key";
  const std::string ca_flag = prefix + "client-ca";
  absl::StatusOr<std::string> cert = ReadFile(cert_flag, files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(key_flag, files.key);
  if (!key.ok()) return key.status();
  Bio cert_bio = MemBio(*cert);
  Cert x(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (x == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", cert_flag, ": '", files.cert, "' holds no PEM certificate"));
  }
  Bio key_bio = MemBio(*key);
  std::unique_ptr<EVP_PKEY, PkeyDeleter> k(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (k == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", key_flag, ": '", files.key, "' holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(x.get(), k.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--", key_flag, ": '", files.key,
                                                   "' is not the key of --", cert_flag, " '",
                                                   files.cert, "'"));
  }
  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(ca_flag, files.client_ca);
    if (!ca.ok()) return ca.status();
    if (!EarliestExpiry(*ca).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", ca_flag, ": '", files.client_ca, "' holds no PEM certificate"));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> ReloadingServerCredentials(
    const TlsFiles& files, std::chrono::seconds reload_interval) {
  const unsigned interval =
      static_cast<unsigned>(reload_interval.count() < 1 ? 1 : reload_interval.count());
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.client_ca, interval);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!files.client_ca.empty()) {
    options.watch_root_certs();
    // Verify a certificate when one is presented, but let certificate-less clients in: they
    // may read; ControlService refuses their mutations.
    options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

TlsCertificateWatch::TlsCertificateWatch(TlsFiles files, std::chrono::seconds interval,
                                         TlsFiles metrics)
    : files_(std::move(files)), metrics_(std::move(metrics)) {
  Reload();
  thread_ = std::make_unique<Periodic>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          interval < std::chrono::seconds(1) ? std::chrono::seconds(1) : interval),
      [this] { Reload(); });
}

TlsCertificateWatch::~TlsCertificateWatch() { thread_.reset(); }

void TlsCertificateWatch::Reload() {
  struct Source {
    const char* label;
    const char* flag;
    const std::string& path;
    bool bundle;
  };
  const Source sources[] = {{"server", "tls-cert", files_.cert, false},
                            {"client_ca", "tls-client-ca", files_.client_ca, true},
                            {"metrics", "metrics-tls-cert", metrics_.cert, false},
                            {"metrics_client_ca", "metrics-tls-client-ca", metrics_.client_ca, true}};
  for (const Source& s : sources) {
    if (s.path.empty()) continue;
    absl::StatusOr<std::string> pem = ReadFile(s.flag, s.path);
    absl::StatusOr<CertFacts> facts = !pem.ok()
                                          ? absl::StatusOr<CertFacts>(pem.status())
                                          : (s.bundle ? EarliestExpiry(*pem) : ReadCertFacts(*pem));
    if (!facts.ok()) {
      std::string error(facts.status().message());
      if (errors_[s.label] != error) {
        std::cerr << "skbnf-control: TLS " << s.label << " certificate '" << s.path
                  << "' not re-read (the last one read is still reported): " << error << std::endl;
        errors_[s.label] = error;
      }
      continue;
    }
    errors_[s.label].clear();
    absl::MutexLock l(&mu_);
    auto it = facts_.find(s.label);
    if (it != facts_.end() && it->second.sha256 == facts->sha256) continue;
    std::cerr << "skbnf-control: TLS " << s.label << " certificate "
              << (it == facts_.end() ? "loaded" : "changed") << " from '" << s.path << "': serial "
              << facts->serial << ", notAfter " << Utc(facts->not_after) << ", sha256 "
              << facts->sha256 << std::endl;
    facts_[s.label] = *facts;
  }
}

std::vector<prometheus::MetricFamily> TlsCertificateWatch::Collect() const {
  prometheus::MetricFamily f = NewFamily(metric::kTlsCertificateExpiryTimestampSeconds);
  absl::MutexLock l(&mu_);
  for (const auto& [label, facts] : facts_) {
    prometheus::ClientMetric m;
    m.label.push_back({"certificate", label});
    m.gauge.value = static_cast<double>(facts.not_after);
    f.metric.push_back(std::move(m));
  }
  return {f};
}

}  // namespace skbnf::control
