// SPDX-License-Identifier: BSD-3-Clause
// Engine::Snapshot: every worker's counters for readers (the control plane, skbnfd's console).
// Plain relaxed loads of per-core counters: never waits for a worker or a control operation.
#include <rte_cycles.h>
#include <rte_launch.h>

#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/skbnf_mempool.h"

namespace skbnf::dpdk {

EngineSnapshot Engine::Snapshot() const {
  const Impl& e = *impl_;
  EngineSnapshot s;
  s.monotonic_ns = NowNs();
  s.pool_ops = e.ops;
  s.strategy = strategy();
  s.epoch = e.pool != nullptr ? e.pool->epoch() : 0;
  s.tsc_hz = rte_get_tsc_hz();
  for (const auto& w : e.workers) {
    WorkerSnapshot ws;
    ws.lcore = w->lcore;
    ws.paused = w->parked.load(std::memory_order_acquire);
    ws.running = w->launched.load() && rte_eal_get_lcore_state(w->lcore) == RUNNING;
    for (const RxQueue& q : w->rx) ws.rx.emplace_back(q.port, q.queue);
    for (int p = 0; p < kMaxPorts; ++p) {
      PortCounters& pc = ws.ports[p];
      pc.rx_packets = w->c.ports[p].rx_packets.Get();
      pc.rx_bytes = w->c.ports[p].rx_bytes.Get();
      pc.tx_packets = w->c.ports[p].tx_packets.Get();
      pc.tx_bytes = w->c.ports[p].tx_bytes.Get();
      ws.rx_packets += pc.rx_packets;
      ws.tx_packets += pc.tx_packets;
      for (int r = 0; r < kNumDropReasons; ++r) {
        pc.drops[r] = w->c.ports[p].drops[r].Get();
        ws.drops[r] += pc.drops[r];
        ws.dropped += pc.drops[r];
      }
    }
    ws.polls = w->c.polls.Get();
    ws.busy_polls = w->c.busy_polls.Get();
    ws.parked_loops = w->c.parked_loops.Get();
    ws.busy_cycles = w->c.busy_cycles.Get();
    ws.busy_packets = w->c.busy_packets.Get();
    if (e.pool != nullptr) {
      ws.has_pool = true;
      ws.pool = e.pool->CoreStats(static_cast<int>(w->lcore));
      ws.gauges = e.pool->CoreGauges(static_cast<int>(w->lcore));
      // DPDK's lcore cache playing the lcache layer (skbnf_mempool.h): as its worker saw it.
      if (const HostLcache h = HostLcacheOf(e.mp, static_cast<int>(w->lcore)); h.tally != nullptr) {
        ws.gauges.objects[static_cast<int>(pool::Layer::kLcache)] +=
            h.tally->gauge.load(std::memory_order_relaxed);
      }
      ws.rx_nombuf = ws.pool.alloc_failures;
    }
    s.workers.push_back(std::move(ws));
  }
  return s;
}

}  // namespace skbnf::dpdk
