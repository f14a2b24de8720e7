// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/dpdk/pool_sizing.h"

#include "dataplane/pool/layer_facts.h"

namespace skbnf::dpdk {

uint64_t PerCoreCapacity(const EngineConfig& c) {
  if (c.pool_ops != PoolOps::kSkbnf) return pool::LcoreCacheMaxHeld(c.mbuf_cache);
  return pool::MaxHeld(c.strategy, pool::HoldEnv{.rx_ring_sizes = {c.rx_ring}}).total;
}

PoolNeeds PoolNeedsOf(const EngineConfig& c, uint64_t ports, uint64_t workers,
                      uint64_t af_xdp_ports) {
  PoolNeeds n;
  n.af_xdp_ports = af_xdp_ports;
  n.ports = ports;
  n.rx_queues_per_port = c.rx_queues;
  n.rx_ring = c.rx_ring;
  n.tx_queues_per_port = std::max<uint64_t>(1, workers);  // one TX queue per worker and port
  n.tx_ring = c.tx_ring;
  n.workers = workers;
  n.per_core_capacity = PerCoreCapacity(c);
  n.burst = c.burst;
  return n;
}

}  // namespace skbnf::dpdk
