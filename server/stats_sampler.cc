#include "server/stats_sampler.h"

namespace skbnf::control {

StatsSampler::StatsSampler(const Backend& backend, std::chrono::milliseconds period,
                           std::chrono::milliseconds window)
    : backend_(backend), period_(period), window_(window) {
  samples_.push_back(backend_.GetStats());
  thread_ = std::thread([this] { Run(); });
}

StatsSampler::~StatsSampler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StatsSampler::Run() {
  // Keep enough samples to cover two windows.
  const size_t keep = static_cast<size_t>(2 * window_.count() / period_.count() + 2);
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, period_, [this] { return stop_; })) {
    l.unlock();
    StatsSnapshot s = backend_.GetStats();
    l.lock();
    samples_.push_back(std::move(s));
    while (samples_.size() > keep) samples_.pop_front();
  }
}

std::optional<StatsSnapshot> StatsSampler::Baseline(
    std::chrono::steady_clock::time_point now) const {
  std::lock_guard<std::mutex> l(mu_);
  const StatsSnapshot* best = nullptr;
  for (const StatsSnapshot& s : samples_) {
    if (s.taken >= now) break;
    if (best == nullptr || now - s.taken >= window_) best = &s;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

}  // namespace skbnf::control
