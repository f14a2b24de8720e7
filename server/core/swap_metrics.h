// SPDX-License-Identifier: BSD-3-Clause
// SwapMetrics: what the control plane observed of the strategy swaps it ran (counts by result,
// a duration histogram), for the exporter. Updated by the service once per SetStrategy commit;
// never touched by workers.
#ifndef SKBNF_SERVER_CORE_SWAP_METRICS_H_
#define SKBNF_SERVER_CORE_SWAP_METRICS_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dataplane/pool/pool.h"

namespace skbnf::control {

class SwapMetrics {
 public:
  // Upper bounds of the duration histogram, seconds (+Inf implied).
  static constexpr std::array<double, 13> kBuckets = {
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1};

  enum Result { kOk = 0, kRolledBack = 1, kFailed = 2, kNumResults = 3 };
  static const char* ResultName(int r);

  void Record(const pool::SwapReport& report);

  struct Snapshot {
    uint64_t count[kNumResults] = {};
    uint64_t buckets[kBuckets.size()] = {};  // non-cumulative
    uint64_t observations = 0;
    double sum_seconds = 0;
  };
  Snapshot Get() const;

 private:
  mutable absl::Mutex mu_;
  Snapshot s_ ABSL_GUARDED_BY(mu_);
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_SWAP_METRICS_H_
