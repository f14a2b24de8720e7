// SPDX-License-Identifier: BSD-3-Clause
// Pool sizing, one definition for the engine's default pool size (mbuf_pool.cc) and skbnfd's
// start-up check (server/ops/preflight.h, CheckPoolSizing; server/daemon/startup_checks.cc):
// the objects a pool needs so that RX refill never starves by construction, and the size the
// engine gives a pool when --mbufs is 0 (that need plus headroom).
//
// An RX queue holds its ring's descriptors (rx_ring), except on net_af_xdp: DPDK 22.11's PMD
// (drivers/net/af_xdp/rte_eth_af_xdp.c at v22.11.11) takes ETH_AF_XDP_DFLT_NUM_DESCS =
// XSK_RING_CONS__DEFAULT_NUM_DESCS = 2,048 mbufs per queue whatever the ring size asked for:
// xsk_configure allocates `reserve_size = ETH_AF_XDP_DFLT_NUM_DESCS` mbufs
// (rte_pktmbuf_alloc_bulk) and puts them on the fill ring (reserve_fill_queue; the fill ring
// itself is `fill_size = ETH_AF_XDP_DFLT_NUM_DESCS * 2` entries, xdp_umem_configure), and
// af_xdp_rx_zc replaces every mbuf it hands over one for one (rte_pktmbuf_alloc_bulk of nb_pkts,
// then reserve_fill_queue of nb_pkts), so fill ring + kernel + RX ring hold those 2,048 from
// queue set-up to close. kAfXdpRxQueueMbufs is that figure; the XDP socket's TX ring (the
// port's TX term) stays as it is.
//
// PoolNeeds and MinPoolObjects are header-only (the preflight library links no DPDK); the rest,
// which reads an EngineConfig and the pool's hold bounds, is in pool_sizing.cc (skbnf_engine).
// No DPDK header here.
#ifndef SKBNF_DATAPLANE_DPDK_POOL_SIZING_H_
#define SKBNF_DATAPLANE_DPDK_POOL_SIZING_H_

#include <algorithm>
#include <cstdint>

#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

inline constexpr uint64_t kAfXdpRxQueueMbufs = 2048;

struct PoolNeeds {
  uint64_t ports = 0;
  uint64_t rx_queues_per_port = 1;
  uint64_t rx_ring = 1024;  // descriptors per RX queue
  uint64_t tx_queues_per_port = 1;
  uint64_t tx_ring = 1024;  // descriptors per TX queue
  uint64_t workers = 1;
  uint64_t per_core_capacity = 0;  // what one core's layers can hold (strategy's tunables)
  uint64_t burst = 32;             // in flight per worker between RX and TX
  uint64_t af_xdp_ports = 0;       // of `ports`, those on net_af_xdp (kAfXdpRxQueueMbufs per
                                   // RX queue instead of rx_ring)
};

inline uint64_t MinPoolObjects(const PoolNeeds& n) {
  const uint64_t xdp = std::min(n.af_xdp_ports, n.ports);
  return (n.ports - xdp) * n.rx_queues_per_port * n.rx_ring +
         xdp * n.rx_queues_per_port * kAfXdpRxQueueMbufs +
         n.ports * n.tx_queues_per_port * n.tx_ring + n.workers * n.per_core_capacity +
         n.workers * n.burst;
}

// The default pool (EngineConfig::mbufs == 0): MinPoolObjects plus kPoolHeadroom (what the PMDs,
// the control threads and a swap's flush have out beyond the bound at any moment), at least
// kMinPoolMbufs. So a default configuration passes the preflight's pool_sizing check by
// construction, AF_XDP ports included.
inline constexpr uint64_t kPoolHeadroom = 8192;
inline constexpr uint64_t kMinPoolMbufs = 8192;
inline uint64_t DefaultPoolMbufs(const PoolNeeds& n) {
  return std::max(kMinPoolMbufs, MinPoolObjects(n) + kPoolHeadroom);
}

// What one core's layers can hold with this configuration: the strategy's bound
// (pool::MaxHeld with its RX ring size) on the skbnf pool, DPDK's lcore cache bound on
// ring_mp_mc.
uint64_t PerCoreCapacity(const EngineConfig& c);
// The needs of an engine with this configuration, `ports` ports (`af_xdp_ports` of them on
// net_af_xdp) and `workers` workers: one TX queue per worker and port.
PoolNeeds PoolNeedsOf(const EngineConfig& c, uint64_t ports, uint64_t workers,
                      uint64_t af_xdp_ports);
// The pool the engine makes: --mbufs when given, else DefaultPoolMbufs.
inline uint64_t PoolMbufs(const EngineConfig& c, const PoolNeeds& n) {
  return c.mbufs != 0 ? c.mbufs : DefaultPoolMbufs(n);
}

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_POOL_SIZING_H_
