// Engine: the skbnfd data plane. Ports, one run-to-completion worker per lcore, forwarding
// modes, per-core counters, and the control operations the gRPC front calls.
//
// Life cycle (one-shot, like a process): the host calls rte_eal_init, then
//   Engine::Create(config)   resolves and configures ports, creates the mbuf pool
//   Start()                  starts ports, launches one worker per worker lcore
//   ... control: Snapshot, Ports, SwapStrategy, Pause/ResumeWorker, routes, Audit ...
//   Stop()                   stops workers, stops and closes ports (their queues give every
//                            mbuf back), then audits the pool exactly; the result stays in
//                            final_audit(). An engine is not restarted after Stop.
//
// Workers (lcore L, worker index w):
//   loop: Pool::Quiesce(L) (skbnf ops; false = paused: skip) -> RCU quiescent report (rte_lpm
//         readers) -> for each (port, queue) it polls: Pool::SetRxPort(L, port),
//         rte_eth_rx_burst, count, forward, rte_eth_tx_burst; what TX does not take is freed
//         and counted as `tx_full`.
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
//        hops in a table of atomic 64-bit words (MAC << 16 | port).
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
#include "dataplane/pool/pool.h"

struct rte_mempool;

namespace skbnf::dpdk {

inline constexpr int kMaxPorts = pool::kMaxPorts;

enum class Mode { kIo, kMac, kL3 };
absl::StatusOr<Mode> ParseMode(absl::string_view text);
const char* ModeName(Mode mode);

enum DropReason : int {
  kDropNotIpv4 = 0,
  kDropBadHeader,
  kDropTtlExpired,
  kDropNoRoute,
  kDropTxFull,
  kNumDropReasons
};
const char* DropReasonName(int reason);

using MacAddr = std::array<uint8_t, 6>;
absl::StatusOr<MacAddr> ParseMac(absl::string_view text);
std::string MacToString(const MacAddr& mac);

struct Route {
  uint32_t prefix = 0;  // host byte order, masked to depth
  uint8_t depth = 0;    // 1..32
  uint16_t port = 0;    // output port id
  MacAddr next_hop_mac = {};
  std::string ToString() const;  // "10.0.0.0/8 port 1 mac 02:00:00:00:00:01"
};
// "a.b.c.d/len" -> (prefix, depth); host bits must be zero.
absl::Status ParsePrefix(absl::string_view text, uint32_t* prefix, uint8_t* depth);

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
  Mode mode = Mode::kIo;
  std::string strategy = "magazine";
  std::string pool_ops = "skbnf";  // or ring_mp_mc (the baseline)
  uint32_t mbuf_cache = 256;       // DPDK lcore cache, ring_mp_mc only (skbnf pools use 0)
  uint32_t mbufs = 0;              // 0: sized from the rings
  uint16_t burst = 32;
  uint16_t rx_ring = 1024;
  uint16_t tx_ring = 1024;
  uint16_t rx_queues = 1;           // per port
  bool colour = false;              // slab colouring (skbnf)
  bool pool_debug = false;          // the pool's double/foreign-free checks (skbnf)
  std::vector<PortSpec> ports;      // empty: every port EAL probed
  std::vector<WorkerSpec> workers;  // empty: non-main lcores, RX queues round-robin
  std::vector<RouteSpec> routes;
  uint32_t lpm_max_rules = 1 << 20;
  uint32_t lpm_tbl8s = 1 << 12;
};

struct PortInfo {
  uint16_t id = 0;
  std::string name;
  std::string driver;
  std::string mac;
  int peer = -1;
  bool link_up = false;
  uint32_t link_speed_mbps = 0;
  uint16_t rx_queues = 0, tx_queues = 0;
  uint16_t rx_ring = 0, tx_ring = 0;
  bool tx_shared = false;  // fewer TX queues than workers: one queue under a lock
  // rte_eth_stats of the PMD
  uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0;
  uint64_t imissed = 0, ierrors = 0, oerrors = 0, rx_nombuf = 0;
};

struct PortCounters {
  uint64_t rx_pkts = 0, rx_bytes = 0, tx_pkts = 0, tx_bytes = 0;
};

struct WorkerSnapshot {
  unsigned lcore = 0;
  bool paused = false;
  std::vector<std::pair<uint16_t, uint16_t>> rx;  // (port, queue)
  std::array<PortCounters, kMaxPorts> ports{};
  std::array<uint64_t, kNumDropReasons> drops{};
  uint64_t rx_pkts = 0, tx_pkts = 0, dropped = 0;  // sums
  // Allocation calls that failed on this core: each is one RX refill (a burst, for most PMDs)
  // that got no mbufs (skbnf pool only; the PMD's own count is PortInfo::rx_nombuf).
  uint64_t rx_nombuf = 0;
  uint64_t polls = 0, busy_polls = 0;
  bool has_pool = false;  // pool/gauges valid (skbnf ops)
  pool::CoreCountersSnapshot pool;
  pool::LayerGauges gauges;
};

struct EngineSnapshot {
  uint64_t monotonic_ns = 0;
  std::string pool_ops;
  std::string strategy;  // canonical spec, or "ring_mp_mc cache=N"
  uint64_t epoch = 0;
  std::vector<WorkerSnapshot> workers;
};

struct AuditResult {
  bool ok = false;
  bool exact = false;  // taken with traffic stopped and ports closed
  std::string message;
  uint64_t populated = 0, available = 0;
  bool has_pool = false;
  pool::AuditReport pool;
};

class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  absl::Status Start();
  absl::Status Stop();
  bool running() const;

  const EngineConfig& config() const;
  std::vector<PortInfo> Ports() const;
  std::vector<unsigned> WorkerLcores() const;
  EngineSnapshot Snapshot() const;

  // Strategy hot swap while workers forward. FailedPrecondition on the ring_mp_mc baseline,
  // InvalidArgument for a bad spec (nothing applied). Otherwise the pool's SwapReport: its
  // status says whether every worker acknowledged within `timeout` (0: the pool's default,
  // 200 ms) or the swap was rolled back.
  absl::StatusOr<pool::SwapReport> SwapStrategy(
      absl::string_view spec, std::chrono::microseconds timeout = std::chrono::microseconds(0));
  std::string strategy() const;
  bool swappable() const;

  // Parks the worker at its next quiescent point (its pool layers flushed); DeadlineExceeded
  // if it does not get there within `timeout` (0: 200 ms).
  absl::Status PauseWorker(unsigned lcore,
                           std::chrono::microseconds timeout = std::chrono::microseconds(0));
  absl::Status ResumeWorker(unsigned lcore);

  absl::Status AddRoute(const Route& route);
  absl::Status DelRoute(uint32_t prefix, uint8_t depth);
  std::vector<Route> Routes() const;
  // Resolves a RouteSpec (port by name or id) against this engine's ports.
  absl::StatusOr<Route> ResolveRoute(const RouteSpec& spec) const;

  // While running: approximate (mbufs in flight are unknown). After Stop: exact.
  AuditResult Audit();
  const AuditResult& final_audit() const;

  // The pool behind the mbuf mempool (skbnf ops), or nullptr (ring_mp_mc).
  pool::Pool* pool() const;
  // The mbuf mempool the RX queues refill from (valid until the engine is destroyed).
  rte_mempool* mempool() const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_ENGINE_H_
