// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's per-thread slot cache and lcore caches: the enqueue and dequeue of the `skbnf` ops
// as skbnfd links them (mempool_driver.h; the plugin links slot_cache_plugin.cc instead).
//
// Each worker thread keeps one entry: its worker handle of the pool (Pool::For<kWorker>, kept
// when it Owns() its slot), whatever strategy runs on it. The strategy changes at every swap,
// so each call goes through the handle's inline hits, which read the slot's kind
// (Handle::PutOne, GetOne, GetBurst); a slot whose kind does not fit (another top layer, a
// hosted lcache, the debug switch, an unregistered worker) declines and the call takes the
// full path. A foreign application's pool in this process (made without CreatePktmbufPool)
// has foreign owners, whose slots a worker handle does not own: those take the full path.
// A worker's thread also remembers its slot's hit kind (hit_mp[K]/hit[K]), set by OpDequeue
// after a burst the top layer's own state served, so that its single-object free, once per
// packet, skips the kind (Handle::PutOneOf<K>); and what its burst hits need next (settled_mp:
// nothing, tracking_mp: the stamps of the track modifier, pool/track.h). The pool's adopt hook
// (HostAdopt), which runs before every change of a worker's kind or generation, drops every
// thread's remembered hits of the pool; dropping one is always safe (the call then takes the
// out-of-line path, which reads the slot), and a thread sets its own only while its slot is so.
//
// DPDK's lcore cache plays the lcache layer (skbnf_mempool.h): the ops' full paths serve a
// hosting core's cache (its refills, flushes and bypasses) through the core's kHostCache
// handle, and the adopt hook sizes and flushes it.
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_spinlock.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/mempool_driver.h"

