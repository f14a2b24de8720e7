// SPDX-License-Identifier: BSD-3-Clause
// Certificate rotation (server/control/tls_reload.h): the server certificate is replaced while
// clients call, the way a Kubernetes Secret volume replaces it when cert-manager renews the Secret,
// and no call fails while the new certificate reaches new connections.
//
// The Secret volume's shape is the kubelet's AtomicWriter (kubernetes/kubernetes,
// pkg/volume/util/atomic_writer.go, Write): the files live in a hidden timestamped directory
// "..<YYYY_MM_DD_hh_mm_ss>.<random>", the volume holds "..data -> <that directory>" and
// user-visible symlinks "tls.crt -> ..data/tls.crt"; an update writes a new timestamped
// directory, creates the symlink "..data_tmp" to it, renames "..data_tmp" over "..data" (the one
// atomic step) and removes the old directory. cert-manager's Secret keys are tls.crt, tls.key
// and ca.crt. ProjectSecret below does exactly these steps.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/control/daemon_harness.h"

namespace skbnf::control::testing {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr char kExpirySeries[] =
    "skbnf_tls_certificate_expiry_timestamp_seconds{certificate=\"server\"}";

class TlsRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    // One CA; generation 1 and generation 2 of the server certificate, each with its own key,
    // different lifetimes (so their notAfter differ); a client certificate of the same CA.
    std::string script =
        absl::StrCat("set -e; cd ", dir_.path(), "; exec >openssl.log 2>&1\n", "openssl req -x509 ",
                     key, " -keyout ca.key -out ca.crt -days 3 -subj '/CN=skbnf test CA'\n",
                     "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext\n");
    for (int gen : {1, 2}) {
      absl::StrAppend(&script, "openssl req ", key, " -keyout server", gen, ".key -out server", gen,
                      ".csr -subj '/CN=localhost'\n", "openssl x509 -req -in server", gen,
                      ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days ", gen == 1 ? 2 : 30,
                      " -extfile server.ext -out server", gen, ".crt\n",
                      // notAfter as Unix seconds, from openssl's own reading of the file.
                      "date -u -d \"$(openssl x509 -noout -enddate -in server", gen,
                      ".crt | cut -d= -f2)\" +%s > server", gen, ".notafter\n");
    }
    absl::StrAppend(&script, "openssl req ", key,
                    " -keyout client.key -out client.csr -subj '/CN=operator'\n",
                    "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                    "-days 2 -out client.crt\n",
                    // A second client CA (the operators' new CA) and a client it signed; the
                    // bundle that trusts both, as a CA rollover publishes it.
                    "openssl req -x509 ", key,
                    " -keyout ca2.key -out ca2.crt -days 3 -subj '/CN=skbnf new client CA'\n",
                    "openssl req ", key, " -keyout client2.key -out client2.csr -subj '/CN=ops2'\n",
                    "openssl x509 -req -in client2.csr -CA ca2.crt -CAkey ca2.key -CAcreateserial "
                    "-days 2 -out client2.crt\n",
                    "cat ca.crt ca2.crt > ca-bundle.crt\n");
    std::ofstream(dir_.File("gen.sh")) << script;
    ASSERT_EQ(Shell("bash " + dir_.File("gen.sh")), 0) << Read(dir_.File("openssl.log"));
    fs::create_directory(Vol());
  }

  std::string Vol() const { return dir_.File("secret"); }
  std::string F(const std::string& name) const { return dir_.File(name); }
  int64_t NotAfter(int gen) const {
    int64_t v = 0;
    EXPECT_TRUE(absl::SimpleAtoi(
        absl::StripAsciiWhitespace(Read(F(absl::StrCat("server", gen, ".notafter")))), &v));
    return v;
  }

  // A daemon serving mTLS from the projected Secret, re-read every second.
  std::unique_ptr<Daemon> StartOnVolume(std::string* error) {
    return Daemon::Start({"--tls-cert=" + Vol() + "/tls.crt", "--tls-key=" + Vol() + "/tls.key",
                          "--tls-client-ca=" + Vol() + "/ca.crt", "--tls-reload-interval=1"},
                         error);
  }

  // The kubelet's AtomicWriter.Write of {tls.crt, tls.key, ca.crt} = generation `gen`.
  void ProjectSecret(int gen, bool backdate, const std::string& ca = "ca.crt") {
    char stamp[64];
    const time_t now = time(nullptr);
    struct tm tm = {};
    gmtime_r(&now, &tm);
    std::strftime(stamp, sizeof(stamp), "..%Y_%m_%d_%H_%M_%S.", &tm);
    // Unique per projection (the kubelet's names carry a random suffix): one generation may be
    // projected twice within a second (the CA rollover re-projects with another ca.crt).
    static int projections = 0;
    const std::string ts_name = absl::StrCat(stamp, gen, "_", ++projections, "_", getpid());
    const std::string ts = Vol() + "/" + ts_name;
    fs::create_directory(ts);
    const std::pair<std::string, std::string> files[] = {
        {"tls.crt", F(absl::StrCat("server", gen, ".crt"))},
        {"tls.key", F(absl::StrCat("server", gen, ".key"))},
        {"ca.crt", F(ca)}};
    for (const auto& [name, from] : files) {
      fs::copy_file(from, ts + "/" + name);
      if (backdate) {
        // The first generation is written a minute "earlier": a Secret is rotated long after it
        // was first projected, and gRPC's file watcher tells generations apart by their
        // modification times (1 s resolution), which a test writing both within a second would
        // otherwise make equal.
        struct utimbuf t = {now - 60, now - 60};
        ASSERT_EQ(utime((ts + "/" + name).c_str(), &t), 0);
      }
      const std::string visible = Vol() + "/" + name;
      if (!fs::is_symlink(visible)) fs::create_symlink("..data/" + name, visible);
    }
    std::string old;
    if (fs::is_symlink(Vol() + "/..data")) old = fs::read_symlink(Vol() + "/..data").string();
    fs::create_symlink(ts_name, Vol() + "/..data_tmp");
    ASSERT_EQ(::rename((Vol() + "/..data_tmp").c_str(), (Vol() + "/..data").c_str()), 0);
    if (!old.empty()) fs::remove_all(Vol() + "/" + old);
  }

  std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(
      const std::string& client = "client") const {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = Read(F("ca.crt"));
    o.pem_cert_chain = Read(F(client + ".crt"));
    o.pem_private_key = Read(F(client + ".key"));
    return grpc::SslCredentials(o);
  }

  TempDir dir_;
};

