// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/test_hooks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/worker_hooks.h"

ABSL_FLAG(int32_t, test_stall_lcore, -1, "Tests only: the worker lcore --test-stall-ms stalls.");
ABSL_FLAG(int32_t, test_stall_ms, 0,
          "Tests only: how late that worker is to its quiescent point after each new epoch.");

ABSL_FLAG(std::string, test_preflight_root, "/",
          "Tests only: the start-up checks read /sys, /proc, /dev and cgroups under this "
          "directory.");

ABSL_FLAG(std::string, test_reload_gate, "",
          "Tests only: each --config reload, once it has parsed the file and before it takes the "
          "mutation lock, waits (at most 15 s) until this path exists, and removes it.");

ABSL_FLAG(std::string, test_depot_hold_gate, "",
          "Tests only: each time this path exists, the pool's depot lock is held "
          "--test-depot-hold-ms, then the path is removed.");
ABSL_FLAG(int32_t, test_depot_hold_ms, 0,
          "Tests only: how long --test-depot-hold-gate holds the depot lock.");

namespace skbnf::control {

DepotHold::DepotHold(pool::Pool& pool, std::string gate, std::chrono::milliseconds hold)
    : thread_([this, &pool, gate = std::move(gate), hold] {
        while (!stop_.load(std::memory_order_relaxed)) {
          std::error_code ec;
          if (!std::filesystem::exists(gate, ec)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
          }
          const bool held = pool.HoldDepotForTest(hold);
          std::filesystem::remove(gate, ec);
          std::fprintf(stderr, "skbnfd: test: depot lock %s\n",
                       held ? absl::StrCat("held ", hold.count(), " ms").c_str()
                            : "not held: the strategy has no depot");
        }
      }) {}

DepotHold::~DepotHold() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

namespace {

absl::StatusOr<std::unique_ptr<DepotHold>> StartDepotHold(dpdk::Engine& engine) {
  const std::string gate = absl::GetFlag(FLAGS_test_depot_hold_gate);
  const int ms = absl::GetFlag(FLAGS_test_depot_hold_ms);
  if (gate.empty() && ms == 0) return nullptr;
  if (gate.empty() || ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--test-depot-hold-gate='", gate, "' --test-depot-hold-ms=", ms,
                     ": write both, a path and a positive number of milliseconds"));
  }
  if (engine.pool() == nullptr) {
    return absl::InvalidArgumentError("--test-depot-hold-gate needs the skbnf pool (pool_ops skbnf)");
  }
  return std::make_unique<DepotHold>(*engine.pool(), gate, std::chrono::milliseconds(ms));
}

}  // namespace

std::string PreflightRoot() { return absl::GetFlag(FLAGS_test_preflight_root); }

