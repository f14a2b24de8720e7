// SPDX-License-Identifier: BSD-3-Clause
#include "server/metrics/metrics.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/net_text.h"
#include "common/rates.h"
#include "server/core/build_info.h"

namespace skbnf::control {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class Families {
 public:
  MetricFamily& Add(std::string name, std::string help, MetricType type) {
    out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
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
void AddPortRingMbufs(Families& fam, const std::vector<PortInfo>& ports) {
  MetricFamily& f = fam.Add("skbnf_port_ring_mbufs",
                            "Mbufs sitting in the port's RX or TX rings now, counted from the "
                            "PMD's rings (AF_XDP: fill+RX, TX+completion).",
                            MetricType::Gauge);
  for (const PortInfo& p : ports) {
    if (!p.has_ring_mbufs) continue;
    const std::string port = absl::StrCat(p.id);
    Put(f, {{"port", port}, {"direction", "rx"}}, D(p.rx_ring_mbufs));
    Put(f, {{"port", port}, {"direction", "tx"}}, D(p.tx_ring_mbufs));
  }
}

constexpr MetricType C = MetricType::Counter;
constexpr MetricType G = MetricType::Gauge;

// Collect() is one function per metric group, called in exposition order; each adds its
// families to `fam` in the order a scrape shows them.

// Per core and port: packets, bytes, drops, rates; the worker loop; the pool per core.
void CollectCores(Families& fam, const StatsSnapshot& now,
                  const std::optional<StatsSnapshot>& before, double secs) {
  MetricFamily& pkts =
      fam.Add("skbnf_port_packets_total", "Packets per core, port and direction.", C);
  MetricFamily& bytes = fam.Add("skbnf_port_bytes_total", "Bytes per core, port and direction.", C);
  MetricFamily& drops =
      fam.Add("skbnf_port_drops_total", "Dropped packets per core, RX port and reason.", C);
  MetricFamily& nombuf =
      fam.Add("skbnf_port_rx_nombuf_total", "RX refills that found no buffer.", C);
  MetricFamily& pps = fam.Add("skbnf_core_packets_per_second",
                              "Per-core packet rate over the last sampling window.", G);
  MetricFamily& polls = fam.Add("skbnf_worker_polls_total", "Worker poll-loop iterations.", C);
  MetricFamily& busy =
      fam.Add("skbnf_worker_busy_polls_total", "Poll-loop iterations that received packets.", C);
  MetricFamily& ratio = fam.Add("skbnf_worker_busy_ratio",
                                "Share of busy poll iterations over the last sampling window.", G);
  MetricFamily& paused =
      fam.Add("skbnf_worker_paused", "1 while the worker is parked by PauseWorker.", G);
  MetricFamily& parked_loops =
      fam.Add("skbnf_worker_parked_loops_total",
              "Worker loop iterations spent parked (not polling): moves while a paused worker "
              "is alive.",
              C);
  MetricFamily& busy_cycles = fam.Add(
      "skbnf_worker_busy_cycles_total",
      "TSC cycles of the poll iterations that received packets (RX burst to after forwarding).", C);
  MetricFamily& busy_packets =
      fam.Add("skbnf_worker_busy_packets_total", "Packets received by those poll iterations.", C);
  MetricFamily& allocs = fam.Add("skbnf_pool_allocs_total",
                                 "Objects allocated through a per-core layer, by result (hit: from "
                                 "the layer, miss: from below).",
                                 C);
  MetricFamily& frees =
      fam.Add("skbnf_pool_frees_total",
              "Objects freed into a per-core layer, by result (hit: kept, miss: passed below).", C);
  MetricFamily& bulk = fam.Add("skbnf_pool_bulk_transfers_total",
                               "Whole-batch transfers between a layer and the one below.", C);
  MetricFamily& host_allocs =
      fam.Add("skbnf_pool_host_allocs_total", "Objects the pool handed to the host.", C);
  MetricFamily& host_frees =
      fam.Add("skbnf_pool_host_frees_total", "Objects the host returned to the pool.", C);
  MetricFamily& fails = fam.Add("skbnf_pool_alloc_failures_total",
                                "Allocation requests the pool could not satisfy.", C);
  MetricFamily& st_allocs =
      fam.Add("skbnf_pool_store_allocs_total", "Objects taken from the slab store.", C);
  MetricFamily& st_frees =
      fam.Add("skbnf_pool_store_frees_total", "Objects returned to the slab store.", C);
  MetricFamily& st_locks =
      fam.Add("skbnf_pool_store_lock_acquisitions_total", "Slab store lock acquisitions.", C);
  MetricFamily& dp_locks =
      fam.Add("skbnf_pool_depot_lock_acquisitions_total", "Magazine depot lock acquisitions.", C);

  auto pool_core = [&](const std::string& core, const pool::CoreCountersSnapshot& s) {
    for (int i = 0; i < pool::kNumLayers; ++i) {
      std::string layer(pool::LayerName(static_cast<pool::Layer>(i)));
      const pool::LayerCountersSnapshot& l = s.layer[i];
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
  Put(fam.Add("skbnf_worker_tsc_hz",
              "Frequency of the TSC the busy-cycle counters count (cycles per second).", G),
      {}, D(tsc_hz));
}

// Per port: what the PMD counted, and the link.
void CollectPorts(Families& fam, const std::vector<PortInfo>& ports) {
  MetricFamily& port_info = fam.Add(
      "skbnf_port_info", "A port's identity (value always 1): name, driver, device, MAC.", G);
  MetricFamily& link_up =
      fam.Add("skbnf_port_link_up", "1 while the port's link is up, 0 while down.", G);
  MetricFamily& link_speed = fam.Add("skbnf_port_link_speed_bytes_per_second",
                                     "Link speed reported by the PMD (0: unknown).", G);
  MetricFamily& pmd_pkts = fam.Add("skbnf_port_pmd_packets_total",
                                   "Packets the PMD counted on the port, by direction.", C);
  MetricFamily& pmd_bytes =
      fam.Add("skbnf_port_pmd_bytes_total", "Bytes the PMD counted on the port, by direction.", C);
  MetricFamily& pmd_missed =
      fam.Add("skbnf_port_pmd_rx_missed_packets_total",
              "Packets the NIC dropped because the RX ring was full (imissed).", C);
  MetricFamily& pmd_ierr =
      fam.Add("skbnf_port_pmd_rx_errors_total", "Erroneous received packets (ierrors).", C);
  MetricFamily& pmd_oerr =
      fam.Add("skbnf_port_pmd_tx_errors_total", "Failed transmits (oerrors).", C);
  MetricFamily& pmd_nombuf = fam.Add("skbnf_port_pmd_rx_nombuf_total",
                                     "RX mbuf allocation failures the PMD counted (rx_nombuf).", C);
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

void CollectPoolObjects(Families& fam, const StatsSnapshot& now) {
  MetricFamily& objects = fam.Add("skbnf_pool_objects", "Pool objects by where they are now.", G);
  Put(objects, {{"state", "store"}}, D(now.pool.in_store));
  Put(objects, {{"state", "depot"}}, D(now.pool.in_depots));
  Put(objects, {{"state", "in_flight"}}, D(now.pool.in_flight));
  for (int i = 0; i < pool::kNumLayers; ++i) {
    Put(objects, {{"state", std::string(pool::LayerName(static_cast<pool::Layer>(i)))}},
        D(now.pool.in_layers[i]));
  }
  Put(fam.Add("skbnf_pool_populated_objects", "Objects in the pool.", G), {},
      D(now.pool.populated));
  Put(fam.Add("skbnf_pool_reclaims_total",
              "Gets that found every layer, depot and the store empty and reclaimed what other "
              "cores' layers held before failing (the no-stranding protocol).",
              C),
      {}, D(now.pool.reclaims));
  Put(fam.Add("skbnf_pool_reclaim_timeouts_total",
              "Reclaim requests a busy worker did not serve within the reclaim wait (its objects "
              "stay out of reach until its next loop iteration).",
              C),
      {}, D(now.pool.reclaim_timeouts));
  Put(fam.Add("skbnf_pool_reclaimed_objects_total",
              "Objects reclaimed from other cores' layers into the store.", C),
      {}, D(now.pool.reclaimed_objects));
}

void CollectStrategy(Families& fam, const std::string& spec, uint64_t epoch) {
  Put(fam.Add("skbnf_strategy_info", "The buffer strategy in force (value always 1).", G),
      {{"spec", spec}}, 1);
  Put(fam.Add("skbnf_strategy_epoch", "Epoch of the strategy in force.", G), {}, D(epoch));
}

void CollectSwaps(Families& fam, const SwapMetrics::Snapshot& sw) {
  MetricFamily& swaps =
      fam.Add("skbnf_strategy_swaps_total", "Strategy swaps run through the API, by result.", C);
  for (int r = 0; r < SwapMetrics::kNumResults; ++r) {
    Put(swaps, {{"result", SwapMetrics::ResultName(r)}}, D(sw.count[r]));
  }
  MetricFamily& hist =
      fam.Add("skbnf_strategy_swap_duration_seconds",
              "Duration of strategy swaps, publish to retirement.", MetricType::Histogram);
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
  Put(fam.Add("skbnf_tune_running", "1 while a live strategy tune runs.", G), {},
      t.running ? 1 : 0);
  MetricFamily& state = fam.Add("skbnf_tune_state", "1 for the tuner's current state.", G);
  for (const char* st : {"idle", "baseline", "settling", "measuring", "finishing"}) {
    Put(state, {{"state", st}}, t.state == st ? 1 : 0);
  }
  MetricFamily& cand = fam.Add("skbnf_tune_candidate_info",
                               "The strategy under test by the tuner (value always 1).", G);
  if (!t.candidate.empty()) Put(cand, {{"spec", t.candidate}}, 1);
  MetricFamily& runs = fam.Add("skbnf_tune_runs_total", "Strategy tunes ended, by outcome.", C);
  for (int o = 0; o < kNumTuneOutcomes; ++o) {
    Put(runs, {{"outcome", TuneOutcomeName(static_cast<TuneOutcome>(o))}}, D(t.runs[o]));
  }
  MetricFamily& last =
      fam.Add("skbnf_tune_last_result_info", "Outcome of the last tune (value always 1).", G);
  MetricFamily& last_cpp =
      fam.Add("skbnf_tune_last_cycles_per_packet",
              "Median cycles per packet of each ranked candidate in the last tune.", G);
  MetricFamily& last_start = fam.Add("skbnf_tune_last_start_timestamp_seconds",
                                     "When the last tune started (unix time).", G);
  MetricFamily& last_end =
      fam.Add("skbnf_tune_last_end_timestamp_seconds", "When the last tune ended (unix time).", G);
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
  Put(fam.Add("skbnf_build_info", "Build of the running binary (value always 1).", G),
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
  CollectCores(fam, now, before, secs);
  const std::vector<PortInfo> ports = backend_.ListPorts();
  CollectPorts(fam, ports);
  AddPortRingMbufs(fam, ports);
  CollectPoolObjects(fam, now);
  CollectStrategy(fam, StrategyText(backend_, pool_), backend_.GetEpoch());
  CollectSwaps(fam, swaps_.Get());
  if (tuner_ != nullptr) CollectTuner(fam, tuner_->GetStatus());
  CollectBuild(fam);
  return fam.Take();
}

}  // namespace skbnf::control
