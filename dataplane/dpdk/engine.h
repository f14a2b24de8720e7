// SPDX-License-Identifier: BSD-3-Clause
// Engine: the skbnfd data plane. Ports, one run-to-completion worker per lcore, forwarding
// modes, per-core counters, and the control operations the gRPC front calls.
//
// Life cycle (one-shot, like a process): the host calls rte_eal_init, then
//   Engine::Create(config)   resolves and configures ports, creates the mbuf pool
//   Start()                  starts ports, launches one worker per worker lcore
//   ... control: Snapshot, Ports, SwapStrategy, Pause/ResumeWorker, routes, Audit ...
//   Stop()                   stops workers, stops and closes ports (their queues give every
//                            mbuf back), then audits the pool exactly; the result stays in
//                            final_audit(). An engine is not restarted after Stop. Bounded
//                            (EngineConfig::stop_timeout): a worker that does not leave its
//                            loop in time makes Stop fail naming it (see Stop).
//
// Workers (lcore L, worker index w):
//   loop: Pool::Quiesce(L) (skbnf ops; false = paused: skip) -> RCU quiescent report (rte_lpm
//         readers) -> for each (port, queue) it polls: Pool::SetRxPort(L, port),
//         rte_eth_rx_burst, count, forward, rte_eth_tx_burst; what TX does not take is freed
//         and counted as `tx_full`. A poll that received packets adds its TSC span and its
//         packets to busy_cycles / busy_packets (cycles per packet, live).
//   TX: each port gets one TX queue per worker when the PMD has that many, else one shared
//   queue under a spinlock.
//
// Modes
//   io   to the peer port unchanged (testpmd io).
//   mac  to the peer port, src MAC = the peer port's MAC, dst MAC = the peer's configured
//        dst_mac (default 02:00:00:00:00:<peer id>) (testpmd macfwd).
//   l3   IPv4: rte_lpm lookup of the destination, TTL - 1 with the RFC 1624 incremental
//        checksum update, next hop's MAC as dst and the output port's MAC as src. Drops by
//        reason: not_ipv4, bad_header (version, IHL, lengths, header checksum), ttl_expired
//        (TTL <= 1), no_route; tx_full in every mode. Routes change while traffic flows:
//        rte_lpm with its RCU QSBR reclamation (workers report quiescence every loop), next
//        hops in a table of L3Hop (l3_packet.h) written once per distinct next hop before its
//        id is published, the default route as an atomic next-hop id.
//
// Where each part lives (one concept per file):
//   engine.cc       Create / Start / Stop, configuration checks
//   port_setup.cc   ports: resolution, pairing, queues and rings, PortInfo (link, PMD counters)
//   workers.cc      worker lcores, RX queue assignment, pause / resume, the worker hooks
//   mbuf_pool.cc    the mbuf mempool (skbnf ops or ring_mp_mc) and strategy swaps
//   routes.cc       the l3 tables (rte_lpm + RCU, next hops, default route)
//   audit.cc        the conservation audit (running and final)
//   snapshot.cc     per-worker counters for readers (Snapshot, Perf), the latency settings
//   forward.cc      the packet path (a worker's poll loop, the forwarding modes)
//   loop_perf.h     the loop's latency samples and iterations (common/worker_perf.h)
//   worker_hooks.h  what a test puts into the poll loop (a second instantiation, tests only)
//
// No DPDK header here: the gRPC front includes this file without DPDK's cflags.
#ifndef SKBNF_DATAPLANE_DPDK_ENGINE_H_
#define SKBNF_DATAPLANE_DPDK_ENGINE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/buffer_places.h"
#include "common/forwarding_mode.h"
#include "common/net_text.h"
#include "common/pool_ops.h"
#include "common/port_info.h"
#include "common/worker_perf.h"
#include "dataplane/dpdk/drop_reasons.h"
#include "dataplane/pool/pool.h"

