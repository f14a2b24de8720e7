// SPDX-License-Identifier: BSD-3-Clause
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

#include "dataplane/pool/layer.h"

namespace skbnf::pool {

struct RecycleList {
  void** objs = nullptr;
  Gauge count;
  uint32_t limit = 0;  // 0: this port is not an RX port of this core
};

struct Recycle {
  static constexpr int kIndex = static_cast<int>(Layer::kRecycle);
  static constexpr int kSingleHitRank = 2;
  static constexpr bool kSingleHitReadsPort = true;  // PutOne needs the host's recycle check
  static constexpr unsigned kChunk = 64;
  static constexpr LayerFacts kFacts{
      .name = "recycle",
      .help =
          "2008 skb recycling: per (core, RX port) LIFO of TX-completed buffers, drained by "
          "that port's RX refill",
      .has_tunable = true,
      .tunable = {.key = "limit",
                  .default_value = 0,
                  .min = 0,
                  .max = 65536,
                  .help = "recycle list bound per (core, RX port); 0 = that port's RX ring size"}};
  // Its value in `spec`: its slot, by kIndex (StrategySpec::tunable).
  static uint32_t Limit(const StrategySpec& spec) { return spec.Tunable(kIndex); }
  // One list per RX port the core refills, each bounded by the limit (0: the port's ring).
  static uint64_t MaxHeld(const StrategySpec& spec, const HoldEnv& env) {
    uint64_t sum = 0;
    for (uint32_t ring : env.rx_ring_sizes) {
      sum += Limit(spec) != 0 ? Limit(spec) : ring;
    }
    return sum;
  }

  struct State {
    Gauge total;
    uint32_t ports = 0;  // RX ports of this core with a recycle list
    RecycleList lists[kMaxPorts];
    std::unique_ptr<void*[]> buf[kMaxPorts];  // grown only at a quiescent point
    uint32_t buf_cap[kMaxPorts] = {};
  };

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kRecycle); }
  // A list per RX port of a worker, as long as its ring.
  static void Reserve(State& st, const LayerEnv& env) {
    if (env.foreign) return;
    for (int p = 0; p < kMaxPorts; ++p) {
      if (env.rx_ring_size[p] > 0) EnsureBuf(st.buf[p], st.buf_cap[p], env.rx_ring_size[p]);
    }
  }
  static void Configure(State& st, const LayerEnv& env, bool on) {
    st.ports = 0;
    for (int p = 0; p < kMaxPorts; ++p) {
      RecycleList& l = st.lists[p];
      l.count.set(0);
      l.limit = 0;
      if (on && env.rx_ring_size[p] > 0) {
        ++st.ports;
        l.limit = Limit(env.spec) != 0 ? Limit(env.spec) : env.rx_ring_size[p];
        EnsureBuf(st.buf[p], st.buf_cap[p], l.limit);
        l.objs = st.buf[p].get();
      }
    }
    st.total.set(0);
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    uint64_t n = 0;
    for (RecycleList& l : st.lists) {
      if (uint32_t k = l.count.get(); k > 0) {
        to_below(l.objs, k);
        n += k;
        l.count.set(0);
        c.layer[kIndex].bulk.Add(1);
      }
    }
    st.total.set(0);
    return n;
  }
  static uint32_t Objects(const State& st) { return st.total.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<Recycle>(s);
    LayerCounters& c = s.counters.layer[kIndex];
    const int32_t p = s.rx_port;
    if (p < 0) {
      if (!Below::Get(sh, s, objs, n)) return false;
      c.alloc_misses.Add(n);
      return true;
    }
    RecycleList& l = st.lists[p];
    uint32_t cnt = l.count.get();
    const unsigned from = std::min<unsigned>(n, cnt);
    for (unsigned i = 0; i < from; ++i) objs[i] = l.objs[--cnt];
    if (from < n && !Below::Get(sh, s, objs + from, n - from)) {
      return false;  // cnt was not stored: the list still holds what we copied out
    }
    l.count.set(cnt);
    st.total.set(st.total.get() - from);
    c.alloc_hits.Add(from);
    c.alloc_misses.Add(n - from);
    return true;
  }

  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<Recycle>(s);
    LayerCounters& c = s.counters.layer[kIndex];
    if (sh.classify == nullptr || st.ports == 0) {
      // No recycle check, or this core refills no RX port: nothing can be recycled here, so
      // do not pay for classifying (a foreign DPDK application never names its RX ports).
      Below::Put(sh, s, objs, n);
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
          RecycleList& l = st.lists[p];
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
      Below::Put(sh, s, pass, m);
    }
    st.total.set(st.total.get() + kept);
    c.free_hits.Add(kept);
    c.free_misses.Add(n - kept);
  }

  // Single-object hits: the list of the RX port being refilled / of the object's RX port. The
  // inline path needs the recycle check and a port to recycle to.
  static bool SingleHitReady(const State& st, const Shared& sh) {
    return sh.classify != nullptr && st.ports > 0;
  }
  template <class S>
  static bool GetOne(S& s, void** obj) {
    if (s.rx_port < 0) return false;
    State& st = StateOf<Recycle>(s);
    RecycleList& l = st.lists[s.rx_port];
    const uint32_t cnt = l.count.get();
    if (cnt == 0) return false;
    *obj = l.objs[cnt - 1];
    l.count.set(cnt - 1);
    st.total.set(st.total.get() - 1);
    s.counters.layer[kIndex].fast_alloc_hits.Add(1);
    return true;
  }
  template <class S, class PortOf>
  static bool PutOne(S& s, void* obj, const PortOf& port_of) {
    const int port = port_of(obj);
    if (port < 0 || port >= kMaxPorts) return false;
    State& st = StateOf<Recycle>(s);
    RecycleList& l = st.lists[port];
    const uint32_t cnt = l.count.get();
    if (cnt >= l.limit) return false;  // (the full path classifies once more: rare)
    l.objs[cnt] = obj;
    l.count.set(cnt + 1);
    st.total.set(st.total.get() + 1);
    s.counters.layer[kIndex].fast_free_hits.Add(1);
    return true;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_RECYCLE_H_
