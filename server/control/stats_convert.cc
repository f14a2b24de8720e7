// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/stats_convert.h"

#include <algorithm>

#include "common/rates.h"
#include "server/control/strategy_convert.h"

namespace skbnf::control {
namespace {

using pool::Layer;

void FillCorePool(const pool::CoreCountersSnapshot& now, const pool::CoreCountersSnapshot* before,
                  const pool::LayerGauges* gauges, double secs, v1::CorePoolStats* out) {
  out->set_host_allocs(now.allocs);
  out->set_host_frees(now.frees);
  out->set_alloc_failures(now.alloc_failures);
  out->set_store_allocs(now.store_allocs);
  out->set_store_frees(now.store_frees);
  out->set_store_locks(now.store_locks);
  out->set_depot_locks(now.depot_locks);
  out->set_depot_waits(now.depot_waits);
  out->set_depot_wait_ticks(now.depot_wait_ticks);
  if (before != nullptr) {
    out->set_host_allocs_per_second(Rate(now.allocs, before->allocs, secs));
    out->set_host_frees_per_second(Rate(now.frees, before->frees, secs));
  }
  for (int i = 0; i < pool::kNumLayers; ++i) {
    const pool::LayerCountersSnapshot& l = now.layer[i];
    v1::LayerStats* ls = out->add_layers();
    ls->set_layer(LayerToProto(static_cast<Layer>(i)));
    ls->set_alloc_hits(l.alloc_hits);
    ls->set_alloc_misses(l.alloc_misses);
    ls->set_free_hits(l.free_hits);
    ls->set_free_misses(l.free_misses);
    ls->set_bulk(l.bulk);
    if (gauges != nullptr) ls->set_objects(gauges->objects[i]);
    if (before != nullptr) {
      const pool::LayerCountersSnapshot& b = before->layer[i];
      ls->set_allocs_per_second(
          Rate(l.alloc_hits + l.alloc_misses, b.alloc_hits + b.alloc_misses, secs));
      ls->set_frees_per_second(
          Rate(l.free_hits + l.free_misses, b.free_hits + b.free_misses, secs));
    }
  }
}

const CoreStats* FindCore(const StatsSnapshot& s, int core) {
  for (const CoreStats& c : s.cores) {
    if (c.core == core) return &c;
  }
  return nullptr;
}

// The lcore id of worker `core` (Info::lcores); `core` itself when not listed (skbnfd: equal).
uint32_t LcoreOf(const std::vector<LcoreInfo>& lcores, int core) {
  for (const LcoreInfo& l : lcores) {
    if (l.role == LcoreInfo::Role::kWorker && l.core == core) return l.lcore_id;
  }
  return static_cast<uint32_t>(core);
}

const PortCounters* FindPort(const CoreStats& c, int port) {
  for (const PortCounters& p : c.ports) {
    if (p.port == port) return &p;
  }
  return nullptr;
}

const dpdk::WorkerPerf* FindPerf(const StatsSnapshot* s, int core) {
  if (s == nullptr || !s->perf.has_value()) return nullptr;
  for (const dpdk::WorkerPerf& w : s->perf->workers) {
    if (w.core == core) return &w;
  }
  return nullptr;
}

void FillPercentiles(const std::vector<uint64_t>& buckets, uint64_t max_cycles, uint64_t hz,
                     v1::LatencyPercentiles* out) {
  uint64_t n = 0;
  for (uint64_t b : buckets) n += b;
  out->set_samples(n);
  if (n == 0) return;
  out->set_p50_ns(dpdk::CyclesToNs(dpdk::LatencyQuantile(buckets, 0.50, max_cycles), hz));
  out->set_p99_ns(dpdk::CyclesToNs(dpdk::LatencyQuantile(buckets, 0.99, max_cycles), hz));
  out->set_p999_ns(dpdk::CyclesToNs(dpdk::LatencyQuantile(buckets, 0.999, max_cycles), hz));
  out->set_max_ns(
      dpdk::CyclesToNs(max_cycles != 0 ? max_cycles : dpdk::LatencyQuantile(buckets, 1.0), hz));
}

// The histogram's non-empty buckets, in nanoseconds; a bin's high_ns is its bucket's highest
// value (LatencyQuantile's figure for a quantile that falls in it).
void FillBins(const std::vector<uint64_t>& buckets, uint64_t hz, v1::PortLatency* out) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] == 0) continue;
    const int b = static_cast<int>(i);
    v1::LatencyBin* bin = out->add_bins();
    bin->set_low_ns(dpdk::CyclesToNs(dpdk::LatencyBucketLow(b), hz));
    bin->set_high_ns(dpdk::CyclesToNs(dpdk::LatencyBucketHigh(b) - 1, hz));
    bin->set_samples(buckets[i]);
  }
}

