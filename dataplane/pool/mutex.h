// SPDX-License-Identifier: BSD-3-Clause
// pool::Mutex: std::mutex with clang's capability attributes, for the data plane's control-side
// locks (the pool's, the engine's, the plugin's thread registry).
//
// Why not absl::Mutex, as server/ uses: the ThreadSanitizer stage runs the pool and the plugin
// against Debian's Abseil, which is not built with TSan, so TSan cannot see absl::Mutex's
// hand-over (its lock word is changed inside the uninstrumented library) and reports every
// access it guards as a race. std::mutex is pthread's, which TSan intercepts; libstdc++'s
// carries no capability attributes, so this wrapper adds them and `-Wthread-safety` (the static
// checks stage) checks ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED against it. The names
// and the call shape are absl's (Mutex, MutexLock(&mu)), so a reader of server/ reads it the
// same way.
#ifndef SKBNF_DATAPLANE_POOL_MUTEX_H_
#define SKBNF_DATAPLANE_POOL_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace skbnf::pool {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_MUTEX_H_
