// SPDX-License-Identifier: BSD-3-Clause
// Magazine and Depot (Bonwick & Adams, "Magazines and Vmem", USENIX 2001).
//
// A magazine is an M-element array of object pointers plus a round count. Each core holds two
// (loaded and previous); whole magazines are exchanged with the depot, which keeps a list of
// full magazines and a list of empty ones under one lock. The depot never holds partially
// filled magazines. The depot is backed by the slab store: when it has no full magazine the
// core allocates from the store, and when it has no empty magazine the core frees to the store
// (exactly Bonwick's fallbacks), so a depot never allocates on a worker's packet path.
//
// Each strategy generation that has a magazine layer owns its own depot (magazine size is part
// of the generation). When a generation retires, its depot's full magazines are drained back
// to the store.
//
// Memory: Reserve maps the magazines it makes as one anonymous region (mmap), unmapped with the
// depot; only a magazine made one at a time (TakeEmpty with no spare left) comes from the heap.
// A depot lives from one swap to the next, so its magazines (about 110 KiB at the default
// sizes) had been hundreds of heap chunks allocated by whichever control thread swapped and
// freed one swap later, among gRPC's allocations: each generation's chunks landed in other
// holes, and over an hour of swaps malloc's arena grew (issue 34 item 6's creep,
// bench/results/churn/depot-regions/). A mapped region takes nothing from the arenas and its
// pages go back to the kernel whole at munmap. Each magazine starts on a cache line of its own.
#ifndef SKBNF_DATAPLANE_POOL_DEPOT_H_
#define SKBNF_DATAPLANE_POOL_DEPOT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dataplane/pool/spinlock.h"

namespace skbnf::pool {

class SlabStore;

struct Magazine {
  uint32_t rounds = 0;
  uint32_t capacity = 0;
  Magazine* next = nullptr;
  void** objs = nullptr;
};

class Depot {
 public:
  // Preallocates `spares` empty magazines of `magazine_size` rounds.
  Depot(uint32_t magazine_size, uint32_t spares);
  ~Depot();
  Depot(const Depot&) = delete;
  Depot& operator=(const Depot&) = delete;

  uint32_t magazine_size() const { return size_; }

  // Hands in an empty magazine and takes a full one. Returns nullptr, keeping nothing, when
  // the depot has no full magazine. `waited`: the TSC ticks spent waiting for the lock (0: it
  // was free), for the caller's core counters (CountDepotWait).
  Magazine* ExchangeEmptyForFull(Magazine* empty, uint64_t& waited);
  // Hands in a full magazine and takes an empty one. Returns nullptr, keeping nothing, when
  // the depot has no empty magazine. `waited`: as above.
  Magazine* ExchangeFullForEmpty(Magazine* full, uint64_t& waited);
  // An empty magazine for a core joining the generation; allocates one when no spare is left
  // (at a quiescent point, never on the packet path).
  Magazine* TakeEmpty();
  // Makes sure at least `total` magazines exist (allocating empty spares). Control thread.
  void Reserve(uint32_t total);
  // Gives back a magazine that has been emptied.
  void ReturnEmpty(Magazine* m);
  // Moves every round of every full magazine into `store` (one bulk put). Returns the count.
  uint64_t DrainTo(SlabStore& store);

  // No full magazine, and every magazine it made is in its empty list (none held by a core).
  bool AllEmpty();
  uint64_t objects() const { return objects_.load(std::memory_order_relaxed); }
  // Tests: the lock, to hold it while a core exchanges (tests/unit/layers_test.cc).
  SpinLock& lock_for_test() { return lock_; }
  // Tests: how many regions Reserve has mapped (tests/unit/layers_test.cc).
  size_t mapped_regions_for_test() {
    std::lock_guard<SpinLock> g(lock_);
    return regions_.size();
  }

 private:
  Magazine* NewMagazine();
  // Maps one region holding `count` empty magazines and pushes them on the empty list. False
  // (nothing made) when the kernel refuses the mapping. Holds lock_.
  bool MapMagazines(uint32_t count);

  struct Region {
    void* base;
    size_t bytes;
  };

  const uint32_t size_;
  const size_t stride_;  // bytes per magazine in a region: header + rounds, whole cache lines
  SpinLock lock_;
  Magazine* full_ = nullptr;
  Magazine* empty_ = nullptr;
  std::atomic<uint32_t> empty_count_{0};  // for AllEmpty
  std::atomic<uint64_t> objects_{0};
  uint32_t made_ = 0;                            // magazines made (guarded by lock_)
  std::vector<std::unique_ptr<char[]>> blocks_;  // magazines made one at a time (lock_)
  std::vector<Region> regions_;                  // mapped by Reserve, unmapped by ~Depot (lock_)
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_DEPOT_H_