namespace skbnf::dpdk {

class WorkerHooks;  // worker_hooks.h

inline constexpr int kMaxPorts = pool::kMaxPorts;

using net::Ipv4Prefix;
using net::MacAddr;

struct Route {
  Ipv4Prefix prefix;  // 0.0.0.0/0 is the default route (used when no other prefix matches)
  uint16_t port = 0;  // output port id
  MacAddr dst_mac = {};
  // The engine's id of (port, dst_mac), set by Engine::AddRoute (ignored on input): the
  // LPM's next-hop value. A next hop keeps its id while a route uses it; when its last route
  // goes the id is freed and, after every worker has passed its quiescent point, may be given
  // to another next hop (routes.cc, "Next-hop ids"): an id names one next hop within one
  // Routes() answer, not for the life of the process.
  uint32_t next_hop_id = 0;
  std::string ToString() const;  // "10.0.0.0/8 port 1 mac 02:00:00:00:00:01"
};

struct PortSpec {
  std::string name;     // ethdev name (vdev name or PCI address) or a port id
  std::string peer;     // same forms; empty: by pairing 0<->1, 2<->3, ...
  std::string dst_mac;  // mac mode: dst MAC towards this port; empty: 02:00:00:00:00:<id>
};

struct WorkerSpec {
  unsigned lcore = 0;
  std::vector<std::pair<std::string, uint16_t>> rx;  // (port, queue) pairs it polls
};

struct RouteSpec {
  std::string prefix;  // a.b.c.d/len
  std::string port;    // name or id
  std::string mac;
};

struct EngineConfig {
  ForwardingMode mode = ForwardingMode::kIo;
  // The start-up strategy, parsed once where its text arrives (the --strategy flag in
  // daemon_flags.cc, the config file's strategy line in server/ops/config.cc), carried down to
  // the pool as is: neither the engine nor the start-up checks parse it again. Default
  // `magazine` with its tunables at their defaults.
  pool::StrategySpec strategy{.layers = pool::LayerBit(pool::Layer::kMagazine)};
  // skbnf or ring_mp_mc (the baseline): parsed once where the text arrives (the --pool-ops flag,
  // the config file's pool_ops line: ParsePoolOps, common/pool_ops.h).
  PoolOps pool_ops = PoolOps::kSkbnf;
  uint32_t mbuf_cache = 256;  // DPDK lcore cache, ring_mp_mc only (skbnf pools use 0)
  uint32_t mbufs = 0;         // 0: sized from the rings
  uint16_t burst = 32;
  uint16_t rx_ring = 1024;
  uint16_t tx_ring = 1024;
  uint16_t rx_queues = 1;   // per port
  bool colour = false;      // slab colouring (skbnf)
  bool pool_debug = false;  // the pool's double/foreign-free checks (skbnf)
  // Layout controls (issue 23; benchmark and diagnostic knobs, see mbuf_pool.cc):
  //   no_iova_contig  ring_mp_mc only: the pool made with RTE_MEMPOOL_F_NO_IOVA_CONTIG, so
  //                   DPDK packs its objects one element apart on any page size. Its mbufs
  //                   have no IO address: refused with a port that is not a virtual device.
  //   store_stride    skbnf only: the slab store's objects this many bytes apart (0: packed;
  //                   else a multiple of 64 from the element size to 65536).
  bool no_iova_contig = false;
  uint32_t store_stride = 0;
  // Native twin queues (issue 33 item 1: skbnf's pool against DPDK's cached one in ONE process,
  // so that both see the same speed mode). skbnf pool only, rx_queues 1. Every polled RX queue
  // (port, 0) gets a twin (port, 1) whose mbufs come from a second mempool: DPDK's ring_mp_mc
  // with an lcore cache of mbuf_cache, as many mbufs as the skbnf pool. Each worker polls the
  // queues of one side at a time, the side Engine::UseNativeTwin chose (skbnf at start): the
  // switch is a flag the workers read once per loop, no port stops. For PMDs whose queues each
  // have their own traffic (net_null; net_pcap with one rx_pcap per queue; vhost-user with a
  // peer sending on both): no RSS is set up, so a NIC would send everything to queue 0.
  bool native_twin = false;
  std::vector<PortSpec> ports;      // empty: every port EAL probed
  std::vector<WorkerSpec> workers;  // empty: non-main lcores, RX queues round-robin
  std::vector<RouteSpec> routes;
  uint32_t lpm_max_rules = 1 << 20;
  uint32_t lpm_tbl8s = 1 << 12;
  // How long Stop waits for the workers to leave their loops (all of them together). A worker
  // that does not come round its loop in that time (stuck in a PMD call, a hook, preempted for
  // good) is named in Stop's error and left running; nothing it uses is freed. 5 s: a worker
  // passes its loop's top every burst (microseconds), and a swap's or pause's own bound is
  // 200-500 ms, so 5 s is far beyond a slow but live worker and short enough for a pod's
  // termination grace period (Kubernetes' default 30 s).
  std::chrono::milliseconds stop_timeout{5000};
  // Packet latency sampling and the slow-iteration threshold at start (common/worker_perf.h);
  // Engine::SetLatencySettings changes them while the workers run.
  LatencySettings latency;
};

// One worker's counters for one port. Drops count packets received on this port (whatever the
// reason, tx_full included: the packet came in here).
struct PortCounters {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  std::array<uint64_t, kNumDropReasons> drops{};
};

struct WorkerSnapshot {
  unsigned lcore = 0;
  bool paused = false;
  // Its poll loop is running: launched, and EAL still says RUNNING (rte_eal_get_lcore_state;
  // WAIT once the loop returned). A paused worker parks inside its loop: running.
  bool running = false;
  std::vector<std::pair<uint16_t, uint16_t>> rx;  // (port, queue)
  std::array<PortCounters, kMaxPorts> ports{};
  std::array<uint64_t, kNumDropReasons> drops{};
  uint64_t rx_packets = 0, tx_packets = 0, dropped = 0;  // sums
  // Allocation calls that failed on this core: each is one RX refill (a burst, for most PMDs)
  // that got no mbufs (skbnf pool only; the PMD's own count is PortInfo::pmd.rx_nombuf). A
  // worker that polls one RX port refills only that port, so the figure is that port's.
  uint64_t rx_nombuf = 0;
  uint64_t polls = 0, busy_polls = 0;
  // Loop iterations spent parked (WorkerCounters::parked_loops): moves while a paused worker
  // goes round its loop, never while it polls.
  uint64_t parked_loops = 0;
  // TSC cycles of the polls that received packets and those packets (forward.cc): their
  // ratio is the worker's cycles per packet; EngineSnapshot::tsc_hz converts to time.
  uint64_t busy_cycles = 0, busy_packets = 0;
  bool has_pool = false;  // pool/gauges valid (skbnf ops)
  pool::CoreCountersSnapshot pool;
  pool::LayerGauges gauges;
};

struct EngineSnapshot {
  uint64_t monotonic_ns = 0;
  PoolOps pool_ops = PoolOps::kSkbnf;
  std::string strategy;  // canonical spec, or "ring_mp_mc cache=N"
  uint64_t epoch = 0;
  uint64_t tsc_hz = 0;  // rte_get_tsc_hz(): the TSC's frequency (busy_cycles per second)
  std::vector<WorkerSnapshot> workers;
};

// Conservation audit (audit.cc). Two kinds, both real checks:
//   final   (exact = true)  after Stop: ports closed, so every mbuf is back: available ==
//                           populated, and (skbnf) store + layers + depots == populated;
//                           except held_by_pmd: what an AF_XDP port's kernel side kept past
//                           close (dataplane/dpdk/af_xdp_rings.cc), counted from its rings'
//                           indices, so available + held_by_pmd == populated and the pool's
//                           counters must say exactly held_by_pmd are out.
//   running (exact = false) workers parked for the check (each flushed its layers and stopped
//                           touching the pool): the mbufs out of the pool (in PMD rings, on TX
//                           queues) are counted two independent ways, populated - available and
//                           host allocs - host frees from the per-core counters, and must agree
//                           exactly (bound 0: nothing allocates or frees while workers are
//                           parked). ring_mp_mc keeps no counters: its running audit is
//                           reported unchecked (checked = false) and ok says nothing.
// The engine's report carries the pool's (pool::AuditReport, what skbnf.v1's AuditPoolResponse
// shows) and adds what only the engine knows (exact, checked, available, held_by_pmd).
struct AuditReport {
  bool ok = false;
  bool exact = false;    // final: taken with traffic stopped and ports closed
  bool checked = false;  // a conservation equation was evaluated (see above)
  std::string message;
  uint64_t populated = 0, available = 0;
  uint64_t in_flight = 0;  // populated - available
  // Final audit: mbufs a PMD keeps after its port closed, counted from an independent source
  // (AF_XDP: the kernel's ring indices). 0 for every other PMD.
  uint64_t held_by_pmd = 0;
  bool has_pool = false;
  pool::AuditReport pool;
  // Running audit with a skbnf pool: where the in_flight objects are, taken while the workers
  // were parked (so every core's hands are 0 and the places sum to in_flight: both checked).
  BufferPlaces places;
};

// What the engine's mbuf mempool is (mbuf_pool.cc).
struct MempoolInfo {
  std::string name;  // the rte_mempool's own name
  PoolOps ops = PoolOps::kSkbnf;
  uint64_t populated = 0;
  uint32_t element_size = 0;  // bytes per mbuf (header + data room)
  uint32_t cache_size = 0;    // DPDK lcore cache (0 for skbnf pools)
  int socket_id = -1;
};

class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts every port (rte_eth_dev_start and promiscuous mode, each checked: an error names the
  // port and the call) and launches the workers.
  absl::Status Start();
  // Sets the workers' stop flag and waits for them at most config().stop_timeout. A worker
  // still in its loop then: DeadlineExceeded, "worker on lcore N (core C) did not stop within
  // T ms: <what its thread is doing>", and nothing is closed or freed (the engine is left as it
  // is, and is leaked when destroyed while a worker still runs; Stop may be called again).
  // Otherwise ports are stopped and closed and the final audit taken; a port whose
  // rte_eth_dev_stop or rte_eth_dev_close failed makes Stop return Internal naming each port
  // and call (also appended to final_audit().message), after the audit.
  absl::Status Stop();
  bool running() const;

  const EngineConfig& config() const;
  // Ports with their links and PMD counters (ethdev calls: one caller at a time).
  std::vector<PortInfo> Ports() const;
  std::vector<unsigned> WorkerLcores() const;
  // NUMA socket of an lcore (rte_lcore_to_socket_id), -1 when unknown.
  int LcoreSocket(unsigned lcore) const;
  EngineSnapshot Snapshot() const;
  // Where every buffer out of the pool is now (BufferPlaces; snapshot.cc).
  BufferPlaces Places() const;
  MempoolInfo mempool_info() const;
  // Packet latency per worker and RX port, iterations by packets and duration, the last slow
  // iterations with their causes (common/worker_perf.h); relaxed loads, never waits.
  PerfSnapshot Perf() const;
  // While running or not: InvalidArgument naming the field (CheckLatencySettings) and nothing
  // changed, or in force from each worker's next iteration.
  absl::Status SetLatencySettings(const LatencySettings& settings);
  LatencySettings latency_settings() const;

  // Strategy hot swap while workers forward: `spec` as its builder made it (StrategySpec::Parse
  // where text arrives, the API's structured form), swapped as is, never printed and parsed
  // again. FailedPrecondition on the ring_mp_mc baseline (CheckSwappable) or after Stop.
  // Otherwise the pool's SwapReport: its status says whether every worker acknowledged within
  // `timeout` (0: the pool's default, 200 ms) or the swap was rolled back.
  absl::StatusOr<pool::SwapReport> SwapStrategy(
      const pool::StrategySpec& spec,
      std::chrono::microseconds timeout = std::chrono::microseconds(0));
  // The strategy in force; with native twin queues on the native side "ring_mp_mc cache=N"
  // (what a skbnfd on DPDK's pool says).
  std::string strategy() const;
  // EngineConfig::native_twin: the workers poll the native twin queues (true) or the skbnf
  // pool's (false) from their next loop. FailedPrecondition without twins or once stopped.
  absl::Status UseNativeTwin(bool native);
  bool native_twin_in_use() const;
  bool swappable() const;
  // OK on the skbnf pool; on the native one its refusal (NativePoolSwapRefusal).
  absl::Status CheckSwappable() const;

  // Parks the worker at its next quiescent point (its pool layers flushed) and returns once the
  // worker itself reports parked; DeadlineExceeded if it does not get there within `timeout`
  // (0: 500 ms). ResumeWorker returns once the worker reports running again.
  absl::Status PauseWorker(unsigned lcore,
                           std::chrono::microseconds timeout = std::chrono::microseconds(0));
  absl::Status ResumeWorker(unsigned lcore,
                            std::chrono::microseconds timeout = std::chrono::microseconds(0));
  bool IsPaused(unsigned lcore) const;

  // Before Start: the workers run the poll loop that calls `hooks` (worker_hooks.h; tests
  // only, e.g. skbnfd's hidden --test-stall-* flags) instead of the production loop, which has
  // no hook. The engine owns them; they live until it is destroyed. FailedPrecondition once
  // started.
  absl::Status SetWorkerHooks(std::unique_ptr<WorkerHooks> hooks);

  // On success, the next-hop id of the route (Route::next_hop_id).
  absl::StatusOr<uint32_t> AddRoute(const Route& route);
  absl::Status DeleteRoute(const Ipv4Prefix& prefix);
  std::vector<Route> Routes() const;
  // Next hops in use: distinct (port, MAC) of the routes (each holds one next-hop id).
  size_t NextHops() const;
  // Resolves a RouteSpec (port by name or id; prefix and MAC by net_text.h) against this
  // engine's ports.
  absl::StatusOr<Route> ResolveRoute(const RouteSpec& spec) const;

  // While running: parks every worker, checks, resumes them (see AuditReport). After Stop: the
  // final audit.
  AuditReport Audit();
  const AuditReport& final_audit() const;

  // The pool behind the mbuf mempool (skbnf ops), or nullptr (ring_mp_mc).
  pool::Pool* pool() const;
  // The pool's census of the mbufs in flight (pool/track.h) with its stamps' TSC rate; the
  // workers get `wait` to flush their layers. FailedPrecondition on ring_mp_mc, while the
  // strategy does not track, and once stopped.
  absl::StatusOr<pool::InFlightCensus> CensusInFlight(std::chrono::microseconds wait) const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_ENGINE_H_
