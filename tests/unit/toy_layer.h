// SPDX-License-Identifier: BSD-3-Clause
// A toy layer, to show that a layer is one unit (issue 21): this file and the one list entry
// below are all it takes to put a new layer into a pool. Nothing in dataplane/pool names it.
//
// ToyStash keeps at most kCapacity freed objects per core (LIFO) on top of every strategy's
// stack and hands them out again when it holds a whole request. It is deliberately small, so
// that it is almost always non-empty when a test looks: every swap, pause, reclaim, audit and
// unregistration must find its objects through the pool's folds (Flush, Objects), or the
// conservation checks of the suites that run over it (pool_test, reclaim_test, stress_test,
// built again as pool_toy_layer_tests) fail.
//
// What a layer the spec cannot name gives up (layer.h, kUnlisted): its own counters are not
// exported (they live in its State here), its objects show in AuditReport::in_unlisted_layers
// and LayerGauges::unlisted, and it has no single-object hit (those count as the core's allocs
// and frees in CoreCounters::layer, which needs a public index).
#ifndef SKBNF_TESTS_UNIT_TOY_LAYER_H_
#define SKBNF_TESTS_UNIT_TOY_LAYER_H_

#include <atomic>
#include <cstdint>

#include "dataplane/pool/layer.h"
#include "dataplane/pool/pool.h"

namespace skbnf::pool::testing {

struct ToyStash {
  static constexpr int kIndex = kUnlisted;
  static constexpr uint32_t kCapacity = 4;
  static constexpr LayerFacts kFacts{.name = "toy",
                                     .help = "a test's stash of up to 4 freed objects per core",
                                     .has_tunable = false,
                                     .tunable = {}};
  static uint64_t MaxHeld(const StrategySpec&, const HoldEnv&) { return kCapacity; }

  struct State {
    void* objs[kCapacity] = {};
    Gauge count;
    bool on = false;
    std::atomic<uint64_t> hits{0};  // requests served whole from the stash (its own counter)
  };

  // In every strategy's chain, on top.
  static bool InStack(const StrategySpec&) { return true; }
  static void Configure(State& st, const LayerEnv&, bool on) {
    st.count.set(0);
    st.on = on;
  }
  static uint64_t Flush(State& st, CoreCounters&, FlushSink to_below) {
    const uint32_t k = st.count.get();
    if (k == 0) return 0;
    // The planted bug of ToyLayerTest.DebugBuildsCatchALayerThatLosesAnObjectOnFlush: hand
    // down one object less than held (and forget it), as a broken layer would.
    const uint32_t down = lose_one_on_flush.load() ? k - 1 : k;
    if (down > 0) to_below(st.objs, down);
    st.count.set(0);
    return down;
  }
  static inline std::atomic<bool> lose_one_on_flush{false};
  static uint32_t Objects(const State& st) { return st.count.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<ToyStash>(s);
    const uint32_t cnt = st.count.get();
    if (n > cnt) return Below::Get(sh, s, objs, n);  // all or nothing, from below
    for (unsigned i = 0; i < n; ++i) objs[i] = st.objs[cnt - 1 - i];
    st.count.set(cnt - n);
    st.hits.store(st.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<ToyStash>(s);
    uint32_t cnt = st.count.get();
    unsigned i = 0;
    for (; i < n && cnt < kCapacity; ++i) st.objs[cnt++] = objs[i];
    st.count.set(cnt);
    if (i < n) Below::Put(sh, s, objs + i, n - i);
  }
};

// The one list entry: the production stack with the toy on top.
using ToyLayers = LayerList<ToyStash, Lcache, Recycle, HeadPool, MagazineLayer>;
using ToyPool = BasicPool<ToyLayers>;

}  // namespace skbnf::pool::testing

#endif  // SKBNF_TESTS_UNIT_TOY_LAYER_H_
