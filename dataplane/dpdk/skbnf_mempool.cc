// SPDX-License-Identifier: BSD-3-Clause
// The `skbnf` mempool ops driver. See skbnf_mempool.h for the mapping and the two hosts.
#include "dataplane/dpdk/skbnf_mempool.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_spinlock.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/mempool_secondary.h"
#include "dataplane/pool/mutex.h"

namespace skbnf::dpdk {
namespace {

using pool::kMaxCores;
using pool::kMaxPorts;
using pool::kNoCore;

constexpr uint32_t kSlabBytes = 64 * 1024;  // slab size and alignment (see the header)

struct alignas(64) PaddedTally {
  HostLcacheTally t;
};

struct DriverPool {
  std::unique_ptr<pool::Pool> pool;
  // skbnfd: the lcore caches that play the lcache layer (DPDK's, mp->local_cache) and what the
  // ops moved under each (see the header).
  rte_mempool_cache* caches = nullptr;
  std::unique_ptr<PaddedTally[]> tally;
  rte_mempool* mp = nullptr;
  // Cores whose cache plays the lcache layer; mp->cache_size is 1 while there is one (DPDK
  // hands out no cache at all while it is 0). Hooks of several workers run concurrently.
  rte_spinlock_t hosting_lock = RTE_SPINLOCK_INITIALIZER;
  int hosting = 0;
  // A foreign application (the plugin): every EAL lcore is a foreign owner of the pool.
  bool foreign = false;
  uint32_t min_buf_len = 0;  // recycle check: the pool's mbuf data room
  uint32_t slab_align = kSlabBytes;
};

// The plugin is only ever loaded by foreign applications: its ops take the foreign path
// inline and the host path out of line; skbnfd's copy does the opposite.
#ifdef SKBNF_MEMPOOL_PLUGIN
constexpr bool kPluginBuild = true;
#else
constexpr bool kPluginBuild = false;
#endif

// What CreatePktmbufPool hands the ops through pool_config (checked by its magic: a foreign
// application passes nullptr, or something of its own).
struct ConfigBlock {
  static constexpr uint64_t kMagic = 0x736b626e66636667;  // "skbnfcfg"
  uint64_t magic = kMagic;
  MempoolOptions options;
  bool lcore_caches = false;  // the private area has room for DPDK's cache_size 0 and 1
  absl::Status error;         // why alloc failed
};

bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// A foreign application's pool (the plugin): SKBNF_STRATEGY, default magazine. The error names
// the variable and what to write.
absl::StatusOr<pool::StrategySpec> EnvStrategy(const rte_mempool* mp) {
  const char* s = std::getenv("SKBNF_STRATEGY");
  const std::string text = s != nullptr && s[0] != '\0' ? s : "magazine";
  absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(text);
  if (spec.ok()) return spec;
  return absl::InvalidArgumentError(absl::StrCat(
      "skbnf mempool '", mp->name, "': bad strategy '", text, "': ", spec.status().message(),
      " (write e.g. SKBNF_STRATEGY=magazine or recycle+headpool)"));
}

MempoolOptions EnvOptions() {
  MempoolOptions o;
  o.colour = EnvFlag("SKBNF_COLOUR");
  o.debug = EnvFlag("SKBNF_DEBUG");
  if (const char* v = std::getenv("SKBNF_STORE_STRIDE");
      v != nullptr && v[0] != '\0' && !absl::SimpleAtoi(v, &o.store_stride)) {
    std::fprintf(stderr, "SKBNF_STORE_STRIDE='%s' is not a number of bytes (write e.g. 4096)\n", v);
    o.store_stride = 1;  // which the store refuses: the pool creation fails
  }
  return o;
}

ConfigBlock* HostConfig(const rte_mempool* mp) {
  auto* c = static_cast<ConfigBlock*>(mp->pool_config);
  return c != nullptr && c->magic == ConfigBlock::kMagic ? c : nullptr;
}

void Fail(rte_mempool* mp, absl::Status st) {
  std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
  if (ConfigBlock* c = HostConfig(mp)) c->error = std::move(st);
}

inline DriverPool* Driver(const rte_mempool* mp) { return static_cast<DriverPool*>(mp->pool_data); }

// The calling thread's core: its lcore id, or kNoCore for non-EAL threads.
inline int LcoreCore() {
  const unsigned lc = rte_lcore_id();
  return lc < static_cast<unsigned>(kMaxCores) ? static_cast<int>(lc) : kNoCore;
}

// Recycle check (skb_recycle_check for mbufs): refcnt 1, direct, one segment, a buffer not
// smaller than the pool's. Returns the mbuf's RX port, or -1.
inline int RecyclePort(const rte_mbuf* m, uint32_t min_len) {
  const bool ok = rte_mbuf_refcnt_read(m) == 1 && RTE_MBUF_DIRECT(m) && m->nb_segs == 1 &&
                  m->buf_len >= min_len && m->port < kMaxPorts;
  return ok ? m->port : -1;
}
void ClassifyMbufs(void* ctx, void* const* objs, unsigned n, int16_t* ports) {
  const uint32_t min_len = static_cast<const DriverPool*>(ctx)->min_buf_len;
  for (unsigned i = 0; i < n; ++i) {
    ports[i] = static_cast<int16_t>(RecyclePort(static_cast<const rte_mbuf*>(objs[i]), min_len));
  }
}

// The pool's adopt hook (skbnfd): `core`'s lcore cache into the layers below (the generation
// the core ran, which FlushSlot then empties), and its size for `next`: N when the host plays
// next's lcache layer, else 0. Runs on the core, or on control for a parked worker.
enum class Forget { kEverything, kRememberedHits };
void ForgetThreadSlots(const rte_mempool* mp, Forget what);
void HostAdopt(void* ctx, int core, const pool::StrategySpec& next) {
  auto* dp = static_cast<DriverPool*>(ctx);
  // A worker's kind may change next: no thread's remembered hit of this pool holds.
  if (!kPluginBuild) ForgetThreadSlots(dp->mp, Forget::kRememberedHits);
  if (dp->caches == nullptr || core < 0 || core >= kMaxCores || core >= RTE_MAX_LCORE) return;
  rte_mempool_cache& c = dp->caches[core];
  HostLcacheTally& t = dp->tally[core].t;
  if (c.len != 0) {
    dp->pool->HostPut(core, c.objs, c.len);
    pool::LayerCounters& l = dp->pool->HostLcacheCounters(core);
    l.free_misses.Add(c.len);
    l.bulk.Add(1);
    t.below_net -= c.len;
    c.len = 0;
  }
  const bool on = dp->pool->HostsLcache(next);
  const bool was = t.active.load(std::memory_order_relaxed) != 0;
  c.size = on ? next.lcache_size : 0;
  c.flushthresh = on ? next.lcache_size * 3 / 2 : 0;  // rte_mempool's CALC_CACHE_FLUSHTHRESH
  t.active.store(on ? 1 : 0, std::memory_order_relaxed);
  t.gauge.store(0, std::memory_order_relaxed);
  if (on != was) {
    // Either value is correct for every core at every moment: with 0 the PMDs go straight to
    // the ops (a hosting core's requests are then bypasses, counted as such), with 1 a core
    // that does not host has a disabled cache. 0 whenever nobody hosts: a disabled cache
    // costs net_null about 15 instructions per packet.
    rte_spinlock_lock(&dp->hosting_lock);
    dp->hosting += on ? 1 : -1;
    __atomic_store_n(&dp->mp->cache_size, dp->hosting > 0 ? 1u : 0u, __ATOMIC_RELEASE);
    rte_spinlock_unlock(&dp->hosting_lock);
  }
}

bool IsMbufPool(const rte_mempool* mp) {
  return mp->private_data_size >= sizeof(rte_pktmbuf_pool_private) &&
         mp->elt_size >= sizeof(rte_mbuf);
}

int OpAlloc(rte_mempool* mp) {
  const ConfigBlock* host = HostConfig(mp);
  const MempoolOptions opt = host != nullptr ? host->options : EnvOptions();
  // skbnfd's spec comes parsed (MempoolOptions::strategy); only the plugin's is text.
  absl::StatusOr<pool::StrategySpec> spec = host != nullptr ? opt.strategy : EnvStrategy(mp);
  if (!spec.ok()) {
    Fail(mp, spec.status());
    return -EINVAL;
  }
  auto dp = std::make_unique<DriverPool>();
  dp->foreign = host == nullptr;
  const uint32_t elt = mp->header_size + mp->elt_size + mp->trailer_size;
  pool::PoolConfig cfg;
  cfg.name = mp->name;
  cfg.debug = opt.debug;
  cfg.store.elt_size = elt;
  cfg.store.handle_offset = mp->header_size;
  cfg.store.objs_per_slab = elt >= kSlabBytes ? 1 : kSlabBytes / elt;
  cfg.store.SetStride(opt.store_stride, kSlabBytes);
  cfg.store.slab_align = kSlabBytes;
  cfg.store.cache_line = RTE_CACHE_LINE_SIZE;
  cfg.store.colour = opt.colour;
  if (IsMbufPool(mp)) {
    dp->min_buf_len = rte_pktmbuf_data_room_size(mp);
    cfg.classify = &ClassifyMbufs;
    cfg.classify_ctx = dp.get();
  }
  // skbnfd's pools (not the plugin's, not with the debug switch): DPDK's lcore cache plays
  // the lcache layer (see the header).
  const bool host_cache =
      !kPluginBuild && host != nullptr && !opt.debug && mp->cache_size == 0 && host->lcore_caches;
  dp->mp = mp;
  cfg.host_lcache = host_cache;
  if (!kPluginBuild && host != nullptr) {
    // skbnfd's pools: the hook sizes a hosting core's lcache, and drops the threads'
    // remembered hits (ThreadSlots) before a worker's kind changes.
    cfg.adopt_hook = &HostAdopt;
    cfg.adopt_ctx = dp.get();
  }
  auto p = pool::Pool::Create(cfg, *spec);
  if (!p.ok()) {
    Fail(mp, absl::InvalidArgumentError(
                 absl::StrCat("skbnf mempool '", mp->name, "': ", p.status().message())));
    return -EINVAL;
  }
  dp->pool = std::move(*p);
  if (host_cache) {
    // All disabled (size and flush threshold 0) until the adopt hook sizes a worker's; DPDK
    // sees them once mp->cache_size is 1 (CreatePktmbufPool made that safe: see there).
    dp->caches = static_cast<rte_mempool_cache*>(
        rte_zmalloc_socket("skbnf_lcore_caches", sizeof(rte_mempool_cache) * RTE_MAX_LCORE,
                           RTE_CACHE_LINE_SIZE, mp->socket_id));
    if (dp->caches == nullptr) {
      Fail(mp,
           absl::ResourceExhaustedError(absl::StrCat(
               "skbnf mempool '", mp->name, "': no memory for ", RTE_MAX_LCORE, " lcore caches (",
               sizeof(rte_mempool_cache) * RTE_MAX_LCORE, " bytes); give EAL more memory (-m)")));
      return -ENOMEM;
    }
    dp->tally.reset(new PaddedTally[kMaxCores]);
    mp->local_cache = dp->caches;
  }
  if (dp->foreign) {
    // No quiescent point and nobody to register workers: every EAL lcore owns a slot from the
    // start (lcores made later with rte_thread_register use the store directly).
    unsigned lc;
    RTE_LCORE_FOREACH(lc) {
      if (lc < static_cast<unsigned>(kMaxCores)) {
        // Fails only for a core out of range or already registered, neither possible on a
        // fresh pool; should it ever, the pool is refused rather than run with a core short.
        if (absl::Status st = dp->pool->RegisterForeignCore(static_cast<int>(lc)); !st.ok()) {
          Fail(mp, absl::InternalError(absl::StrCat("skbnf mempool '", mp->name, "': lcore ", lc,
                                                    ": ", st.message())));
          return -EINVAL;
        }
      }
    }
  }
  mp->pool_data = dp.release();
  return 0;
}

void OpFree(rte_mempool* mp) {
  ForgetThreadSlots(mp, Forget::kEverything);
  if (DriverPool* dp = Driver(mp); dp != nullptr && dp->caches != nullptr) {
    mp->cache_size = 0;
    rte_free(dp->caches);
  }
  delete Driver(mp);
  mp->pool_data = nullptr;
}

// An lcore cache that plays the lcache layer, refilling (objs is its own array: size +
// the part of the request it did not hold) or bypassed (the caller's array), and flushing.
int HostDequeue(DriverPool* dp, int core, void** objs, unsigned n) {
  if (!dp->pool->HostGet(core, objs, n)) return -ENOBUFS;
  const rte_mempool_cache& c = dp->caches[core];
  HostLcacheTally& t = dp->tally[core].t;
  pool::LayerCounters& l = dp->pool->HostLcacheCounters(core);
  t.below_net += n;
  const unsigned missed = objs == c.objs ? (n > c.size ? n - c.size : 0) : n;
  t.get_misses += missed;
  l.alloc_misses.Add(missed);
  if (objs == c.objs) l.bulk.Add(1);
  return 0;
}
void HostEnqueue(DriverPool* dp, int core, void* const* objs, unsigned n) {
  dp->pool->HostPut(core, objs, n);
  HostLcacheTally& t = dp->tally[core].t;
  pool::LayerCounters& l = dp->pool->HostLcacheCounters(core);
  t.below_net -= n;
  l.free_misses.Add(n);
  if (objs == dp->caches[core].objs) {
    l.bulk.Add(1);
  } else {
    t.put_bypass += n;
  }
}
inline bool HostActive(const DriverPool* dp, int core) {
  return !kPluginBuild && dp->caches != nullptr && core != kNoCore &&
         dp->tally[core].t.active.load(std::memory_order_relaxed) != 0;
}

// Per-thread slot caches. Finding the calling thread's slot from mp (pool_data, the pool, the
// lcore id, its bound, the slot's address, whether the pool is foreign) is a third of a
// single-object free or more, and PMDs free one mbuf per call (net_null, TX completion without
// fast free): so each thread keeps the slot it used last, keyed by the rte_mempool pointer, and
// a call compares mp and goes straight to the layer.
//  - The plugin (foreign applications) keeps one entry per fast-path kind (a foreign slot's
//    strategy is fixed for the pool's life: Pool::ForeignFastSlot); a pool with no slot to
//    cache for this thread (top layer without a single-object hit: lcache, recycle, slab; or a
//    thread that is not an EAL lcore) is remembered too (none_mp), so its calls go straight
//    to the full path instead of looking again each time.
//  - skbnfd keeps one entry: its worker's slot (Pool::WorkerSlot), whatever runs on it; the
//    strategy changes at every swap, so each call reads the slot's kind (Pool::WorkerPutOne,
//    WorkerGetOne, WorkerBurstGet), and a slot whose kind does not fit (another top layer,
//    a hosted lcache, the debug switch, an unregistered worker) declines and the call takes
//    the full path. skbnfd's pools have no foreign owners (OpAlloc registers them only in a
//    foreign application), so a cached worker slot stays a worker's.
//    A worker's thread also remembers that its slot's kind is the head pool's (hp_mp/hp) or
//    the magazine layer's (mg_mp/mg), set by OpDequeue after a burst served by that layer, so
//    that its single-object free, once per packet, skips the kind
//    (Pool::WorkerRememberedPutOne). The pool's adopt hook (HostAdopt), which runs before every
//    change of a worker's kind, drops every thread's remembered hits of the pool
//    (ForgetThreadSlots, Forget::kRememberedHits); dropping one is always safe (the call then reads
//    the kind), and a thread sets its own only while its kind is that layer's.
//  - Only an EAL lcore's slot is cached: an EAL lcore's id never moves to another thread
//    (a non-EAL thread's does, with rte_thread_unregister/register).
//  - OpFree clears every thread's entries for the pool (a later pool may get the same
//    address): each thread that caches registers its entries, and unregisters them at exit.
//  - A thread alternating between two pools (of one kind, in the plugin) takes the full path
//    each time it switches: correct, just not faster.
struct ThreadSlots {
  const rte_mempool* hp_mp;  // the mp fields are written by OpFree (and the adopt hook) on
  pool::CoreSlot* hp;        // other threads: __atomic relaxed
  pool::Pool* hp_pool;
  const rte_mempool* mg_mp;
  pool::CoreSlot* mg;
  pool::Pool* mg_pool;
  const rte_mempool* none_mp;
  const rte_mempool* wk_mp;  // skbnfd: the worker's slot
  pool::CoreSlot* wk;
  bool registered;
};
// skbnfd's copy is linked into executables only: local-exec TLS, so that the compare against
// the cached pool is one instruction with %fs as its base (initial-exec needs a GOT load too).
#ifdef SKBNF_MEMPOOL_PLUGIN
constinit thread_local ThreadSlots t_slots{};
#else
[[gnu::tls_model("local-exec")]] constinit thread_local ThreadSlots t_slots{};
#endif

struct ThreadSlotsRegistry {
  pool::Mutex mu;
  std::vector<ThreadSlots*> threads ABSL_GUARDED_BY(mu);
  pthread_key_t exit_key;
};
ThreadSlotsRegistry& Registry() {
  // Never destroyed: threads may exit during static destruction.
  static ThreadSlotsRegistry* r = [] {
    auto* reg = new ThreadSlotsRegistry;
    (void)pthread_key_create(&reg->exit_key, [](void* p) {
      ThreadSlotsRegistry& self = Registry();
      pool::MutexLock lock(&self.mu);
      std::erase(self.threads, static_cast<ThreadSlots*>(p));
    });
    return reg;
  }();
  return *r;
}
void RegisterThreadSlots(ThreadSlots& t) {
  if (t.registered) return;
  ThreadSlotsRegistry& r = Registry();
  pool::MutexLock lock(&r.mu);
  r.threads.push_back(&t);
  (void)pthread_setspecific(r.exit_key, &t);
  t.registered = true;
}
inline const rte_mempool* CachedPool(const rte_mempool* const& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}
// CachedPool(field) == mp. On x86-64 one `cmpq` against the thread's entry (an aligned 8-byte
// read, as the relaxed load; GCC does not fold an atomic load into the compare). Under
// ThreadSanitizer, which does not see inline assembly, the atomic load.
inline bool IsCachedPool(const rte_mempool* const& field, const rte_mempool* mp) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !SKBNF_TSAN_BUILD
  bool eq;
  asm("cmpq %2, %1" : "=@cce"(eq) : "m"(field), "r"(mp));
  return eq;
#else
  return CachedPool(field) == mp;
#endif
}
// Clears every thread's entries for mp: all of them (OpFree: a later pool may get mp's
// address) or only the remembered hits (the adopt hook: a worker's kind may change).
void ForgetThreadSlots(const rte_mempool* mp, Forget what) {
  const auto drop = [mp](const rte_mempool*& field) {
    if (CachedPool(field) == mp) __atomic_store_n(&field, nullptr, __ATOMIC_RELAXED);
  };
  ThreadSlotsRegistry& r = Registry();
  pool::MutexLock lock(&r.mu);
  for (ThreadSlots* t : r.threads) {
    drop(t->hp_mp);
    drop(t->mg_mp);
    if (what == Forget::kEverything) {
      drop(t->none_mp);
      drop(t->wk_mp);
    }
  }
}
// The calling thread's lcore when it is an EAL lcore (its id stays its own), else kNoCore.
inline int EalLcoreCore() {
  const int core = LcoreCore();
  return core != kNoCore && rte_eal_lcore_role(static_cast<unsigned>(core)) == ROLE_RTE ? core
                                                                                        : kNoCore;
}

// skbnfd: caches the calling thread's worker slot of mp when it has one (a registered worker
// on an EAL lcore). Out of line, on the full paths of threads that have not cached mp.
[[gnu::noinline]] void CacheWorkerSlot(const rte_mempool* mp, DriverPool* dp) {
  pool::CoreSlot* s = dp->foreign ? nullptr : dp->pool->WorkerSlot(EalLcoreCore());
  if (s == nullptr) return;
  ThreadSlots& t = t_slots;
  RegisterThreadSlots(t);
  t.wk = s;
  __atomic_store_n(&t.wk_mp, mp, __ATOMIC_RELAXED);
}

// skbnfd: remembers which of the two hits the calling worker's slot (t_slots.wk, cached for
// mp) runs, if either: OpEnqueue may skip the kind until the adopt hook drops this. Out of
// line, once per swap.
#ifndef SKBNF_MEMPOOL_PLUGIN
[[gnu::noinline]] void RememberWorkerHit(const rte_mempool* mp) {
  ThreadSlots& t = t_slots;
  if (pool::Pool::WorkerHitIs<pool::HeadPool>(*t.wk)) {
    t.hp = t.wk;
    __atomic_store_n(&t.hp_mp, mp, __ATOMIC_RELAXED);
  } else if (pool::Pool::WorkerHitIs<pool::MagazineLayer>(*t.wk)) {
    t.mg = t.wk;
    __atomic_store_n(&t.mg_mp, mp, __ATOMIC_RELAXED);
  }
}
#endif

// The full paths, out of line: the inline part of OpEnqueue/OpDequeue is only the
// single-object hit of the top layer (and the burst from a head pool's hot list), so that it
// needs no stack frame and everything else is one tail call (net_null frees one mbuf per
// enqueue: this is per packet). skbnfd's copy caches the thread's worker slot here.
[[gnu::noinline]] int EnqueueSlow(rte_mempool* mp, void* const* objs, unsigned n) {
  DriverPool* dp = Driver(mp);
  const int core = LcoreCore();
  if (HostActive(dp, core)) {
    HostEnqueue(dp, core, objs, n);
  } else if (dp->foreign) {
    dp->pool->ForeignPut(core, objs, n);
  } else {
    dp->pool->Put(core, objs, n);
  }
  if (!kPluginBuild && !IsCachedPool(t_slots.wk_mp, mp)) CacheWorkerSlot(mp, dp);
  return 0;
}
[[gnu::noinline]] int DequeueSlow(rte_mempool* mp, void** objs, unsigned n) {
  DriverPool* dp = Driver(mp);
  const int core = LcoreCore();
  if (!kPluginBuild && !IsCachedPool(t_slots.wk_mp, mp)) CacheWorkerSlot(mp, dp);
  if (HostActive(dp, core)) return HostDequeue(dp, core, objs, n);
  const bool ok = dp->foreign ? dp->pool->ForeignGet(core, objs, n) : dp->pool->Get(core, objs, n);
  return ok ? 0 : -ENOBUFS;
}

#ifdef SKBNF_MEMPOOL_PLUGIN
// Caches the calling thread's slot of mp when there is one to cache. Out of line.
void CacheThreadSlot(rte_mempool* mp) {
  int kind = 0;
  pool::Pool* p = Driver(mp)->pool.get();
  pool::CoreSlot* s = p->ForeignFastSlot(LcoreCore(), &kind);
  if (kind != pool::Pool::kSingleHit<pool::HeadPool> &&
      kind != pool::Pool::kSingleHit<pool::MagazineLayer>) {
    s = nullptr;  // (recycle's single-object free needs the recycle check: no entry for it)
  }
  ThreadSlots& t = t_slots;
  RegisterThreadSlots(t);
  if (s == nullptr) {
    __atomic_store_n(&t.none_mp, mp, __ATOMIC_RELAXED);
  } else if (kind == pool::Pool::kSingleHit<pool::HeadPool>) {
    t.hp = s;
    t.hp_pool = p;
    __atomic_store_n(&t.hp_mp, mp, __ATOMIC_RELAXED);
  } else {
    t.mg = s;
    t.mg_pool = p;
    __atomic_store_n(&t.mg_mp, mp, __ATOMIC_RELAXED);
  }
}

[[gnu::noinline]] int PluginEnqueueMiss(rte_mempool* mp, void* const* objs, unsigned n) {
  CacheThreadSlot(mp);
  return EnqueueSlow(mp, objs, n);
}
// What OpDequeue does not serve inline.
[[gnu::noinline]] int PluginDequeueRest(rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
  pool::CoreSlot* s;
  pool::Pool* p;
  if (IsCachedPool(t.hp_mp, mp)) {
    s = t.hp;
    p = t.hp_pool;
  } else if (IsCachedPool(t.mg_mp, mp)) {
    s = t.mg;
    p = t.mg_pool;
  } else {
    if (!IsCachedPool(t.none_mp, mp)) CacheThreadSlot(mp);
    return DequeueSlow(mp, objs, n);
  }
  if (n == 1 && pool::Pool::ForeignGetOneOn(*s, objs)) return 0;
  return p->ForeignGetOn(*s, objs, n) ? 0 : -ENOBUFS;
}
#endif  // SKBNF_MEMPOOL_PLUGIN

// The plugin is loaded by foreign applications (every lcore a foreign owner): its ops go
// through the thread's cached foreign slot. skbnfd's copy serves its registered workers
// through the thread's cached worker slot.
int OpEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  ThreadSlots& t = t_slots;
#ifdef SKBNF_MEMPOOL_PLUGIN
  if (IsCachedPool(t.hp_mp, mp)) {
    if (__builtin_expect(n == 1, 1) && pool::Pool::ForeignPutOne<pool::HeadPool>(*t.hp, objs[0])) {
      return 0;
    }
  } else if (IsCachedPool(t.mg_mp, mp)) {
    if (__builtin_expect(n == 1, 1) &&
        pool::Pool::ForeignPutOne<pool::MagazineLayer>(*t.mg, objs[0])) {
      return 0;
    }
  } else if (!IsCachedPool(t.none_mp, mp)) {
    return PluginEnqueueMiss(mp, objs, n);
  }
#else
  if (__builtin_expect(n == 1, 1)) {
    if (IsCachedPool(t.hp_mp, mp)) {
      if (pool::Pool::WorkerRememberedPutOne<pool::HeadPool>(*t.hp, objs[0])) return 0;
    } else if (IsCachedPool(t.mg_mp, mp)) {
      if (pool::Pool::WorkerRememberedPutOne<pool::MagazineLayer>(*t.mg, objs[0])) return 0;
    } else if (IsCachedPool(t.wk_mp, mp)) {
      // The recycle check reads the pool's data room only when recycle is the top layer.
      const auto port_of = [mp](const void* o) {
        return RecyclePort(static_cast<const rte_mbuf*>(o), Driver(mp)->min_buf_len);
      };
      if (pool::Pool::WorkerPutOne(*t.wk, objs[0], port_of)) return 0;
    }
  }
#endif
  return EnqueueSlow(mp, objs, n);
}

