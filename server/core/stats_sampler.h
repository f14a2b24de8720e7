// SPDX-License-Identifier: BSD-3-Clause
// StatsSampler: takes a Backend::GetStats() snapshot every `period` on its own thread and keeps
// the last few, so that rates (pps, allocs/s, busy ratio) can be computed for any reader without
// a reader ever waiting: a reader takes a fresh snapshot and pairs it with the newest kept
// sample at least `window` old (or the oldest one while the daemon is young).
//
// Nothing here touches a worker: Backend::GetStats() is plain loads of per-core counters.
#ifndef SKBNF_SERVER_CORE_STATS_SAMPLER_H_
#define SKBNF_SERVER_CORE_STATS_SAMPLER_H_

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/rates.h"
#include "server/core/backend.h"
#include "server/core/periodic.h"

namespace skbnf::control {

class StatsSampler {
 public:
  StatsSampler(const Backend& backend, std::chrono::milliseconds period,
               std::chrono::milliseconds window);
  ~StatsSampler();
  StatsSampler(const StatsSampler&) = delete;
  StatsSampler& operator=(const StatsSampler&) = delete;

  // The newest kept sample taken at least `window` before `now`, else the oldest kept sample
  // older than `now`; nullopt when there is none.
  std::optional<StatsSnapshot> Baseline(std::chrono::steady_clock::time_point now) const;

 private:
  void Sample();

  const Backend& backend_;
  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds window_;
  mutable absl::Mutex mu_;
  std::deque<StatsSnapshot> samples_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::unique_ptr<Periodic> thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_STATS_SAMPLER_H_
