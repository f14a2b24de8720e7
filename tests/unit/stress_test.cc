// SPDX-License-Identifier: BSD-3-Clause
// Multi-threaded stress: worker threads acting as cores allocate, hold and free objects (tagged
// with an owner, so an object handed out twice is caught at once) while a control thread swaps
// strategies thousands of times and pauses/resumes workers, and a non-worker thread uses the
// pool too. At the end every object is back in the store.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::SetTag;

constexpr int kWorkers = 3;
constexpr int kSwaps = 5000;

class Owners {
 public:
  explicit Owners(TestedPool& pool) : pool_(pool), owner_(pool.store().index_space()) {
    for (auto& o : owner_) o.store(-2);
  }
  void Took(void* const* objs, unsigned n, int who) {
    for (unsigned i = 0; i < n; ++i) {
      int64_t idx = pool_.store().IndexOf(objs[i]);
      if (idx < 0) {
        violations_.fetch_add(1);
        continue;
      }
      int expected = -2;
      if (!owner_[idx].compare_exchange_strong(expected, who)) violations_.fetch_add(1);
    }
  }
  void Giving(void* const* objs, unsigned n, int who) {
    for (unsigned i = 0; i < n; ++i) {
      int64_t idx = pool_.store().IndexOf(objs[i]);
      int expected = who;
      if (idx < 0 || !owner_[idx].compare_exchange_strong(expected, -2)) violations_.fetch_add(1);
    }
  }
  uint64_t violations() const { return violations_.load(); }

 private:
  TestedPool& pool_;
  std::vector<std::atomic<int>> owner_;
  std::atomic<uint64_t> violations_{0};
};

void HolderLoop(TestedPool& pool, Owners& owners, int core, int who, int rx_port, uint32_t seed,
                std::atomic<bool>& stop, std::atomic<uint64_t>& ops) {
  std::mt19937 rng(seed);
  std::vector<void*> held;
  void* burst[64];
  while (!stop.load(std::memory_order_relaxed)) {
    if (core != kNoCore && !pool.Quiesce(core)) {
      std::this_thread::yield();
      continue;
    }
    if (core != kNoCore) pool.SetRxPort(core, rx_port);
    const unsigned n = rng() % 4 == 0 ? 1 : 1 + rng() % 64;  // single objects: the fast path
    if (rng() % 2 == 0 && held.size() < 512) {
      if (pool.Get(core, burst, n)) {
        owners.Took(burst, n, who);
        for (unsigned i = 0; i < n; ++i) {
          SetTag(burst[i], static_cast<int16_t>(rng() % kWorkers));  // some recycle here
          held.push_back(burst[i]);
        }
      }
    } else if (!held.empty()) {
      const unsigned k = std::min<unsigned>(n, static_cast<unsigned>(held.size()));
      for (unsigned i = 0; i < k; ++i) {
        size_t j = rng() % held.size();
        burst[i] = held[j];
        held[j] = held.back();
        held.pop_back();
      }
      owners.Giving(burst, k, who);
      pool.Put(core, burst, k);
    }
    ops.fetch_add(1, std::memory_order_relaxed);
    // More threads than cores here: let the others (and the control thread) run.
    std::this_thread::yield();
  }
  // Give everything back from this thread, at a moment this core is running.
  for (size_t off = 0; off < held.size(); off += 64) {
    const unsigned k = static_cast<unsigned>(std::min<size_t>(64, held.size() - off));
    owners.Giving(held.data() + off, k, who);
    pool.Put(core, held.data() + off, k);
  }
}

// (debug, objects). Debug on turns the single-object fast paths off; off is the production
// path. With 1024 objects the four holders (up to 512 each) exhaust the pool all the time, so
// failing Gets reclaim from the other workers while swaps and pauses go on.
class StressTest : public ::testing::TestWithParam<std::tuple<bool, uint32_t>> {};

TEST_P(StressTest, ThousandsOfSwapsUnderLoadLoseAndDuplicateNothing) {
  const uint32_t kObjects = std::get<1>(GetParam());
  auto t =
      MakePool("magazine", {.n = kObjects, .objs_per_slab = 64, .debug = std::get<0>(GetParam())});
  Owners owners(*t.pool);
  for (int c = 0; c < kWorkers; ++c) {
    ASSERT_TRUE(t->RegisterWorker(c, {{.port = c, .ring_size = 64}}).ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ops{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kWorkers; ++c) {
    threads.emplace_back(HolderLoop, std::ref(*t.pool), std::ref(owners), c, c, c, 100 + c,
                         std::ref(stop), std::ref(ops));
  }
  threads.emplace_back(HolderLoop, std::ref(*t.pool), std::ref(owners), kNoCore, 99, -1, 7,
                       std::ref(stop), std::ref(ops));

  const std::vector<StrategySpec> specs = testing::AllSpecs();
  std::mt19937 rng(42);
  int ok = 0, rolled_back = 0, paused = 0;
  for (int i = 0; i < kSwaps; ++i) {
    if (i % 50 == 25) {
      const int c = static_cast<int>(rng() % kWorkers);
      if (t->PauseWorker(c).ok()) {
        ++paused;
        EXPECT_TRUE(t->IsPaused(c));
        SwapReport r = t->Swap(specs[rng() % specs.size()]);
        if (r.status.ok())
          ++ok;
        else
          ++rolled_back;
        EXPECT_TRUE(t->ResumeWorker(c).ok());
        continue;
      }
    }
    SwapReport r = t->Swap(specs[rng() % specs.size()]);
    if (r.status.ok()) {
      ++ok;
    } else {
      ++rolled_back;
      EXPECT_TRUE(r.rolled_back);
    }
  }
  stop = true;
  for (auto& th : threads) th.join();
  for (int c = 0; c < kWorkers; ++c) ASSERT_TRUE(t->UnregisterWorker(c).ok());

  std::printf(
      "stress: %d swaps ok, %d rolled back, %d with a paused worker, %llu bursts, %llu reclaims\n",
      ok, rolled_back, paused, static_cast<unsigned long long>(ops.load()),
      static_cast<unsigned long long>(t->reclaims()));
  EXPECT_EQ(owners.violations(), 0u);
  EXPECT_EQ(t->double_frees(), 0u);
  EXPECT_EQ(t->foreign_frees(), 0u);
  // The swaps the test saw succeed and fail are the ones the pool counted (a swap that reported
  // ok without committing, or a rollback the pool did not count, fails here), most of them
  // committed, and at least one with a paused worker.
  EXPECT_EQ(t->swaps_ok(), static_cast<uint64_t>(ok));
  EXPECT_EQ(t->swaps_failed(), static_cast<uint64_t>(rolled_back));
  EXPECT_GT(ok, kSwaps / 2);  // a loaded 2-core machine may time out a few, never most
  EXPECT_GT(paused, 0);
  EXPECT_GT(ops.load(), static_cast<uint64_t>(kSwaps));
  EXPECT_EQ(t->in_store(), kObjects);
  EXPECT_EQ(t->in_depots(), 0u);
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.handed_out, 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, StressTest,
                         ::testing::Combine(::testing::Values(false, true),
                                            ::testing::Values(4096u, 1024u)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, uint32_t>>& p) {
                           return std::string(std::get<0>(p.param) ? "Debug" : "Production") +
                                  (std::get<1>(p.param) == 1024u ? "Exhausted" : "");
                         });

}  // namespace
}  // namespace skbnf::pool
