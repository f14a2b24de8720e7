// SPDX-License-Identifier: BSD-3-Clause
// Since when, and who took it: the `track` modifier (issue 32 item 2).
//
// DPDK answers "where did my mbufs go" with per-mbuf history compiled in (25.11's
// RTE_MBUF_HISTORY), VPP with bufmon (buffers held per graph node). The pool owns the allocator,
// so it answers at run time: with `track` in the strategy, every object the pool hands out is
// stamped in a word of the object the host reserves for it (PoolConfig::stamp_offset: skbnf's
// mbuf dynamic field `skbnf_dynfield_pool_stamp`) with
//
//     stamp = TSC & ~0xffff | site          site (16 bits, never 0):
//                                             bits 0-6   core (lcore id; 0 for "other")
//                                             bits 7-12  RX port + 1 being refilled (0: none)
//                                             bits 13-14 kind: 1 worker, 2 application, 3 other
//
// (the TSC to 2^16 ticks, about 30 us at 2 GHz: ages are for leaks, not latency).
//
// Why the stamp is written on the way out only, and where. A free that clears it would cost
// every packet a test of the modifier on the single-object free path even with `track` off;
// the budget is 0 instructions per packet off and at most 3 on. So a slot that tracks
// keeps its inline free hits (CoreSlot::fast) and its inline burst get hits (Handle::GetBurst,
// reading `fast`), whose stamps are the host's: skbnfd's OpDequeue already compares a
// per-thread key after every burst hit (settled_mp: "nothing more to do for this pool"), which
// a tracking worker never sets, so its bursts go on to the stamps out of line (AfterBurstHit,
// StampBurst) and an untracked worker's run what they ran before. Its single-object get hits
// decline (CoreSlot::fast_get = 0, read where `fast` was read before: the same instructions),
// and the host's slow path takes the same hit and stamps it (Handle::TakeTrackedOne). Every
// other get takes the generation's compiled chain, whose Get variant for `track` stamps the
// burst (layer.h TopGet; the "other" threads' store path stamps while Shared::tracking). Off,
// the compiled chains and the inline paths are the ones that ran before `track` existed. Which
// objects are in flight is then found by a census instead:
//
// Census (PoolCore::Census, control side). Every per-core layer is emptied into the store as a
// failing Get's reclaim does (quiescent-point workers flush at their next Quiesce, foreign
// owners are robbed, the depots drained; parked workers hold nothing already), then the store's
// free objects are read under its lock: every other object is in flight, and its stamp says
// since when and where it left the pool. Bound: an object freed into a core's layers between
// that core's flush and the store's read (microseconds) is counted in flight with its last
// stamp for that census; a worker that does not flush within the wait is named in the census
// (InFlightCensus::unanswered_cores) and its layers' objects are counted the same way. With the
// workers parked (the exact audit) there is no such window. Objects handed out before `track`
// was switched on carry no stamp (or an old one from an earlier tracking period: the census
// clears every free object's stamp when tracking starts, PoolCore::Swap) and are counted as
// untracked. A census moves at most the per-core layers' objects (a swap's flush) and reads one
// word of every in-flight object: run it at most every few seconds (skbnfd: at most one per
// --buffer-census-every).
#ifndef SKBNF_DATAPLANE_POOL_TRACK_H_
#define SKBNF_DATAPLANE_POOL_TRACK_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace skbnf::pool {

// Who took an object, from the low 16 bits of its stamp.
enum class SiteKind : uint8_t { kNone = 0, kWorker = 1, kApplication = 2, kOther = 3 };

struct Site {
  SiteKind kind = SiteKind::kNone;
  int core = -1;     // the lcore (kWorker, kApplication; kOther: 0 or the unregistered core)
  int rx_port = -1;  // the RX port a worker was refilling, -1: none
};

inline constexpr uint64_t kStampSiteBits = 0xffff;
inline constexpr int kStampPortShift = 7;
inline constexpr int kStampKindShift = 13;