int OpDequeue(rte_mempool* mp, void** objs, unsigned n) {
  ThreadSlots& t = t_slots;
#ifdef SKBNF_MEMPOOL_PLUGIN
  // The burst a PMD refills with, from a cached head-pool slot, inline and frameless; the
  // rest (single objects, the magazine, misses) is one tail call.
  if (n != 1) {
    if (IsCachedPool(t.hp_mp, mp) && pool::Pool::ForeignBurstGet<pool::HeadPool>(*t.hp, objs, n))
      return 0;
  }
  return PluginDequeueRest(mp, objs, n);
#else
  if (__builtin_expect(IsCachedPool(t.wk_mp, mp), 1)) {
    if (n == 1) {
      if (pool::Pool::WorkerGetOne(*t.wk, objs)) return 0;
    } else if (pool::Pool::WorkerBurstGet(*t.wk, objs, n)) {
      // Remember the kind for OpEnqueue (once per swap: see ThreadSlots). The burst was
      // served by the head pool's or the magazine layer's: one of the two is the kind.
      if (!IsCachedPool(t.hp_mp, mp) && !IsCachedPool(t.mg_mp, mp)) RememberWorkerHit(mp);
      return 0;
    }
  }
  return DequeueSlow(mp, objs, n);
#endif
}

