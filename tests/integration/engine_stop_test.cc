// SPDX-License-Identifier: BSD-3-Clause
// Engine start and stop when a call fails or a worker does not stop (issue 31 item 7), on the
// real engine and real PMDs (net_null), in the dataplane_integration_tests process (EAL from
// dataplane_test.cc's main; ctest runs each test in its own process).
//
//   - a worker wedged inside its loop (a worker hook that blocks, worker_hooks.h): Stop returns
//     DeadlineExceeded within its bound, naming the lcore, its core and what its thread does
//     (the kernel's /proc/<pid>/task/<tid>/stat state and wchan, proc(5)); nothing is closed
//     under it; once it is released a second Stop completes with an exact audit;
//   - a port removed while the engine runs (rte_vdev_uninit: what a hot-unplug does): DPDK 22.11
//     lib/ethdev/rte_ethdev.c answers rte_eth_dev_stop and rte_eth_dev_close for a port id that
//     is no longer valid with -ENODEV (RTE_ETH_VALID_PORTID_OR_ERR_RET): Stop reports both
//     calls naming the port, still closes the other port and takes the exact audit;
//   - no pthread key left (glibc refuses pthread_key_create with EAGAIN past PTHREAD_KEYS_MAX,
//     pthread_key_create(3)): the skbnf pool, whose per-thread slot cache needs one, is refused
//     at Engine::Create naming the call. In a fresh process (a gtest death test in the
//     "threadsafe" style re-executes this binary), since the driver's key is made once per
//     process.
#include <pthread.h>
#include <rte_bus_vdev.h>
#include <rte_ethdev.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/worker_hooks.h"
#include "gtest/gtest.h"

namespace skbnf::dpdk {
namespace {

using namespace std::chrono_literals;

// Once `wedge` is set, the worker on `lcore` stops at the top of its next loop pass and blocks
// there (on a condition variable: one futex wait, nothing wakes it) until Release(): a worker
// stuck inside a pass, as one in a PMD call that never returns would be. A loop of short sleeps
// would leave the thread runnable (R) for a moment at every wake-up, and the kernel's state as
// read by Stop would depend on the moment it is read.
class Wedge final : public WorkerHooks {
 public:
  explicit Wedge(unsigned lcore) : lcore_(lcore) {}
  bool BeforeQuiescent(const WorkerView& w) override {
    if (w.lcore != lcore_ || !wedge.load()) return false;
    std::unique_lock<std::mutex> lock(mu_);
    wedged.store(true);
    cv_.wait(lock, [&] { return released_; });
    return true;
  }
  bool BeforePoll(const WorkerView&) override { return false; }
  void Release() {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

  std::atomic<bool> wedge{false}, wedged{false};

 private:
  const unsigned lcore_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

class EngineStopTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (wedge_ != nullptr) wedge_->Release();
    if (engine_ != nullptr && engine_->running()) (void)engine_->Stop();
    engine_.reset();
    for (const std::string& v : vdevs_) rte_vdev_uninit(v.c_str());
  }

  std::string Vdev(const std::string& driver) {
    static int seq = 0;
    std::string name = absl::StrCat(driver, "_stop", seq++);
    EXPECT_EQ(rte_vdev_init(name.c_str(), ""), 0) << name;
    vdevs_.push_back(name);
    return name;
  }

  // io between two new net_null ports, one worker (lcore 1) polling both.
  EngineConfig NullIoLoop() {
    const std::string a = Vdev("net_null"), b = Vdev("net_null");
    EngineConfig c;
    c.mode = ForwardingMode::kIo;
    c.ports = {{a, b, ""}, {b, a, ""}};
    c.workers = {{1, {{a, 0}, {b, 0}}}};
    c.pool_debug = true;
    return c;
  }

  Engine& Make(const EngineConfig& c) {
    auto e = Engine::Create(c);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) std::abort();
    engine_ = std::move(*e);
    return *engine_;
  }

  uint64_t Polls() {
    uint64_t n = 0;
    for (const WorkerSnapshot& w : engine_->Snapshot().workers) n += w.polls;
    return n;
  }