// A slot's site without the RX port (set at registration, CoreSlot::stamp_site).
constexpr uint16_t SiteBase(SiteKind kind, int core) {
  return static_cast<uint16_t>((static_cast<unsigned>(kind) << kStampKindShift) |
                               (static_cast<unsigned>(core < 0 ? 0 : core) & 0x7f));
}
constexpr uint16_t SiteWithPort(uint16_t base, int rx_port) {
  return rx_port < 0 ? base
                     : static_cast<uint16_t>(base | (((rx_port + 1) & 0x3f) << kStampPortShift));
}
constexpr Site DecodeSite(uint64_t stamp) {
  const auto kind = static_cast<SiteKind>((stamp >> kStampKindShift) & 3);
  const int port1 = static_cast<int>((stamp >> kStampPortShift) & 0x3f);
  return Site{kind, kind == SiteKind::kNone ? -1 : static_cast<int>(stamp & 0x7f), port1 - 1};
}
constexpr uint64_t StampTsc(uint64_t stamp) { return stamp & ~kStampSiteBits; }

// What a census found (PoolCore::Census).
struct TrackedObject {
  const void* handle = nullptr;  // the object as the host sees it (DPDK: the rte_mbuf)
  uint64_t stamp = 0;
};
struct InFlightCensus {
  uint64_t now_tsc = 0;                // the stamps' clock when the objects were read
  uint64_t populated = 0;              // objects of the pool
  uint64_t in_flight = 0;              // not in the store after every layer was emptied
  uint64_t untracked = 0;              // of those, without a stamp of this tracking period
  std::vector<TrackedObject> tracked;  // the others, in the store's index order
  std::vector<int> unanswered_cores;   // workers that did not flush within the wait
  uint64_t flushed = 0;                // objects the census moved to the store
  uint64_t tsc_hz = 0;  // the stamps' clock rate: the host's to fill (the pool does not know it)
};

// ---- The census as readers see it: ages per allocation site, the oldest objects
//
// Sites, as skbnfd's metric labels name them: rx (a worker refilling an RX port: core, port),
// worker (a worker's other allocations: core), application (an lcore of an application that
// is not a skbnfd worker, e.g. the plugin's: core), other (any other thread: the control
// thread's port set-up, a PMD's own thread).
//
// Buckets (seconds, le): from a millisecond to a day, with 300 s (the SkbnfBuffersLeaking
// alert's "old") a bound. A census is a snapshot: a bucket counts the objects in flight now
// whose age is at most le, so it can fall between two censuses (an OpenMetrics gauge
// histogram; the text format has no such type): query the buckets directly, never rate().
inline constexpr std::array<double, 12> kAgeBucketsSeconds = {
    0.001, 0.01, 0.1, 1, 10, 60, 300, 600, 1800, 3600, 21600, 86400};
// How many of the oldest objects a census keeps (GetBufferAgesRequest.oldest's upper bound).
inline constexpr size_t kKeepOldest = 1000;

// "rx", "worker", "application", "other" (the metric's `site` label, the RPC's site).
absl::string_view SiteName(const Site& site);

struct SiteAges {
  Site site;  // kind, core, rx_port (-1 unless rx)
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
  Site site;
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
  std::vector<SiteAges> sites;     // by kind, core, port
  std::vector<AgedObject> oldest;  // oldest first, at most kKeepOldest
};

// The census as readers see it (census.tsc_hz 0: every age reads 0). `always`: sites listed
// even when no object of theirs is in flight (the daemon's workers, each RX port they refill,
// the other threads), so that their series are there all along rather than coming and going.
BufferAges Summarise(const InFlightCensus& census, const std::vector<Site>& always = {});
// Those sites of a data plane: each worker core, with each RX port it refills, and "other".
std::vector<Site> StandingSites(const std::vector<std::pair<int, std::vector<int>>>& workers);

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_TRACK_H_