// In a secondary the Pool (mp->pool_data) is in the primary's heap: ask it (mempool_secondary.h).
unsigned OpGetCount(const rte_mempool* mp) {
  if (rte_eal_process_type() == RTE_PROC_SECONDARY) {
    return static_cast<unsigned>(SecondaryAvailable(mp));
  }
  return static_cast<unsigned>(CountsOf(mp).available);
}

ssize_t OpCalcMemSize(const rte_mempool* mp, uint32_t obj_num, uint32_t pg_shift,
                      size_t* min_chunk_size, size_t* align) {
  const DriverPool* dp = Driver(mp);
  const pool::SlabStore& store = const_cast<DriverPool*>(dp)->pool->store();
  const size_t mem = store.MemSize(obj_num) + dp->slab_align;
  *align = dp->slab_align;
  // Slabs start on slab_align boundaries inside a chunk. On pages at least that big no object
  // crosses a page; on smaller pages (--no-huge: 4 KiB) ask for one IOVA-contiguous chunk.
  const bool small_pages = pg_shift != 0 && (size_t{1} << pg_shift) < dp->slab_align;
  *min_chunk_size = small_pages ? mem : store.slab_bytes() + dp->slab_align;
  return static_cast<ssize_t>(mem);
}

int OpPopulate(rte_mempool* mp, unsigned max_objs, void* vaddr, rte_iova_t iova, size_t len,
               rte_mempool_populate_obj_cb_t* obj_cb, void* obj_cb_arg) {
  DriverPool* dp = Driver(mp);
  const auto va = reinterpret_cast<uintptr_t>(vaddr);
  const uintptr_t start = (va + dp->slab_align - 1) & ~uintptr_t{dp->slab_align - 1};
  const uint32_t elt = mp->header_size + mp->elt_size + mp->trailer_size;
  if (start - va >= len || len - (start - va) < elt + RTE_CACHE_LINE_SIZE) return 0;
  // As rte_mempool_op_populate_helper: DPDK's per-object callback (mempool_add_elem: object
  // header, element list, populated_size) for each object, then the object is in the pool.
  auto placed = dp->pool->Populate(
      reinterpret_cast<void*>(start), len - (start - va), max_objs, [&](void* obj) {
        const uintptr_t off = reinterpret_cast<uintptr_t>(obj) - va;
        obj_cb(mp, obj_cb_arg, obj, iova == RTE_BAD_IOVA ? RTE_BAD_IOVA : iova + off);
      });
  if (!placed.ok()) {
    std::fprintf(stderr, "skbnf mempool '%s': populate: %s\n", mp->name,
                 std::string(placed.status().message()).c_str());
    return -EINVAL;
  }
  return static_cast<int>(*placed);
}