// A worker's latency per RX port (total, and over the window against `before`) and its
// iterations (common/worker_perf.h).
void FillPerf(const dpdk::WorkerPerf& w, const dpdk::WorkerPerf* before, uint64_t hz,
              v1::CoreStats* out) {
  for (const dpdk::PortLatency& p : w.ports) {
    v1::PortLatency* pl = out->add_latency();
    pl->set_port(static_cast<uint32_t>(p.port));
    pl->set_sum_ns(dpdk::CyclesToNs(p.sum_cycles, hz));
    FillPercentiles(p.buckets, p.max_cycles, hz, pl->mutable_total());
    FillBins(p.buckets, hz, pl);
    if (before == nullptr) continue;
    std::vector<uint64_t> window = p.buckets;
    for (const dpdk::PortLatency& b : before->ports) {
      if (b.port != p.port) continue;
      for (size_t i = 0; i < window.size() && i < b.buckets.size(); ++i) {
        window[i] = window[i] >= b.buckets[i] ? window[i] - b.buckets[i] : 0;
      }
    }
    FillPercentiles(window, 0, hz, pl->mutable_window());
  }
  v1::IterationStats* it = out->mutable_iterations();
  it->set_iterations(w.iterations);
  for (int b = 0; b < dpdk::kIterPacketBins; ++b) {
    if (w.iter_packets[b] == 0) continue;
    v1::IterationBin* bin = it->add_by_packets();
    bin->set_low(dpdk::IterPacketBinLow(b));
    bin->set_high(dpdk::IterPacketBinHigh(b));
    bin->set_iterations(w.iter_packets[b]);
  }
  for (int b = 0; b < dpdk::kIterCycleBins; ++b) {
    if (w.iter_cycles[b] == 0) continue;
    v1::IterationBin* bin = it->add_by_duration_ns();
    bin->set_low(b == 0 ? 0 : dpdk::CyclesToNs(uint64_t{1} << (b - 1), hz));
    const uint64_t high = dpdk::IterCycleBinHigh(b);
    bin->set_high(high == UINT64_MAX ? UINT64_MAX : dpdk::CyclesToNs(high, hz));
    bin->set_iterations(w.iter_cycles[b]);
  }
  it->set_slow_iterations(w.slow_iterations);
  for (const dpdk::SlowIteration& s : w.slow) {
    v1::SlowIteration* si = it->add_slow();
    si->set_monotonic_ns(s.monotonic_ns);
    si->set_duration_ns(dpdk::CyclesToNs(s.cycles, hz));
    si->set_packets(s.packets);
    for (const std::string& c : dpdk::SlowCauseNames(s.causes, s.packets)) si->add_causes(c);
  }
}

}  // namespace

void FillBufferPlaces(const dpdk::BufferPlaces& places, bool exact, const PoolGauges& gauges,
                      const std::vector<CoreStats>* cores, const std::vector<PortInfo>& ports,
                      v1::BufferPlaces* out) {
  out->set_exact(exact);
  out->set_populated(gauges.populated);
  out->set_in_store(gauges.in_store);
  out->set_in_depots(gauges.in_depots);
  for (int i = 0; i < pool::kNumLayers; ++i) {
    v1::LayerObjectCount* lo = out->add_in_layers();
    lo->set_layer(LayerToProto(static_cast<Layer>(i)));
    lo->set_objects(gauges.in_layers[i]);
  }
  for (const dpdk::BufferPlaces::Core& c : places.cores) {
    v1::CoreBuffers* cb = out->add_cores();
    cb->set_core(c.lcore);
    cb->set_in_hands(c.in_hands);
    const CoreStats* cs = nullptr;
    if (cores != nullptr) {
      for (const CoreStats& s : *cores) {
        if (s.core == static_cast<int>(c.lcore)) cs = &s;
      }
    }
    if (cs == nullptr) continue;
    for (int i = 0; i < pool::kNumLayers; ++i) {
      v1::LayerObjectCount* lo = cb->add_in_layers();
      lo->set_layer(LayerToProto(static_cast<Layer>(i)));
      lo->set_objects(cs->layer_objects.objects[i]);
    }
  }
  for (const dpdk::BufferPlaces::Port& p : places.ports) {
    v1::PortBuffers* pb = out->add_ports();
    pb->set_port(p.id);
    pb->set_name(p.name);
    pb->set_rx_ring(p.rx_ring);
    pb->set_tx_ring(p.tx_ring);
    for (const PortInfo& info : ports) {
      if (info.id != p.id || !info.has_ring_mbufs) continue;
      pb->set_pmd_rx(info.rx_ring_mbufs);
      pb->set_pmd_tx(info.tx_ring_mbufs);
      pb->set_pmd_source(info.ring_mbufs_source);
    }
  }
  out->set_other_threads(places.other_threads);
  out->set_unaccounted(UnaccountedObjects(gauges, places));
}

