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
// Why the stamp is written on the way out only. A free that clears it would cost every packet a
// test of the modifier on the single-object path even with `track` off; the budget is
// 0 instructions per packet off and at most 3 on. The get side already tests the prefetch
// modifier per burst (CoreSlot::fast_mods now holds both), so stamping costs nothing off and a
// store per object on. Which objects are in flight is then found by a census instead:
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

#include <cstdint>
#include <vector>

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
  uint64_t now_tsc = 0;    // the stamps' clock when the objects were read
  uint64_t populated = 0;  // objects of the pool
  uint64_t in_flight = 0;  // not in the store after every layer was emptied
  uint64_t untracked = 0;  // of those, without a stamp of this tracking period
  std::vector<TrackedObject> tracked;  // the others, in the store's index order
  std::vector<int> unanswered_cores;   // workers that did not flush within the wait
  uint64_t flushed = 0;                // objects the census moved to the store
  uint64_t tsc_hz = 0;  // the stamps' clock rate: the host's to fill (the pool does not know it)
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_TRACK_H_
