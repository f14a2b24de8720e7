// SPDX-License-Identifier: BSD-3-Clause
// HeadPool: the 2003 skb_head_pool (net/core/skbuff.c before Robert Olsson's removal patch).
//
//   skb_head_from_pool:  if the per-CPU list is not empty, dequeue its head (LIFO);
//                        otherwise kmem_cache_alloc() ONE object.
//   skb_head_to_pool:    if the list is shorter than sysctl_hot_list_len (128), queue at the
//                        head; otherwise kmem_cache_free() ONE object.
//
// This is a faithful reproduction, including its weakness: misses go to the layer below one
// object at a time, never in bulk. Stacked over `magazine` it is the 2003 "Magazine" row
// (two per-core layers duplicating each other); over the bare store each miss takes the lock.
#ifndef SKBNF_DATAPLANE_POOL_HEADPOOL_H_
#define SKBNF_DATAPLANE_POOL_HEADPOOL_H_

#include "dataplane/pool/layer.h"

namespace skbnf::pool {

struct HeadPool {
  static constexpr int kIndex = static_cast<int>(Layer::kHeadPool);
  static constexpr int kSingleHitRank = 0;  // the 2003 default and the headline's: tested first

  struct State {
    void** hot = nullptr;
    uint32_t hot_list_len = 0;
    Gauge hot_count;
    std::unique_ptr<void*[]> buf;  // grown only at a quiescent point
    uint32_t buf_cap = 0;
  };

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kHeadPool); }
  static void Reserve(State& st, const LayerEnv& env) {
    EnsureBuf(st.buf, st.buf_cap, env.spec.hot_list_len);
  }
  static void Configure(State& st, const LayerEnv& env, bool on) {
    st.hot_count.set(0);
    if (on) {
      EnsureBuf(st.buf, st.buf_cap, env.spec.hot_list_len);
      st.hot = st.buf.get();
      st.hot_list_len = env.spec.hot_list_len;
    } else {
      st.hot_list_len = 0;
    }
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    const uint32_t k = st.hot_count.get();
    if (k == 0) return 0;
    to_below(st.hot, k);
    st.hot_count.set(0);
    c.layer[kIndex].bulk.Add(1);
    return k;
  }
  static uint32_t Objects(const State& st) { return st.hot_count.get(); }

  // The whole request from the hot list is the common case (a PMD refilling a burst): served
  // here, without the miss path's stack frame.
  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    if (__builtin_expect(GetFromHotList(s, objs, n), 1)) return true;
    return GetMissing<Below>(sh, s, objs, n);
  }

  // The hit: the whole request from the hot list, most recent first, counted as this layer's
  // hits; false, with nothing done, when the list holds fewer than n. Also the plugin's inline
  // burst on a cached foreign slot (Pool::ForeignHotListGet).
  template <class S>
  static bool GetFromHotList(S& s, void** objs, unsigned n) {
    State& st = StateOf<HeadPool>(s);
    const uint32_t cnt = st.hot_count.get();
    if (n > cnt) return false;
    PopInto(objs, st.hot + cnt, n);
    st.hot_count.set(cnt - n);
    s.counters.layer[kIndex].alloc_hits.Add(n);
    return true;
  }

  template <class Below, class S>
  [[gnu::noinline]] static bool GetMissing(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<HeadPool>(s);
    uint32_t cnt = st.hot_count.get();
    void** hot = st.hot;
    const unsigned from_hot = n < cnt ? n : cnt;
    PopInto(objs, hot + cnt, from_hot);
    cnt -= from_hot;
    st.hot_count.set(cnt);
    unsigned i = from_hot;
    for (; i < n; ++i) {
      if (!Below::Get(sh, s, objs + i, 1)) break;
    }
    if (i < n) {  // all or nothing: give everything back where it came from
      Below::Put(sh, s, objs + from_hot, i - from_hot);
      for (unsigned k = 0; k < from_hot; ++k) hot[cnt + from_hot - 1 - k] = objs[k];
      st.hot_count.set(cnt + from_hot);
      return false;
    }
    LayerCounters& c = s.counters.layer[kIndex];
    c.alloc_hits.Add(from_hot);
    c.alloc_misses.Add(n - from_hot);
    return true;
  }

  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<HeadPool>(s);
    uint32_t cnt = st.hot_count.get();
    const uint32_t len = st.hot_list_len;
    void** hot = st.hot;
    unsigned i = 0;
    for (; i < n && cnt < len; ++i) hot[cnt++] = objs[i];
    st.hot_count.set(cnt);
    const unsigned kept = i;
    for (; i < n; ++i) Below::Put(sh, s, objs + i, 1);
    LayerCounters& c = s.counters.layer[kIndex];
    c.free_hits.Add(kept);
    c.free_misses.Add(n - kept);
  }

  // Single-object hits: the top of the hot list.
  template <class S>
  static bool GetOne(S& s, void** obj) {
    State& st = StateOf<HeadPool>(s);
    const uint32_t cnt = st.hot_count.get();
    if (cnt == 0) return false;
    *obj = st.hot[cnt - 1];
    st.hot_count.set(cnt - 1);
    s.counters.layer[kIndex].fast_alloc_hits.Add(1);
    return true;
  }
  template <class S, class PortOf>
  static bool PutOne(S& s, void* obj, const PortOf& /*port_of*/) {
    State& st = StateOf<HeadPool>(s);
    const uint32_t cnt = st.hot_count.get();
    if (cnt == st.hot_list_len) return false;
    // (The count first: GCC then makes cnt + 1 with one lea instead of a copy and an add.)
    st.hot_count.set(cnt + 1);
    st.hot[cnt] = obj;
    s.counters.layer[kIndex].fast_free_hits.Add(1);
    return true;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_HEADPOOL_H_
