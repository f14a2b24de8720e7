// SPDX-License-Identifier: BSD-3-Clause
// Health as the kubelet sees it (server/control/health.h): the services liveness and readiness, the
// plaintext health-only listener (--health-listen) beside a TLS control listener, and a link flap
// that must change readiness and never liveness.
//
// The kubelet's gRPC probe (Kubernetes "Configure Liveness, Readiness and Startup Probes":
// `grpc: {port, service}`; kubernetes/kubernetes pkg/probe/grpc/grpc.go dials with
// grpc.WithInsecure(), "credentials are currently not supported") calls
// grpc.health.v1.Health/Check in plaintext, with no TLS and no client certificate, and treats
// anything but SERVING (and any error) as a failure; that is what these tests do.
//
// The link flap: against the fake daemon, its links are down while a file exists
// (--sim-link-down-file). Against skbnfd, health_link_flap.sh runs this test inside a network
// namespace with skbnfd forwarding between net_tap (a real kernel tap interface) and net_null,
// and gives the commands that take the tap's link down and up (`ip link set <tap> down/up`):
// DPDK's tap PMD reports its link from the interface's IFF_UP and IFF_RUNNING flags on every
// rte_eth_link_get_nowait (drivers/net/tap/rte_eth_tap.c, tap_link_update). net_af_packet and
// net_af_xdp would not do: in DPDK 22.11 their link status is set at start and never re-read
// (tests/integration/dataplane_test.cc, AfPacketTxFullAndLinkDownUp, saw "up" through 20 s of
// the interface being down).
#include "server/control/health.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/sync_stream.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "protos/grpc_test/health_reflection.pb.h"
#include "tests/control/daemon_harness.h"
#include "tests/control/null_backend.h"
#include "tests/control/reflection_client.h"

namespace skbnf::control::testing {
namespace {

using grpc::StatusCode;
using Status = grpc_test::HealthCheckResponse;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

grpc::Status Check(grpc::Channel* ch, const std::string& service, Status* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc_test::HealthCheckRequest req;
  req.set_service(service);
  grpc::internal::RpcMethod m("/grpc.health.v1.Health/Check",
                              grpc::internal::RpcMethod::NORMAL_RPC);
  return grpc::internal::BlockingUnaryCall(ch, m, &ctx, req, resp);
}

// The service's status, or -1 when the call failed.
int StatusOf(grpc::Channel* ch, const std::string& service) {
  Status r;
  return Check(ch, service, &r).ok() ? static_cast<int>(r.status()) : -1;
}

// Polls `service` until it reports `want`, for at most `deadline`.
bool WaitStatus(grpc::Channel* ch, const std::string& service, int want,
                std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (StatusOf(ch, service) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return StatusOf(ch, service) == want;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> EnvWords(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return {};
  return absl::StrSplit(v, ' ', absl::SkipEmpty());
}

// ---- the rule itself, on hand-made facts (no daemon)

PortInfo Port(int id, bool started, bool has_link, bool up) {
  PortInfo p;
  p.id = id;
  p.name = absl::StrCat("net_tap", id);
  p.started = started;
  p.has_link = has_link;
  p.link_up = up;
  return p;
}

TEST(HealthRule, ReadyOnlyWhenEveryPortIsStartedWithItsLinkUpAndEveryWorkerRuns) {
  Health h;
  h.ports = {Port(0, true, true, true), Port(1, true, true, true)};
  h.workers = {{1, 1, true}, {2, 2, true}};
  EXPECT_TRUE(EvaluateReadiness(h).ready);

  Health down = h;
  down.ports[1].link_up = false;
  Readiness r = EvaluateReadiness(down);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.not_ready.size(), 1u);
  EXPECT_EQ(r.not_ready[0], "port 1 (net_tap1): link down");

  // A port whose start failed is not ready, whatever its link says.
  Health not_started = h;
  not_started.ports[0].started = false;
  r = EvaluateReadiness(not_started);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.not_ready.size(), 1u);
  EXPECT_EQ(r.not_ready[0], "port 0 (net_tap0): not started");

  // A link the PMD did not report counts as down.
  Health unknown = h;
  unknown.ports[0].has_link = false;
  unknown.ports[0].link_up = true;
  EXPECT_FALSE(EvaluateReadiness(unknown).ready);

  Health worker = h;
  worker.workers[1].running = false;
  r = EvaluateReadiness(worker);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.not_ready.size(), 1u);
  EXPECT_EQ(r.not_ready[0], "worker core 2 (lcore 2): loop not running");

