// SPDX-License-Identifier: BSD-3-Clause
// EngineBackend: the control plane's Backend (server/core/backend.h) over skbnfd's DPDK data plane
// (dataplane/dpdk/engine.h). No DPDK header: engine.h has none.
//
// A thin adapter: the engine and the API share their types (ForwardingMode, PortInfo,
// Ipv4Prefix, MacAddr, pool::SwapReport, pool::AuditReport) and their words (rx_packets /
// tx_packets, DeleteRoute, PauseWorker / IsPaused, AuditReport: skbnf.v1's words, CHANGELOG.md);
// what is left below is shape (per-worker arrays -> per-port lists), not translation.
//
// Mapping decisions (where the engine's model and the API differ):
//   core            = the worker's lcore id (the pool's per-core slot is the lcore id too).
//   drops           counted by the engine per (worker, RX port): reported on the port the
//                   packets came in on (tx_full included).
//   rx_nombuf       the pool counts failed refills per core: reported on the worker's RX port
//                   when it polls one port, left unset when it polls several (the core's total
//                   is CorePoolStats.alloc_failures). The PMD's own count is PortInfo::pmd.
//   next-hop ids    the engine's own (dpdk::Route::next_hop_id): an id lives while a route uses
//                   its next hop; freed with its last route, it may later name another next hop
//                   (reused once every worker passed its quiescent point: dataplane/dpdk/routes.cc).
//   AddRoute        refuses an existing prefix (AlreadyExists) instead of letting rte_lpm
//                   replace it silently.
//   Pause/Resume    Engine::PauseWorker / ResumeWorker: they return once the worker itself
//                   reports parked / running.
//   Audit           Engine::Audit: parks every worker and checks in flight two ways (see
//                   dpdk::AuditReport in engine.h); the API gets its pool::AuditReport.
//   native pool     (ring_mp_mc) swaps FailedPrecondition with the engine's one refusal
//                   (Engine::CheckSwappable: NativePoolSwapRefusal, common/pool_ops.h);
//                   pool counters are zero.
//   SwapStrategy    the parsed spec goes to Engine::SwapStrategy as is (no text round trip).
//   latency         GetStats carries Engine::Perf (per worker and RX port, iterations, slow
//                   log: common/worker_perf.h); SetLatencySettings is the engine's.
//
// Reads (GetInfo, ListPorts, GetStats, GetStrategy, ListRoutes, GetHealth) never take a lock a
// swap holds: the engine's control mutex is taken only by mutations. ListPorts serialises its
// ethdev calls on its own mutex (some PMDs' stats_get is not safe from two threads at once).
#ifndef SKBNF_SERVER_DAEMON_ENGINE_BACKEND_H_
#define SKBNF_SERVER_DAEMON_ENGINE_BACKEND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dataplane/dpdk/engine.h"
#include "server/core/backend.h"

namespace skbnf::control {

class EngineBackend final : public Backend {
 public:
  // `engine` must outlive this object and be started; `eal_args` as given to rte_eal_init;
  // `main_lcore` = EAL's main lcore.
  EngineBackend(dpdk::Engine& engine, std::vector<std::string> eal_args, unsigned main_lcore);

  Info GetInfo() const override;
  std::vector<PortInfo> ListPorts() const override;
  pool::StrategySpec GetStrategy() const override;
  uint64_t GetEpoch() const override;
  StatsSnapshot GetStats() const override;
  RouteTable ListRoutes() const override;
  Health GetHealth() const override;

  absl::Status ValidateStrategy(const pool::StrategySpec& spec) const override;
  pool::SwapReport SwapStrategy(const pool::StrategySpec& spec,
                                std::chrono::microseconds timeout) override;
  absl::StatusOr<uint32_t> AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) override;
  absl::Status DeleteRoute(const Ipv4Prefix& prefix) override;
  absl::Status PauseWorker(int core) override;
  absl::Status ResumeWorker(int core) override;
  absl::StatusOr<AuditResult> Audit() override;
  absl::StatusOr<pool::InFlightCensus> CensusInFlight(
      std::chrono::microseconds wait) const override;
  absl::Status SetLatencySettings(const dpdk::LatencySettings& settings) override;

 private:
  int PeerOf(int port) const;

  dpdk::Engine& engine_;
  const std::vector<std::string> eal_args_;
  const unsigned main_lcore_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::map<int, int> peers_;      // port -> peer port (io/mac TX), fixed once the engine runs
  mutable absl::Mutex ports_mu_;  // serialises engine_.Ports() (it reads the PMDs' stats)
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_ENGINE_BACKEND_H_
