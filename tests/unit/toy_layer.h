// SPDX-License-Identifier: BSD-3-Clause
// A toy layer, to show that a layer is one unit (issue 21): this file and the one list entry
// below are all it takes to put a new layer into a pool. Nothing in dataplane/pool names it.
//
// ToyStash keeps at most `keep` freed objects per core (LIFO; its tunable, `toy:keep=N` in
// [1, kMaxKeep], default kCapacity) on top of every strategy's stack and hands them out again
// when it holds a whole request. It is deliberately small, so
// that it is almost always non-empty when a test looks: every swap, pause, reclaim, audit and
// unregistration must find its objects through the pool's folds (Flush, Objects), or the
// conservation checks of the suites that run over it (pool_test, reclaim_test, stress_test,
// built again as pool_toy_layer_tests) fail.
//
// Its facts are its own (kFacts, MaxHeld, kIndex below): with the one list entry, a spec parsed
// under ToyLayers::Catalog() names it and its tunable ("toy:keep=2+headpool": the key, default
// and range are its kFacts, the value the spec's slot kIndex, read by Keep below), the
// pool-share check and preflight's sizing count what it holds (pool::MaxHeld over the spec's
// catalogue), ListStrategies lists it and the metrics export its counters and gauge under
// layer="toy" (tests/control/ toy_layer_consumers_test.cc, one test per consumer). It takes the
// first index past the production layers (kNumLayers): its bit in a spec's mask, its slot in
// CoreCounters::layer, LayerGauges and AuditReport. It is in every strategy's chain whether a spec
// names it or not, so that the production suites built again over ToyPool run with it on top; a
// spec that names it prints it back.
#ifndef SKBNF_TESTS_UNIT_TOY_LAYER_H_
#define SKBNF_TESTS_UNIT_TOY_LAYER_H_

#include <atomic>
#include <cstdint>

#include "dataplane/pool/layer.h"
#include "dataplane/pool/pool.h"

namespace skbnf::pool::testing {

struct ToyStash {
  static constexpr int kIndex = kNumLayers;  // the first past the production layers
  static constexpr uint32_t kCapacity = 4;   // keep's default
  static constexpr uint32_t kMaxKeep = 8;    // keep's largest value: the State's array
  static constexpr LayerFacts kFacts{.name = "toy",
                                     .help = "a test's stash of a few freed objects per core",
                                     .has_tunable = true,
                                     .tunable = {.key = "keep",
                                                 .default_value = kCapacity,
                                                 .min = 1,
                                                 .max = kMaxKeep,
                                                 .help = "freed objects the stash keeps per core"}};
  // Its value: the spec's slot kIndex when the spec names it; a spec that does not (a
  // production one, parsed without the toy's catalogue) runs it at its default.
  static uint32_t Keep(const StrategySpec& spec) {
    return spec.Has(kIndex) ? spec.Tunable(kIndex) : kFacts.tunable.default_value;
  }
  static uint64_t MaxHeld(const StrategySpec& spec, const HoldEnv&) { return Keep(spec); }

  struct State {
    void* objs[kMaxKeep] = {};
    uint32_t keep = kCapacity;
    Gauge count;
    bool on = false;
  };

  // In every strategy's chain, on top.
  static bool InStack(const StrategySpec&) { return true; }
  static void Configure(State& st, const LayerEnv& env, bool on) {
    st.count.set(0);
    st.keep = Keep(env.spec);
    st.on = on;
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    const uint32_t k = st.count.get();
    if (k == 0) return 0;
    // The planted bug of ToyLayerTest.DebugBuildsCatchALayerThatLosesAnObjectOnFlush: hand
    // down one object less than held (and forget it), as a broken layer would.
    const uint32_t down = lose_one_on_flush.load() ? k - 1 : k;
    if (down > 0) to_below(st.objs, down);
    c.layer[kIndex].bulk.Add(1);
    st.count.set(0);
    return down;
  }
  static inline std::atomic<bool> lose_one_on_flush{false};
  static uint32_t Objects(const State& st) { return st.count.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<ToyStash>(s);
    const uint32_t cnt = st.count.get();
    LayerCounters& c = s.counters.layer[kIndex];
    if (n > cnt) {  // all or nothing, from below
      c.alloc_misses.Add(n);
      return Below::Get(sh, s, objs, n);
    }
    for (unsigned i = 0; i < n; ++i) objs[i] = st.objs[cnt - 1 - i];
    st.count.set(cnt - n);
    c.alloc_hits.Add(n);
    return true;
  }
  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<ToyStash>(s);
    uint32_t cnt = st.count.get();
    unsigned i = 0;
    for (; i < n && cnt < st.keep; ++i) st.objs[cnt++] = objs[i];
    st.count.set(cnt);
    LayerCounters& c = s.counters.layer[kIndex];
    c.free_hits.Add(i);
    if (i < n) {
      c.free_misses.Add(n - i);
      Below::Put(sh, s, objs + i, n - i);
    }
  }
};

// The one list entry: the production stack with the toy on top.
using ToyLayers = LayerList<ToyStash, Lcache, Recycle, HeadPool, MagazineLayer>;
using ToyPool = BasicPool<ToyLayers>;

}  // namespace skbnf::pool::testing

#endif  // SKBNF_TESTS_UNIT_TOY_LAYER_H_
