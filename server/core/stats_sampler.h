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
#include "server/core/buffer_ages.h"
#include "server/core/periodic.h"

namespace skbnf::control {

// It also takes the buffer census (buffer_ages.h) every `census_every` while the strategy
// carries `track`, on a thread of its own (a census waits up to kCensusWait for the workers),
// and keeps the latest for readers.
class StatsSampler {
 public:
  static constexpr std::chrono::milliseconds kCensusWait{20};
  StatsSampler(const Backend& backend, std::chrono::milliseconds period,
               std::chrono::milliseconds window,
               std::chrono::milliseconds census_every = std::chrono::milliseconds(2000));
  ~StatsSampler();
  StatsSampler(const StatsSampler&) = delete;
  StatsSampler& operator=(const StatsSampler&) = delete;

  // The newest kept sample taken at least `window` before `now`, else the oldest kept sample
  // older than `now`; nullopt when there is none.
  std::optional<StatsSnapshot> Baseline(std::chrono::steady_clock::time_point now) const;

  // The latest buffer census; nullptr while tracking is off (or before the first one).
  std::shared_ptr<const BufferAges> Ages() const;
  std::chrono::milliseconds census_every() const { return census_every_; }

 private:
  void Sample();
  void TakeCensus();

  const Backend& backend_;
  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds window_;
  mutable absl::Mutex mu_;
  std::deque<StatsSnapshot> samples_ ABSL_GUARDED_BY(mu_);  // oldest first
  const std::chrono::milliseconds census_every_;
  const std::vector<pool::Site> standing_sites_;  // buffer_ages.h StandingSites
  std::shared_ptr<const BufferAges> ages_ ABSL_GUARDED_BY(mu_);
  bool census_failed_ ABSL_GUARDED_BY(mu_) = false;  // logged once per run of failures
  std::unique_ptr<Periodic> thread_;
  std::unique_ptr<Periodic> census_thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_STATS_SAMPLER_H_
