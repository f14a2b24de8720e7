// SPDX-License-Identifier: BSD-3-Clause
// Internal to the `skbnf` mempool ops driver (skbnf_mempool.h): what its common part
// (skbnf_mempool.cc: alloc, free, memory, populate, the ops table, CreatePktmbufPool) shares
// with the one per-thread slot cache each build links:
//
//   build                         slot cache                what it serves inline
//   ----------------------------  ------------------------  -------------------------------------
//   skbnf_mempool_ops (skbnfd)    slot_cache_skbnfd.cc      the thread's worker handle, whatever
//                                                           strategy runs on it; DPDK's lcore
//                                                           cache playing the lcache layer
//   skbnf_mempool (the plugin)    slot_cache_plugin.cc      the thread's foreign-owner handle, per
//                                                           hit kind (fixed for the pool's life)
//
// Each build compiles exactly one of the two (dataplane/dpdk/CMakeLists.txt): no plugin/skbnfd
// switch is left in the code. The slot cache defines the ops' enqueue and dequeue and the
// hooks below; the common part calls them at alloc and free. Neither part names a layer: the
// hit kinds are the pool's (pool::Pool::kHits, Handle::Hit).
//
// Includes DPDK headers: for this directory's driver files only.
#ifndef SKBNF_DATAPLANE_DPDK_MEMPOOL_DRIVER_H_
#define SKBNF_DATAPLANE_DPDK_MEMPOOL_DRIVER_H_

#include <pthread.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/skbnf_mempool.h"
#include "dataplane/pool/mutex.h"

namespace skbnf::dpdk::driver {

struct HostCaches;  // skbnfd's lcore caches (slot_cache_skbnfd.cc); the plugin has none

struct DriverPool {
  std::unique_ptr<pool::Pool> pool;
  rte_mempool* mp = nullptr;
  // A foreign application's pool (made without CreatePktmbufPool): every EAL lcore is a
  // foreign owner of it.
  bool foreign = false;
  uint32_t min_buf_len = 0;  // recycle check: the pool's mbuf data room
  // skbnfd: DPDK's lcore caches playing the lcache layer (nullptr: none).
  HostCaches* caches = nullptr;
};

inline DriverPool* Driver(const rte_mempool* mp) { return static_cast<DriverPool*>(mp->pool_data); }

// The calling thread's core: its lcore id, or kNoCore for non-EAL threads.
inline int LcoreCore() {
  const unsigned lc = rte_lcore_id();
  return lc < static_cast<unsigned>(pool::kMaxCores) ? static_cast<int>(lc) : pool::kNoCore;
}
// The calling thread's lcore when it is an EAL lcore (its id stays its own), else kNoCore.
inline int EalLcoreCore() {
  const int core = LcoreCore();
  return core != pool::kNoCore && rte_eal_lcore_role(static_cast<unsigned>(core)) == ROLE_RTE
             ? core
             : pool::kNoCore;
}

// Recycle check (skb_recycle_check for mbufs): refcnt 1, direct, one segment, a buffer not
// smaller than the pool's. Returns the mbuf's RX port, or -1.
inline int RecyclePort(const rte_mbuf* m, uint32_t min_len) {
  const bool ok = rte_mbuf_refcnt_read(m) == 1 && RTE_MBUF_DIRECT(m) && m->nb_segs == 1 &&
                  m->buf_len >= min_len && m->port < pool::kMaxPorts;
  return ok ? m->port : -1;
}

// ---- the per-thread slot caches' common machinery
// Finding the calling thread's slot from mp (pool_data, the pool, the lcore id, its bound, the
// slot's address, whether the pool is foreign) is a third of a single-object free or more, and
// PMDs free one mbuf per call (net_null, TX completion without fast free): so each thread keeps
// the pool handle it used last, keyed by the rte_mempool pointer, and a call compares mp and
// goes straight to the layer. The keys are written by other threads (OpFree, skbnfd's adopt
// hook): __atomic relaxed.
//  - Only an EAL lcore's slot is cached: an EAL lcore's id never moves to another thread
//    (a non-EAL thread's does, with rte_thread_unregister/register).
//  - OpFree clears every thread's entries for the pool (a later pool may get the same
//    address): each thread that caches registers its entries (ThreadRegistry), and they are
//    unregistered at its exit.
//  - A thread alternating between two pools takes the full path each time it switches:
//    correct, just not faster.
inline const rte_mempool* CachedPool(const rte_mempool* const& key) {
  return __atomic_load_n(&key, __ATOMIC_RELAXED);
}
inline void SetCachedPool(const rte_mempool*& key, const rte_mempool* mp) {
  __atomic_store_n(&key, mp, __ATOMIC_RELAXED);
}
inline void DropCachedPool(const rte_mempool*& key, const rte_mempool* mp) {
  if (CachedPool(key) == mp) SetCachedPool(key, nullptr);
}
// CachedPool(key) == mp. On x86-64 one `cmpq` against the thread's entry (an aligned 8-byte
// read, as the relaxed load; GCC does not fold an atomic load into the compare). Under
// ThreadSanitizer, which does not see inline assembly, the atomic load.
inline bool IsCachedPool(const rte_mempool* const& key, const rte_mempool* mp) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !SKBNF_TSAN_BUILD
  bool eq;
  asm("cmpq %2, %1" : "=@cce"(eq) : "m"(key), "r"(mp));
  return eq;
#else
  return CachedPool(key) == mp;
#endif
}