struct Loop {
  std::atomic<int> ok{0}, failed{0};
  std::mutex mu;
  std::string first_error, last_served;  // guarded by mu
};

TEST_F(TlsRotationTest, RotatedCertificateIsServedWithoutAFailedCall) {
  ProjectSecret(1, /*backdate=*/true);
  std::string error;
  auto d = StartOnVolume(&error);
  ASSERT_NE(d, nullptr) << error;
  EXPECT_EQ(MetricValue(d->metrics_port(), kExpirySeries), static_cast<double>(NotAfter(1)));
  const std::string gen1 = Read(F("server1.crt")), gen2 = Read(F("server2.crt"));

  std::atomic<bool> stop{false};
  // Loop A: one channel for all calls (its connection was set up with generation 1).
  // Loop B: a new connection, so a new TLS handshake, for every call; records the certificate
  // each handshake was served (the peer's leaf, as gRPC reports it).
  Loop a, b;
  auto call = [&](grpc::Channel* ch, Loop& loop) {
    auto stub = v1::Control::NewStub(std::shared_ptr<grpc::Channel>(ch, [](grpc::Channel*) {}));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::GetInfoResponse r;
    grpc::Status st = stub->GetInfo(&ctx, v1::GetInfoRequest(), &r);
    std::lock_guard<std::mutex> l(loop.mu);
    if (!st.ok()) {
      if (loop.failed.fetch_add(1) == 0) loop.first_error = st.error_message();
      return;
    }
    loop.ok.fetch_add(1);
    auto auth = ctx.auth_context();
    auto pem = auth == nullptr ? std::vector<grpc::string_ref>()
                               : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!pem.empty()) loop.last_served.assign(pem[0].data(), pem[0].size());
  };
  grpc::ChannelArguments name;
  name.SetSslTargetNameOverride("localhost");
  std::thread ta([&] {
    auto ch = grpc::CreateCustomChannel(d->grpc_address(), ClientCredentials(), name);
    while (!stop.load()) call(ch.get(), a);
  });
  std::thread tb([&] {
    while (!stop.load()) {
      grpc::ChannelArguments args = name;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // no connection shared with loop A
      auto ch = grpc::CreateCustomChannel(d->grpc_address(), ClientCredentials(), args);
      call(ch.get(), b);
    }
  });
  auto served = [&] {
    std::lock_guard<std::mutex> l(b.mu);
    return b.last_served;
  };
  auto wait_for = [](auto pred, std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!pred() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
  };
  ASSERT_TRUE(
      wait_for([&] { return a.ok.load() >= 5 && b.ok.load() >= 5; }, std::chrono::seconds(20)));
  EXPECT_EQ(served(), gen1);

  ProjectSecret(2, /*backdate=*/false);
  const auto rotated = std::chrono::steady_clock::now();
  // New handshakes get generation 2 within the reload interval (1 s) plus scheduling; bounded.
  EXPECT_TRUE(wait_for([&] { return served() == gen2; }, std::chrono::seconds(15)))
      << "still served:\n"
      << served();
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - rotated).count();
  const int a_after = a.ok.load() + 5, b_after = b.ok.load() + 5;
  EXPECT_TRUE(wait_for([&] { return a.ok.load() >= a_after && b.ok.load() >= b_after; },
                       std::chrono::seconds(20)));
  stop.store(true);
  ta.join();
  tb.join();

  EXPECT_EQ(a.failed.load(), 0) << a.first_error;
  EXPECT_EQ(b.failed.load(), 0) << b.first_error;
  EXPECT_EQ(served(), gen2);
  std::cerr << "rotation: new certificate served after " << took_s << " s; calls: " << a.ok.load()
            << " on one connection, " << b.ok.load() << " on new connections, 0 failed\n";

  // The expiry gauge follows the served certificate (re-read on the same interval).
  EXPECT_TRUE(wait_for(
      [&] {
        return MetricValue(d->metrics_port(), kExpirySeries) == static_cast<double>(NotAfter(2));
      },
      std::chrono::seconds(10)))
      << MetricValue(d->metrics_port(), kExpirySeries) << " vs " << NotAfter(2);
  EXPECT_GT(NotAfter(2), NotAfter(1));
  // The client CA's own expiry is reported beside it.
  EXPECT_GT(
      MetricValue(d->metrics_port(),
                  "skbnf_tls_certificate_expiry_timestamp_seconds{certificate=\"client_ca\"}"),
      0);
  EXPECT_TRUE(absl::StrContains(d->Stderr(), "TLS server certificate changed")) << d->Stderr();
  EXPECT_EQ(d->Stop(), 0);
}

