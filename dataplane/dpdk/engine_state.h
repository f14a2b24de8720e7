// SPDX-License-Identifier: BSD-3-Clause
// Engine internals shared by the control side (engine.cc, port_setup.cc, workers.cc,
// mbuf_pool.cc, routes.cc, audit.cc, snapshot.cc) and the packet path (forward.cc).
// DPDK headers allowed: not included outside dataplane/dpdk/.
#ifndef SKBNF_DATAPLANE_DPDK_ENGINE_STATE_H_
#define SKBNF_DATAPLANE_DPDK_ENGINE_STATE_H_

#include <rte_ethdev.h>
#include <rte_lpm.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_spinlock.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/worker_perf.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/l3_packet.h"
#include "dataplane/dpdk/worker_hooks.h"
#include "dataplane/pool/counters.h"
#include "dataplane/pool/mutex.h"

namespace skbnf::dpdk {

inline constexpr uint16_t kMaxBurst = 512;
inline constexpr uint32_t kMaxNextHops = 1 << 16;

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Per-core counters: the buffer core's Counter (written by one worker, read by anyone).
using pool::Counter;

struct alignas(64) WorkerCounters {
  struct Port {
    Counter rx_packets, rx_bytes, tx_packets, tx_bytes;
    Counter drops[kNumDropReasons];  // of packets received on this port
    // Where every buffer is (forward.cc): objects the pool handed out on this core inside RX
    // bursts of this port, net (the PMD's refills), and objects it took back inside TX bursts
    // and TX reclaims of this port's queue, net (the PMD's frees of what it sent). Wrapping.
    Counter rx_refilled, tx_freed;
  };
  Port ports[kMaxPorts];
  Counter polls, busy_polls;
  // Busy cycles: TSC cycles of the polls that received packets, from just before their RX
  // bursts to after forwarding (chained: a busy poll's span starts where the previous busy
  // poll's ended, so back-to-back busy polls cost one rdtsc each; an idle poll costs one). The
  // packets those polls received: busy_cycles / busy_packets is cycles per packet, the
  // worker's whole cost of a packet (RX refill from the pool, forwarding, TX, frees).
  Counter busy_cycles, busy_packets;
  // Loop iterations spent parked (paused): the worker passing its quiescent point without
  // polling. Written only on the parked path (nothing on the packet path); it is the worker's
  // acknowledgement that it is alive and parked, so a reader can wait until a parked worker has
  // provably been round its loop since a moment (instead of sleeping) and then check that its
  // poll counters stood still.
  Counter parked_loops;
};

// A worker's performance view (common/worker_perf.h has the layouts and what they mean): written
// only by its worker (Counter adds, plain stores), read by Engine::Perf with relaxed loads.
struct LatencyCounters {
  Counter bucket[kLatencyBuckets];  // LatencyBucketOf(TX TSC - RX stamp)
  Counter sum_cycles;
  std::atomic<uint64_t> max_cycles{0};
};
struct SlowEntry {
  std::atomic<uint64_t> tsc{0}, cycles{0}, packets{0}, causes{0};
};
struct alignas(64) WorkerPerfCounters {
  LatencyCounters port[kMaxPorts];  // by RX port
  Counter iter_packets[kIterPacketBins];
  Counter iter_cycles[kIterCycleBins];
  Counter iter_cycles_sum;  // the iterations' durations summed
  Counter slow_iterations;
  // The last kSlowRing slow iterations: entry i (i = 0, 1, ...) in slot i % kSlowRing, written
  // before slow_head becomes i + 1 (release). A reader copies [head - kSlowRing, head) and keeps
  // the entries the writer cannot have been rewriting meanwhile (Engine::Perf).
  SlowEntry slow[kSlowRing];
  std::atomic<uint64_t> slow_head{0};
};

// PackHop (the next hop in one word), L3Hop (as the packet path applies it): l3_packet.h.

// ---------------------------------------------------------------------------------------------
// Engine state.

struct RxQueue {
  uint16_t port;
  uint16_t queue;
};

struct PortState {
  bool active = false;
  uint16_t id = 0;
  std::string name;
  std::string driver;
  std::string device;  // bus device name (PCI address, vdev name)
  int socket_id = -1;  // rte_eth_dev_socket_id; -1 unknown
  int peer = -1;
  rte_ether_addr mac{};
  rte_ether_addr dst_mac{};  // mac mode: dst towards this port
  uint16_t nb_rxq = 0, nb_txq = 0;
  uint16_t rx_ring = 0, tx_ring = 0;
  bool tx_shared = false;
  // net_af_xdp: the inodes of the XDP sockets its RX queues created (queue order), recorded
  // around rte_eth_rx_queue_setup; their rings say how many mbufs the port holds.
  std::vector<uint64_t> xsk_inodes;
  // net_af_xdp: the ifindex its sockets are bound to (rte_eth_dev_info.if_index); Ports() reads
  // the link from the kernel's interface (af_xdp_link.cc).
  uint32_t xdp_if_index = 0;
  // Set by Engine::Start once rte_eth_dev_start succeeded, cleared when the port is stopped;
  // read by Ports() from the health thread.
  std::atomic<bool> started{false};
  rte_spinlock_t tx_lock = RTE_SPINLOCK_INITIALIZER;
  // Objects the control thread's calls on this port took out of the pool, net: queue set-up,
  // start (the RX rings' first fill), stop and close (Engine::Impl::Bracket). Wrapping.
  std::atomic<uint64_t> setup_out{0};
};

struct Worker {
  Engine::Impl* engine = nullptr;
  unsigned lcore = 0;
  unsigned index = 0;  // RCU thread id and TX queue
  std::vector<RxQueue> rx;
  // EngineConfig::native_twin: rx's twins (queue + rx_queues, on DPDK's pool), polled instead
  // of rx while the engine polls the native side; empty without twins.
  std::vector<RxQueue> twin_rx;
  std::atomic<bool> pause_requested{false};  // ring_mp_mc (no pool to park on)
  std::atomic<bool> parked{false};
  std::atomic<bool> launched{false};
  // The worker's kernel thread id, written once when its loop starts: Stop names what a worker
  // that does not stop is doing from /proc/self/task/<tid> (workers.cc, DescribeStuckWorker).
  std::atomic<int> tid{0};
  // Set by Engine::Audit while it parks this worker: the iteration the park falls in is an
  // audit_park (a slow iteration's cause), not an operator's pause (common/worker_perf.h).
  std::atomic<bool> audit_park{false};
  // Packet path (this worker only): the RX burst being forwarded is a latency sample, so Send
  // reads its mbufs' RX stamps (forward.cc).
  bool latency_burst = false;
  // Packet path (this worker only): how TxBurst reads what the pool handed out on this core
  // (forward.cc, HandedOut): the pool (nullptr: ring_mp_mc, nothing counted), the core, and
  // DPDK's lcore cache when it plays the lcache layer (set at each iteration's quiescent point).
  const pool::CoreSlot* out_slot = nullptr;
  bool out_hosted = false;
  const volatile uint32_t* out_cache_len = nullptr;
  const volatile uint64_t* out_cache_below = nullptr;
  WorkerCounters c;
  std::unique_ptr<WorkerPerfCounters> perf = std::make_unique<WorkerPerfCounters>();
};

// What Stop takes back from the rings of the process's AF_XDP sockets (af_xdp_rings.cc): the
// PMD never frees the mbufs it left there when it closes.
struct XskTakeBack {
  std::vector<rte_mbuf*> mbufs;
  uint64_t per_ring[4] = {};  // rx, tx, fill, completion
  uint64_t sockets = 0;
  uint64_t foreign = 0;  // entries whose address is not one of the pool's objects (left alone)
  // Taken off the fill ring (or TX ring) by the kernel and not put on an RX (completion) ring:
  // inside the kernel's xsk_buff_pool, addresses unknown, counted from the ring indices. The
  // PMD never gets them back; the final audit counts them as held by the PMD.
  uint64_t in_kernel = 0;
  std::string ToString() const;
  void Free();  // after the ports closed: nothing in the kernel refers to them any more
};

// af_xdp_rings.cc. The inodes of this process's AF_XDP sockets now.
std::set<uint64_t> XdpSocketInodes();
// Mbufs held by the rings of these sockets, from the rings' shared producer/consumer indices:
// rx = fill producer - RX consumer, tx = TX producer - completion consumer. `known` false when
// a socket or its rings cannot be found.
struct XskRingMbufs {
  bool known = false;
  uint64_t rx = 0, tx = 0;
};
XskRingMbufs XdpRingMbufs(const std::vector<uint64_t>& inodes);
// af_xdp_link.cc. Whether the interface `if_index` still exists, is up and has its carrier.
bool XdpInterfaceUp(uint32_t if_index);

struct Engine::Impl {
  EngineConfig config;
  PoolOps ops = PoolOps::kSkbnf;  // config.pool_ops, parsed once by Init
  std::vector<PortState> ports = std::vector<PortState>(kMaxPorts);
  std::vector<uint16_t> port_ids;  // active ports in config order
  std::vector<std::unique_ptr<Worker>> workers;
  // Engine::SetWorkerHooks: when set, Start launches the hooked poll loop (worker_hooks.h).
  std::unique_ptr<WorkerHooks> worker_hooks;
  rte_mempool* mp = nullptr;
  pool::Pool* pool = nullptr;
  std::string mp_name;
  // EngineConfig::native_twin: DPDK's ring_mp_mc pool of the twin queues, and which side the
  // workers poll (read once per loop, relaxed: a switch takes effect within a loop or two).
  rte_mempool* twin_mp = nullptr;
  std::atomic<bool> twin_in_use{false};

