// SPDX-License-Identifier: BSD-3-Clause
// Periodic: runs a function every `period` on its own thread until destroyed (the destructor
// wakes the thread at once and joins it). The control plane's background work (the stats
// sampler, the health publisher) runs on one each; none of it ever touches a worker.
#ifndef SKBNF_SERVER_CORE_PERIODIC_H_
#define SKBNF_SERVER_CORE_PERIODIC_H_

#include <chrono>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace skbnf::control {

class Periodic {
 public:
  Periodic(std::chrono::milliseconds period, std::function<void()> fn)
      : thread_([this, period, fn = std::move(fn)] {
          absl::MutexLock l(&mu_);
          // AwaitWithTimeout returns true as soon as stop_ is set (the destructor), false when
          // the period passed: then run fn without the lock.
          while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::FromChrono(period))) {
            mu_.Unlock();
            fn();
            mu_.Lock();
          }
        }) {}
  ~Periodic() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

 private:
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_PERIODIC_H_
