// SPDX-License-Identifier: BSD-3-Clause
// Engine::Snapshot and Engine::Perf: every worker's counters for readers (the control plane,
// skbnfd's console). Plain relaxed loads of per-core counters: never waits for a worker or a
// control operation. And the latency settings (common/worker_perf.h) the workers read.
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_mbuf_dyn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "absl/strings/str_cat.h"
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

uint64_t Engine::Impl::OtherOut() const {
  if (pool == nullptr) return 0;
  bool worker[pool::kMaxCores] = {};
  for (const auto& w : workers) {
    if (w->lcore < pool::kMaxCores) worker[w->lcore] = true;
  }
  uint64_t n = pool->HandedOut(pool::kNoCore);
  for (int c = 0; c < pool::kMaxCores; ++c) {
    if (!worker[c]) n += pool->HandedOut(c);
  }
  return n;
}

// Where every buffer is: forward.cc's counters added up as that comment says.
BufferPlaces Engine::Impl::PlacesNow() const {
  BufferPlaces b;
  if (pool == nullptr) return b;
  b.has = true;
  int64_t rx[kMaxPorts] = {}, tx[kMaxPorts] = {};
  int64_t set_up = 0;
  for (uint16_t id : port_ids) {
    rx[id] = static_cast<int64_t>(ports[id].setup_out.load(std::memory_order_relaxed));
    set_up += rx[id];
  }
  for (const auto& w : workers) {
    int64_t hands = static_cast<int64_t>(pool->HandedOut(static_cast<int>(w->lcore)));
    for (int p = 0; p < kMaxPorts; ++p) {
      const WorkerCounters::Port& c = w->c.ports[p];
      const int64_t refilled = static_cast<int64_t>(c.rx_refilled.Get());
      const int64_t freed = static_cast<int64_t>(c.tx_freed.Get());
      const int64_t received = static_cast<int64_t>(c.rx_packets.Get());
      const int64_t sent = static_cast<int64_t>(c.tx_packets.Get());
      rx[p] += refilled - received;
      tx[p] += sent - freed;
      hands -= refilled - received + sent - freed;
    }
    b.cores.push_back({w->lcore, hands});
    b.total += hands;
  }
  for (uint16_t id : port_ids) {
    b.ports.push_back({id, ports[id].name, rx[id], tx[id]});
    b.total += rx[id] + tx[id];
  }
  b.other_threads = static_cast<int64_t>(OtherOut()) - set_up;
  b.total += b.other_threads;
  return b;
}

BufferPlaces Engine::Places() const { return impl_->PlacesNow(); }

// ---------------------------------------------------------------------------------------------
// Latency and iterations (common/worker_perf.h; the worker side is loop_perf.h).

namespace {

uint64_t SlowCycles(uint32_t us) {
  return static_cast<uint64_t>(static_cast<long double>(us) * rte_get_tsc_hz() / 1e6L);
}

// The last slow iterations of `p`, oldest first: the entries the worker cannot have been
// rewriting while they were copied (WorkerPerfCounters::slow).
std::vector<SlowIteration> CopySlow(const WorkerPerfCounters& p, uint64_t now_tsc, uint64_t now_ns,
                                    uint64_t hz) {
  const uint64_t h1 = p.slow_head.load(std::memory_order_acquire);
  const uint64_t from = h1 > kSlowRing ? h1 - kSlowRing : 0;
  std::vector<SlowIteration> out;
  std::vector<uint64_t> index;
  for (uint64_t i = from; i < h1; ++i) {
    const SlowEntry& s = p.slow[i % kSlowRing];
    SlowIteration it;
    const uint64_t tsc = s.tsc.load(std::memory_order_relaxed);
    it.cycles = s.cycles.load(std::memory_order_relaxed);
    it.packets = s.packets.load(std::memory_order_relaxed);
    it.causes = static_cast<uint32_t>(s.causes.load(std::memory_order_relaxed));
    const uint64_t ago = tsc < now_tsc ? CyclesToNs(now_tsc - tsc, hz) : 0;
    it.monotonic_ns = now_ns > ago ? now_ns - ago : 0;
    out.push_back(it);
    index.push_back(i);
  }
  const uint64_t h2 = p.slow_head.load(std::memory_order_acquire);
  size_t keep = 0;
  while (keep < index.size() && index[keep] + kSlowRing <= h2) ++keep;  // overwritten meanwhile
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep));
  return out;
}

}  // namespace

