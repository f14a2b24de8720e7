// SPDX-License-Identifier: BSD-3-Clause
// Backend: what the control plane (gRPC service, Prometheus exporter) needs from a data plane.
//
// The control plane is written against this interface only: no DPDK, no protobuf. skbnfd's DPDK
// engine implements it; tests/control/fake_backend.h implements it in memory over a real
// skbnf::pool::Pool so the whole control plane is testable without DPDK.
//
// Threading contract
//   - Read methods (Info, Ports, Strategy, Stats, Routes, Health) may be called from any thread
//     at any time, concurrently with each other and with one mutating call. They must never
//     wait for a worker: Stats() reads per-core counters (plain relaxed loads), nothing more.
//   - Mutating methods (ValidateStrategy, SwapStrategy, AddRoute, DeleteRoute, PauseWorker,
//     ResumeWorker, Audit) are serialised by the caller: the service holds one mutex around
//     each, so a Backend never sees two at once.
//   - Input has been validated by the service (field ranges, prefix syntax, port and core ids
//     from Info()/Ports()); a Backend still returns InvalidArgument for anything it cannot do
//     and must apply nothing when it returns an error.
//
// Status codes a Backend returns are passed to the client unchanged (message included):
//   FailedPrecondition  e.g. strategy swap on the native mempool, routes outside l3 mode
//   NotFound / AlreadyExists  routes
//   Unavailable         the data plane is stopping
#ifndef SKBNF_SERVER_CORE_BACKEND_H_
#define SKBNF_SERVER_CORE_BACKEND_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/buffer_places.h"
#include "common/forwarding_mode.h"
#include "common/net_text.h"
#include "common/port_info.h"
#include "common/worker_perf.h"
#include "dataplane/pool/counters.h"
#include "dataplane/pool/pool.h"
#include "dataplane/pool/strategy_spec.h"

