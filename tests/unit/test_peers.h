// SPDX-License-Identifier: BSD-3-Clause
// Test peers: what only tests read of the pool's internals (issue 30: production code that
// only tests used moved here). Each class befriends its peer; nothing in production calls
// these.
#ifndef SKBNF_TESTS_UNIT_TEST_PEERS_H_
#define SKBNF_TESTS_UNIT_TEST_PEERS_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/slab_store.h"

namespace skbnf::pool {

struct PoolCoreTestPeer {
  // Epochs of the generations still alive (current and any a core may still hold).
  static std::vector<uint64_t> LiveEpochs(const PoolCore& p) {
    MutexLock lock(&p.gen_mu_);
    std::vector<uint64_t> out;
    for (const auto& g : p.generations_) out.push_back(g->epoch);
    return out;
  }
  // Moves every full magazine of every depot into the store. Safe at any time (workers then
  // find the depot empty and go to the store). Returns the objects moved.
  static uint64_t DrainDepots(PoolCore& p) {
    MutexLock lock(&p.control_mu_);
    return p.DrainGenerationDepots();
  }
};

// A handle's slot (BasicPool::Handle): its protocol words, which only tests poke.
struct HandleTestPeer {
  template <class H>
  static CoreSlot& SlotOf(const H& h) {
    return *h.s_;
  }
};

struct SlabListCounts {
  uint32_t partial = 0, full = 0, empty = 0;
};

struct SlabStoreTestPeer {
  // Takes up to n objects; returns how many.
  static unsigned GetUpTo(SlabStore& s, void** objs, unsigned n) {
    std::lock_guard<SpinLock> guard(s.lock_);
    return s.TakeLocked(objs, n);
  }
  // Slabs on each list.
  static SlabListCounts ListCounts(SlabStore& s) {
    std::lock_guard<SpinLock> guard(s.lock_);
    return SlabListCounts{s.list_len_[SlabStore::kPartial], s.list_len_[SlabStore::kFull],
                          s.list_len_[SlabStore::kEmpty]};
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_TESTS_UNIT_TEST_PEERS_H_
