// SPDX-License-Identifier: BSD-3-Clause
// The track modifier: stamps on the way out and the census of what is in flight (track.h).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"
#include "dataplane/pool/spinlock.h"

namespace skbnf::pool {

void StampOut(const CoreSlot& s, void* const* objs, unsigned n) { StampBurst(s, objs, n); }

absl::Status PoolCore::CheckModifiers(const PoolConfig& config, const StrategySpec& spec) {
  if (spec.track && config.stamp_offset == 0) {
    return absl::FailedPreconditionError(
        "modifier 'track' needs a word in each object to stamp, and this pool's host reserves "
        "none (skbnf pools of packet mbufs have one: the mbuf dynamic field "
        "skbnf_dynfield_pool_stamp)");
  }
  if (spec.track && config.stamp_offset % alignof(uint64_t) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("stamp_offset ", config.stamp_offset, " is not 8-byte aligned"));
  }
  return absl::OkStatus();
}

void PoolCore::ClearStamps() {
  const uint32_t off = config_.stamp_offset;
  if (off == 0) return;
  store_->ForEachObject(
      [&](uint64_t, void* handle) { StampWord(handle, off).store(0, std::memory_order_relaxed); });
}

absl::StatusOr<InFlightCensus> PoolCore::Census(std::chrono::microseconds wait) {
  MutexLock lock(&control_mu_);
  if (!current_.load(std::memory_order_acquire)->spec.track) {
    return absl::FailedPreconditionError(
        "tracking is off: the strategy has no 'track' modifier (add ',track' to it)");
  }
  InFlightCensus out;
  out.flushed = EmptyLayers(*other_, wait, &out.unanswered_cores);
  const std::vector<bool> free = store_->FreeMap();
  out.now_tsc = SpinLock::Ticks();
  out.populated = store_->populated();
  const uint32_t off = config_.stamp_offset;
  store_->ForEachObject([&](uint64_t index, void* handle) {
    if (free[index]) return;
    ++out.in_flight;
    const uint64_t stamp = StampWord(handle, off).load(std::memory_order_relaxed);
    if (stamp == 0) {
      ++out.untracked;
    } else {
      out.tracked.push_back(TrackedObject{handle, stamp});
    }
  });
  return out;
}

absl::string_view SiteName(const Site& site) {
  switch (site.kind) {
    case SiteKind::kWorker:
      return site.rx_port >= 0 ? "rx" : "worker";
    case SiteKind::kApplication:
      return "application";
    case SiteKind::kOther:
    case SiteKind::kNone:
      break;
  }
  return "other";
}

std::vector<Site> StandingSites(const std::vector<std::pair<int, std::vector<int>>>& workers) {
  std::vector<Site> out;
  for (const auto& [core, rx_ports] : workers) {
    out.push_back(Site{SiteKind::kWorker, core, -1});
    for (int p : rx_ports) out.push_back(Site{SiteKind::kWorker, core, p});
  }
  out.push_back(Site{SiteKind::kOther, -1, -1});
  return out;
}

BufferAges Summarise(const InFlightCensus& census, const std::vector<Site>& always) {
  BufferAges out;
  out.populated = census.populated;
  out.in_flight = census.in_flight;
  out.untracked = census.untracked;
  out.tracked = census.tracked.size();
  out.flushed = census.flushed;
  out.unanswered_cores = census.unanswered_cores;
  const double hz = static_cast<double>(census.tsc_hz);
  auto age_of = [&](uint64_t stamp) {
    const uint64_t t = StampTsc(stamp);
    return hz == 0 || t >= census.now_tsc ? 0.0 : static_cast<double>(census.now_tsc - t) / hz;
  };
  std::map<std::tuple<int, int, int>, SiteAges> sites;
  for (const Site& s : always) {
    sites[{static_cast<int>(s.kind), s.core, s.rx_port}].site = s;
  }
  for (const TrackedObject& o : census.tracked) {
    const Site site = DecodeSite(o.stamp);
    const Site key_site{site.kind, site.kind == SiteKind::kOther ? -1 : site.core,
                        site.kind == SiteKind::kWorker ? site.rx_port : -1};
    SiteAges& a = sites[{static_cast<int>(key_site.kind), key_site.core, key_site.rx_port}];
    a.site = key_site;
    const double age = age_of(o.stamp);
    const size_t b = static_cast<size_t>(
        std::lower_bound(kAgeBucketsSeconds.begin(), kAgeBucketsSeconds.end(), age) -
        kAgeBucketsSeconds.begin());
    ++a.counts[b];
    ++a.objects;
    a.sum_seconds += age;
    a.max_seconds = std::max(a.max_seconds, age);
  }
  for (auto& [k, a] : sites) out.sites.push_back(a);
  // The oldest: the smallest TSC stamps.
  std::vector<const TrackedObject*> order;
  order.reserve(census.tracked.size());
  for (const TrackedObject& o : census.tracked) order.push_back(&o);
  const size_t keep = std::min(kKeepOldest, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [](const TrackedObject* a, const TrackedObject* b) {
                      return StampTsc(a->stamp) < StampTsc(b->stamp);
                    });
  for (size_t i = 0; i < keep; ++i) {
    out.oldest.push_back(AgedObject{reinterpret_cast<uintptr_t>(order[i]->handle),
                                    age_of(order[i]->stamp), DecodeSite(order[i]->stamp)});
  }
  return out;
}

}  // namespace skbnf::pool