  // l3
  rte_lpm* lpm = nullptr;
  rte_rcu_qsbr* rcu = nullptr;
  // Next-hop id (the LPM's next hop) -> L3Hop, kMaxNextHops entries; entry 0 is "no route".
  // An entry is written under route_mu before its id is published (rte_lpm_add, default_hop)
  // and does not change while the id is in use or retired: workers read it without a lock.
  // Ids are reference-counted (routes.cc, "Next-hop ids"): freed with their last route, reused
  // only after every worker has passed its quiescent point since (rte_rcu_qsbr token).
  std::unique_ptr<L3Hop[]> hops;
  // 0.0.0.0/0 (rte_lpm has no depth 0): the next-hop id used when the LPM finds nothing (the
  // lookup's default value); 0: none.
  std::atomic<uint32_t> default_hop{0};
  mutable pool::Mutex route_mu;
  std::map<uint64_t, uint32_t> hop_ids ABSL_GUARDED_BY(route_mu);  // PackHop -> id (live)
  std::vector<uint32_t> hop_refs ABSL_GUARDED_BY(route_mu);  // per id: routes using it
  uint32_t next_fresh_hop ABSL_GUARDED_BY(route_mu) = 1;     // ids never used yet: from here
  struct RetiredHop {
    uint32_t id;
    uint64_t token;  // rte_rcu_qsbr_start after the last route using it was unpublished
  };
  std::deque<RetiredHop> retired_hops ABSL_GUARDED_BY(route_mu);  // oldest first
  std::map<std::pair<uint32_t, uint8_t>, Route> routes ABSL_GUARDED_BY(route_mu);
  // routes.cc, under route_mu: the id of (port, mac) with one more reference (a live one, a
  // retired one whose grace period is over, or a fresh one, in that order).
  absl::StatusOr<uint32_t> RefHop(uint16_t port, const MacAddr& mac)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(route_mu);
  // The oldest retired id's grace period is over: every online worker passed a quiescent point.
  bool OldestRetiredHopIsFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(route_mu);
  // One reference fewer; the last one retires the id (after it was unpublished).
  void UnrefHop(uint32_t id, uint16_t port, const MacAddr& mac)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(route_mu);

