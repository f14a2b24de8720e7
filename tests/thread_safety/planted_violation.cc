// SPDX-License-Identifier: BSD-3-Clause
// A planted lock violation: clang's -Wthread-safety must refuse this file (check.sh compiles it
// and fails if it compiles). It reads and writes a member guarded by a mutex without holding it,
// the mistake the annotations in server/ exist to catch.
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

class Counter {
 public:
  void Add() { ++n_; }  // no lock held: -Wthread-safety-analysis error
  int Get() {
    absl::MutexLock l(&mu_);
    return n_;
  }

 private:
  absl::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};

int main() {
  Counter c;
  c.Add();
  return c.Get();
}