namespace skbnf::dpdk::driver {

using pool::kMaxCores;
using pool::kNoCore;
using pool::Owner;
using WorkerHandle = pool::Pool::Handle<Owner::kWorker>;

struct alignas(64) PaddedTally {
  HostLcacheTally t;
};

// The lcore caches that play the lcache layer (DPDK's, mp->local_cache) and what the ops moved
// under each (see skbnf_mempool.h).
struct HostCaches {
  rte_mempool_cache* caches = nullptr;
  std::unique_ptr<PaddedTally[]> tally;
  // Cores whose cache plays the lcache layer; mp->cache_size is 1 while there is one (DPDK
  // hands out no cache at all while it is 0). Hooks of several workers run concurrently.
  rte_spinlock_t hosting_lock = RTE_SPINLOCK_INITIALIZER;
  int hosting = 0;
};

namespace {

struct ThreadSlots {
  const rte_mempool* hit_mp[kHitKinds];  // the remembered hit kinds (the keys: see
  WorkerHandle hit[kHitKinds];           // mempool_driver.h)
  const rte_mempool* wk_mp;              // the worker's handle
  WorkerHandle wk;
  // After a burst hit of the worker's handle (OpDequeue): settled_mp, nothing more to do (the
  // kind remembered if it is one, the slot not tracking); tracking_mp, the stamps (the kind
  // remembered, the slot tracking). Both remembered hits: set by the thread while its slot is
  // so, dropped by the adopt hook with hit_mp.
  const rte_mempool* settled_mp;
  const rte_mempool* tracking_mp;
  bool registered;
};
// Linked into executables only: local-exec TLS, so that the compare against the cached pool is
// one instruction with %fs as its base (initial-exec needs a GOT load too).
[[gnu::tls_model("local-exec")]] constinit thread_local ThreadSlots t_slots{};
using Registry = ThreadRegistry<ThreadSlots>;

enum class Forget { kEverything, kRememberedHits };
// Clears every thread's entries for mp: all of them (OpFree: a later pool may get mp's
// address) or only the remembered hits (the adopt hook: a worker's kind may change).
void ForgetThreadSlots(const rte_mempool* mp, Forget what) {
  Registry::Get().ForEach([&](ThreadSlots& t) {
    for (const rte_mempool*& key : t.hit_mp) DropCachedPool(key, mp);
    DropCachedPool(t.settled_mp, mp);
    DropCachedPool(t.tracking_mp, mp);
    if (what == Forget::kEverything) DropCachedPool(t.wk_mp, mp);
  });
}

// The pool's adopt hook: `core`'s lcore cache into the layers below (the generation the core
// ran, which FlushSlot then empties), and its size for `next`: N when the host plays next's
// lcache layer, else 0. Runs on the core, or on control for a parked worker.
void HostAdopt(void* ctx, int core, const pool::StrategySpec& next) {
  auto* dp = static_cast<DriverPool*>(ctx);
  // A worker's kind may change next: no thread's remembered hit of this pool holds.
  ForgetThreadSlots(dp->mp, Forget::kRememberedHits);
  HostCaches* h = dp->caches;
  if (h == nullptr || core < 0 || core >= kMaxCores || core >= RTE_MAX_LCORE) return;
  rte_mempool_cache& c = h->caches[core];
  HostLcacheTally& t = h->tally[core].t;
  if (c.len != 0) {
    const auto below = dp->pool->For<Owner::kHostCache>(core);
    below.Put(c.objs, c.len);
    pool::LayerCounters& l = below.HostedCounters();
    l.free_misses.Add(c.len);
    l.bulk.Add(1);
    t.below_net -= c.len;
    c.len = 0;
  }
  const bool on = dp->pool->HostsLcache(next);
  const bool was = t.active.load(std::memory_order_relaxed) != 0;
  const uint32_t size = next.Tunable(pool::kHostedLayer);
  c.size = on ? size : 0;
  c.flushthresh = on ? size * 3 / 2 : 0;  // rte_mempool's CALC_CACHE_FLUSHTHRESH
  t.active.store(on ? 1 : 0, std::memory_order_relaxed);
  t.gauge.store(0, std::memory_order_relaxed);
  if (on != was) {
    // Either value is correct for every core at every moment: with 0 the PMDs go straight to
    // the ops (a hosting core's requests are then bypasses, counted as such), with 1 a core
    // that does not host has a disabled cache. 0 whenever nobody hosts: a disabled cache
    // costs net_null about 15 instructions per packet.
    rte_spinlock_lock(&h->hosting_lock);
    h->hosting += on ? 1 : -1;
    __atomic_store_n(&dp->mp->cache_size, h->hosting > 0 ? 1u : 0u, __ATOMIC_RELEASE);
    rte_spinlock_unlock(&h->hosting_lock);
  }
}

// An lcore cache that plays the lcache layer, refilling (objs is its own array: size + the
// part of the request it did not hold) or bypassed (the caller's array), and flushing.
int HostDequeue(DriverPool* dp, int core, void** objs, unsigned n) {
  const auto below = dp->pool->For<Owner::kHostCache>(core);
  if (!below.Get(objs, n)) return -ENOBUFS;
  const rte_mempool_cache& c = dp->caches->caches[core];
  HostLcacheTally& t = dp->caches->tally[core].t;
  pool::LayerCounters& l = below.HostedCounters();
  t.below_net += n;
  const unsigned missed = objs == c.objs ? (n > c.size ? n - c.size : 0) : n;
  t.get_misses += missed;
  l.alloc_misses.Add(missed);
  if (objs == c.objs) l.bulk.Add(1);
  return 0;
}
void HostEnqueue(DriverPool* dp, int core, void* const* objs, unsigned n) {
  const auto below = dp->pool->For<Owner::kHostCache>(core);
  below.Put(objs, n);
  HostLcacheTally& t = dp->caches->tally[core].t;
  pool::LayerCounters& l = below.HostedCounters();
  t.below_net -= n;
  l.free_misses.Add(n);
  if (objs == dp->caches->caches[core].objs) {
    l.bulk.Add(1);
  } else {
    t.put_bypass += n;
  }
}
inline bool HostActive(const DriverPool* dp, int core) {
  return dp->caches != nullptr && core != kNoCore &&
         dp->caches->tally[core].t.active.load(std::memory_order_relaxed) != 0;
}

// Caches the calling thread's worker handle of mp when it owns its slot (a registered worker
// on an EAL lcore). Out of line, on the full paths of threads that have not cached mp.
[[gnu::noinline]] void CacheWorkerSlot(const rte_mempool* mp, DriverPool* dp) {
  const WorkerHandle h = dp->pool->For<Owner::kWorker>(EalLcoreCore());
  if (!h.Owns()) return;
  ThreadSlots& t = t_slots;
  if (!t.registered) {
    if (!Registry::Get().Register(t)) return;  // not listed: caches nothing (mempool_driver.h)
    t.registered = true;
  }
  t.wk = h;
  SetCachedPool(t.wk_mp, mp);
}

// Remembers the hit kind the calling worker's slot (t_slots.wk, cached for mp) runs, if it is
// one the cache keeps: OpEnqueue may skip the kind until the adopt hook drops this. Out of
// line, once per swap.
[[gnu::noinline]] void RememberWorkerHit(const rte_mempool* mp) {
  ThreadSlots& t = t_slots;
  const int k = t.wk.Hit();
  if (!IsCachedHit(k)) return;
  t.hit[k] = t.wk;
  SetCachedPool(t.hit_mp[k], mp);
}

// Whether the thread remembers a hit kind of mp.
template <size_t... K>
inline bool RemembersHit(const ThreadSlots& t, const rte_mempool* mp, std::index_sequence<K...>) {
  return ((kCachedHit<K> && IsCachedPool(t.hit_mp[K], mp)) || ...);
}

// The single-object free through the thread's entries: a remembered kind K first (no compare
// of the kind), else the worker's handle (which reads it). false: take the full path.
template <size_t K>
[[gnu::always_inline]] inline bool PutOneCached(ThreadSlots& t, rte_mempool* mp, void* obj) {
  if constexpr (K == kHitKinds) {
    if (!IsCachedPool(t.wk_mp, mp)) return false;
    // The recycle check reads the pool's data room only when recycle is the top layer.
    const auto port_of = [mp](const void* o) {
      return RecyclePort(static_cast<const rte_mbuf*>(o), Driver(mp)->min_buf_len);
    };
    return t.wk.PutOne(obj, port_of);
  } else if constexpr (!kCachedHit<K>) {
    return PutOneCached<K + 1>(t, mp, obj);
  } else {
    if (IsCachedPool(t.hit_mp[K], mp)) return t.hit[K].template PutOneOf<K>(obj);
    return PutOneCached<K + 1>(t, mp, obj);
  }
}

// The full paths, out of line: the inline part of OpEnqueue/OpDequeue is only the handle's
// hits, so that it needs no stack frame and everything else is one tail call (net_null frees
// one mbuf per enqueue: this is per packet). The thread's worker handle is cached here.
[[gnu::noinline]] int EnqueueSlow(rte_mempool* mp, void* const* objs, unsigned n) {
  DriverPool* dp = Driver(mp);
  const int core = LcoreCore();
  if (HostActive(dp, core)) {
    HostEnqueue(dp, core, objs, n);
  } else {
    dp->pool->Put(core, objs, n);
  }
  if (!IsCachedPool(t_slots.wk_mp, mp)) CacheWorkerSlot(mp, dp);
  return 0;
}
// After a burst hit of the worker's handle that is not settled: a tracking slot's stamps
// (pool/track.h: its burst hits are served inline like an untracked slot's, and stamped here,
// behind the compare OpDequeue makes after every burst hit anyway, so that `track` off costs
// nothing), else the settling, once per swap. Frameless, the stamps inline.
[[gnu::noinline]] int SettleBurstHit(const rte_mempool* mp, void** objs, unsigned n);
[[gnu::noinline]] int AfterBurstHit(const rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  if (__builtin_expect(!IsCachedPool(t.tracking_mp, mp), 0)) return SettleBurstHit(mp, objs, n);
  pool::StampBurst(t.wk.slot(), objs, n);
  return 0;
}
// Remembers the kind for OpEnqueue (the burst was served by the top layer's own state: its
// kind is the slot's), then what later burst hits need: nothing (settled_mp) or the stamps
// (tracking_mp). Set by the worker's own thread while its slot is so; the adopt hook, which
// runs before the slot's kind or generation changes, drops both (see the top).
int SettleBurstHit(const rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  if (!RemembersHit(t, mp, std::make_index_sequence<kHitKinds>())) RememberWorkerHit(mp);
  if (t.wk.Tracking()) {
    pool::StampOut(t.wk.slot(), objs, n);
    SetCachedPool(t.tracking_mp, mp);
  } else {
    SetCachedPool(t.settled_mp, mp);
  }
  return 0;
}
// A tracking worker's single-object get hit (pool/track.h): its slot declined OpDequeue's
// (fast_get 0), so that the untracked path runs what it ran before `track` existed; here the
// same hit, then the stamp, in tail position (DequeueSlow keeps no stack frame for it).
[[gnu::noinline]] int StampedOne(void** obj) {
  pool::StampOut(t_slots.wk.slot(), obj, 1);
  return 0;
}
[[gnu::noinline]] int DequeueFull(rte_mempool* mp, void** objs, unsigned n);
[[gnu::noinline]] int DequeueSlow(rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  if (n == 1 && IsCachedPool(t.wk_mp, mp) && t.wk.TakeTrackedOne(objs)) return StampedOne(objs);
  return DequeueFull(mp, objs, n);
}
int DequeueFull(rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  DriverPool* dp = Driver(mp);
  const int core = LcoreCore();
  if (!IsCachedPool(t.wk_mp, mp)) CacheWorkerSlot(mp, dp);
  if (HostActive(dp, core)) return HostDequeue(dp, core, objs, n);
  return dp->pool->Get(core, objs, n) ? 0 : -ENOBUFS;
}

}  // namespace

int OpEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  if (__builtin_expect(n == 1, 1) && PutOneCached<0>(t_slots, mp, objs[0])) return 0;
  return EnqueueSlow(mp, objs, n);
}

