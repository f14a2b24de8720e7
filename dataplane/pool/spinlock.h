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

  // lock(), telling how long it waited: 0 when the lock was free at once (then the same one
  // exchange as lock()); otherwise the TSC ticks it spun, at least 1 (x86-64: rdtsc, the
  // worker loop's clock; elsewhere 1). What a wait costs is paid only by a waiter.
  uint64_t LockTimed() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return 0;
    return LockWaiting();
  }
  // Threads spinning in LockTimed now (tests: a holder waits for a waiter to arrive).
  uint32_t waiters() const { return waiters_.load(std::memory_order_relaxed); }
  static uint64_t Ticks() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
  }

 private:
  __attribute__((noinline, cold)) uint64_t LockWaiting() {
    const uint64_t t0 = Ticks();
    waiters_.fetch_add(1, std::memory_order_relaxed);
    lock();
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    const uint64_t d = Ticks() - t0;
    return d != 0 ? d : 1;
  }

  std::atomic<bool> locked_{false};
  std::atomic<uint32_t> waiters_{0};
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_SPINLOCK_H_