  // Every reason is listed, so the log names them all.
  Health all = h;
  all.ports[0].link_up = false;
  all.ports[1].started = false;
  all.workers[0].running = false;
  EXPECT_EQ(EvaluateReadiness(all).not_ready.size(), 3u);

  EXPECT_FALSE(EvaluateReadiness(Health{}).ready);  // no ports, no workers: nothing forwards
}

// A data plane whose reads can be made to hang (a PMD call that never returns): the only thing
// that must fail liveness. Ports up, workers running otherwise.
class HangingBackend final : public NullBackend {
 public:
  void Hang(bool h) {
    std::lock_guard<std::mutex> l(mu_);
    hang_ = h;
    cv_.notify_all();
  }
  Health GetHealth() const override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return !hang_; });
    Health h;
    h.ports = {Port(0, true, true, true)};
    h.workers = {{1, 1, true}};
    return h;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool hang_ = false;
};

// Liveness fails when the health thread's read of the data plane has not completed for
// HealthTiming::stale, and recovers when it completes again; readiness keeps its last value.
TEST(HealthRule, LivenessFailsOnlyWhenTheDataPlaneReadHangs) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  grpc::CallbackGenericService unimplemented;  // a server needs a method to be built
  builder.RegisterCallbackGenericService(&unimplemented);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto ch = server->InProcessChannel(grpc::ChannelArguments());
  HangingBackend backend;
  {
    HealthPublisher publisher(backend, {server.get()},
                              {std::chrono::milliseconds(20), std::chrono::milliseconds(300)});
    EXPECT_EQ(StatusOf(ch.get(), kLivenessService), Status::SERVING);
    EXPECT_EQ(StatusOf(ch.get(), kReadinessService), Status::SERVING);
    backend.Hang(true);
    EXPECT_TRUE(WaitStatus(ch.get(), kLivenessService, Status::NOT_SERVING));
    EXPECT_EQ(StatusOf(ch.get(), kReadinessService), Status::SERVING);
    backend.Hang(false);
    EXPECT_TRUE(WaitStatus(ch.get(), kLivenessService, Status::SERVING));
  }
  server->Shutdown();
}

// ---- against the daemon

// The fake's simulated failed port start: readiness NOT_SERVING and says why; liveness SERVING.
TEST(Health, PortWhoseStartFailedIsNotReadyButAlive) {
  if (!DaemonIsFake()) {
    GTEST_SKIP() << "skbnfd exits when a port does not start (Engine::Start); the rule is "
                    "HealthRule.*'s";
  }
  std::string error;
  auto d = Daemon::Start({"--sim-port-not-started=1"}, &error);
  ASSERT_NE(d, nullptr) << error;
  auto ch = d->Channel();
  EXPECT_TRUE(WaitStatus(ch.get(), kLivenessService, Status::SERVING));
  EXPECT_EQ(StatusOf(ch.get(), kReadinessService), Status::NOT_SERVING);
  EXPECT_EQ(StatusOf(ch.get(), ""), Status::NOT_SERVING);
  EXPECT_EQ(StatusOf(ch.get(), "skbnf.v1.Control"), Status::NOT_SERVING);
  EXPECT_TRUE(absl::StrContains(d->Stderr(),
                                "readiness NOT_SERVING: port 1 (net_null1): "
                                "not started"))
      << d->Stderr();
  EXPECT_EQ(d->Stop(), 0);
}

