// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/stats_sampler.h"

namespace skbnf::control {

StatsSampler::StatsSampler(const Backend& backend, std::chrono::milliseconds period,
                           std::chrono::milliseconds window)
    : backend_(backend), period_(period), window_(window) {
  samples_.push_back(backend_.GetStats());
  thread_ = std::make_unique<Periodic>(period_, [this] { Sample(); });
}

StatsSampler::~StatsSampler() { thread_.reset(); }

void StatsSampler::Sample() {
  // Keep enough samples to cover two windows.
  const size_t keep = static_cast<size_t>(2 * window_.count() / period_.count() + 2);
  StatsSnapshot s = backend_.GetStats();
  absl::MutexLock l(&mu_);
  samples_.push_back(std::move(s));
  while (samples_.size() > keep) samples_.pop_front();
}

std::optional<StatsSnapshot> StatsSampler::Baseline(
    std::chrono::steady_clock::time_point now) const {
  absl::MutexLock l(&mu_);
  const StatsSnapshot* best = nullptr;
  for (const StatsSnapshot& s : samples_) {
    if (s.taken >= now) break;
    if (best == nullptr || now - s.taken >= window_) best = &s;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

}  // namespace skbnf::control