int OpGetInfo(const rte_mempool* mp, rte_mempool_info* info) {
  info->contig_block_size = 0;
  (void)mp;
  return 0;
}

// Constant-initialised: the registration below runs as a load-time constructor.
const rte_mempool_ops g_ops = {
    .name = "skbnf",
    .alloc = &OpAlloc,
    .free = &OpFree,
    .enqueue = &OpEnqueue,
    .dequeue = &OpDequeue,
    .get_count = &OpGetCount,
    .calc_mem_size = &OpCalcMemSize,
    .populate = &OpPopulate,
    .get_info = &OpGetInfo,
    .dequeue_contig_blocks = nullptr,
};

#ifdef SKBNF_MEMPOOL_PLUGIN
// The plugin registers at load time (EAL's -d dlopen). skbnfd registers at its first pool
// (CreatePktmbufPool), after EAL loaded its driver directory, so that DPDK's own ops keep the
// indices a secondary gives them (mempool_secondary.h, "Ops indices").
RTE_MEMPOOL_REGISTER_OPS(g_ops);
#endif

}  // namespace

absl::StatusOr<rte_mempool*> CreatePktmbufPool(const std::string& name, uint32_t n,
                                               uint16_t data_room, int socket,
                                               const MempoolOptions& options) {
#ifndef SKBNF_MEMPOOL_PLUGIN
  static const int ops_index = rte_mempool_register_ops(&g_ops);  // once (see g_ops)
  if (ops_index < 0) {
    return absl::InternalError(absl::StrCat("cannot register the mempool ops '", kSkbnfOpsName,
                                            "': ", rte_strerror(-ops_index)));
  }
#endif
  // As rte_pktmbuf_pool_create_by_ops (rte_mbuf.c), with the options as pool_config.
  rte_pktmbuf_pool_private priv = {};
  priv.mbuf_data_room_size = data_room;
  priv.mbuf_priv_size = 0;
  const unsigned elt_size = sizeof(rte_mbuf) + data_room;
  // DPDK's lcore caches playing the lcache layer (see the header), not with the debug switch.
  // The ops switch them on by setting mp->cache_size to 1 while a worker hosts, and DPDK finds
  // the mempool's private area (the mbuf pool's data room, which PMDs read) at an offset that
  // depends on cache_size: RTE_MEMPOOL_HEADER_SIZE(mp, 0) or (mp, 1), RTE_MAX_LCORE caches
  // apart. So the private area is made that much bigger and holds the pool's private data at
  // both offsets; the caches themselves live elsewhere (mp->local_cache, the ops' alloc).
  const bool lcore_caches = !options.debug;
  const size_t cache_area = sizeof(rte_mempool_cache) * RTE_MAX_LCORE;
  rte_mempool* mp = rte_mempool_create_empty(
      name.c_str(), n, elt_size, /*cache_size=*/0,
      sizeof(rte_pktmbuf_pool_private) + (lcore_caches ? cache_area : 0), socket, 0);
  if (mp == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create mempool '", name, "': ", rte_strerror(rte_errno)));
  }
  ConfigBlock cfg;
  cfg.options = options;
  cfg.lcore_caches = lcore_caches;
  if (int rc = rte_mempool_set_ops_byname(mp, kSkbnfOpsName, &cfg); rc != 0) {
    rte_mempool_free(mp);
    return absl::InternalError(
        absl::StrCat("mempool ops '", kSkbnfOpsName, "' not registered: ", rte_strerror(-rc)));
  }
  rte_pktmbuf_pool_init(mp, &priv);  // at RTE_MEMPOOL_HEADER_SIZE(mp, 0)
  if (lcore_caches) {
    std::memcpy(reinterpret_cast<char*>(mp) + RTE_MEMPOOL_HEADER_SIZE(mp, 1),
                rte_mempool_get_priv(mp), sizeof(rte_pktmbuf_pool_private));
  }
  const int rc = rte_mempool_populate_default(mp);  // calls OpAlloc, which reads cfg
  mp->pool_config = nullptr;                        // cfg does not outlive this call
  if (rc < 0) {
    absl::Status why =
        cfg.error.ok()
            ? absl::ResourceExhaustedError(absl::StrCat("cannot populate mempool '", name, "' (", n,
                                                        " mbufs): ", rte_strerror(-rc)))
            : cfg.error;
    rte_mempool_free(mp);
    return why;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

pool::Pool* PoolOf(const rte_mempool* mp) {
  if (mp == nullptr || std::strcmp(rte_mempool_get_ops(mp->ops_index)->name, kSkbnfOpsName) != 0 ||
      mp->pool_data == nullptr) {
    return nullptr;
  }
  return Driver(mp)->pool.get();
}

HostLcache HostLcacheOf(const rte_mempool* mp, int core) {
  if (PoolOf(mp) == nullptr) return {};
  DriverPool* dp = Driver(mp);
  if (dp->caches == nullptr || core < 0 || core >= kMaxCores || core >= RTE_MAX_LCORE) return {};
  return {&dp->caches[core].len, &dp->tally[core].t};
}

MempoolCounts CountsOf(const rte_mempool* mp) {
  MempoolCounts c;
  pool::Pool* p = PoolOf(mp);
  if (p == nullptr) return c;
  c.populated = p->populated();
  uint64_t n = p->in_store() + p->in_depots();
  for (int core = 0; core < kMaxCores; ++core) {
    const pool::LayerGauges g = p->CoreGauges(core);
    for (uint64_t v : g.objects) n += v;
  }
  c.available = n;
  return c;
}

}  // namespace skbnf::dpdk
