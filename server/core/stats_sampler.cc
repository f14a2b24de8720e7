// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/stats_sampler.h"

#include <cstdio>
#include <string>

namespace skbnf::control {

StatsSampler::StatsSampler(const Backend& backend, std::chrono::milliseconds period,
                           std::chrono::milliseconds window, std::chrono::milliseconds census_every)
    : backend_(backend),
      period_(period),
      window_(window),
      census_every_(census_every),
      standing_sites_(StandingSites([&] {
        std::vector<std::pair<int, std::vector<int>>> workers;
        for (const LcoreInfo& l : backend.GetInfo().lcores) {
          if (l.role == LcoreInfo::Role::kWorker && l.core >= 0) {
            workers.emplace_back(l.core, l.rx_ports);
          }
        }
        return workers;
      }())) {
  samples_.push_back(backend_.GetStats());
  thread_ = std::make_unique<Periodic>(period_, [this] { Sample(); });
  census_thread_ = std::make_unique<Periodic>(census_every_, [this] { TakeCensus(); });
}

StatsSampler::~StatsSampler() {
  census_thread_.reset();
  thread_.reset();
}

void StatsSampler::TakeCensus() {
  if (!backend_.GetStrategy().track) {
    absl::MutexLock l(&mu_);
    ages_.reset();
    census_failed_ = false;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<pool::InFlightCensus> c = backend_.CensusInFlight(kCensusWait);
  if (!c.ok()) {
    // A swap away from `track` between the two reads, or a data plane that cannot: no ages.
    absl::MutexLock l(&mu_);
    ages_.reset();
    if (!census_failed_ && !absl::IsFailedPrecondition(c.status())) {
      std::fprintf(stderr, "buffer census: %s\n", std::string(c.status().message()).c_str());
    }
    census_failed_ = true;
    return;
  }
  auto ages = std::make_shared<BufferAges>(Summarise(*c, standing_sites_));
  ages->taken = std::chrono::system_clock::now();
  ages->took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - t0);
  absl::MutexLock l(&mu_);
  ages_ = std::move(ages);
  census_failed_ = false;
}

std::shared_ptr<const BufferAges> StatsSampler::Ages() const {
  absl::MutexLock l(&mu_);
  return ages_;
}

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
