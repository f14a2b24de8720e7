// SPDX-License-Identifier: BSD-3-Clause
// The plugin's per-thread slot cache: the enqueue and dequeue of the `skbnf` ops as
// libskbnf_mempool.so links them (mempool_driver.h; skbnfd links slot_cache_skbnfd.cc instead).
//
// The plugin is loaded by foreign applications only: every EAL lcore is a foreign owner of
// each pool (skbnf_mempool.cc, OpAlloc), whose strategy, hence whose hit kind, is fixed for the
// pool's life. So a thread keeps one entry per hit kind K (hit_mp[K]/hit[K]: its foreign
// handle, Pool::For<kForeign>, when it Owns() the slot) and takes that kind's hit without
// reading the kind (Handle::PutOneOf<K>, GetOneOf<K>, GetBurstOf<K>). A pool with no handle
// to cache for this thread (a top layer without a single-object hit the plugin can take:
// lcache, recycle, slab; a thread that owns no slot) is remembered too (none_mp), so its calls
// go straight to the full path instead of looking again each time.
#include <rte_mempool.h>

#include <cerrno>
#include <cstddef>

#include "dataplane/dpdk/mempool_driver.h"
#include "dataplane/dpdk/plugin_telemetry.h"

namespace skbnf::dpdk::driver {
namespace {

using ForeignHandle = pool::Pool::Handle<pool::Owner::kForeign>;

struct ThreadSlots {
  const rte_mempool* hit_mp[kHitKinds];  // the keys (mempool_driver.h), per hit kind
  ForeignHandle hit[kHitKinds];
  const rte_mempool* none_mp;
  bool registered;
};
constinit thread_local ThreadSlots t_slots{};
using Registry = ThreadRegistry<ThreadSlots>;

// Caches the calling thread's handle of mp, or that it has none to cache. Out of line.
[[gnu::noinline]] void CacheThreadSlot(rte_mempool* mp) {
  const ForeignHandle h = Driver(mp)->pool->For<pool::Owner::kForeign>(LcoreCore());
  // GetHit: a tracking pool's gets take the full path, whose chain stamps (pool/track.h).
  const int k = h.Owns() ? h.GetHit() : -1;
  ThreadSlots& t = t_slots;
  if (!t.registered) {
    if (!Registry::Get().Register(t)) return;  // not listed: caches nothing (mempool_driver.h)
    t.registered = true;
  }
  if (!IsCachedHit(k)) {
    SetCachedPool(t.none_mp, mp);
  } else {
    t.hit[k] = h;
    SetCachedPool(t.hit_mp[k], mp);
  }
}

// The full paths, out of line (the inline part of OpEnqueue/OpDequeue needs no stack frame).
[[gnu::noinline]] int EnqueueSlow(rte_mempool* mp, void* const* objs, unsigned n) {
  Driver(mp)->pool->Put(LcoreCore(), objs, n);
  return 0;
}
[[gnu::noinline]] int DequeueSlow(rte_mempool* mp, void** objs, unsigned n) {
  return Driver(mp)->pool->Get(LcoreCore(), objs, n) ? 0 : -ENOBUFS;
}
[[gnu::noinline]] int EnqueueMiss(rte_mempool* mp, void* const* objs, unsigned n) {
  CacheThreadSlot(mp);
  return EnqueueSlow(mp, objs, n);
}

// Through the thread's entry of kind K (the first that holds mp), else the full path.
template <size_t K>
[[gnu::always_inline]] inline int EnqueueCached(ThreadSlots& t, rte_mempool* mp, void* const* objs,
                                                unsigned n) {
  if constexpr (K == kHitKinds) {
    if (!IsCachedPool(t.none_mp, mp)) return EnqueueMiss(mp, objs, n);
    return EnqueueSlow(mp, objs, n);
  } else if constexpr (!kCachedHit<K>) {
    return EnqueueCached<K + 1>(t, mp, objs, n);
  } else {
    if (IsCachedPool(t.hit_mp[K], mp)) {
      if (__builtin_expect(n == 1, 1) && t.hit[K].template PutOneOf<K>(objs[0])) return 0;
      return EnqueueSlow(mp, objs, n);
    }
    return EnqueueCached<K + 1>(t, mp, objs, n);
  }
}
// The burst a PMD refills with, from a cached handle whose kind has a burst hit.
template <size_t K>
[[gnu::always_inline]] inline bool BurstCached(ThreadSlots& t, rte_mempool* mp, void** objs,
                                               unsigned n) {
  if constexpr (K == kHitKinds) {
    return false;
  } else if constexpr (!kCachedHit<K> || !pool::Pool::kHitHasBurst<K>) {
    return BurstCached<K + 1>(t, mp, objs, n);
  } else {
    if (IsCachedPool(t.hit_mp[K], mp)) return t.hit[K].template GetBurstOf<K>(objs, n);
    return BurstCached<K + 1>(t, mp, objs, n);
  }
}
template <size_t K>
[[gnu::always_inline]] inline int DequeueCached(ThreadSlots& t, rte_mempool* mp, void** objs,
                                                unsigned n) {
  if constexpr (K == kHitKinds) {
    if (!IsCachedPool(t.none_mp, mp)) CacheThreadSlot(mp);
    return DequeueSlow(mp, objs, n);
  } else if constexpr (!kCachedHit<K>) {
    return DequeueCached<K + 1>(t, mp, objs, n);
  } else {
    if (IsCachedPool(t.hit_mp[K], mp)) {
      const ForeignHandle& h = t.hit[K];
      if (n == 1 && h.template GetOneOf<K>(objs)) return 0;
      return h.Get(objs, n) ? 0 : -ENOBUFS;
    }
    return DequeueCached<K + 1>(t, mp, objs, n);
  }
}
// What OpDequeue does not serve inline.
[[gnu::noinline]] int DequeueRest(rte_mempool* mp, void** objs, unsigned n) {
  return DequeueCached<0>(t_slots, mp, objs, n);
}

}  // namespace

int OpEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  return EnqueueCached<0>(t_slots, mp, objs, n);
}

// The burst from a cached handle inline and frameless; the rest (single objects, misses) is
// one tail call.
int OpDequeue(rte_mempool* mp, void** objs, unsigned n) {
  if (n != 1 && BurstCached<0>(t_slots, mp, objs, n)) return 0;
  return DequeueRest(mp, objs, n);
}

// The plugin's pools are a foreign application's: no host cache, no adopt hook; listed for
// the plugin's telemetry command (plugin_telemetry.h).
void ConfigureHost(DriverPool&, const HostRequest&, pool::PoolConfig&) {}
absl::Status StartHost(DriverPool& dp) {
  if (absl::Status st = Registry::Get().status(); !st.ok()) return st;
  AddTelemetryPool(dp);
  return absl::OkStatus();
}
void StopHost(DriverPool& dp) {
  RemoveTelemetryPool(dp);
  Registry::Get().ForEach([&](ThreadSlots& t) {
    for (const rte_mempool*& key : t.hit_mp) DropCachedPool(key, dp.mp);
    DropCachedPool(t.none_mp, dp.mp);
  });
}

// The plugin registers its ops when EAL's -d loads it (as RTE_MEMPOOL_REGISTER_OPS does): a
// foreign application names them (--mbuf-pool-ops-name=skbnf) before any pool exists.
RTE_INIT(skbnf_register_mempool_ops) { rte_mempool_register_ops(&Ops()); }
absl::Status EnsureOpsRegistered() { return absl::OkStatus(); }

}  // namespace skbnf::dpdk::driver