// The client CA is re-read too: a client whose certificate the new CA signed is refused before
// the rollover (its handshake fails) and may change the data plane after it.
TEST_F(TlsRotationTest, ClientCaRolloverAdmitsTheNewCa) {
  ProjectSecret(1, /*backdate=*/true);
  std::string error;
  auto d = StartOnVolume(&error);
  ASSERT_NE(d, nullptr) << error;
  // A mutation that changes nothing: pausing worker core 1, then resuming it.
  auto pause_resume = [&]() -> grpc::Status {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new handshake every time
    auto stub = v1::Control::NewStub(
        grpc::CreateCustomChannel(d->grpc_address(), ClientCredentials("client2"), args));
    grpc::ClientContext info_ctx;
    info_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::GetInfoResponse info;
    grpc::Status st = stub->GetInfo(&info_ctx, v1::GetInfoRequest(), &info);
    if (!st.ok() || info.lcores().empty()) return st;
    uint32_t core = 0;
    for (const auto& l : info.lcores()) {
      if (l.role() == v1::LCORE_ROLE_WORKER) core = static_cast<uint32_t>(l.core());
    }
    grpc::ClientContext p_ctx, r_ctx;
    v1::PauseWorkerRequest p;
    p.set_core(core);
    v1::PauseWorkerResponse pr;
    st = stub->PauseWorker(&p_ctx, p, &pr);
    if (!st.ok()) return st;
    v1::ResumeWorkerRequest r;
    r.set_core(core);
    v1::ResumeWorkerResponse rr;
    return stub->ResumeWorker(&r_ctx, r, &rr);
  };
  EXPECT_FALSE(pause_resume().ok());  // the new CA is not trusted yet

  ProjectSecret(1, /*backdate=*/false, "ca-bundle.crt");
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  grpc::Status st = pause_resume();
  while (!st.ok() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    st = pause_resume();
  }
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(d->Stop(), 0);
}

// Start-up reads and checks the files: a key that is not the certificate's, or a file that is no
// certificate, stops the daemon with a message naming the flag.
TEST_F(TlsRotationTest, MismatchedKeyOrBadFileRefusesToStart) {
  std::string err;
  EXPECT_GT(RunDaemonToExit({"--tls-cert=" + F("server1.crt"), "--tls-key=" + F("server2.key")}, 30,
                            &err),
            0);
  EXPECT_TRUE(absl::StrContains(err, "--tls-key")) << err;
  EXPECT_TRUE(absl::StrContains(err, "is not the key of --tls-cert")) << err;
  EXPECT_GT(RunDaemonToExit({"--tls-cert=" + F("server1.key"), "--tls-key=" + F("server1.key")}, 30,
                            &err),
            0);
  EXPECT_TRUE(absl::StrContains(err, "--tls-cert")) << err;
  EXPECT_GT(RunDaemonToExit({"--tls-cert=" + F("server1.crt"), "--tls-key=" + F("server1.key"),
                             "--tls-reload-interval=0"},
                            30, &err),
            0);
  EXPECT_TRUE(absl::StrContains(err, "--tls-reload-interval")) << err;
}

}  // namespace
}  // namespace skbnf::control::testing