namespace skbnf::control {

// One type per concept across the data plane and the control plane.
using dpdk::ForwardingMode;  // common/forwarding_mode.h
using dpdk::PmdStats;
using dpdk::PortInfo;
using net::Ipv4Prefix;
using net::MacAddr;

struct LcoreInfo {
  enum class Role { kMain, kWorker, kService };
  uint32_t lcore_id = 0;
  Role role = Role::kWorker;
  int core = -1;              // worker core id (pool slot) for kWorker, -1 otherwise
  int socket_id = -1;         // NUMA socket; -1 unknown
  std::vector<int> rx_ports;  // ports this worker polls
  std::vector<int> tx_ports;  // ports it transmits on
};

struct PoolInfo {
  std::string name;      // the mempool's own name
  bool native = false;   // DPDK's native mempool: swaps are refused (FailedPrecondition)
  std::string ops_name;  // "skbnf" or the native ops name
  uint64_t populated = 0;
  uint32_t element_size = 0;
  uint32_t objects_per_slab = 0;
  bool colour = false;
  bool debug = false;
  std::chrono::microseconds quiesce_timeout{0};
  uint32_t native_cache_size = 0;
};

// Static facts; version/build are filled in by the server itself (server/core/build_info.h).
struct Info {
  std::vector<std::string> eal_args;
  std::vector<LcoreInfo> lcores;
  PoolInfo pool;
  ForwardingMode mode = ForwardingMode::kIo;
  std::chrono::steady_clock::time_point started;
  std::string backend;  // "dpdk", "fake"
};

// Counters of one (core, port) pair; totals since start, never reset.
struct PortCounters {
  int port = 0;
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  // RX refills on this core that found no buffer for this port; unset when the figure is not
  // this port's alone (a core that refills several RX ports counts its failures per core).
  std::optional<uint64_t> rx_nombuf;
  // Drops of packets received here, by reason. Keep the reason set fixed for the daemon's
  // life (names become Prometheus label values): the engine's not_ipv4, bad_header,
  // ttl_expired, no_route, tx_full (dpdk::DropReasonName). List a reason even while its count
  // is 0.
  std::vector<std::pair<std::string, uint64_t>> drops;
};

// One worker's counters, keyed by its core id. Its lcore id is Info::lcores' (LcoreInfo
// lcore_id of the entry with this core), not repeated here: on skbnfd the two are equal.
struct CoreStats {
  int core = 0;  // worker core id
  bool paused = false;
  std::vector<PortCounters> ports;
  uint64_t polls = 0;       // poll-loop iterations
  uint64_t busy_polls = 0;  // iterations that received at least one packet
  // Iterations spent parked (paused): the worker's acknowledgement that it goes round its loop
  // without polling; a reader waits for it to move to know the worker passed its quiescent
  // point since, then checks that polls stood still.
  uint64_t parked_loops = 0;
  // TSC cycles spent in the polls that received packets (RX burst to after forwarding) and the
  // packets they received: busy_cycles / busy_packets is the worker's cycles per packet.
  uint64_t busy_cycles = 0;
  uint64_t busy_packets = 0;
  uint64_t tsc_hz = 0;  // cycles per second of the counter busy_cycles counts (0: unknown)
  pool::CoreCountersSnapshot pool;  // Pool::CoreStats(core); zero when native
  pool::LayerGauges layer_objects;  // Pool::CoreGauges(core); zero when native
};

struct PoolGauges {
  uint64_t populated = 0;
  uint64_t in_store = 0;
  uint64_t in_layers[pool::kMaxLayers] = {};  // by a layer's kIndex
  uint64_t in_depots = 0;
  // Out of the pool (in PMD rings, on TX queues, in a worker's hands): populated - the rest.
  // Gauges read one after the other while workers run, so it can be off by what moved
  // meanwhile; the audit (workers parked) checks it exactly against the counters.
  uint64_t in_flight = 0;
  // The no-stranding protocol (dataplane/pool/pool_core.h): Gets that reclaimed before they
  // failed, reclaim requests a worker did not serve within reclaim_wait, objects reclaimed.
  uint64_t reclaims = 0, reclaim_timeouts = 0, reclaimed_objects = 0;
};

struct StatsSnapshot {
  std::chrono::steady_clock::time_point taken;
  std::vector<CoreStats> cores;      // every worker, by core id
  pool::CoreCountersSnapshot other;  // every non-worker thread (FillPoolFigures)
  PoolGauges pool;
  uint64_t swaps_ok = 0, swaps_failed = 0;  // Pool::swaps_ok()/swaps_failed()
  // Packet latency and the poll loop's iterations per worker (common/worker_perf.h); unset when
  // the data plane records none (the fake backend): never made-up zeros.
  std::optional<dpdk::PerfSnapshot> perf;
  // Where every object out of the pool is (common/buffer_places.h), read while the workers
  // run; unset when the data plane does not count places (native pool, the fake backend).
  std::optional<dpdk::BufferPlaces> places;
};

// Objects out of the pool that no place explains: in flight by the pool's gauges minus every
// place the host counted (0 whenever the pool's bookkeeping holds).
inline int64_t UnaccountedObjects(const PoolGauges& gauges, const dpdk::BufferPlaces& places) {
  return static_cast<int64_t>(gauges.in_flight) - places.total;
}

// An audit (Backend::Audit): the pool's report, and where the in-flight objects were while the
// workers were parked for it (unset when the data plane does not count places).
struct AuditResult : pool::AuditReport {
  AuditResult() = default;
  AuditResult(pool::AuditReport r) : pool::AuditReport(std::move(r)) {}  // NOLINT: implicit
  std::optional<dpdk::BufferPlaces> places;
};

struct NextHop {
  int port = 0;
  MacAddr dst_mac{};
  friend bool operator==(const NextHop&, const NextHop&) = default;
};

struct RouteTable {
  struct Route {
    Ipv4Prefix prefix;
    uint32_t next_hop_id = 0;
  };
  struct NextHopEntry {
    uint32_t id = 0;
    NextHop next_hop;
    uint32_t routes = 0;
  };
  std::vector<Route> routes;            // sorted by (addr, len)
  std::vector<NextHopEntry> next_hops;  // sorted by id
};

// The facts readiness is decided on (server/control/health.h decides; a Backend only reports).
struct WorkerHealth {
  int core = 0;
  uint32_t lcore = 0;
  bool running = false;  // its poll loop is running (a paused worker parks inside it: running)
};
struct Health {
  std::vector<PortInfo> ports;        // as ListPorts(): started, has_link, link_up
  std::vector<WorkerHealth> workers;  // every worker
};

// Adds `b`'s counters to `a`.
inline void Accumulate(pool::CoreCountersSnapshot& a, const pool::CoreCountersSnapshot& b) {
  a.allocs += b.allocs;
  a.frees += b.frees;
  a.alloc_failures += b.alloc_failures;
  for (int i = 0; i < pool::kMaxLayers; ++i) {
    a.layer[i].alloc_hits += b.layer[i].alloc_hits;
    a.layer[i].alloc_misses += b.layer[i].alloc_misses;
    a.layer[i].free_hits += b.layer[i].free_hits;
    a.layer[i].free_misses += b.layer[i].free_misses;
    a.layer[i].bulk += b.layer[i].bulk;
  }
  a.store_allocs += b.store_allocs;
  a.store_frees += b.store_frees;
  a.store_locks += b.store_locks;
  a.depot_locks += b.depot_locks;
  a.depot_waits += b.depot_waits;
  a.depot_wait_ticks += b.depot_wait_ticks;
}

// Fills what a StatsSnapshot says of the pool as a whole from `p`: `other` = every thread that is
// not a worker (the pool's kNoCore slot and the slots of non-worker lcores, e.g. EAL's main lcore
// filling RX rings at port start), populated, store, depots, swap counts, and in_flight as what
// is neither in the store, a depot nor a layer. `s.cores` (the workers) and `s.pool.in_layers`
// (their layer gauges summed) must already be filled.
inline void FillPoolFigures(const pool::Pool& p, StatsSnapshot& s) {
  s.other = p.CoreStats(pool::kNoCore);
  for (int c = 0; c < pool::kMaxCores; ++c) {
    bool worker = false;
    for (const CoreStats& cs : s.cores) worker |= cs.core == c;
    if (!worker) Accumulate(s.other, p.CoreStats(c));
  }
  s.pool.populated = p.populated();
  s.pool.in_store = p.in_store();
  s.pool.in_depots = p.in_depots();
  uint64_t accounted = s.pool.in_store + s.pool.in_depots;
  for (uint64_t v : s.pool.in_layers) accounted += v;
  s.pool.in_flight = s.pool.populated > accounted ? s.pool.populated - accounted : 0;
  s.swaps_ok = p.swaps_ok();
  s.swaps_failed = p.swaps_failed();
  s.pool.reclaims = p.reclaims();
  s.pool.reclaim_timeouts = p.reclaim_timeouts();
  s.pool.reclaimed_objects = p.reclaimed_objects();
}

class Backend {
 public:
  virtual ~Backend() = default;

