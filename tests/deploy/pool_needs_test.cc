// SPDX-License-Identifier: BSD-3-Clause
// Preflight's pool sizing counts what each PMD holds per RX queue (issue 34 item 4a): the ring's
// descriptors, except net_af_xdp's 2,048 (preflight.h, kAfXdpRxQueueMbufs, from DPDK 22.11's
// drivers/net/af_xdp/rte_eth_af_xdp.c: xsk_configure's reserve_size = ETH_AF_XDP_DFLT_NUM_DESCS).
// Which ports are AF_XDP comes from the config's port lines, else from the EAL --vdev list
// (startup_checks.h). The real PMD holding that figure: integration.af_xdp_pool_needs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "server/daemon/startup_checks.h"
#include "server/ops/preflight.h"

namespace skbnf {
namespace {

using preflight::PoolNeeds;

TEST(PoolNeeds, AnAfXdpQueueCountsThePmdsReserveNotItsRing) {
  PoolNeeds n{.ports = 3,
              .rx_queues_per_port = 2,
              .rx_ring = 512,
              .tx_queues_per_port = 1,
              .tx_ring = 1024,
              .workers = 2,
              .per_core_capacity = 64,
              .burst = 32,
              .af_xdp_ports = 2};
  EXPECT_EQ(preflight::kAfXdpRxQueueMbufs, 2048u);
  // RX: 1 port x 2 queues x 512 + 2 AF_XDP ports x 2 queues x 2048; TX 3 x 1 x 1024; layers,
  // bursts.
  const uint64_t need = 1024 + 8192 + 3072 + 128 + 64;
  EXPECT_EQ(preflight::MinPoolObjects(n), need);
  preflight::Finding f = preflight::CheckPoolSizing(n, need - 1);
  EXPECT_EQ(f.severity, preflight::Severity::kError);
  EXPECT_TRUE(absl::StrContains(f.message,
                                "RX 1 ports x 2 queues x 512 + AF_XDP RX 2 ports x 2 "
                                "queues x 2048 (the PMD's fill-ring reserve) + TX 3 x 1 "
                                "x 1024"))
      << f.message;
  EXPECT_EQ(preflight::CheckPoolSizing(n, need).severity, preflight::Severity::kOk);
  // Without AF_XDP ports the text is as it was.
  n.af_xdp_ports = 0;
  EXPECT_FALSE(absl::StrContains(preflight::CheckPoolSizing(n, 1).message, "AF_XDP"));
  EXPECT_EQ(preflight::MinPoolObjects(n), 3072u + 3072 + 128 + 64);
}

TEST(PoolNeeds, AfXdpPortsFromTheConfigElseTheVdevs) {
  dpdk::EngineConfig c;
  const std::vector<std::string> eal = {"-l",
                                        "0,1",
                                        "--vdev=net_af_xdp0,iface=xa",
                                        "--vdev",
                                        "net_af_xdp1,iface=xb",
                                        "--vdev=net_null0"};
  EXPECT_EQ(control::CountAfXdpPorts(c, eal), 2u);
  c.ports = {{"net_af_xdp1", "net_null0", ""}, {"net_null0", "net_af_xdp1", ""}};
  EXPECT_EQ(control::CountAfXdpPorts(c, eal), 1u) << "the config's ports are the engine's";
  const preflight::PoolNeeds n = control::PoolNeedsOf(c, 2, 1, control::CountAfXdpPorts(c, eal));
  EXPECT_EQ(n.af_xdp_ports, 1u);
  EXPECT_EQ(preflight::MinPoolObjects(n), 1024 + 2048 + 2 * 1024 + n.per_core_capacity + 32);
}

}  // namespace
}  // namespace skbnf
