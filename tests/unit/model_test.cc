// SPDX-License-Identifier: BSD-3-Clause
// Randomised operation sequences against a simple model: the set of objects the host holds.
// Seeds alternate the debug switch (even: on), so the production fast paths run too.
// Allocations, frees (worker core and other threads), RX-port changes and swaps across every
// spec; after every operation the audit must balance exactly against the model, no object may
// be handed out twice, and an allocation may only fail when the pool really has too few.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <random>
#include <unordered_set>
#include <vector>

#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::SetTag;

// Runs a swap from another thread while this (worker) thread keeps reaching its quiescent point.
SwapReport SwapFromControl(Pool& pool, int core, const StrategySpec& spec) {
  auto f = std::async(std::launch::async, [&] { return pool.Swap(spec); });
  while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) pool.Quiesce(core);
  return f.get();
}

void RunModel(uint32_t seed, int ops) {
  constexpr int kCore = 0;
  constexpr uint32_t kObjects = 512;
  const std::vector<StrategySpec> specs = testing::AllSpecs();
  std::mt19937 rng(seed);
  // The worker is this thread, so a non-worker Get here cannot wait for it to serve a reclaim
  // request: it gives up at once and the worker serves it at its next quiescent point.
  auto t = MakePool(
      specs[seed % specs.size()].ToString(),
      {.n = kObjects, .debug = seed % 2 == 0, .reclaim_wait = std::chrono::microseconds(1)});
  ASSERT_TRUE(t->RegisterWorker(kCore, {{.port = 0, .ring_size = 32}}).ok());
  std::vector<void*> held;
  std::unordered_set<void*> held_set;
  int rx_port = 0;
  t->SetRxPort(kCore, rx_port);
  int swaps = 0;
  for (int op = 0; op < ops; ++op) {
    ASSERT_TRUE(t->Quiesce(kCore));  // top of the worker's poll loop
    const StrategySpec spec = t->strategy();
    const int kind = static_cast<int>(rng() % 100);
    const int core = rng() % 5 == 0 ? kNoCore : kCore;
    if (kind < 45) {
      const unsigned n = 1 + rng() % 40;
      std::vector<void*> got(n);
      if (t->Get(core, got.data(), n)) {
        for (void* o : got) {
          ASSERT_GE(t->store().IndexOf(o), 0) << "seed " << seed << " op " << op;
          ASSERT_TRUE(held_set.insert(o).second)
              << "object handed out twice; seed " << seed << " op " << op << " " << spec.ToString();
          SetTag(o, 0);
          held.push_back(o);
        }
      } else if (core == kCore) {
        // Every object not held is reachable from this core (a failing Get reclaims its own
        // layers, lcache and other ports' recycle lists included): the failure must be real.
        ASSERT_LT(kObjects - held.size(), n)
            << "spurious failure; seed " << seed << " op " << op << " " << spec.ToString();
      }
    } else if (kind < 90) {
      if (held.empty()) continue;
      const unsigned n = 1 + rng() % std::min<size_t>(held.size(), 48);
      std::vector<void*> out;
      for (unsigned i = 0; i < n; ++i) {
        size_t k = rng() % held.size();
        out.push_back(held[k]);
        held_set.erase(held[k]);
        held[k] = held.back();
        held.pop_back();
      }
      t->Put(core, out.data(), n);
    } else if (kind < 95) {
      rx_port = rx_port == 0 ? -1 : 0;
      t->SetRxPort(kCore, rx_port);
    } else {
      const StrategySpec& next = specs[rng() % specs.size()];
      SwapReport r = SwapFromControl(*t.pool, kCore, next);
      ASSERT_TRUE(r.status.ok()) << r.status;
      ASSERT_EQ(t->strategy(), next);
      ++swaps;
      // Right after a swap the core's layers are empty: all but the held objects are in the
      // store or the depots of generations still alive.
      AuditReport a = t->Audit(held.size());
      ASSERT_TRUE(a.ok) << "seed " << seed << " op " << op << ": " << a.message;
      ASSERT_EQ(testing::LayerTotal(a), 0u);
    }
    AuditReport a = t->Audit(held.size());
    ASSERT_TRUE(a.ok) << "seed " << seed << " op " << op << " " << spec.ToString() << ": "
                      << a.message;
    ASSERT_EQ(a.handed_out, held.size());
  }
  EXPECT_GT(swaps, 0);
  t->Put(kCore, held.data(), static_cast<unsigned>(held.size()));
  ASSERT_TRUE(t->UnregisterWorker(kCore).ok());
  EXPECT_EQ(t->in_store(), kObjects);
  EXPECT_EQ(t->double_frees() + t->foreign_frees(), 0u);
}

TEST(ModelTest, RandomSequencesBalanceAfterEveryOperation) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RunModel(seed, 5000);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace skbnf::pool
