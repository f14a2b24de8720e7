// Recycle layer: the 2008 skb recycling (Lennert Buytenhek, mv643xx_eth), per (core, RX port).
//
// A buffer whose TX finished is reused as an RX buffer instead of being freed. Frees are
// classified by the host's recycle check (skb_recycle_check: not shared, not cloned, linear,
// big enough; for mbufs: refcnt 1, direct, one segment, buffer not smaller than the pool's)
// which also says which RX port the buffer came from. A buffer whose port is an RX port of
// this core goes on that port's list if the list is below `limit` (Eric Dumazet's v2 feedback:
// bound it by the RX ring size); the list is LIFO (his other feedback). Allocations made while
// the worker refills RX port p (CoreSlot::rx_port) drain p's list first.
#ifndef SKBNF_DATAPLANE_POOL_RECYCLE_H_
#define SKBNF_DATAPLANE_POOL_RECYCLE_H_

#include <algorithm>

#include "dataplane/pool/core_slot.h"

namespace skbnf::pool {

struct Recycle {
  static constexpr int kIndex = static_cast<int>(Layer::kRecycle);
  static constexpr unsigned kChunk = 64;

  template <unsigned Below>
  static bool Get(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
    LayerCounters& c = s.counters.layer[kIndex];
    const int32_t p = s.rx_port;
    if (p < 0) {
      if (!ChainGet<Below>(sh, s, objs, n)) return false;
      c.alloc_misses.Add(n);
      return true;
    }
    RecycleList& l = s.recycle[p];
    uint32_t cnt = l.count.get();
    const unsigned from = std::min<unsigned>(n, cnt);
    for (unsigned i = 0; i < from; ++i) objs[i] = l.objs[--cnt];
    if (from < n && !ChainGet<Below>(sh, s, objs + from, n - from)) {
      return false;  // cnt was not stored: the list still holds what we copied out
    }
    l.count.set(cnt);
    s.recycle_total.set(s.recycle_total.get() - from);
    c.alloc_hits.Add(from);
    c.alloc_misses.Add(n - from);
    return true;
  }

  template <unsigned Below>
  static void Put(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
    LayerCounters& c = s.counters.layer[kIndex];
    if (sh.classify == nullptr || s.recycle_ports == 0) {
      // No recycle check, or this core refills no RX port: nothing can be recycled here, so
      // do not pay for classifying (a foreign DPDK application never names its RX ports).
      ChainPut<Below>(sh, s, objs, n);
      c.free_misses.Add(n);
      return;
    }
    int16_t ports[kChunk];
    void* pass[kChunk];
    unsigned kept = 0;
    for (unsigned off = 0; off < n; off += kChunk) {
      const unsigned k = std::min(kChunk, n - off);
      sh.classify(sh.classify_ctx, objs + off, k, ports);
      unsigned m = 0;
      for (unsigned j = 0; j < k; ++j) {
        const int16_t p = ports[j];
        if (p >= 0 && p < kMaxPorts) {
          RecycleList& l = s.recycle[p];
          const uint32_t cnt = l.count.get();
          if (cnt < l.limit) {
            l.objs[cnt] = objs[off + j];
            l.count.set(cnt + 1);
            ++kept;
            continue;
          }
        }
        pass[m++] = objs[off + j];
      }
      ChainPut<Below>(sh, s, pass, m);
    }
    s.recycle_total.set(s.recycle_total.get() + kept);
    c.free_hits.Add(kept);
    c.free_misses.Add(n - kept);
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_RECYCLE_H_
