// SPDX-License-Identifier: BSD-3-Clause
// PortInfo: the one description of a port in skbnf. The engine fills it from ethdev
// (Engine::Ports), the control plane serves it (ListPorts, /metrics, health), and the test
// backend fakes it: one struct, no copies field by field.
//
// A figure the engine could not read is left unset (the `has_*` flags), never reported as 0.
// No DPDK header here.
#ifndef SKBNF_COMMON_PORT_INFO_H_
#define SKBNF_COMMON_PORT_INFO_H_

#include <cstdint>
#include <string>

#include "common/net_text.h"

namespace skbnf::dpdk {

// The PMD's own counters (rte_eth_stats), totals since the port started.
struct PmdStats {
  uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0;
  uint64_t imissed = 0;    // dropped by the NIC: RX ring full (the host did not poll fast enough)
  uint64_t ierrors = 0;    // erroneous received packets
  uint64_t oerrors = 0;    // failed transmits
  uint64_t rx_nombuf = 0;  // RX mbuf allocation failures seen by the PMD
};

struct PortInfo {
  int id = 0;
  std::string name;    // ethdev name (vdev name or PCI address)
  std::string driver;  // PMD
  std::string device;  // the bus device: PCI address or vdev name
  net::MacAddr mac{};
  int peer = -1;       // io/mac forwarding: the port its packets go to
  int socket_id = -1;  // NUMA socket of the device; -1 unknown (e.g. vdevs)
  uint16_t rx_queues = 0, tx_queues = 0;
  uint16_t rx_ring_size = 0, tx_ring_size = 0;
  bool tx_shared = false;  // fewer TX queues than workers: one queue under a lock
  // rte_eth_dev_start succeeded and the port has not been stopped since. A port that is not
  // started forwards nothing whatever its link says: readiness (server/control/health.h) needs
  // both.
  bool started = false;
  bool has_link = false;  // link read (rte_eth_link_get_nowait)
  bool link_up = false;
  uint32_t link_speed_mbps = 0;  // 0: unknown / none
  bool has_pmd_stats = false;    // pmd read (rte_eth_stats_get)
  PmdStats pmd;
  // Mbufs sitting in the port's rings now ("where are my buffers"), counted from the PMD's own
  // rings, not from the pool: RX = handed to the PMD for receiving and not yet received (DPDK's
  // RX descriptors; AF_XDP: fill ring + the kernel's buffer pool + RX ring), TX = handed to
  // the PMD for sending and not yet freed (AF_XDP: TX ring + in the kernel + completion ring).
  // Unset where the PMD does not tell (then the pool's in-flight total is all there is).
  bool has_ring_mbufs = false;
  std::string ring_mbufs_source;  // how they were counted, e.g. "af_xdp_rings"
  uint64_t rx_ring_mbufs = 0, tx_ring_mbufs = 0;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_COMMON_PORT_INFO_H_