void FillStats(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& spec,
               uint64_t epoch, const std::vector<int>& cores, const std::vector<LcoreInfo>& lcores,
               v1::Stats* out) {
  if (before != nullptr && before->taken >= now.taken) before = nullptr;
  const double secs = before != nullptr ? Seconds(now.taken - before->taken) : 0;
  out->set_monotonic_ns(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.taken.time_since_epoch()).count()));
  out->set_window_seconds(secs);
  out->set_spec(spec);
  out->set_epoch(epoch);
  out->set_swaps_ok(now.swaps_ok);
  out->set_swaps_failed(now.swaps_failed);
  for (const CoreStats& c : now.cores) {
    if (!cores.empty() && std::find(cores.begin(), cores.end(), c.core) == cores.end()) continue;
    const CoreStats* b = before != nullptr ? FindCore(*before, c.core) : nullptr;
    v1::CoreStats* cs = out->add_cores();
    cs->set_core(static_cast<uint32_t>(c.core));
    cs->set_lcore(LcoreOf(lcores, c.core));
    cs->set_paused(c.paused);
    cs->set_polls(c.polls);
    cs->set_busy_polls(c.busy_polls);
    cs->set_busy_cycles(c.busy_cycles);
    cs->set_busy_packets(c.busy_packets);
    cs->set_tsc_hz(c.tsc_hz);
    double core_rx = 0, core_tx = 0;
    for (const PortCounters& p : c.ports) {
      v1::PortStats* ps = cs->add_ports();
      ps->set_port(static_cast<uint32_t>(p.port));
      ps->set_rx_packets(p.rx_packets);
      ps->set_rx_bytes(p.rx_bytes);
      ps->set_tx_packets(p.tx_packets);
      ps->set_tx_bytes(p.tx_bytes);
      if (p.rx_nombuf.has_value()) ps->set_rx_nombuf(*p.rx_nombuf);
      for (const auto& [reason, n] : p.drops) {
        v1::DropCount* d = ps->add_drops();
        d->set_reason(reason);
        d->set_packets(n);
      }
      const PortCounters* bp = b != nullptr ? FindPort(*b, p.port) : nullptr;
      if (bp != nullptr) {
        ps->set_rx_pps(Rate(p.rx_packets, bp->rx_packets, secs));
        ps->set_tx_pps(Rate(p.tx_packets, bp->tx_packets, secs));
        core_rx += ps->rx_pps();
        core_tx += ps->tx_pps();
      }
    }
    cs->set_rx_pps(core_rx);
    cs->set_tx_pps(core_tx);
    if (b != nullptr) {
      cs->set_busy_ratio(BusyRatio(c.busy_polls, b->busy_polls, c.polls, b->polls));
      cs->set_cycles_per_packet(
          CyclesPerPacket(c.busy_cycles, b->busy_cycles, c.busy_packets, b->busy_packets));
    }
    FillCorePool(c.pool, b != nullptr ? &b->pool : nullptr, &c.layer_objects, secs,
                 cs->mutable_pool());
    if (const dpdk::WorkerPerf* wp = FindPerf(&now, c.core); wp != nullptr) {
      FillPerf(*wp, FindPerf(before, c.core), now.perf->tsc_hz, cs);
    }
  }
  if (now.perf.has_value()) {
    out->mutable_latency_settings()->set_sample_every(now.perf->settings.sample_every);
    out->mutable_latency_settings()->set_slow_iteration_us(now.perf->settings.slow_iteration_us);
  }
  v1::PoolObjects* po = out->mutable_pool();
  po->set_populated(now.pool.populated);
  po->set_in_store(now.pool.in_store);
  po->set_in_depots(now.pool.in_depots);
  po->set_in_flight(now.pool.in_flight);
  for (int i = 0; i < pool::kNumLayers; ++i) {
    v1::LayerObjectCount* lo = po->add_in_layers();
    lo->set_layer(LayerToProto(static_cast<Layer>(i)));
    lo->set_objects(now.pool.in_layers[i]);
  }
  FillCorePool(now.other, before != nullptr ? &before->other : nullptr, nullptr, secs,
               out->mutable_other());
}

}  // namespace skbnf::control
