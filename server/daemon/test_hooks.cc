// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/test_hooks.h"

#include <algorithm>
#include <chrono>
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
class QuiesceStall final : public dpdk::WorkerHooks {
 public:
  QuiesceStall(unsigned lcore, std::chrono::milliseconds stall, uint64_t epoch)
      : lcore_(lcore), stall_(stall), seen_epoch_(epoch) {}

  bool BeforeQuiescent(const dpdk::WorkerView& w) override { return StallOnNewEpoch(w); }
  // A swap published between BeforeQuiescent's look and the quiescent point (the pool stores
  // its epoch, then each core's word: pool_swap.cc PublishAndWait) is adopted in that pass
  // without a stall; the stall then comes here, in the same iteration, so that the slow log
  // still finds it in the swap's iteration (its causes swap and test_hook), not in the next.
  bool BeforePoll(const dpdk::WorkerView& w) override { return StallOnNewEpoch(w); }

 private:
  bool StallOnNewEpoch(const dpdk::WorkerView& w) {
    if (w.lcore != lcore_ || w.pool == nullptr) return false;
    if (w.pool->epoch() == seen_epoch_) return false;
    std::this_thread::sleep_for(stall_);
    seen_epoch_ = w.pool->epoch();
    return true;
  }

  const unsigned lcore_;
  const std::chrono::milliseconds stall_;
  uint64_t seen_epoch_;  // read and written by that worker only
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