// The hit kinds a slot cache keeps an entry for (pool::Pool::kHits, Handle::Hit): those whose
// single-object free needs no recycle check (recycle's needs it: no entry for it).
inline constexpr size_t kHitKinds = pool::Pool::kHitKinds;
template <size_t K>
inline constexpr bool kCachedHit = !pool::Pool::kHitReadsPort<K>;
template <size_t... K>
constexpr std::array<bool, kHitKinds> CachedHits(std::index_sequence<K...>) {
  return {kCachedHit<K>...};
}
inline constexpr std::array<bool, kHitKinds> kCachedHits =
    CachedHits(std::make_index_sequence<kHitKinds>());
inline bool IsCachedHit(int k) { return k >= 0 && kCachedHits[static_cast<size_t>(k)]; }

// The threads' slot caches of type T (the build's ThreadSlots), for clearing a pool's entries.
// A thread's entry is taken out at its exit by a pthread key's destructor: without the key (its
// pthread_key_create failed: EAGAIN once the process has PTHREAD_KEYS_MAX keys, glibc 1,024) or
// without the thread's value (pthread_setspecific failed: ENOMEM) an exited thread would stay
// listed, and the next ForEach would write into its freed TLS. So the key is made with the
// registry, at the build's StartHost (the first pool: start-up; an error refuses the pool,
// naming the call), and a thread whose value cannot be set is not registered: it caches
// nothing and takes the full paths, correct and slower.
template <class T>
class ThreadRegistry {
 public:
  // Never destroyed: threads may exit during static destruction.
  static ThreadRegistry& Get() {
    static ThreadRegistry* r = new ThreadRegistry;
    return *r;
  }
  // Ok, or why the registry has no exit key (then Register refuses every thread).
  absl::Status status() const {
    if (key_error_ == 0) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrCat("skbnf mempool driver: pthread_key_create (the per-thread slot cache's exit "
                     "key): ",
                     std::strerror(key_error_)));
  }
  // Once per thread, before its first entry (out of line: on a full path). False: the thread
  // is not registered and must not cache an entry (see above).
  [[nodiscard]] bool Register(T& t) {
    if (key_error_ != 0) return false;
    pool::MutexLock lock(&mu_);
    if (pthread_setspecific(exit_key_, &t) != 0) return false;
    threads_.push_back(&t);
    return true;
  }
  template <class F>
  void ForEach(F&& f) {
    pool::MutexLock lock(&mu_);
    for (T* t : threads_) f(*t);
  }

 private:
  ThreadRegistry() {
    key_error_ = pthread_key_create(&exit_key_, [](void* p) {
      ThreadRegistry& self = Get();
      pool::MutexLock lock(&self.mu_);
      std::erase(self.threads_, static_cast<T*>(p));
    });
  }
  pool::Mutex mu_;
  std::vector<T*> threads_ ABSL_GUARDED_BY(mu_);
  pthread_key_t exit_key_{};
  int key_error_ = 0;  // pthread_key_create's result
};

// ---- what the build's slot cache defines (slot_cache_skbnfd.cc or slot_cache_plugin.cc)
// Which host made the mempool, and what it asked for.
struct HostRequest {
  bool skbnfd = false;        // CreatePktmbufPool made it (else a foreign application)
  bool debug = false;         // the pool's debug switch
  bool lcore_caches = false;  // CreatePktmbufPool: the private area has room for DPDK's
                              // cache_size 0 and 1, and the mempool's cache_size is 0
};
// Before Pool::Create: what the build adds to the pool's config for this mempool.
void ConfigureHost(DriverPool& dp, const HostRequest& host, pool::PoolConfig& cfg);
// After Pool::Create, before the mempool is used: Ok, or why the pool is refused.
absl::Status StartHost(DriverPool& dp);
// OpFree, before the pool is destroyed: every thread's entries for mp, and what StartHost made.
void StopHost(DriverPool& dp);
int OpEnqueue(rte_mempool* mp, void* const* objs, unsigned n);
int OpDequeue(rte_mempool* mp, void** objs, unsigned n);
// The ops table is registered with DPDK once per process, per build: the plugin from a load-time
// constructor (EAL's -d dlopen); skbnfd at its first pool, after EAL loaded its driver
// directory, so that DPDK's own ops keep the indices a secondary gives them and skbnf's comes
// last (mempool_secondary.h, "Ops indices"; dpdk-dumpcap's pool relies on it). Called by
// CreatePktmbufPool; Ok, or why the ops cannot be registered.
absl::Status EnsureOpsRegistered();
// The ops table (skbnf_mempool.cc), for that registration.
const rte_mempool_ops& Ops();

}  // namespace skbnf::dpdk::driver

#endif  // SKBNF_DATAPLANE_DPDK_MEMPOOL_DRIVER_H_
