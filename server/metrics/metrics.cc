// SPDX-License-Identifier: BSD-3-Clause
#include "server/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/net_text.h"
#include "common/rates.h"
#include "dataplane/pool/layer_facts.h"
#include "server/core/build_info.h"
#include "server/core/metric_families.h"

namespace skbnf::control {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Catalog = std::vector<pool::CatalogEntry>;

class Families {
 public:
  MetricFamily& Add(const MetricDef& d) {
    out_.push_back(NewFamily(d));
    return out_.back();
  }
  std::vector<MetricFamily> Take() {
    return std::vector<MetricFamily>(std::make_move_iterator(out_.begin()),
                                     std::make_move_iterator(out_.end()));
  }

 private:
  std::deque<MetricFamily> out_;  // references handed out by Add() stay valid
};

ClientMetric Sample(std::vector<ClientMetric::Label> labels, MetricType type, double v) {
  ClientMetric m;
  m.label = std::move(labels);
  if (type == MetricType::Counter)
    m.counter.value = v;
  else
    m.gauge.value = v;
  return m;
}

void Put(MetricFamily& f, std::vector<ClientMetric::Label> labels, double v) {
  f.metric.push_back(Sample(std::move(labels), f.type, v));
}

double D(uint64_t v) { return static_cast<double>(v); }

// skbnf_port_ring_mbufs{port,direction}: mbufs sitting in a port's RX / TX rings, for the ports
// whose PMD tells (PortInfo::has_ring_mbufs; AF_XDP: its XDP rings' indices). Ports that do not
// tell have no sample: their buffers are in skbnf_pool_objects{state="in_flight"} only.
// With places counted (common/buffer_places.h) every port has its counted figures instead.
void AddPortRingMbufs(Families& fam, const std::vector<PortInfo>& ports,
                      const std::optional<dpdk::BufferPlaces>& places) {
  MetricFamily& f = fam.Add(metric::kPortRingMbufs);
  if (places.has_value()) {
    for (const dpdk::BufferPlaces::Port& p : places->ports) {
      const std::string port = absl::StrCat(p.id);
      Put(f, {{"port", port}, {"direction", "rx"}}, static_cast<double>(p.rx_ring));
      Put(f, {{"port", port}, {"direction", "tx"}}, static_cast<double>(p.tx_ring));
    }
    return;
  }
  for (const PortInfo& p : ports) {
    if (!p.has_ring_mbufs) continue;
    const std::string port = absl::StrCat(p.id);
    Put(f, {{"port", port}, {"direction", "rx"}}, D(p.rx_ring_mbufs));
    Put(f, {{"port", port}, {"direction", "tx"}}, D(p.tx_ring_mbufs));
  }
}

// Collect() is one function per metric group, called in exposition order; each adds its
// families to `fam` in the order a scrape shows them.

// Per core and port: packets, bytes, drops, rates; the worker loop; the pool per core.
void CollectCores(Families& fam, const StatsSnapshot& now,
                  const std::optional<StatsSnapshot>& before, double secs, const Catalog& layers) {
  MetricFamily& pkts = fam.Add(metric::kPortPacketsTotal);
  MetricFamily& bytes = fam.Add(metric::kPortBytesTotal);
  MetricFamily& drops = fam.Add(metric::kPortDropsTotal);
  MetricFamily& nombuf = fam.Add(metric::kPortRxNombufTotal);
  MetricFamily& pps = fam.Add(metric::kCorePacketsPerSecond);
  MetricFamily& polls = fam.Add(metric::kWorkerPollsTotal);
  MetricFamily& busy = fam.Add(metric::kWorkerBusyPollsTotal);
  MetricFamily& ratio = fam.Add(metric::kWorkerBusyRatio);
  MetricFamily& paused = fam.Add(metric::kWorkerPaused);
  MetricFamily& parked_loops = fam.Add(metric::kWorkerParkedLoopsTotal);
  MetricFamily& busy_cycles = fam.Add(metric::kWorkerBusyCyclesTotal);
  MetricFamily& busy_packets = fam.Add(metric::kWorkerBusyPacketsTotal);
  MetricFamily& allocs = fam.Add(metric::kPoolAllocsTotal);
  MetricFamily& frees = fam.Add(metric::kPoolFreesTotal);
  MetricFamily& bulk = fam.Add(metric::kPoolBulkTransfersTotal);
  MetricFamily& host_allocs = fam.Add(metric::kPoolHostAllocsTotal);
  MetricFamily& host_frees = fam.Add(metric::kPoolHostFreesTotal);
  MetricFamily& fails = fam.Add(metric::kPoolAllocFailuresTotal);
  MetricFamily& st_allocs = fam.Add(metric::kPoolStoreAllocsTotal);
  MetricFamily& st_frees = fam.Add(metric::kPoolStoreFreesTotal);
  MetricFamily& st_locks = fam.Add(metric::kPoolStoreLockAcquisitionsTotal);
  MetricFamily& dp_locks = fam.Add(metric::kPoolDepotLockAcquisitionsTotal);
  MetricFamily& dp_waits = fam.Add(metric::kPoolDepotLockWaitsTotal);

  auto pool_core = [&](const std::string& core, const pool::CoreCountersSnapshot& s) {
    for (const pool::CatalogEntry& e : layers) {
      if (e.index < 0) continue;  // a layer no spec names has no counters
      const std::string layer(e.facts.name);
      const pool::LayerCountersSnapshot& l = s.layer[e.index];
      Put(allocs, {{"core", core}, {"layer", layer}, {"result", "hit"}}, D(l.alloc_hits));
      Put(allocs, {{"core", core}, {"layer", layer}, {"result", "miss"}}, D(l.alloc_misses));
      Put(frees, {{"core", core}, {"layer", layer}, {"result", "hit"}}, D(l.free_hits));
      Put(frees, {{"core", core}, {"layer", layer}, {"result", "miss"}}, D(l.free_misses));
      Put(bulk, {{"core", core}, {"layer", layer}}, D(l.bulk));
    }
    Put(host_allocs, {{"core", core}}, D(s.allocs));
    Put(host_frees, {{"core", core}}, D(s.frees));
    Put(fails, {{"core", core}}, D(s.alloc_failures));
    Put(st_allocs, {{"core", core}}, D(s.store_allocs));
    Put(st_frees, {{"core", core}}, D(s.store_frees));
    Put(st_locks, {{"core", core}}, D(s.store_locks));
    Put(dp_locks, {{"core", core}}, D(s.depot_locks));
    Put(dp_waits, {{"core", core}}, D(s.depot_waits));
  };

  uint64_t tsc_hz = 0;
  for (const CoreStats& c : now.cores) {
    const std::string core = absl::StrCat(c.core);
    const CoreStats* b = nullptr;
    if (before) {
      for (const CoreStats& bc : before->cores) {
        if (bc.core == c.core) b = &bc;
      }
    }
    uint64_t rx = 0, tx = 0, brx = 0, btx = 0;
    for (const PortCounters& p : c.ports) {
      const std::string port = absl::StrCat(p.port);
      Put(pkts, {{"core", core}, {"port", port}, {"direction", "rx"}}, D(p.rx_packets));
      Put(pkts, {{"core", core}, {"port", port}, {"direction", "tx"}}, D(p.tx_packets));
      Put(bytes, {{"core", core}, {"port", port}, {"direction", "rx"}}, D(p.rx_bytes));
      Put(bytes, {{"core", core}, {"port", port}, {"direction", "tx"}}, D(p.tx_bytes));
      for (const auto& [reason, n] : p.drops) {
        Put(drops, {{"core", core}, {"port", port}, {"reason", reason}}, D(n));
      }
      if (p.rx_nombuf.has_value()) Put(nombuf, {{"core", core}, {"port", port}}, D(*p.rx_nombuf));
      rx += p.rx_packets;
      tx += p.tx_packets;
    }
    if (b != nullptr) {
      for (const PortCounters& p : b->ports) {
        brx += p.rx_packets;
        btx += p.tx_packets;
      }
    }
    Put(pps, {{"core", core}, {"direction", "rx"}}, b ? Rate(rx, brx, secs) : 0);
    Put(pps, {{"core", core}, {"direction", "tx"}}, b ? Rate(tx, btx, secs) : 0);
    Put(polls, {{"core", core}}, D(c.polls));
    Put(busy, {{"core", core}}, D(c.busy_polls));
    Put(ratio, {{"core", core}},
        b != nullptr ? BusyRatio(c.busy_polls, b->busy_polls, c.polls, b->polls) : 0);
    Put(paused, {{"core", core}}, c.paused ? 1 : 0);
    Put(parked_loops, {{"core", core}}, D(c.parked_loops));
    Put(busy_cycles, {{"core", core}}, D(c.busy_cycles));
    Put(busy_packets, {{"core", core}}, D(c.busy_packets));
    tsc_hz = std::max(tsc_hz, c.tsc_hz);
    pool_core(core, c.pool);
  }
  pool_core("other", now.other);
  Put(fam.Add(metric::kWorkerTscHz), {}, D(tsc_hz));
}

// A histogram sample: `cumulative[i]` observations at or below `le[i]`, `count` in all.
ClientMetric HistogramSample(std::vector<ClientMetric::Label> labels,
                             const std::vector<std::pair<uint64_t, double>>& cumulative,
                             uint64_t count, double sum) {
  ClientMetric h;
  h.label = std::move(labels);
  h.histogram.sample_count = count;
  h.histogram.sample_sum = sum;
  for (const auto& [n, le] : cumulative) h.histogram.bucket.push_back({n, le});
  h.histogram.bucket.push_back({count, std::numeric_limits<double>::infinity()});
  return h;
}

// Packet latency per core and RX port, the loop's iterations per core (common/worker_perf.h).
// Latency buckets: the powers of two of TSC cycles from 2^7 to 2^31, in seconds at this TSC's
// frequency; each is a boundary of the HDR histogram's buckets, so every cumulative count is
// exact. Iteration duration: the powers of two from 2^10 to 2^36 cycles (the cycle bins'
// bounds); packets: 0..32 and the powers of two to 4096 (the packet bins' bounds).
void CollectPerf(Families& fam, const StatsSnapshot& now) {
  if (!now.perf.has_value()) return;
  const dpdk::PerfSnapshot& perf = *now.perf;
  const double hz = perf.tsc_hz != 0 ? D(perf.tsc_hz) : 1;
  MetricFamily& lat = fam.Add(metric::kPacketLatencySeconds);
  MetricFamily& it_s = fam.Add(metric::kWorkerIterationSeconds);
  MetricFamily& it_p = fam.Add(metric::kWorkerIterationPackets);
  MetricFamily& slow = fam.Add(metric::kWorkerSlowIterationsTotal);
  for (const dpdk::WorkerPerf& w : perf.workers) {
    const std::string core = absl::StrCat(w.core);
    for (const dpdk::PortLatency& p : w.ports) {
      std::vector<std::pair<uint64_t, double>> cum;
      uint64_t below = 0;
      int i = 0;
      for (int e = dpdk::kLatencyLeFirstExp; e <= dpdk::kLatencyLeLastExp; ++e) {
        for (const int end = dpdk::LatencyBucketOf(uint64_t{1} << e); i < end; ++i) {
          below += p.buckets[i];
        }
        cum.emplace_back(below, std::ldexp(1.0, e) / hz);
      }
      lat.metric.push_back(HistogramSample({{"core", core}, {"port", absl::StrCat(p.port)}}, cum,
                                           p.count, D(p.sum_cycles) / hz));
    }
    std::vector<std::pair<uint64_t, double>> cum;
    uint64_t below = 0;
    for (int k = 0; k < dpdk::kIterCycleBins - 1; ++k) {
      below += w.iter_cycles[k];
      if (k >= 10 && k <= 36) cum.emplace_back(below, std::ldexp(1.0, k) / hz);
    }
    it_s.metric.push_back(
        HistogramSample({{"core", core}}, cum, w.iterations, D(w.iter_cycles_sum) / hz));
    cum.clear();
    below = 0;
    for (int b = 0; b < dpdk::kIterPacketBins - 1; ++b) {
      below += w.iter_packets[b];
      if (b > 32 || (b & (b - 1)) == 0) cum.emplace_back(below, D(dpdk::IterPacketBinHigh(b)));
    }
    // _sum: the packets those iterations received, the worker's busy_packets (every received
    // packet is received in a busy poll; read a moment apart from the bins).
    uint64_t packets = 0;
    for (const CoreStats& c : now.cores) {
      if (c.core == w.core) packets = c.busy_packets;
    }
    it_p.metric.push_back(HistogramSample({{"core", core}}, cum, w.iterations, D(packets)));
    Put(slow, {{"core", core}}, D(w.slow_iterations));
  }
  Put(fam.Add(metric::kLatencySampleEvery), {}, D(perf.settings.sample_every));
  Put(fam.Add(metric::kWorkerSlowIterationSeconds), {}, D(perf.settings.slow_iteration_us) / 1e6);
}

// The latest buffer census (server/core/buffer_ages.h): the ages of the objects in flight by
// allocation site, as a histogram whose buckets are the census's (cumulative here).
void CollectAges(Families& fam, bool tracking, const BufferAges* ages) {
  Put(fam.Add(metric::kPoolTracking), {}, tracking ? 1 : 0);
  if (!tracking || ages == nullptr) return;
  MetricFamily& h = fam.Add(metric::kPoolInflightAgeSeconds);
  for (const SiteAges& s : ages->sites) {
    std::vector<std::pair<uint64_t, double>> cum;
    uint64_t below = 0;
    for (size_t i = 0; i < kAgeBucketsSeconds.size(); ++i) {
      below += s.counts[i];
      cum.emplace_back(below, kAgeBucketsSeconds[i]);
    }
    const bool has_core =
        s.site.kind == pool::SiteKind::kWorker || s.site.kind == pool::SiteKind::kApplication;
    h.metric.push_back(HistogramSample(
        {{"site", std::string(SiteName(s.site))},
         {"core", has_core ? absl::StrCat(s.site.core) : ""},
         {"port", s.site.rx_port >= 0 ? absl::StrCat(s.site.rx_port) : ""}},
        cum, s.objects, s.sum_seconds));
  }
  Put(fam.Add(metric::kPoolInflightUntrackedObjects), {}, D(ages->untracked));
}

// Per port: what the PMD counted, and the link.
void CollectPorts(Families& fam, const std::vector<PortInfo>& ports) {
  MetricFamily& port_info = fam.Add(metric::kPortInfo);
  MetricFamily& link_up = fam.Add(metric::kPortLinkUp);
  MetricFamily& link_speed = fam.Add(metric::kPortLinkSpeedBytesPerSecond);
  MetricFamily& pmd_pkts = fam.Add(metric::kPortPmdPacketsTotal);
  MetricFamily& pmd_bytes = fam.Add(metric::kPortPmdBytesTotal);
  MetricFamily& pmd_missed = fam.Add(metric::kPortPmdRxMissedPacketsTotal);
  MetricFamily& pmd_ierr = fam.Add(metric::kPortPmdRxErrorsTotal);
  MetricFamily& pmd_oerr = fam.Add(metric::kPortPmdTxErrorsTotal);
  MetricFamily& pmd_nombuf = fam.Add(metric::kPortPmdRxNombufTotal);
  for (const PortInfo& p : ports) {
    const std::string port = absl::StrCat(p.id);
    Put(port_info,
        {{"port", port},
         {"name", p.name},
         {"driver", p.driver},
         {"device", p.device},
         {"mac", net::FormatMac(p.mac)}},
        1);
    if (p.has_link) {
      Put(link_up, {{"port", port}}, p.link_up ? 1 : 0);
      Put(link_speed, {{"port", port}}, D(p.link_speed_mbps) * 1e6 / 8);
    }
    if (!p.has_pmd_stats) continue;
    Put(pmd_pkts, {{"port", port}, {"direction", "rx"}}, D(p.pmd.ipackets));
    Put(pmd_pkts, {{"port", port}, {"direction", "tx"}}, D(p.pmd.opackets));
    Put(pmd_bytes, {{"port", port}, {"direction", "rx"}}, D(p.pmd.ibytes));
    Put(pmd_bytes, {{"port", port}, {"direction", "tx"}}, D(p.pmd.obytes));
    Put(pmd_missed, {{"port", port}}, D(p.pmd.imissed));
    Put(pmd_ierr, {{"port", port}}, D(p.pmd.ierrors));
    Put(pmd_oerr, {{"port", port}}, D(p.pmd.oerrors));
    Put(pmd_nombuf, {{"port", port}}, D(p.pmd.rx_nombuf));
  }
}

void CollectPoolObjects(Families& fam, const StatsSnapshot& now, const Catalog& layers) {
  MetricFamily& objects = fam.Add(metric::kPoolObjects);
  // The places by the API's names (PoolObjects: in_store, in_depots, in_flight; a layer's by
  // its name, as PoolObjects.in_layers).
  Put(objects, {{"state", "in_store"}}, D(now.pool.in_store));
  Put(objects, {{"state", "in_depots"}}, D(now.pool.in_depots));
  Put(objects, {{"state", "in_flight"}}, D(now.pool.in_flight));
  for (const pool::CatalogEntry& e : layers) {
    if (e.index >= 0)
      Put(objects, {{"state", std::string(e.facts.name)}}, D(now.pool.in_layers[e.index]));
  }
  Put(fam.Add(metric::kPoolPopulatedObjects), {}, D(now.pool.populated));
  if (now.places.has_value()) {
    MetricFamily& held = fam.Add(metric::kPoolHeldObjects);
    for (const dpdk::BufferPlaces::Core& c : now.places->cores) {
      Put(held, {{"core", absl::StrCat(c.lcore)}}, static_cast<double>(c.in_hands));
    }
    Put(held, {{"core", "other"}}, static_cast<double>(now.places->other_threads));
    Put(fam.Add(metric::kPoolUnaccountedObjects), {},
        static_cast<double>(UnaccountedObjects(now.pool, *now.places)));
  }
  Put(fam.Add(metric::kPoolReclaimsTotal), {}, D(now.pool.reclaims));
  Put(fam.Add(metric::kPoolReclaimTimeoutsTotal), {}, D(now.pool.reclaim_timeouts));
  Put(fam.Add(metric::kPoolReclaimedObjectsTotal), {}, D(now.pool.reclaimed_objects));
}

void CollectStrategy(Families& fam, const std::string& spec, uint64_t epoch) {
  Put(fam.Add(metric::kStrategyInfo), {{"spec", spec}}, 1);
  Put(fam.Add(metric::kStrategyEpoch), {}, D(epoch));
}

void CollectSwaps(Families& fam, const SwapMetrics::Snapshot& sw) {
  MetricFamily& swaps = fam.Add(metric::kStrategySwapsTotal);
  for (int r = 0; r < SwapMetrics::kNumResults; ++r) {
    Put(swaps, {{"result", SwapMetrics::ResultName(r)}}, D(sw.count[r]));
  }
  MetricFamily& hist = fam.Add(metric::kStrategySwapDurationSeconds);
  ClientMetric h;
  h.histogram.sample_count = sw.observations;
  h.histogram.sample_sum = sw.sum_seconds;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < SwapMetrics::kBuckets.size(); ++i) {
    cumulative += sw.buckets[i];
    h.histogram.bucket.push_back({cumulative, SwapMetrics::kBuckets[i]});
  }
  h.histogram.bucket.push_back({sw.observations, std::numeric_limits<double>::infinity()});
  hist.metric.push_back(std::move(h));
}

