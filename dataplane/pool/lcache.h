// Lcache layer: DPDK 22.11's per-lcore mempool cache, as one more layer (rte_mempool.h,
// rte_mempool_do_generic_get/put), so it can be stacked over the seeds' layers and compared
// on the same pool.
//
//   get n:  n >= size -> straight from below.  len < n -> refill n + (size - len) from below
//           in one bulk (on failure, take the n straight from below).  Pop n, LIFO.
//   put n:  n > flushthresh -> straight to below.  len + n <= flushthresh (1.5 x size) ->
//           append.  Otherwise flush the whole cache below in one bulk and keep the n.
#ifndef SKBNF_DATAPLANE_POOL_LCACHE_H_
#define SKBNF_DATAPLANE_POOL_LCACHE_H_

#include "dataplane/pool/core_slot.h"

namespace skbnf::pool {

struct Lcache {
  static constexpr int kIndex = static_cast<int>(Layer::kLcache);

  // Buffer capacity needed for `size`: a refill leaves at most n + size < 2 x size objects.
  static uint32_t Capacity(uint32_t size) { return 2 * size + 1; }

  template <unsigned Below>
  static bool Get(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
    LayerCounters& c = s.counters.layer[kIndex];
    if (n >= s.lc_size) {
      if (!ChainGet<Below>(sh, s, objs, n)) return false;
      c.alloc_misses.Add(n);
      return true;
    }
    uint32_t len = s.lc_len.get();
    void** lc = s.lc;
    if (len < n) {
      const unsigned req = n + (s.lc_size - len);
      if (!ChainGet<Below>(sh, s, lc + len, req)) {
        if (!ChainGet<Below>(sh, s, objs, n)) return false;
        c.alloc_misses.Add(n);
        return true;
      }
      c.alloc_misses.Add(n - len);
      c.alloc_hits.Add(len);
      c.bulk.Add(1);
      len += req;
    } else {
      c.alloc_hits.Add(n);
    }
    for (unsigned i = 0; i < n; ++i) objs[i] = lc[--len];
    s.lc_len.set(len);
    return true;
  }

  template <unsigned Below>
  static void Put(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
    LayerCounters& c = s.counters.layer[kIndex];
    if (n > s.lc_flush) {
      ChainPut<Below>(sh, s, objs, n);
      c.free_misses.Add(n);
      return;
    }
    uint32_t len = s.lc_len.get();
    void** lc = s.lc;
    if (len + n > s.lc_flush) {
      ChainPut<Below>(sh, s, lc, len);
      c.free_misses.Add(len);
      c.bulk.Add(1);
      len = 0;
    }
    for (unsigned i = 0; i < n; ++i) lc[len + i] = objs[i];
    s.lc_len.set(len + n);
    c.free_hits.Add(n);
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_LCACHE_H_
