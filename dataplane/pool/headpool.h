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

#include "dataplane/pool/core_slot.h"

namespace skbnf::pool {

struct HeadPool {
  static constexpr int kIndex = static_cast<int>(Layer::kHeadPool);

  // The whole request from the hot list is the common case (a PMD refilling a burst): served
  // here, without the miss path's stack frame.
  template <unsigned Below>
  static bool Get(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
    if (__builtin_expect(GetFromHotList(s, objs, n), 1)) return true;
    return GetMissing<Below>(sh, s, objs, n);
  }

  // The hit: the whole request from the hot list, most recent first, counted as this layer's
  // hits; false, with nothing done, when the list holds fewer than n. Also the plugin's inline
  // burst on a cached foreign slot (Pool::ForeignHotListGet).
  static bool GetFromHotList(CoreSlot& s, void** objs, unsigned n) {
    const uint32_t cnt = s.hot_count.get();
    if (n > cnt) return false;
    PopInto(objs, s.hot + cnt, n);
    s.hot_count.set(cnt - n);
    s.counters.layer[kIndex].alloc_hits.Add(n);
    return true;
  }

  template <unsigned Below>
  [[gnu::noinline]] static bool GetMissing(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
    uint32_t cnt = s.hot_count.get();
    void** hot = s.hot;
    const unsigned from_hot = n < cnt ? n : cnt;
    PopInto(objs, hot + cnt, from_hot);
    cnt -= from_hot;
    s.hot_count.set(cnt);
    unsigned i = from_hot;
    for (; i < n; ++i) {
      if (!ChainGet<Below>(sh, s, objs + i, 1)) break;
    }
    if (i < n) {  // all or nothing: give everything back where it came from
      ChainPut<Below>(sh, s, objs + from_hot, i - from_hot);
      for (unsigned k = 0; k < from_hot; ++k) hot[cnt + from_hot - 1 - k] = objs[k];
      s.hot_count.set(cnt + from_hot);
      return false;
    }
    LayerCounters& c = s.counters.layer[kIndex];
    c.alloc_hits.Add(from_hot);
    c.alloc_misses.Add(n - from_hot);
    return true;
  }

  template <unsigned Below>
  static void Put(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
    uint32_t cnt = s.hot_count.get();
    const uint32_t len = s.hot_list_len;
    void** hot = s.hot;
    unsigned i = 0;
    for (; i < n && cnt < len; ++i) hot[cnt++] = objs[i];
    s.hot_count.set(cnt);
    const unsigned kept = i;
    for (; i < n; ++i) ChainPut<Below>(sh, s, objs + i, 1);
    LayerCounters& c = s.counters.layer[kIndex];
    c.free_hits.Add(kept);
    c.free_misses.Add(n - kept);
  }

  // Everything on the hot list, oldest first; leaves it empty. Returns the count.
  static uint32_t Drain(CoreSlot& s, void** out) {
    uint32_t cnt = s.hot_count.get();
    for (uint32_t i = 0; i < cnt; ++i) out[i] = s.hot[i];
    s.hot_count.set(0);
    return cnt;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_HEADPOOL_H_