void CollectTuner(Families& fam, const Tuner::Status& t) {
  Put(fam.Add(metric::kTuneRunning), {}, t.running ? 1 : 0);
  MetricFamily& state = fam.Add(metric::kTuneState);
  for (const char* st : {"idle", "baseline", "settling", "measuring", "finishing"}) {
    Put(state, {{"state", st}}, t.state == st ? 1 : 0);
  }
  MetricFamily& cand = fam.Add(metric::kTuneCandidateInfo);
  if (!t.candidate.empty()) Put(cand, {{"spec", t.candidate}}, 1);
  MetricFamily& runs = fam.Add(metric::kTuneRunsTotal);
  for (int o = 0; o < kNumTuneOutcomes; ++o) {
    Put(runs, {{"outcome", TuneOutcomeName(static_cast<TuneOutcome>(o))}}, D(t.runs[o]));
  }
  MetricFamily& last = fam.Add(metric::kTuneLastResultInfo);
  MetricFamily& last_cpp = fam.Add(metric::kTuneLastCyclesPerPacket);
  MetricFamily& last_start = fam.Add(metric::kTuneLastStartTimestampSeconds);
  MetricFamily& last_end = fam.Add(metric::kTuneLastEndTimestampSeconds);
  if (t.last != nullptr) {
    const TuneReport& r = *t.last;
    Put(last,
        {{"outcome", TuneOutcomeName(r.outcome)},
         {"incumbent", r.incumbent},
         {"winner", r.winner},
         {"final_spec", r.final_spec}},
        1);
    for (const TuneCandidate& c : r.candidates) {
      if (c.rank > 0) Put(last_cpp, {{"spec", c.spec}}, c.median_cycles_per_packet);
    }
    Put(last_start, {}, D(r.started_unix_ms) / 1e3);
    Put(last_end, {}, D(r.started_unix_ms + r.duration_ms) / 1e3);
  }
}