// A link goes down and comes back: readiness follows it (NOT_SERVING, then SERVING), liveness
// stays SERVING on every one of the checks a second thread makes throughout, and the log says
// once which port is not ready.
TEST(HealthLinkFlap, LinkFlapChangesReadinessNeverLiveness) {
  std::vector<std::string> args;
  std::function<int()> link_down, link_up;
  TempDir dir;
  if (DaemonIsFake()) {
    const std::string flag = dir.File("link-down");
    args = {"--sim-link-down-file=" + flag};
    link_down = [flag] { return Shell("touch " + flag); };
    link_up = [flag] { return Shell("rm " + flag); };
  } else {
    args = EnvWords("SKBNF_CONTROL_DAEMON_LINK_ARGS");
    const char* down = std::getenv("SKBNF_CONTROL_LINK_DOWN");
    const char* up = std::getenv("SKBNF_CONTROL_LINK_UP");
    if (args.empty() || down == nullptr || up == nullptr) {
      GTEST_SKIP() << "needs health_link_flap.sh (a netns with a tap interface skbnfd forwards "
                      "on, and the commands that flap its link)";
    }
    link_down = [down] { return Shell(down); };
    link_up = [up] { return Shell(up); };
  }
  args.insert(args.begin(), "--health-listen=127.0.0.1:0");  // before any "-- <EAL args>"
  std::string error;
  auto d = Daemon::Start(args, &error);
  ASSERT_NE(d, nullptr) << error;
  ASSERT_FALSE(d->health_address().empty());
  // The probe's view: the plaintext health-only listener, as the kubelet calls it.
  auto ch = grpc::CreateChannel(d->health_address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(WaitStatus(ch.get(), kReadinessService, Status::SERVING)) << d->Stderr();

  std::atomic<bool> stop{false};
  std::atomic<int> live_checks{0}, live_failures{0};
  std::string first_failure;
  std::thread liveness([&] {
    auto lch = grpc::CreateChannel(d->health_address(), grpc::InsecureChannelCredentials());
    while (!stop.load()) {
      const int st = StatusOf(lch.get(), kLivenessService);
      live_checks.fetch_add(1);
      if (st != Status::SERVING && live_failures.fetch_add(1) == 0) {
        first_failure = absl::StrCat("status ", st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });

  const size_t log_mark = d->Stderr().size();  // count the log lines of the flap only
  ASSERT_EQ(link_down(), 0);
  EXPECT_TRUE(WaitStatus(ch.get(), kReadinessService, Status::NOT_SERVING)) << d->Stderr();
  EXPECT_EQ(StatusOf(ch.get(), ""), Status::NOT_SERVING);
  EXPECT_EQ(StatusOf(ch.get(), "skbnf.v1.Control"), Status::NOT_SERVING);
  // The control listener says the same.
  EXPECT_EQ(StatusOf(d->Channel().get(), kReadinessService), Status::NOT_SERVING);
  const int checks_while_down = live_checks.load();
  ASSERT_EQ(link_up(), 0);
  EXPECT_TRUE(WaitStatus(ch.get(), kReadinessService, Status::SERVING)) << d->Stderr();
  EXPECT_EQ(StatusOf(ch.get(), ""), Status::SERVING);
  // A few more liveness checks after the link is back, then stop.
  const int target = live_checks.load() + 5;
  for (int i = 0; i < 500 && live_checks.load() < target; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.store(true);
  liveness.join();

  EXPECT_EQ(live_failures.load(), 0) << first_failure;
  EXPECT_GT(checks_while_down, 0);
  EXPECT_GE(live_checks.load(), target);
  const std::string log = d->Stderr().substr(log_mark);
  std::cerr << "the daemon's log during the flap:\n" << log;
  // One line per change, naming the port: down once, back once.
  EXPECT_EQ(Count(log, "readiness NOT_SERVING"), 1u) << log;
  EXPECT_TRUE(absl::StrContains(log, "): link down")) << log;
  EXPECT_EQ(Count(log, "readiness SERVING"), 1u) << log;
  EXPECT_EQ(Count(d->Stderr(), "liveness NOT_SERVING"), 0u) << d->Stderr();
  EXPECT_EQ(d->Stop(), 0);
}

// The health-only listener is plaintext and serves grpc.health.v1 and nothing else, while the
// control listener beside it is TLS (and serves the same health statuses).
TEST(Health, HealthOnlyListenerIsPlaintextHealthAndNothingElse) {
  TempDir dir;
  const std::string d = dir.path();
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  ASSERT_EQ(Shell(absl::StrCat(
                "set -e; cd ", d, "; exec >openssl.log 2>&1\n", "openssl req -x509 ", key,
                " -keyout ca.key -out ca.crt -days 2 -subj '/CN=skbnf test CA'\n",
                "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext\n",
                "openssl req ", key, " -keyout server.key -out server.csr -subj '/CN=localhost'\n",
                "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                "-days 2 -extfile server.ext -out server.crt\n")),
            0)
      << Read(dir.File("openssl.log"));
  std::string error;
  auto daemon =
      Daemon::Start({"--tls-cert=" + dir.File("server.crt"), "--tls-key=" + dir.File("server.key"),
                     "--tls-client-ca=" + dir.File("ca.crt"), "--health-listen=127.0.0.1:0"},
                    &error);
  ASSERT_NE(daemon, nullptr) << error;
  ASSERT_FALSE(daemon->health_address().empty());
  auto plain = grpc::CreateChannel(daemon->health_address(), grpc::InsecureChannelCredentials());

  // Health, in plaintext: every service name the probes use.
  ASSERT_TRUE(WaitStatus(plain.get(), kReadinessService, Status::SERVING)) << daemon->Stderr();
  EXPECT_EQ(StatusOf(plain.get(), kLivenessService), Status::SERVING);
  EXPECT_EQ(StatusOf(plain.get(), ""), Status::SERVING);
  EXPECT_EQ(StatusOf(plain.get(), "skbnf.v1.Control"), Status::SERVING);
  Status r;
  EXPECT_EQ(Check(plain.get(), "no.such.Service", &r).error_code(), StatusCode::NOT_FOUND);

  // Nothing else: the control API and reflection are UNIMPLEMENTED there.
  {
    auto stub = v1::Control::NewStub(plain);
    grpc::ClientContext ctx;
    v1::GetInfoResponse info;
    EXPECT_EQ(stub->GetInfo(&ctx, v1::GetInfoRequest(), &info).error_code(),
              StatusCode::UNIMPLEMENTED);
  }
  {
    auto stub = v1::Control::NewStub(plain);
    grpc::ClientContext ctx;
    v1::PauseWorkerRequest req;
    req.set_core(1);
    v1::PauseWorkerResponse resp;
    EXPECT_EQ(stub->PauseWorker(&ctx, req, &resp).error_code(), StatusCode::UNIMPLEMENTED);
  }
  {
    grpc::ClientContext ctx;
    std::unique_ptr<ReflectionStream> rw = OpenReflection(plain.get(), &ctx);
    grpc_test::ServerReflectionRequest req;
    req.set_list_services("");
    rw->Write(req);
    grpc_test::ServerReflectionResponse resp;
    EXPECT_FALSE(rw->Read(&resp));
    rw->WritesDone();
    EXPECT_EQ(rw->Finish().error_code(), StatusCode::UNIMPLEMENTED);
  }

  // The control listener is TLS: plaintext fails there; a TLS client gets the same statuses.
  auto plain_to_control =
      grpc::CreateChannel(daemon->grpc_address(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(StatusOf(plain_to_control.get(), kReadinessService), -1);
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = Read(dir.File("ca.crt"));
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto tls = grpc::CreateCustomChannel(daemon->grpc_address(), grpc::SslCredentials(o), args);
  EXPECT_EQ(StatusOf(tls.get(), kLivenessService), Status::SERVING);
  EXPECT_EQ(StatusOf(tls.get(), kReadinessService), Status::SERVING);
  EXPECT_EQ(StatusOf(tls.get(), ""), Status::SERVING);
  EXPECT_EQ(daemon->Stop(), 0);
}

TEST(Health, BadHealthListenRefusesToStart) {
  std::string err;
  EXPECT_GT(RunDaemonToExit({"--health-listen=nonsense"}, 30, &err), 0);
  EXPECT_TRUE(absl::StrContains(err, "--health-listen")) << err;
  EXPECT_TRUE(absl::StrContains(err, "0.0.0.0:50052")) << err;  // says what to write
}

}  // namespace
}  // namespace skbnf::control::testing