std::function<void(const ParsedConfig&)> ReloadTestGate() {
  const std::string gate = absl::GetFlag(FLAGS_test_reload_gate);
  if (gate.empty()) return nullptr;
  return [gate](const ParsedConfig& parsed) {
    std::fprintf(stderr,
                 "skbnfd: config reload: test gate: parsed %zu routes, the mutation lock not "
                 "taken; waiting for %s\n",
                 parsed.next.engine.routes.size(), gate.c_str());
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    std::error_code ec;
    while (!std::filesystem::remove(gate, ec) && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::fprintf(stderr, "skbnfd: config reload: test gate: passed\n");
  };
}

namespace {

// The worker on `lcore_`, each time it sees a strategy epoch it has not seen, sleeps `stall_`
// before its quiescent point, as a worker stuck in a long burst would.
//
// The stall must fall in the iteration that adopts the epoch (the slow log then names both
// causes, swap and test_hook: integration.latency_skbnfd). An iteration runs from one pass's
// BeforePoll to the next's (forward.cc's LoopPerf::Close), so a stall before the quiescent point
// that adopts the epoch, or after it in the same pass, is in that iteration. The pool stores its
// epoch before it publishes each core's word (pool_swap.cc PublishAndWait), so a worker can see
// the new epoch at either hook of a pass whose quiescent point did not adopt it. The rule:
//   BeforeQuiescent  stalls when the pool's epoch is one it has not stalled for (the usual case:
//                    30 ms later the word is there and this quiescent point adopts it);
//   BeforePoll       stalls when this pass's quiescent point adopted an epoch (the core's
//                    acked_epoch moved) and BeforeQuiescent of this pass did not stall: the
//                    epoch was stored after BeforeQuiescent looked, or the word came a pass after
//                    the first stall (then the worker stalls twice for one epoch: a test hook may
//                    be later than asked, never in the wrong iteration).
// A stall in BeforePoll of a pass that adopted nothing (the old rule: the epoch stored between
// that pass's quiescent point and BeforePoll) put the stall one iteration before the adoption;
// the slow log then had a 30 ms `test_hook` iteration without `swap` (one run in a dozen).
class QuiesceStall final : public dpdk::WorkerHooks {
 public:
  QuiesceStall(unsigned lcore, std::chrono::milliseconds stall, uint64_t epoch)
      : lcore_(lcore), stall_(stall), stalled_for_(epoch), adopted_(epoch) {}

  bool BeforeQuiescent(const dpdk::WorkerView& w) override {
    stalled_this_pass_ = false;
    if (w.lcore != lcore_ || w.pool == nullptr) return false;
    const uint64_t e = w.pool->epoch();
    if (e == stalled_for_) return false;
    Stall(*w.pool);
    return true;
  }
  bool BeforePoll(const dpdk::WorkerView& w) override {
    if (w.lcore != lcore_ || w.pool == nullptr) return false;
    const uint64_t a =
        w.pool->SlotOf(static_cast<int>(w.lcore)).acked_epoch.load(std::memory_order_acquire);
    if (a == adopted_) return false;
    adopted_ = a;
    if (stalled_this_pass_) return false;
    Stall(*w.pool);
    return true;
  }

 private:
  // The epoch after the sleep: a swap that timed out meanwhile and rolled back (a newer epoch)
  // is not stalled for again.
  void Stall(const pool::Pool& pool) {
    std::this_thread::sleep_for(stall_);
    stalled_for_ = pool.epoch();
    stalled_this_pass_ = true;
  }

  const unsigned lcore_;
  const std::chrono::milliseconds stall_;
  // Read and written by that worker only.
  uint64_t stalled_for_;            // the newest epoch it stalled for
  uint64_t adopted_;                // its core's acked_epoch at the last BeforePoll
  bool stalled_this_pass_ = false;  // BeforeQuiescent of this pass stalled
};

absl::Status ApplyStallHook(dpdk::Engine& engine) {
  const int lcore = absl::GetFlag(FLAGS_test_stall_lcore);
  const int ms = absl::GetFlag(FLAGS_test_stall_ms);
  if (lcore < 0 && ms == 0) return absl::OkStatus();
  const std::vector<unsigned> workers = engine.WorkerLcores();
  if (lcore < 0 || ms <= 0 ||
      std::find(workers.begin(), workers.end(), static_cast<unsigned>(lcore)) == workers.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--test-stall-lcore=", lcore, " --test-stall-ms=", ms,
                     ": write a worker lcore and a positive number of milliseconds"));
  }
  const uint64_t epoch = engine.pool() != nullptr ? engine.pool()->epoch() : 0;
  return engine.SetWorkerHooks(std::make_unique<QuiesceStall>(
      static_cast<unsigned>(lcore), std::chrono::milliseconds(ms), epoch));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DepotHold>> ApplyTestHooks(dpdk::Engine& engine) {
  if (absl::Status st = ApplyStallHook(engine); !st.ok()) return st;
  return StartDepotHold(engine);
}

}  // namespace skbnf::control
