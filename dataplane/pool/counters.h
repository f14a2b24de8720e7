// SPDX-License-Identifier: BSD-3-Clause
// Per-core counters. Each counter is written by exactly one core and read by anyone, with a
// relaxed load: readers may see a value a few bursts old, never a torn one.
//
// Add is one `addq` to memory on x86-64 (no lock prefix: one writer). The portable form, a
// relaxed load + relaxed store, compiles to three instructions (GCC does not fuse an atomic's
// load and store), and these adds sit on the packet path: a single-object free counts two of
// them. An aligned 8-byte read-modify-write by one writer is atomic for x86 readers (no
// tearing), which is what the relaxed load + store promised. Under ThreadSanitizer, which does
// not see inline assembly, and on other architectures, the portable form is used.
#ifndef SKBNF_DATAPLANE_POOL_COUNTERS_H_
#define SKBNF_DATAPLANE_POOL_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "dataplane/pool/spinlock.h"
#include "dataplane/pool/strategy_spec.h"

// clang spells the ThreadSanitizer test differently from GCC.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SKBNF_TSAN_BUILD 1
#endif
#endif
#ifndef SKBNF_TSAN_BUILD
#define SKBNF_TSAN_BUILD 0
#endif

namespace skbnf::pool {

class Counter {
 public:
  void Add(uint64_t d) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !SKBNF_TSAN_BUILD
    static_assert(sizeof(v_) == sizeof(uint64_t) && alignof(decltype(v_)) == 8);
    asm volatile("addq %1, %0" : "+m"(*reinterpret_cast<uint64_t*>(&v_)) : "er"(d) : "cc");
#else
    v_.store(v_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
#endif
  }
  // For counters shared by several threads (the non-worker slot).
  void AtomicAdd(uint64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// One per-core layer. allocs = alloc_hits + alloc_misses; frees = free_hits + free_misses.
struct LayerCounters {
  Counter alloc_hits;    // objects this layer handed out from its own state
  Counter alloc_misses;  // objects it asked the layer below for
  Counter free_hits;     // objects it kept
  Counter free_misses;   // objects it passed to the layer below
  Counter bulk;          // whole-batch transfers with the layer below (magazine exchanges,
                         // lcache refills/flushes, flushes at a swap)
  // Single-object hits of the top layer (Pool's inline fast path: one per packet with PMDs
  // that free one mbuf per call). Each is one alloc or free of the core *and* one hit of this
  // layer, but counted once, here: Snapshot (and CoreAllocs/CoreFrees) add them to both. One
  // `addq` per object instead of two.
  Counter fast_alloc_hits;
  Counter fast_free_hits;
};

// The single-object hits of a slot whose chain has none (CoreSlot::fast_counters).
inline const LayerCounters kNoSingleHits{};

struct CoreCounters {
  Counter allocs;          // objects handed out by the pool to the host on this core
  Counter frees;           // objects returned by the host on this core (after debug filtering)
  Counter alloc_failures;  // Get() calls that could not be satisfied (all-or-nothing)
  LayerCounters layer[kMaxLayers];  // by a layer's kIndex
  Counter store_allocs;  // objects taken from the slab store
  Counter store_frees;   // objects returned to the slab store
  Counter store_locks;   // store lock acquisitions
  Counter depot_locks;   // depot lock acquisitions
  // Depot lock acquisitions that found the lock held by another core and spun, and the TSC
  // ticks they spun; depot_wait_end: the TSC when this core's last wait ended (a worker's slow
  // iteration names `depot_wait` when it is inside the iteration: common/worker_perf.h).
  Counter depot_waits;
  Counter depot_wait_ticks;
  std::atomic<uint64_t> depot_wait_end{0};
};

// After a depot call that spun `ticks` (SpinLock::LockTimed; 0: it did not): counted on the
// core. Cold: a wait is on a depot exchange that another core holds.
inline void CountDepotWait(CoreCounters& c, uint64_t ticks) {
  if (__builtin_expect(ticks == 0, 1)) return;
  c.depot_waits.AtomicAdd(1);
  c.depot_wait_ticks.AtomicAdd(ticks);
  c.depot_wait_end.store(SpinLock::Ticks(), std::memory_order_relaxed);
}

// Plain copy of CoreCounters for readers.
struct LayerCountersSnapshot {
  uint64_t alloc_hits = 0, alloc_misses = 0, free_hits = 0, free_misses = 0, bulk = 0;
};
struct CoreCountersSnapshot {
  uint64_t allocs = 0, frees = 0, alloc_failures = 0;
  LayerCountersSnapshot layer[kMaxLayers];
  uint64_t store_allocs = 0, store_frees = 0, store_locks = 0, depot_locks = 0;
  uint64_t depot_waits = 0, depot_wait_ticks = 0;
};

// The core's allocs and frees, its layers' single-object hits included.
inline uint64_t CoreAllocs(const CoreCounters& c) {
  uint64_t n = c.allocs.Get();
  for (const LayerCounters& l : c.layer) n += l.fast_alloc_hits.Get();
  return n;
}
inline uint64_t CoreFrees(const CoreCounters& c) {
  uint64_t n = c.frees.Get();
  for (const LayerCounters& l : c.layer) n += l.fast_free_hits.Get();
  return n;
}

inline CoreCountersSnapshot Snapshot(const CoreCounters& c) {
  CoreCountersSnapshot s;
  s.allocs = c.allocs.Get();
  s.frees = c.frees.Get();
  s.alloc_failures = c.alloc_failures.Get();
  for (int i = 0; i < kMaxLayers; ++i) {
    const uint64_t fast_allocs = c.layer[i].fast_alloc_hits.Get();
    const uint64_t fast_frees = c.layer[i].fast_free_hits.Get();
    s.allocs += fast_allocs;
    s.frees += fast_frees;
    s.layer[i].alloc_hits = c.layer[i].alloc_hits.Get() + fast_allocs;
    s.layer[i].alloc_misses = c.layer[i].alloc_misses.Get();
    s.layer[i].free_hits = c.layer[i].free_hits.Get() + fast_frees;
    s.layer[i].free_misses = c.layer[i].free_misses.Get();
    s.layer[i].bulk = c.layer[i].bulk.Get();
  }
  s.store_allocs = c.store_allocs.Get();
  s.store_frees = c.store_frees.Get();
  s.store_locks = c.store_locks.Get();
  s.depot_locks = c.depot_locks.Get();
  s.depot_waits = c.depot_waits.Get();
  s.depot_wait_ticks = c.depot_wait_ticks.Get();
  return s;
}

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_COUNTERS_H_
