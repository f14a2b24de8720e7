// SPDX-License-Identifier: BSD-3-Clause
// No stranded objects: reclaim from the caller's layers, the depots, quiescent-point workers
// (the reclaim bit) and foreign owners (membarrier(2)); pool_core.h, "No stranded objects".

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"

namespace skbnf::pool {

bool MembarrierAvailable() {
  static const bool ok =
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}

void PoolCore::ServeReclaim(CoreSlot& s) {
  if (!s.parked.load(std::memory_order_relaxed)) {  // a parked core flushed when it parked
    RunAdoptHook(s, s.gen->spec);
    FlushSlot(s);
  }
  s.reclaims_served.fetch_add(1, std::memory_order_acq_rel);
}

void PoolCore::EnterSlow(CoreSlot& s) {
  do {
    s.in_op.store(0, std::memory_order_release);
    while ((s.steal.load(std::memory_order_acquire) & kStealBit) != 0) CpuRelax();
    s.in_op.exchange(1, std::memory_order_seq_cst);  // a full barrier (xchg)
  } while ((s.steal.load(std::memory_order_seq_cst) & kStealBit) != 0);
}

void PoolCore::Reclaim(CoreSlot& self) {
  reclaims_.fetch_add(1, std::memory_order_relaxed);
  reclaimed_.fetch_add(EmptyLayers(self, config_.reclaim_wait, nullptr), std::memory_order_relaxed);
}

uint64_t PoolCore::EmptyLayers(CoreSlot& self, std::chrono::microseconds wait,
                               std::vector<int>* unanswered) {
  const bool owner = &self != other_ && Owned(self);
  uint64_t moved = 0;
  // 1. Our own layers (the caller is their owner, between operations) and the depots.
  if (owner) {
    if (self.foreign) Enter(self);
    moved += FlushSlot(self);
    if (self.foreign) Exit(self);
  }
  moved += DrainGenerationDepots();
  // 2. Ask quiescent-point workers; 3. rob foreign owners.
  uint32_t served0[kMaxCores];
  int asked[kMaxCores];
  int n_asked = 0;
  CoreSlot* robbed[kMaxCores];
  int n_robbed = 0;
  for (int c = 0; c < kMaxCores; ++c) {
    CoreSlot& v = Slot(c);
    if (&v == &self || !v.registered.load(std::memory_order_acquire)) continue;
    if (v.foreign) {
      uint8_t old = v.steal.load(std::memory_order_relaxed);
      if ((old & kStealBit) == 0 &&
          v.steal.compare_exchange_strong(old, old | kStealBit, std::memory_order_seq_cst)) {
        robbed[n_robbed++] = &v;
      }  // else another reclaimer is emptying it
      continue;
    }
    if (v.parked.load(std::memory_order_acquire)) continue;  // flushed when it parked
    served0[c] = v.reclaims_served.load(std::memory_order_acquire);
    v.word.fetch_or(kReclaimBit, std::memory_order_acq_rel);
    asked[n_asked++] = c;
  }
  if (n_robbed > 0) {
    // Owners store in_op then load steal; we stored steal (a seq_cst RMW) and load in_op.
    // With plain-store owners the barrier that orders their side is this membarrier; with
    // full-fence owners (strong_enter_) both sides are seq_cst already.
    if (!strong_enter_) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    for (int i = 0; i < n_robbed; ++i) {
      CoreSlot& v = *robbed[i];
      while (v.in_op.load(std::memory_order_seq_cst) != 0) CpuRelax();
      // Outside its marked operations; perhaps inside an unmarked free (layer.h, Steal).
      moved +=
          StealLayers(v, [&](void* const* objs, uint32_t k) { StorePut(shared_, v, objs, k); });
      v.steal.fetch_and(static_cast<uint8_t>(~kStealBit), std::memory_order_release);
    }
  }
  const auto deadline = Clock::now() + wait;
  while (n_asked > 0) {
    int still = 0;
    for (int i = 0; i < n_asked; ++i) {
      const CoreSlot& v = Slot(asked[i]);
      const bool done = v.reclaims_served.load(std::memory_order_acquire) != served0[asked[i]] ||
                        v.parked.load(std::memory_order_acquire) ||
                        !v.registered.load(std::memory_order_acquire);
      if (!done) asked[still++] = asked[i];
    }
    n_asked = still;
    // Serve requests addressed to us meanwhile: two workers failing at once must not wait for
    // each other. Our layers are consistent here (the failed Get gave back what it took).
    if (owner && !self.foreign && (self.word.load(std::memory_order_acquire) & kReclaimBit) != 0) {
      self.word.fetch_and(~kReclaimBit, std::memory_order_acq_rel);
      moved += FlushSlot(self);
      self.reclaims_served.fetch_add(1, std::memory_order_acq_rel);
    }
    if (n_asked == 0) break;
    if (Clock::now() >= deadline) {
      reclaim_timeouts_.fetch_add(n_asked, std::memory_order_relaxed);
      if (unanswered != nullptr) unanswered->assign(asked, asked + n_asked);
      break;
    }
    CpuRelax();
  }
  return moved;
}

bool PoolCore::GetAfterReclaim(CoreSlot& s, void** objs, unsigned n, bool count_allocs) {
  Reclaim(s);
  if (s.foreign) Enter(s);
  const bool ok = s.get(shared_, s, objs, n);
  if (ok) {
    if (count_allocs) CountAllocs(s, objs, n);
  } else {
    FailedGet(s);
  }
  if (s.foreign) Exit(s);
  return ok;
}

void PoolCore::FailedGet(CoreSlot& s) {
  if (Owned(s)) {
    s.counters.alloc_failures.Add(1);
  } else {
    s.counters.alloc_failures.AtomicAdd(1);
  }
}

}  // namespace skbnf::pool