  std::unique_ptr<Engine> engine_;
  Wedge* wedge_ = nullptr;  // owned by engine_
  std::vector<std::string> vdevs_;
};

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

TEST_F(EngineStopTest, WedgedWorkerIsNamedAndStopReturnsWithinItsBound) {
  EngineConfig c = NullIoLoop();
  c.stop_timeout = 400ms;
  Engine& e = Make(c);
  auto hooks = std::make_unique<Wedge>(1);
  wedge_ = hooks.get();
  ASSERT_TRUE(e.SetWorkerHooks(std::move(hooks)).ok());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Polls() > 100; }));  // forwarding
  wedge_->wedge.store(true);
  ASSERT_TRUE(WaitFor([&] { return wedge_->wedged.load(); }));

  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st = e.Stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 5s) << "Stop waited far beyond its bound";
  const std::string msg(st.message());
  std::printf("stop: %s\n", msg.c_str());
  EXPECT_NE(msg.find("worker on lcore 1 (core"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did not stop within 400 ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("its loop did not come round"), std::string::npos) << msg;
  // The hook blocks: the kernel says so (S, in a futex wait).
  EXPECT_NE(msg.find("state S (sleeping)"), std::string::npos) << msg;
  EXPECT_FALSE(e.final_audit().ok);
  EXPECT_EQ(e.final_audit().message.rfind("not taken: worker on lcore 1", 0), 0u)
      << e.final_audit().message;
  // Nothing was closed under the worker: the ports still run.
  for (const PortInfo& p : e.Ports()) EXPECT_TRUE(p.started) << p.name;

  // Released, it sees the stop flag at once: the second Stop completes, exact.
  wedge_->Release();
  const absl::Status again = e.Stop();
  ASSERT_TRUE(again.ok()) << again;
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.exact);
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.available, a.populated) << a.message;
}

TEST_F(EngineStopTest, PortRemovedWhileRunningIsReportedAtStopAndTheRestIsClosed) {
  EngineConfig c = NullIoLoop();
  Engine& e = Make(c);
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Polls() > 100; }));
  // Parked first: a worker polling a released port would call ethdev's dummy burst functions.
  ASSERT_TRUE(e.PauseWorker(1).ok());
  const std::string removed = vdevs_[1];
  uint16_t id = 0;
  ASSERT_EQ(rte_eth_dev_get_port_by_name(removed.c_str(), &id), 0);
  ASSERT_EQ(rte_vdev_uninit(removed.c_str()), 0);  // closes and releases the port

  const absl::Status st = e.Stop();
  ASSERT_EQ(st.code(), absl::StatusCode::kInternal) << st;
  const std::string port = absl::StrCat("port ", id, " (", removed, ")");
  const std::string msg(st.message());
  EXPECT_NE(msg.find(port + ": rte_eth_dev_stop: No such device"), std::string::npos) << msg;
  EXPECT_NE(msg.find(port + ": rte_eth_dev_close: No such device"), std::string::npos) << msg;
  // The other port was stopped and closed (its id is free again) and the audit was taken.
  uint16_t other = 0;
  EXPECT_NE(rte_eth_dev_get_port_by_name(vdevs_[0].c_str(), &other), 0) << "not closed";
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.exact);
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.available, a.populated);
  EXPECT_NE(a.message.find(port + ": rte_eth_dev_stop"), std::string::npos) << a.message;
}

// In a child process (the death test re-executes this binary for this test only): every
// pthread key taken before the engine's first pool.
TEST_F(EngineStopTest, NoPthreadKeyLeftRefusesThePoolNamingTheCall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::vector<pthread_key_t> keys;
        pthread_key_t k;
        while (keys.size() < 100000 && pthread_key_create(&k, nullptr) == 0) keys.push_back(k);
        auto e = Engine::Create(NullIoLoop());
        for (pthread_key_t key : keys) pthread_key_delete(key);
        if (e.ok()) {
          std::fprintf(stderr, "created with %zu keys taken\n", keys.size());
          std::_Exit(1);
        }
        std::fprintf(stderr, "refused: %s\n", std::string(e.status().message()).c_str());
        std::_Exit(e.status().code() == absl::StatusCode::kResourceExhausted ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "refused: .*pthread_key_create \\(the per-thread slot cache's exit key\\): Resource "
      "temporarily unavailable");
}

}  // namespace
}  // namespace skbnf::dpdk
