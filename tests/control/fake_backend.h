// SPDX-License-Identifier: BSD-3-Clause
// FakeBackend: an in-memory data plane for testing the control plane without DPDK.
//
// It is a real skbnf::pool::Pool (heap memory instead of hugepages) driven by simulated worker
// threads, one per core, so swaps run the real quiescence protocol, pauses park real workers,
// the audit is the real conservation audit and the pool counters move for real. Only the ports
// are simulated: each poll "receives" a deterministic burst (32 packets of 64 bytes on three
// polls out of four, nothing on the fourth), drops every 16th packet (reason no_route in l3 mode,
// tx_full otherwise), and "transmits" the rest, which stay in flight (a small per-core TX ring)
// until the next poll frees them. Every object carries its RX port in its first two bytes so the
// recycle layer has something to recycle.
//
// Busy cycles are nanoseconds of steady_clock around each busy poll, reported with tsc_hz 1e9
// (a 1 GHz "TSC"), so cycles per packet is real and strategy-dependent, as in skbnfd.
//
// Deterministic: ports, lcores, info, strategy catalogue, routes. Moving: every counter.
#ifndef SKBNF_TESTS_CONTROL_FAKE_BACKEND_H_
#define SKBNF_TESTS_CONTROL_FAKE_BACKEND_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/core/backend.h"

namespace skbnf::control::testing {

struct FakeOptions {
  int workers = 2;
  int ports = 2;
  ForwardingMode mode = ForwardingMode::kL3;
  bool native = false;  // pretend to run on DPDK's native mempool: swaps refused
  std::string initial_spec = "magazine";
  uint32_t objects = 8192;
  bool link_up = true;
  // Every port's link is down while this file exists (the fake's link flap); "": never.
  std::string link_down_file;
  // This port's start "failed": PortInfo::started is false (readiness NOT_SERVING). -1: none.
  int not_started_port = -1;
  // Pause between polls, in microseconds; 0 = busy-poll like a DPDK worker (a full core each).
  int poll_pause_us = 100;
  // Test hook: this core's worker never reaches its quiescent point (it keeps "forwarding"
  // without calling Pool::Quiesce), so swaps time out and roll back. -1: none.
  int stuck_core = -1;
  // The drop reasons' names by dpdk::DropReason (dataplane/dpdk/drop_reasons.h): the engine's
  // own list, handed in by the host that links the engine (fake_daemon.cc: dpdk::DropReasonName),
  // so the fake keeps no copy of it. Empty: no drop counters (a host that does not ask).
  std::vector<std::string> drop_reasons;
};

class FakeBackend final : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<FakeBackend>> Create(const FakeOptions& options);
  ~FakeBackend() override;

  Info GetInfo() const override;
  std::vector<PortInfo> ListPorts() const override;
  pool::StrategySpec GetStrategy() const override;
  uint64_t GetEpoch() const override;
  StatsSnapshot GetStats() const override;
  RouteTable ListRoutes() const override;
  Health GetHealth() const override;
  bool LinkUp() const;

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

 private:
  struct alignas(64) Worker {
    int core = 0;
    std::vector<int> rx_ports, tx_ports;
    std::atomic<bool> paused{false};  // as requested through the API
    std::atomic<bool> parked{false};  // written by the worker: it is at its parked point
    std::atomic<uint64_t> polls{0}, busy_polls{0}, busy_cycles{0}, busy_packets{0};
    std::atomic<uint64_t> parked_loops{0};  // as the engine's: iterations spent parked
    std::atomic<uint64_t> in_flight{0};
    struct Port {
      std::atomic<uint64_t> rx_packets{0}, rx_bytes{0}, tx_packets{0}, tx_bytes{0}, rx_nombuf{0},
          drops{0};
    };
    std::unique_ptr<Port[]> ports;  // by port id
    std::thread thread;
  };

  explicit FakeBackend(const FakeOptions& options) : options_(options) {}
  void Run(Worker& w);
  absl::Status PauseAndWait(int core);
  absl::Status ResumeAndWait(int core);
  absl::Status WaitParked(int core, bool parked);

  const FakeOptions options_;
  std::unique_ptr<void, void (*)(void*)> memory_{nullptr, nullptr};
  std::unique_ptr<pool::Pool> pool_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  mutable std::mutex routes_mu_;
  std::map<std::pair<uint32_t, uint8_t>, uint32_t> routes_;  // (addr, len) -> next-hop id
  std::map<uint32_t, RouteTable::NextHopEntry> next_hops_;
  uint32_t next_hop_id_ = 1;
};

}  // namespace skbnf::control::testing

#endif  // SKBNF_TESTS_CONTROL_FAKE_BACKEND_H_