  // ---- reads
  virtual Info GetInfo() const = 0;
  virtual std::vector<PortInfo> ListPorts() const = 0;
  virtual pool::StrategySpec GetStrategy() const = 0;
  virtual uint64_t GetEpoch() const = 0;
  virtual StatsSnapshot GetStats() const = 0;
  virtual RouteTable ListRoutes() const = 0;
  virtual Health GetHealth() const = 0;

  // ---- mutations (serialised by the caller)
  // Checks that `spec` can be applied now (e.g. FailedPrecondition on the native pool, or a
  // recycle limit the ports cannot honour). Applies nothing.
  virtual absl::Status ValidateStrategy(const pool::StrategySpec& spec) const = 0;
  // Swaps under traffic with the buffer core's quiescence protocol (Pool::Swap). timeout 0:
  // the pool's default. A non-OK report.status means the swap failed (rolled_back says what
  // was done); a Backend that refuses before starting returns report.status non-OK with
  // rolled_back = false and epoch unchanged.
  virtual pool::SwapReport SwapStrategy(const pool::StrategySpec& spec,
                                        std::chrono::microseconds timeout) = 0;
  // Mutations (Change::AddRoute/DeleteRoute, mutations.h) holds the route rules for every backend:
  // it calls these only in l3 mode, AddRoute for a prefix not routed yet (or, from
  // Change::ReplaceRoute, a routed one: its next hop is then replaced in place, with no moment
  // where the prefix is unrouted) and DeleteRoute for a routed one. AddRoute returns the next-hop
  // id used: the same id for the same next hop, never an id another next hop had.
  virtual absl::StatusOr<uint32_t> AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) = 0;
  virtual absl::Status DeleteRoute(const Ipv4Prefix& prefix) = 0;
  // Return only once the worker itself has acknowledged: parked at its quiescent point (Pause) /
  // running again (Resume), so that an Audit right after a Resume + Pause sees a really parked
  // worker. Mutations (Change::PauseWorker/ResumeWorker) makes them idempotent for every backend:
  // it reads CoreStats::paused and calls these only to change the state.
  virtual absl::Status PauseWorker(int core) = 0;
  virtual absl::Status ResumeWorker(int core) = 0;
  // Conservation audit at a quiescent point of the Backend's choosing (Pool::Audit).
  virtual absl::StatusOr<AuditResult> Audit() = 0;
  // The pool's census of what is in flight (dataplane/pool/track.h; its tsc_hz filled): every
  // per-core layer flushed, the workers given `wait` to do it at their quiescent point. Neither
  // a read nor a mutation: it changes no setting and waits for the workers only up to `wait`;
  // only the StatsSampler's census thread calls it, never a reader (server/core/buffer_ages.h).
  // FailedPrecondition while the strategy does not track, or on a pool that cannot.
  virtual absl::StatusOr<pool::InFlightCensus> CensusInFlight(
      std::chrono::microseconds wait) const {
    (void)wait;
    return absl::FailedPreconditionError("this data plane takes no census of its buffers");
  }
  // Latency sampling and the slow-iteration threshold (common/worker_perf.h), in force from each
  // worker's next iteration. `settings` passed CheckLatencySettings. FailedPrecondition from a
  // data plane that records no latency (GetStats' perf unset).
  virtual absl::Status SetLatencySettings(const dpdk::LatencySettings& settings) {
    (void)settings;
    return absl::FailedPreconditionError("this data plane records no packet latency");
  }
};

// A swap refused before it began (the backend's or Mutations' check said no): `why`, the strategy
// in use as old_spec, `to` as new_spec, nothing rolled back, the epoch unchanged. The one way
// every refusal is reported (Backend::SwapStrategy, Change::SwapStrategy).
inline pool::SwapReport RefusedSwap(const Backend& backend, const pool::StrategySpec& to,
                                    absl::Status why) {
  pool::SwapReport r;
  r.status = std::move(why);
  r.old_spec = backend.GetStrategy().ToString();
  r.new_spec = to.ToString();
  r.epoch = backend.GetEpoch();
  return r;
}

// The strategy as the API, the metrics and the change log show it: the canonical spec, or on the
// native mempool its ops name (e.g. "ring_mp_mc"). `pool` is Backend::GetInfo().pool (fixed for
// the daemon's life).
inline std::string StrategyText(const Backend& backend, const PoolInfo& pool) {
  return pool.native ? pool.ops_name : backend.GetStrategy().ToString();
}

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_BACKEND_H_
