// SPDX-License-Identifier: BSD-3-Clause
// Lcache layer: DPDK 22.11's per-lcore mempool cache, as one more layer, so it can be stacked
// over the seeds' layers and compared on the same pool. It follows rte_mempool.h of 22.11
// (rte_mempool_do_generic_get/put) step for step, including its counts:
//
//   get n:  take min(n, len) from the top of the cache (LIFO). If that was all: done.
//           remaining = the rest; remaining > 512 (RTE_MEMPOOL_CACHE_MAX_SIZE) -> straight
//           from below. Else fetch size + remaining from below into the cache in one bulk and
//           hand out the top `remaining`, leaving len = size. If that fetch fails, take the
//           remaining straight from below; if that fails too, the objects taken from the cache
//           go back (len restored) and the get fails.
//   put n:  n > flushthresh -> straight to below. len + n <= flushthresh (1.5 x size) ->
//           append. Otherwise flush the whole cache below in one bulk and keep the n.
//
// (Before 22.11 the get was different: n >= size bypassed the cache and a refill topped it up
// to size + n on top of what it held. 22.11 is what Debian 12 ships and what skbnfd links.)
#ifndef SKBNF_DATAPLANE_POOL_LCACHE_H_
#define SKBNF_DATAPLANE_POOL_LCACHE_H_

#include "dataplane/pool/layer.h"

namespace skbnf::pool {

struct Lcache {
  static constexpr int kIndex = static_cast<int>(Layer::kLcache);
  static constexpr LayerFacts kFacts{
      .name = "lcache",
      .help =
          "DPDK-style per-lcore cache: bulk refill to size+n on empty, flush whole cache past "
          "1.5x size",
      .has_tunable = true,
      .tunable = {.key = "size",
                  .default_value = 256,
                  .min = 1,
                  .max = 1024,
                  .help = "objects kept per lcore before a flush"}};
  // Its value in `spec`: its slot, by kIndex (StrategySpec::tunable).
  static uint32_t Size(const StrategySpec& spec) { return spec.Tunable(kIndex); }

  // DPDK's CALC_CACHE_FLUSHTHRESH: a put that would pass it flushes the whole cache first, so
  // it is also the most the cache holds between calls (a fill leaves `size`). The one formula
  // for this layer and for DPDK's own lcore cache (the daemon's preflight sizes both with it).
  static constexpr uint32_t FlushThreshold(uint32_t size) { return size * 3 / 2; }
  static uint64_t MaxHeld(const StrategySpec& spec, const HoldEnv&) {
    return FlushThreshold(Size(spec));
  }

  struct State {
    void** lc = nullptr;
    uint32_t size = 0;
    uint32_t flush = 0;  // flush threshold: 1.5 x size, as DPDK's CALC_CACHE_FLUSHTHRESH
    Gauge len;
    std::unique_ptr<void*[]> buf;  // grown only at a quiescent point
    uint32_t buf_cap = 0;
  };

  // Buffer capacity needed for `size`: a fill leaves at most size + 512 objects (DPDK's cache
  // array is 2 x 512 for the same reason); a put at most flushthresh.
  static uint32_t Capacity(uint32_t size) { return size + kLcacheMaxBurst; }

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kLcache); }
  static void Reserve(State& st, const LayerEnv& env) {
    EnsureBuf(st.buf, st.buf_cap, Capacity(Size(env.spec)));
  }
  static void Configure(State& st, const LayerEnv& env, bool on) {
    st.len.set(0);
    if (on) {
      EnsureBuf(st.buf, st.buf_cap, Capacity(Size(env.spec)));
      st.lc = st.buf.get();
      st.size = Size(env.spec);
      st.flush = FlushThreshold(Size(env.spec));
    } else {
      st.size = st.flush = 0;
    }
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    const uint32_t len = st.len.get();
    if (len == 0) return 0;
    to_below(st.lc, len);
    st.len.set(0);
    c.layer[kIndex].bulk.Add(1);
    return len;
  }
  static uint32_t Objects(const State& st) { return st.len.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<Lcache>(s);
    LayerCounters& c = s.counters.layer[kIndex];
    const uint32_t len0 = st.len.get();
    void** lc = st.lc;
    const unsigned from_cache = n < len0 ? n : len0;
    for (unsigned i = 0; i < from_cache; ++i) objs[i] = lc[len0 - 1 - i];
    const unsigned remaining = n - from_cache;
    if (remaining == 0) {
      st.len.set(len0 - n);
      c.alloc_hits.Add(n);
      return true;
    }
    // The cache is empty now.
    if (remaining <= kLcacheMaxBurst && Below::Get(sh, s, lc, st.size + remaining)) {
      const uint32_t top = st.size + remaining;
      for (unsigned i = 0; i < remaining; ++i) objs[from_cache + i] = lc[top - 1 - i];
      st.len.set(st.size);
      c.bulk.Add(1);
    } else if (Below::Get(sh, s, objs + from_cache, remaining)) {
      st.len.set(0);
    } else {
      // All or nothing: the cache gets back what it handed out (DPDK relies on the failed
      // fill leaving the array intact; a failing chain below may have used it as scratch).
      for (unsigned i = 0; i < from_cache; ++i) lc[len0 - 1 - i] = objs[i];
      st.len.set(len0);
      return false;
    }
    c.alloc_hits.Add(from_cache);
    c.alloc_misses.Add(remaining);
    return true;
  }

  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<Lcache>(s);
    LayerCounters& c = s.counters.layer[kIndex];
    if (n > st.flush) {
      Below::Put(sh, s, objs, n);
      c.free_misses.Add(n);
      return;
    }
    uint32_t len = st.len.get();
    void** lc = st.lc;
    if (len + n > st.flush) {
      Below::Put(sh, s, lc, len);
      c.free_misses.Add(len);
      c.bulk.Add(1);
      len = 0;
    }
    for (unsigned i = 0; i < n; ++i) lc[len + i] = objs[i];
    st.len.set(len + n);
    c.free_hits.Add(n);
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_LCACHE_H_