void CollectBuild(Families& fam) {
  const BuildInfo& bi = GetBuildInfo();
  Put(fam.Add(metric::kBuildInfo),
      {{"version", bi.version},
       {"git_commit", bi.git_commit},
       {"compiler", bi.compiler},
       {"build_type", bi.build_type}},
      1);
}

}  // namespace

std::vector<MetricFamily> MetricsCollector::Collect() const {
  StatsSnapshot now = backend_.GetStats();
  std::optional<StatsSnapshot> before = sampler_.Baseline(now.taken);
  const double secs = before ? Seconds(now.taken - before->taken) : 0;
  Families fam;
  CollectCores(fam, now, before, secs, layers_);
  CollectPerf(fam, now);
  const std::vector<PortInfo> ports = backend_.ListPorts();
  CollectPorts(fam, ports);
  AddPortRingMbufs(fam, ports, now.places);
  CollectPoolObjects(fam, now, layers_);
  const std::shared_ptr<const BufferAges> ages = sampler_.Ages();
  CollectAges(fam, backend_.GetStrategy().track, ages.get());
  CollectStrategy(fam, StrategyText(backend_, pool_), backend_.GetEpoch());
  CollectSwaps(fam, swaps_.Get());
  if (tuner_ != nullptr) CollectTuner(fam, tuner_->GetStatus());
  CollectBuild(fam);
  return fam.Take();
}

}  // namespace skbnf::control