  // Latency and iteration view (common/worker_perf.h). The mbuf dynamic field holding a sampled
  // packet's RX TSC (rte_mbuf_dynfield_register, Init). Settings: written under perf_mu by
  // SetLatencySettings, then perf_gen bumped (release); each worker compares perf_gen once per
  // iteration and reloads sample_every and slow_cycles when it moved.
  int rx_tsc_offset = -1;
  mutable pool::Mutex perf_mu;
  LatencySettings latency ABSL_GUARDED_BY(perf_mu);
  std::atomic<uint32_t> sample_every{0};
  std::atomic<uint64_t> slow_cycles{0};
  std::atomic<uint32_t> perf_gen{0};
  absl::Status SetUpPerf();  // snapshot.cc: the dynamic field, the first settings

  std::atomic<bool> stop{false};
  bool started = false;
  bool stopped = false;
  // Stop found a worker still inside its loop after EngineConfig::stop_timeout: what it uses
  // (ports, pool, hops, this Impl) is never freed (Engine::~Engine leaks the Impl).
  bool wedged = false;
  AuditReport final_audit;
  uint64_t held_by_pmd_at_stop = 0;  // XskTakeBack::in_kernel (audit.cc)
  mutable pool::Mutex control_mu;

  ~Impl();
  absl::Status Init();         // engine.cc
  absl::Status SelectPorts();  // port_setup.cc: which ports, paired how
  absl::Status SetUpPorts();   // port_setup.cc: queues and rings
  absl::StatusOr<uint16_t> ResolvePort(absl::string_view name) const;
  // Stops and closes every port, each call checked: the failures, one per port and call
  // ("port 1 (net_null1): rte_eth_dev_stop: No such device"); empty when all succeeded.
  std::vector<std::string> ClosePorts();
  BufferPlaces PlacesNow() const;  // snapshot.cc
  // What the pool has handed out on the slots of every thread but the workers so far (the
  // "other threads" slot and the unregistered lcores' slots, e.g. the main lcore's: forward.cc,
  // "Where every buffer is"); Book: the objects the calls on port `id` since `out0` took out
  // (another non-worker thread's calls meanwhile would be booked with them). snapshot.cc.
  uint64_t OtherOut() const;
  void Book(uint16_t id, uint64_t out0) {
    ports[id].setup_out.fetch_add(OtherOut() - out0, std::memory_order_relaxed);
  }
  // Before rte_eth_dev_start: what a PMD would fail at without saying so (port_setup.cc:
  // net_virtio_user's vhost-user memory regions). FailedPrecondition naming what to change.
  absl::Status CheckStartable(uint16_t id) const;
  // net_ring ports keep what their rings hold when they close: takes those mbufs back (workers
  // stopped). Returns how many.
  uint64_t DrainRingPorts();
  // net_af_xdp ports leave the mbufs on their sockets' rings when they close: reads them from
  // the rings (workers stopped, before ClosePorts; free them after).
  XskTakeBack TakeBackFromXdpRings();
  absl::Status SetUpWorkers();  // workers.cc
  // workers.cc. After `stop` is set: waits until every launched worker's loop has returned
  // (EAL's lcore state WAIT), at most `bound` in all. DeadlineExceeded naming each worker still
  // in its loop and what it is doing ("worker on lcore 1 (core 3) did not stop within 5000 ms:
  // ..."); the workers are then still running.
  absl::Status WaitWorkersStopped(std::chrono::milliseconds bound) const;
  Worker* FindWorker(unsigned lcore) const;
  absl::Status PauseLocked(Worker& w, std::chrono::microseconds timeout);
  absl::Status ResumeLocked(Worker& w, std::chrono::microseconds timeout);
  absl::Status CheckLayoutControls() const;  // mbuf_pool.cc: no_iova_contig, store_stride
  absl::Status SetUpPool();                  // mbuf_pool.cc
  absl::Status SetUpL3();                    // routes.cc
  AuditReport AuditNow(bool exact);          // audit.cc
};

// A worker's poll loop (rte_eal_remote_launch entry points, forward.cc): the production loop,
// and the loop that calls Impl::worker_hooks (worker_hooks.h).
int WorkerMain(void* arg);
int HookedWorkerMain(void* arg);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_ENGINE_STATE_H_
