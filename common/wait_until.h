// SPDX-License-Identifier: BSD-3-Clause
// WaitUntil: the one bounded wait of skbnf's control side. Control operations that hand work
// to a worker (pause, resume, audit) and wait for the worker's own answer poll a condition until
// a deadline; they all do it here, the same way (yield between polls, one last check at the
// deadline so a late answer is not reported as a timeout).
#ifndef SKBNF_COMMON_WAIT_UNTIL_H_
#define SKBNF_COMMON_WAIT_UNTIL_H_

#include <chrono>
#include <thread>

namespace skbnf {

// true once `done()` holds; false if it still does not at `timeout` from now.
template <typename Pred>
bool WaitUntil(std::chrono::steady_clock::duration timeout, Pred done,
               std::chrono::steady_clock::duration pause = std::chrono::steady_clock::duration(0)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    if (pause.count() > 0) {
      std::this_thread::sleep_for(pause);
    } else {
      std::this_thread::yield();
    }
  }
  return true;
}

}  // namespace skbnf

#endif  // SKBNF_COMMON_WAIT_UNTIL_H_