int OpDequeue(rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  if (__builtin_expect(IsCachedPool(t.wk_mp, mp), 1)) {
    if (n == 1) {
      if (t.wk.GetOne(objs)) return 0;
    } else if (t.wk.GetBurst(objs, n)) {
      // Settled (once per swap: see AfterBurstHit), nothing more; else out of line.
      if (__builtin_expect(!IsCachedPool(t.settled_mp, mp), 0)) return AfterBurstHit(mp, objs, n);
      return 0;
    }
  }
  return DequeueSlow(mp, objs, n);
}

// skbnfd's pools (CreatePktmbufPool's; not with the debug switch): DPDK's lcore cache plays
// the lcache layer, and the adopt hook sizes a hosting core's cache and drops the threads'
// remembered hits before a worker's kind changes. A foreign application's pool: neither.
void ConfigureHost(DriverPool& dp, const HostRequest& host, pool::PoolConfig& cfg) {
  if (!host.skbnfd) return;
  cfg.host_lcache = host.lcore_caches && !host.debug;
  cfg.adopt_hook = &HostAdopt;
  cfg.adopt_ctx = &dp;
}

absl::Status StartHost(DriverPool& dp) {
  if (absl::Status st = Registry::Get().status(); !st.ok()) return st;
  if (!dp.pool->config().host_lcache) return absl::OkStatus();
  // All disabled (size and flush threshold 0) until the adopt hook sizes a worker's; DPDK sees
  // them once mp->cache_size is 1 (CreatePktmbufPool made that safe: see there).
  constexpr size_t kBytes = sizeof(rte_mempool_cache) * RTE_MAX_LCORE;
  auto* caches = static_cast<rte_mempool_cache*>(
      rte_zmalloc_socket("skbnf_lcore_caches", kBytes, RTE_CACHE_LINE_SIZE, dp.mp->socket_id));
  if (caches == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("skbnf mempool '", dp.mp->name, "': no memory for ", RTE_MAX_LCORE,
                     " lcore caches (", kBytes, " bytes); give EAL more memory (-m)"));
  }
  auto* h = new HostCaches;
  h->caches = caches;
  h->tally.reset(new PaddedTally[kMaxCores]);
  dp.caches = h;
  dp.mp->local_cache = caches;
  return absl::OkStatus();
}

void StopHost(DriverPool& dp) {
  ForgetThreadSlots(dp.mp, Forget::kEverything);
  if (HostCaches* h = dp.caches; h != nullptr) {
    dp.mp->cache_size = 0;
    dp.mp->local_cache = nullptr;
    rte_free(h->caches);
    delete h;
    dp.caches = nullptr;
  }
}

// skbnfd registers its ops at its first pool, once (mempool_driver.h says why then).
absl::Status EnsureOpsRegistered() {
  static const int index = rte_mempool_register_ops(&Ops());
  if (index < 0) {
    return absl::InternalError(absl::StrCat("cannot register the mempool ops '", kSkbnfOpsName,
                                            "': ", rte_strerror(-index)));
  }
  return absl::OkStatus();
}

}  // namespace skbnf::dpdk::driver

namespace skbnf::dpdk {

HostLcache HostLcacheOf(const rte_mempool* mp, int core) {
  if (PoolOf(mp) == nullptr) return {};
  const driver::HostCaches* h = driver::Driver(mp)->caches;
  if (h == nullptr || core < 0 || core >= pool::kMaxCores || core >= RTE_MAX_LCORE) return {};
  return {&h->caches[core].len, &h->tally[core].t};
}

}  // namespace skbnf::dpdk
