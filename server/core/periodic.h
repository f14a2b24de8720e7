// SPDX-License-Identifier: BSD-3-Clause
// Periodic: runs a function every `period` on its own thread until destroyed (the destructor
// wakes the thread at once and joins it). The control plane's background work (the stats
// sampler, the health publisher) runs on one each; none of it ever touches a worker.
#ifndef SKBNF_SERVER_CORE_PERIODIC_H_
#define SKBNF_SERVER_CORE_PERIODIC_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace skbnf::control {

class Periodic {
 public:
  Periodic(std::chrono::milliseconds period, std::function<void()> fn)
      : thread_([this, period, fn = std::move(fn)] {
          std::unique_lock<std::mutex> l(mu_);
          while (!cv_.wait_for(l, period, [this] { return stop_; })) {
            l.unlock();
            fn();
            l.lock();
          }
        }) {}
  ~Periodic() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_PERIODIC_H_
