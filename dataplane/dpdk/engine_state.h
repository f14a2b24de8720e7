// Engine internals shared by the control side (engine.cc) and the packet path (forward.cc).
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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

inline constexpr uint16_t kMaxBurst = 512;
inline constexpr uint32_t kMaxNextHops = 1 << 16;

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Per-core counter: written by one worker (relaxed load + store), read by anyone.
class Counter {
 public:
  void Add(uint64_t d) {
    v_.store(v_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

struct alignas(64) WorkerCounters {
  struct Port {
    Counter rx_pkts, rx_bytes, tx_pkts, tx_bytes;
  };
  Port ports[kMaxPorts];
  Counter drops[kNumDropReasons];
  Counter polls, busy_polls;
};

// Next hop packed in one word so workers read it atomically: MAC (48 bits) << 16 | port.
// 0 is "none" (a MAC of all zeros is not a valid next hop).
inline uint64_t PackHop(uint16_t port, const MacAddr& mac) {
  uint64_t m = 0;
  for (uint8_t b : mac) m = (m << 8) | b;
  return (m << 16) | port;
}
inline MacAddr HopMac(uint64_t hop) {
  MacAddr mac;
  uint64_t m = hop >> 16;
  for (int i = 5; i >= 0; --i) {
    mac[i] = static_cast<uint8_t>(m & 0xff);
    m >>= 8;
  }
  return mac;
}

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
  int peer = -1;
  rte_ether_addr mac{};
  rte_ether_addr dst_mac{};  // mac mode: dst towards this port
  uint16_t nb_rxq = 0, nb_txq = 0;
  uint16_t rx_ring = 0, tx_ring = 0;
  bool tx_shared = false;
  rte_spinlock_t tx_lock = RTE_SPINLOCK_INITIALIZER;
};

struct Worker {
  Engine::Impl* engine = nullptr;
  unsigned lcore = 0;
  unsigned index = 0;  // RCU thread id and TX queue
  std::vector<RxQueue> rx;
  std::atomic<bool> pause_requested{false};  // ring_mp_mc (no pool to park on)
  std::atomic<bool> parked{false};
  std::atomic<bool> launched{false};
  WorkerCounters c;
};

struct Engine::Impl {
  EngineConfig config;
  std::vector<PortState> ports = std::vector<PortState>(kMaxPorts);
  std::vector<uint16_t> port_ids;  // active ports in config order
  std::vector<std::unique_ptr<Worker>> workers;
  rte_mempool* mp = nullptr;
  pool::Pool* pool = nullptr;
  std::string mp_name;

  // l3
  rte_lpm* lpm = nullptr;
  rte_rcu_qsbr* rcu = nullptr;
  std::unique_ptr<std::atomic<uint64_t>[]> hops;  // next-hop id -> packed hop
  mutable std::mutex route_mu;
  std::map<uint64_t, uint32_t> hop_ids;  // packed hop -> id
  std::map<std::pair<uint32_t, uint8_t>, Route> routes;

  std::atomic<bool> stop{false};
  bool started = false;
  bool stopped = false;
  AuditResult final_audit;
  mutable std::mutex control_mu;

  ~Impl();
  absl::Status Init();
  absl::Status SetUpPorts();
  absl::Status SetUpWorkers();
  absl::Status SetUpPool();
  absl::Status SetUpL3();
  absl::StatusOr<uint16_t> ResolvePort(absl::string_view name) const;
  AuditResult AuditNow(bool exact);
  void ClosePorts();
};

// A worker's poll loop (rte_eal_remote_launch entry point); forward.cc.
int WorkerMain(void* arg);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_ENGINE_STATE_H_