absl::Status Engine::Impl::SetUpPerf() {
  if (absl::Status st = CheckLatencySettings(config.latency); !st.ok()) return st;
  // DPDK 22.11 lib/mbuf/rte_mbuf_dyn.h: struct rte_mbuf_dynfield {name, size, align, flags};
  // rte_mbuf_dynfield_register returns the field's offset in the mbuf, or -1 with rte_errno.
  // Registering the same name and shape again returns the same offset (a second engine).
  rte_mbuf_dynfield field{};
  std::snprintf(field.name, sizeof(field.name), "%s", "skbnf_dynfield_rx_tsc");
  field.size = sizeof(uint64_t);
  field.align = alignof(uint64_t);
  field.flags = 0;
  rx_tsc_offset = rte_mbuf_dynfield_register(&field);
  if (rx_tsc_offset < 0) {
    return absl::InternalError(absl::StrCat("rte_mbuf_dynfield_register(skbnf_dynfield_rx_tsc): ",
                                            rte_strerror(rte_errno)));
  }
  pool::MutexLock l(&perf_mu);
  latency = config.latency;
  sample_every.store(latency.sample_every, std::memory_order_relaxed);
  slow_cycles.store(SlowCycles(latency.slow_iteration_us), std::memory_order_relaxed);
  perf_gen.fetch_add(1, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Engine::SetLatencySettings(const LatencySettings& settings) {
  if (absl::Status st = CheckLatencySettings(settings); !st.ok()) return st;
  Impl& e = *impl_;
  pool::MutexLock l(&e.perf_mu);
  e.latency = settings;
  e.sample_every.store(settings.sample_every, std::memory_order_relaxed);
  e.slow_cycles.store(SlowCycles(settings.slow_iteration_us), std::memory_order_relaxed);
  e.perf_gen.fetch_add(1, std::memory_order_release);
  return absl::OkStatus();
}

LatencySettings Engine::latency_settings() const {
  pool::MutexLock l(&impl_->perf_mu);
  return impl_->latency;
}

PerfSnapshot Engine::Perf() const {
  const Impl& e = *impl_;
  PerfSnapshot s;
  s.tsc_hz = rte_get_tsc_hz();
  s.settings = latency_settings();
  const uint64_t now_tsc = rte_rdtsc();
  const uint64_t now_ns = NowNs();
  for (const auto& w : e.workers) {
    const WorkerPerfCounters& p = *w->perf;
    WorkerPerf wp;
    wp.core = static_cast<int>(w->lcore);
    for (int port = 0; port < kMaxPorts; ++port) {
      const LatencyCounters& h = p.port[port];
      PortLatency pl;
      pl.port = port;
      pl.buckets.resize(kLatencyBuckets);
      for (int i = 0; i < kLatencyBuckets; ++i) {
        pl.buckets[i] = h.bucket[i].Get();
        pl.count += pl.buckets[i];
      }
      if (pl.count == 0) continue;
      pl.sum_cycles = h.sum_cycles.Get();
      pl.max_cycles = h.max_cycles.load(std::memory_order_relaxed);
      wp.ports.push_back(std::move(pl));
    }
    for (int b = 0; b < kIterPacketBins; ++b) {
      wp.iter_packets[b] = p.iter_packets[b].Get();
      wp.iterations += wp.iter_packets[b];
    }
    for (int b = 0; b < kIterCycleBins; ++b) wp.iter_cycles[b] = p.iter_cycles[b].Get();
    wp.iter_cycles_sum = p.iter_cycles_sum.Get();
    wp.slow_iterations = p.slow_iterations.Get();
    wp.slow = CopySlow(p, now_tsc, now_ns, s.tsc_hz);
    s.workers.push_back(std::move(wp));
  }
  return s;
}

}  // namespace skbnf::dpdk
