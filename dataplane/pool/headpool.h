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
//
// The list is [base, top) in hot[]: the owner pushes and pops at `top`; `base` is hot[0]
// except on a foreign owner (the plugin's lcores, pool_core.h "No stranded objects") that a
// reclaimer has robbed. Why: net_null and most PMDs' TX completions free one mbuf per call, so
// the single-object free (PutOne) is the per-packet cost of the whole layer, and for a foreign
// owner the operation marks (in_op, steal) were a fifth of it. PutOne takes no marks: it
// writes the object, then `top` (release), and nothing a reclaimer writes. A reclaimer (Steal)
// writes only `base`: it takes [base, top) as `top` stood when it read it (acquire) and moves
// `base` up to there; an object the owner pushes meanwhile lands above, stays, and is the next
// reclaimer's. Everything else the owner does to the list (pops, bursts, the move back to
// hot[0] after a robbery: Rebase) is inside its marked operations, which a reclaimer waits out,
// so `base` never changes under them. A robbed list counts as full when `top` reaches the
// array's end, until the owner's next marked Put or missing Get rebases it (meanwhile a
// PutOne that finds it full declines and its caller takes the marked path, which rebases).
#ifndef SKBNF_DATAPLANE_POOL_HEADPOOL_H_
#define SKBNF_DATAPLANE_POOL_HEADPOOL_H_

#include <atomic>
#include <cstring>

#include "dataplane/pool/layer.h"

namespace skbnf::pool {

struct HeadPool {
  static constexpr int kIndex = static_cast<int>(Layer::kHeadPool);
  static constexpr int kSingleHitRank = 0;  // the 2003 default and the headline's: tested first
  static constexpr LayerFacts kFacts{
      .name = "headpool",
      .help = "2003 skb_head_pool: per-core LIFO hot list, one object at a time to the layer below",
      .has_tunable = true,
      .tunable = {.key = "hot_list_len",
                  .default_value = 128,
                  .min = 1,
                  .max = 65536,
                  .help = "bound of the per-core hot list"}};
  // Its value in `spec`: its slot, by kIndex (StrategySpec::tunable).
  static uint32_t HotListLen(const StrategySpec& spec) { return spec.Tunable(kIndex); }
  // The list's bound: a put beyond it goes below.
  static uint64_t MaxHeld(const StrategySpec& spec, const HoldEnv&) { return HotListLen(spec); }

  // A position in the list. Pointers, not indexes: PutOne is then a compare with `end`, a store
  // through `top` and `top` + 1, without loading the array's address or indexing into it
  // (the single-object free is the layer's per-packet cost).
  class Cursor {
   public:
    void** get() const { return p_.load(std::memory_order_relaxed); }
    void set(void** p) { p_.store(p, std::memory_order_relaxed); }
    // The owner's push (PutOne) and a reclaimer's read of it (Steal); on x86 plain movs.
    void** acquire() const { return p_.load(std::memory_order_acquire); }
    void publish(void** p) { p_.store(p, std::memory_order_release); }

   private:
    std::atomic<void**> p_{nullptr};
  };

