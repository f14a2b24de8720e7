// SPDX-License-Identifier: BSD-3-Clause
// Test-and-test-and-set spinlock. The store and the depot are each guarded by one of these:
// their critical sections are a few dozen instructions (list splices, pointer copies), shorter
// than a futex round trip, and the lock is only reached when a per-core layer falls through.
#ifndef SKBNF_DATAPLANE_POOL_SPINLOCK_H_
#define SKBNF_DATAPLANE_POOL_SPINLOCK_H_

#include <atomic>

namespace skbnf::pool {

class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_SPINLOCK_H_
