// SPDX-License-Identifier: BSD-3-Clause
// BufferAges: since when, and who took it (issue 32 item 2) — a pool census (dataplane/pool/
// track.h) summarised for readers: the in-flight objects' ages as a histogram per allocation
// site, and the oldest of them with their sites and addresses.
//
// Who takes a census. A census empties every per-core layer into the store (a reclaim's flush)
// and reads a word of every in-flight object, so no reader triggers one: the StatsSampler takes
// one every --buffer-census-every while the strategy carries `track`, and every reader (the
// GetBufferAges RPC, /metrics' skbnf_pool_inflight_age_seconds, skbnfctl buffers --ages) reads
// the latest, with its time. Tracking off: there is none (readers say so).
//
// Sites, as the metric's labels name them: rx (a worker refilling an RX port: core, port),
// worker (a worker's other allocations: core), application (an lcore of an application that
// is not a skbnfd worker, e.g. the plugin's: core), other (any other thread: the control
// thread's port set-up, a PMD's own thread).
//
// Buckets (seconds, le): from a millisecond to a day, with 300 s (the SkbnfBuffersLeaking
// alert's "old") a bound. A census is a snapshot: a bucket counts the objects in flight now
// whose age is at most le, so it can fall between two censuses (an OpenMetrics gauge
// histogram; the text format has no such type): query the buckets directly, never rate().
#ifndef SKBNF_SERVER_CORE_BUFFER_AGES_H_
#define SKBNF_SERVER_CORE_BUFFER_AGES_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "dataplane/pool/track.h"

namespace skbnf::control {

inline constexpr std::array<double, 12> kAgeBucketsSeconds = {
    0.001, 0.01, 0.1, 1, 10, 60, 300, 600, 1800, 3600, 21600, 86400};
// How many of the oldest objects a census keeps (GetBufferAgesRequest.oldest's upper bound).
inline constexpr size_t kKeepOldest = 1000;

// "rx", "worker", "application", "other" (the metric's `site` label, the RPC's site).
absl::string_view SiteName(const pool::Site& site);

struct SiteAges {
  pool::Site site;  // kind, core, rx_port (-1 unless rx)
  // Objects per bucket, not cumulative: counts[i] for ages in (le[i-1], le[i]], the last for
  // ages over the last bound.
  std::array<uint64_t, kAgeBucketsSeconds.size() + 1> counts{};
  uint64_t objects = 0;
  double sum_seconds = 0;
  double max_seconds = 0;
};

struct AgedObject {
  uintptr_t address = 0;  // the object (DPDK: the rte_mbuf's address)
  double age_seconds = 0;
  pool::Site site;
};

struct BufferAges {
  std::chrono::system_clock::time_point taken;
  std::chrono::microseconds took{0};  // the census's own duration
  uint64_t populated = 0;
  uint64_t in_flight = 0;
  uint64_t untracked = 0;  // in flight without a stamp (out since before tracking began)
  uint64_t tracked = 0;
  uint64_t flushed = 0;  // objects the census moved from per-core layers to the store
  std::vector<int> unanswered_cores;
  std::vector<SiteAges> sites;      // by kind, core, port
  std::vector<AgedObject> oldest;   // oldest first, at most kKeepOldest
};

// The census as readers see it (census.tsc_hz 0: every age reads 0). `always`: sites listed
// even when no object of theirs is in flight (the daemon's workers, each RX port they refill,
// the other threads), so that their series are there all along rather than coming and going.
BufferAges Summarise(const pool::InFlightCensus& census, const std::vector<pool::Site>& always = {});
// Those sites of a data plane: each worker core, with each RX port it refills, and "other".
std::vector<pool::Site> StandingSites(const std::vector<std::pair<int, std::vector<int>>>& workers);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_BUFFER_AGES_H_