  struct State {
    void** hot = nullptr;  // the list's array: hot[0, hot_list_len)
    void** end = nullptr;  // hot + hot_list_len
    Cursor top;            // one past the most recent object; written by the owner only
    Cursor base;           // the oldest object a reclaimer left (hot unless robbed); see above
    uint32_t hot_list_len = 0;
    std::unique_ptr<void*[]> buf;  // grown only at a quiescent point
    uint32_t buf_cap = 0;
  };
  static uint32_t Count(void* const* from, void* const* to) {
    return static_cast<uint32_t>(to - from);
  }

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kHeadPool); }
  static void Reserve(State& st, const LayerEnv& env) {
    EnsureBuf(st.buf, st.buf_cap, HotListLen(env.spec));
  }
  static void Configure(State& st, const LayerEnv& env, bool on) {
    if (on) {
      EnsureBuf(st.buf, st.buf_cap, HotListLen(env.spec));
      st.hot = st.buf.get();
      st.hot_list_len = HotListLen(env.spec);
    } else {
      st.hot_list_len = 0;  // empty and full
    }
    st.end = st.hot + st.hot_list_len;
    st.top.set(st.hot);
    st.base.set(st.hot);
  }
  // The owner's flush (or control's on its behalf, or a foreign owner's own in its reclaim):
  // no PutOne runs meanwhile, so the list starts again at hot[0].
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    void** const b = st.base.get();
    void** const t = st.top.get();
    st.base.set(st.hot);
    st.top.set(st.hot);
    if (t == b) return 0;
    to_below(b, Count(b, t));
    c.layer[kIndex].bulk.Add(1);
    return Count(b, t);
  }
  // A reclaimer's flush of a foreign owner, which may be inside PutOne (see the top): only
  // `base` is written, after the objects below `top` (as read) went to `to_below`.
  static uint64_t Steal(State& st, CoreCounters& c, FlushSink to_below) {
    void** const b = st.base.get();
    void** const t = st.top.acquire();
    if (t == b) return 0;
    to_below(b, Count(b, t));
    st.base.set(t);
    c.layer[kIndex].bulk.Add(1);
    return Count(b, t);
  }
  // (Read by other threads while the owner runs: base and top may be a moment apart.)
  static uint32_t Objects(const State& st) {
    void* const* b = st.base.get();
    void* const* t = st.top.get();
    return t > b ? Count(b, t) : 0;
  }

  // The whole request from the hot list is the common case (a PMD refilling a burst): served
  // here, without the miss path's stack frame.
  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    if (__builtin_expect(GetBurst(s, objs, n), 1)) return true;
    return GetMissing<Below>(sh, s, objs, n);
  }

  // The hit: the whole request from the hot list, most recent first, counted as this layer's
  // hits; false, with nothing done, when the list holds fewer than n. Also the hosts' inline
  // burst on a cached slot (Pool::Handle::GetBurst, GetBurstOf).
  template <class S>
  static bool GetBurst(S& s, void** objs, unsigned n) {
    State& st = StateOf<HeadPool>(s);
    void** const t = st.top.get();
    if (n > Count(st.base.get(), t)) return false;
    PopInto(objs, t, n);
    st.top.set(t - n);
    s.counters.layer[kIndex].alloc_hits.Add(n);
    return true;
  }

  // The owner, inside a marked operation (no reclaimer at work): a robbed list moved back to
  // hot[0], so that it holds hot_list_len again. Returns the new top.
  static void** Rebase(State& st, void** t) {
    void** const b = st.base.get();
    if (b == st.hot) return t;
    const uint32_t k = Count(b, t);
    std::memmove(st.hot, b, k * sizeof(void*));
    st.base.set(st.hot);
    st.top.set(st.hot + k);
    return st.hot + k;
  }

  template <class Below, class S>
  [[gnu::noinline]] static bool GetMissing(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<HeadPool>(s);
    void** top = Rebase(st, st.top.get());
    const uint32_t cnt = Count(st.hot, top);
    const unsigned from_hot = n < cnt ? n : cnt;
    PopInto(objs, top, from_hot);
    top -= from_hot;
    st.top.set(top);
    unsigned i = from_hot;
    for (; i < n; ++i) {
      if (!Below::Get(sh, s, objs + i, 1)) break;
    }
    if (i < n) {  // all or nothing: give everything back where it came from
      Below::Put(sh, s, objs + from_hot, i - from_hot);
      for (unsigned k = 0; k < from_hot; ++k) top[from_hot - 1 - k] = objs[k];
      st.top.set(top + from_hot);
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
    void** top = st.top.get();
    void** const end = st.end;
    unsigned i = 0;
    for (;;) {
      for (; i < n && top != end; ++i) *top++ = objs[i];
      if (__builtin_expect(i == n, 1) || st.base.get() == st.hot) break;
      top = Rebase(st, top);  // full only because a reclaimer took its bottom
    }
    st.top.publish(top);
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
    void** const t = st.top.get();
    if (t == st.base.get()) return false;
    *obj = t[-1];
    st.top.set(t - 1);
    s.counters.layer[kIndex].fast_alloc_hits.Add(1);
    return true;
  }
  // Safe for a foreign owner without the operation marks (Pool::Handle<kForeign>::PutOneOf; see the top):
  // the object is in the list before `top` says so.
  template <class S, class PortOf>
  static bool PutOne(S& s, void* obj, const PortOf& /*port_of*/) {
    State& st = StateOf<HeadPool>(s);
    void** const t = st.top.get();
    if (t == st.end) return false;
    *t = obj;
    st.top.publish(t + 1);
    s.counters.layer[kIndex].fast_free_hits.Add(1);
    return true;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_HEADPOOL_H_
