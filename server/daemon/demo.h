// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's demo (the "demo" topic of --help): what skbnfd runs with neither EAL arguments nor
// --config, on any Linux machine with two CPUs, no NIC and no hugepages.
//
//   traffic  net_pcap0 replays (infinite_rx=1) a pcap generated at start-up: 64-byte
//            IPv4/UDP frames to --demo-dests distinct destinations inside the route table
//            (1/64 to 192.0.2.0/24: no_route; 1/128 with TTL 1: ttl_expired)
//   routing  --mode=l3 over --demo-routes random prefixes in 10.0.0.0/8 (lengths 16..24,
//            seed 1), next hops 02:00:00:00:01:00..0f, all out of net_null0 (the sink)
//   workers  lcore 1 polls net_pcap0; lcore 0 runs control and the console
//
// The control tests run against this very set-up (tests/control), scaled down with the flags.
#ifndef SKBNF_SERVER_DAEMON_DEMO_H_
#define SKBNF_SERVER_DAEMON_DEMO_H_

#include <filesystem>

#include "absl/status/status.h"
#include "server/ops/config.h"

namespace skbnf::control {

class Demo {
 public:
  Demo() = default;
  ~Demo();  // removes the generated files
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;

  // Fills `dc` (EAL arguments, ports, worker, routes, mode l3) and writes the pcap.
  absl::Status SetUp(dpdk::DaemonConfig& dc);
  // After the flags were applied (they win): routes only in l3 (--mode=io/mac forward the
  // same traffic to the peer port); prints the demo's banner.
  void Finish(dpdk::EngineConfig& c) const;
  bool active() const { return !dir_.empty(); }

 private:
  std::filesystem::path dir_;
  int dests_ = 0;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_DEMO_H_
