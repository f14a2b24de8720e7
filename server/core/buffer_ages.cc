// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/buffer_ages.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace skbnf::control {

absl::string_view SiteName(const pool::Site& site) {
  switch (site.kind) {
    case pool::SiteKind::kWorker:
      return site.rx_port >= 0 ? "rx" : "worker";
    case pool::SiteKind::kApplication:
      return "application";
    case pool::SiteKind::kOther:
    case pool::SiteKind::kNone:
      break;
  }
  return "other";
}

std::vector<pool::Site> StandingSites(
    const std::vector<std::pair<int, std::vector<int>>>& workers) {
  std::vector<pool::Site> out;
  for (const auto& [core, rx_ports] : workers) {
    out.push_back(pool::Site{pool::SiteKind::kWorker, core, -1});
    for (int p : rx_ports) out.push_back(pool::Site{pool::SiteKind::kWorker, core, p});
  }
  out.push_back(pool::Site{pool::SiteKind::kOther, -1, -1});
  return out;
}

BufferAges Summarise(const pool::InFlightCensus& census, const std::vector<pool::Site>& always) {
  BufferAges out;
  out.populated = census.populated;
  out.in_flight = census.in_flight;
  out.untracked = census.untracked;
  out.tracked = census.tracked.size();
  out.flushed = census.flushed;
  out.unanswered_cores = census.unanswered_cores;
  const double hz = static_cast<double>(census.tsc_hz);
  auto age_of = [&](uint64_t stamp) {
    const uint64_t t = pool::StampTsc(stamp);
    return hz == 0 || t >= census.now_tsc ? 0.0 : static_cast<double>(census.now_tsc - t) / hz;
  };
  std::map<std::tuple<int, int, int>, SiteAges> sites;
  for (const pool::Site& s : always) {
    sites[{static_cast<int>(s.kind), s.core, s.rx_port}].site = s;
  }
  for (const pool::TrackedObject& o : census.tracked) {
    const pool::Site site = pool::DecodeSite(o.stamp);
    const pool::Site key_site{site.kind, site.kind == pool::SiteKind::kOther ? -1 : site.core,
                              site.kind == pool::SiteKind::kWorker ? site.rx_port : -1};
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
  std::vector<const pool::TrackedObject*> order;
  order.reserve(census.tracked.size());
  for (const pool::TrackedObject& o : census.tracked) order.push_back(&o);
  const size_t keep = std::min(kKeepOldest, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [](const pool::TrackedObject* a, const pool::TrackedObject* b) {
                      return pool::StampTsc(a->stamp) < pool::StampTsc(b->stamp);
                    });
  for (size_t i = 0; i < keep; ++i) {
    out.oldest.push_back(AgedObject{reinterpret_cast<uintptr_t>(order[i]->handle),
                                    age_of(order[i]->stamp), pool::DecodeSite(order[i]->stamp)});
  }
  return out;
}

}  // namespace skbnf::control
