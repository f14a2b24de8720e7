// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/swap_metrics.h"

namespace skbnf::control {

const char* SwapMetrics::ResultName(int r) {
  switch (r) {
    case kOk:
      return "ok";
    case kRolledBack:
      return "rolled_back";
    default:
      return "failed";
  }
}

void SwapMetrics::Record(const pool::SwapReport& report) {
  int result = report.status.ok() ? kOk : report.rolled_back ? kRolledBack : kFailed;
  double seconds = static_cast<double>(report.total_ns) * 1e-9;
  absl::MutexLock l(&mu_);
  s_.count[result]++;
  s_.observations++;
  s_.sum_seconds += seconds;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      s_.buckets[i]++;
      break;
    }
  }
}

SwapMetrics::Snapshot SwapMetrics::Get() const {
  absl::MutexLock l(&mu_);
  return s_;
}

}  // namespace skbnf::control
