// SPDX-License-Identifier: BSD-3-Clause
// The latency histogram's layout and what the readers make of it (common/worker_perf.h): bucket
// bounds, quantiles, the settings' ranges, Stats' percentiles (total and window), and the
// Prometheus histogram (cumulative, exact at its le bounds, +Inf == count), over a Backend whose
// only figures are a PerfSnapshot. The live figures: integration.latency_skbnfd.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/worker_perf.h"
#include "server/control/stats_convert.h"
#include "server/core/metric_families.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/metrics/metrics.h"
#include "tests/control/null_backend.h"

namespace skbnf::control {
namespace {

using dpdk::LatencyBucketHigh;
using dpdk::LatencyBucketLow;
using dpdk::LatencyBucketOf;

TEST(LatencyHistogram, EveryBucketHoldsExactlyItsRangeWithinOneSixteenth) {
  for (int i = 0; i < dpdk::kLatencyBuckets; ++i) {
    const uint64_t lo = LatencyBucketLow(i), hi = LatencyBucketHigh(i);
    ASSERT_LT(lo, hi) << i;
    EXPECT_EQ(LatencyBucketOf(lo), i) << i;
    EXPECT_EQ(LatencyBucketOf(hi - 1), i) << i;
    if (i + 1 < dpdk::kLatencyBuckets) {
      EXPECT_EQ(LatencyBucketOf(hi), i + 1) << i;
    }
    if (lo >= 16) {
      EXPECT_LE(static_cast<double>(hi - lo) / static_cast<double>(lo), 1.0 / 16);
    }
  }
  EXPECT_EQ(LatencyBucketOf(0), 0);
  EXPECT_EQ(LatencyBucketOf(uint64_t{1} << 40), dpdk::kLatencyBuckets - 1);
  EXPECT_EQ(LatencyBucketOf(~uint64_t{0}), dpdk::kLatencyBuckets - 1);
  // The Prometheus bounds are bucket boundaries.
  for (int e = dpdk::kLatencyLeFirstExp; e <= dpdk::kLatencyLeLastExp; ++e) {
    EXPECT_EQ(LatencyBucketLow(LatencyBucketOf(uint64_t{1} << e)), uint64_t{1} << e);
  }
}

TEST(LatencyHistogram, QuantilesAreBucketUpperBoundsNeverAboveTheMax) {
  std::vector<uint64_t> b(dpdk::kLatencyBuckets);
  for (uint64_t v = 1000; v < 2000; ++v) b[LatencyBucketOf(v)]++;  // 1000 samples 1000..1999
  const uint64_t p50 = dpdk::LatencyQuantile(b, 0.5, 1999);
  EXPECT_GE(p50, 1499u);
  EXPECT_LE(p50, 1499u + 1499u / 16);
  EXPECT_EQ(dpdk::LatencyQuantile(b, 1.0, 1999), 1999u);
  EXPECT_LE(dpdk::LatencyQuantile(b, 0.999, 1999), 1999u);
  EXPECT_EQ(dpdk::LatencyQuantile(std::vector<uint64_t>(dpdk::kLatencyBuckets), 0.5), 0u);
  for (int b2 = 0; b2 < dpdk::kIterPacketBins; ++b2) {
    EXPECT_EQ(dpdk::IterPacketBin(dpdk::IterPacketBinLow(b2)), b2);
    if (b2 + 1 < dpdk::kIterPacketBins) {
      EXPECT_EQ(dpdk::IterPacketBin(dpdk::IterPacketBinHigh(b2)), b2);
    }
  }
  EXPECT_EQ(dpdk::IterPacketBin(32), 32);
  EXPECT_EQ(dpdk::IterPacketBin(33), 33);
  EXPECT_EQ(dpdk::IterPacketBin(64), 33);
}

TEST(LatencySettings, OutOfRangeNamesTheField) {
  EXPECT_TRUE(dpdk::CheckLatencySettings({}).ok());
  EXPECT_TRUE(dpdk::CheckLatencySettings({.sample_every = 0}).ok());
  const absl::Status n = dpdk::CheckLatencySettings({.sample_every = dpdk::kMaxSampleEvery + 1});
  EXPECT_TRUE(absl::IsInvalidArgument(n));
  EXPECT_TRUE(absl::StartsWith(n.message(), "sample_every: ")) << n;
  const absl::Status t = dpdk::CheckLatencySettings({.slow_iteration_us = 0});
  EXPECT_TRUE(absl::StartsWith(t.message(), "slow_iteration_us: ")) << t;
}

// 1 GHz: a cycle is a nanosecond.
dpdk::PerfSnapshot Perf(uint64_t per_bucket_scale) {
  dpdk::PerfSnapshot p;
  p.tsc_hz = 1'000'000'000;
  dpdk::WorkerPerf w;
  w.core = 1;
  dpdk::PortLatency pl;
  pl.port = 0;
  pl.buckets.assign(dpdk::kLatencyBuckets, 0);
  for (uint64_t v : {200u, 300u, 5000u}) {
    pl.buckets[LatencyBucketOf(v)] += per_bucket_scale;
    pl.count += per_bucket_scale;
    pl.sum_cycles += v * per_bucket_scale;
  }
  pl.max_cycles = 5000;
  w.ports.push_back(pl);
  w.iter_packets[32] = 10 * per_bucket_scale;
  w.iter_cycles[dpdk::IterCycleBin(3000)] = 10 * per_bucket_scale;
  w.iterations = 10 * per_bucket_scale;
  w.iter_cycles_sum = 30000 * per_bucket_scale;
  w.slow_iterations = 1;
  w.slow.push_back({.monotonic_ns = 5,
                    .cycles = 400000,
                    .packets = 0,
                    .causes = dpdk::kSlowSwap | dpdk::kSlowTestHook});
  p.workers.push_back(w);
  return p;
}

StatsSnapshot Snapshot(uint64_t scale, std::chrono::seconds at) {
  StatsSnapshot s;
  s.taken = std::chrono::steady_clock::time_point(at);
  CoreStats c;
  c.core = 1;
  c.busy_packets = 320 * scale;
  s.cores.push_back(c);
  s.perf = Perf(scale);
  return s;
}

TEST(LatencyStats, PercentilesTotalAndOverTheWindowAndTheSlowLog) {
  const StatsSnapshot before = Snapshot(1, std::chrono::seconds(1));
  const StatsSnapshot now = Snapshot(3, std::chrono::seconds(2));
  v1::Stats out;
  FillStats(now, &before, "magazine", 1, {}, {}, &out);
  ASSERT_EQ(out.cores_size(), 1);
  const v1::CoreStats& c = out.cores(0);
  ASSERT_EQ(c.latency_size(), 1);
  const v1::PortLatency& p = c.latency(0);
  EXPECT_EQ(p.total().samples(), 9u);
  EXPECT_EQ(p.window().samples(), 6u);  // 9 - 3
  EXPECT_EQ(p.total().max_ns(), 5000u);
  EXPECT_LE(p.total().p50_ns(), p.total().p99_ns());
  EXPECT_LE(p.total().p99_ns(), p.total().p999_ns());
  EXPECT_LE(p.total().p999_ns(), p.total().max_ns());
  EXPECT_GE(p.total().p50_ns(), 300u);
  EXPECT_LE(p.total().p50_ns(), 300u + 300u / 16);
  EXPECT_EQ(p.sum_ns(), 3u * 5500);
  EXPECT_EQ(c.iterations().iterations(), 30u);
  ASSERT_EQ(c.iterations().by_packets_size(), 1);
  EXPECT_EQ(c.iterations().by_packets(0).low(), 32u);
  ASSERT_EQ(c.iterations().slow_size(), 1);
  EXPECT_EQ(c.iterations().slow(0).duration_ns(), 400000u);
  EXPECT_EQ(c.iterations().slow(0).causes_size(), 2);
  EXPECT_EQ(c.iterations().slow(0).causes(0), "swap");
  EXPECT_EQ(c.iterations().slow(0).causes(1), "test_hook");
  EXPECT_EQ(out.latency_settings().sample_every(), dpdk::LatencySettings{}.sample_every);
}

// The percentile a reader computes from PortLatency.bins alone (the bin holding the
// ceil(q * n)-th sample, its high_ns, capped at max_ns), as bench/latency_interleave.py does.
uint64_t PercentileFromBins(const v1::PortLatency& p, double q) {
  uint64_t n = 0;
  for (const v1::LatencyBin& b : p.bins()) n += b.samples();
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n) + 0.999999);
  rank = std::max<uint64_t>(1, std::min(rank, n));
  uint64_t seen = 0;
  for (const v1::LatencyBin& b : p.bins()) {
    seen += b.samples();
    if (seen >= rank) return std::min(b.high_ns(), p.total().max_ns());
  }
  return p.total().max_ns();
}

TEST(LatencyStats, BinsSumToTheTotalAndGiveItsPercentiles) {
  // 2.5 GHz (a bin's bounds are rounded to nanoseconds) and a wide spread: exact buckets below
  // 16 cycles, most of them near 1 us, a tail up to 1 ms.
  dpdk::PerfSnapshot perf;
  perf.tsc_hz = 2'500'000'000;
  dpdk::WorkerPerf w;
  w.core = 1;
  dpdk::PortLatency pl;
  pl.buckets.assign(dpdk::kLatencyBuckets, 0);
  uint64_t v = 3;
  for (int i = 0; i < 5000; ++i) {
    v = (v * 6364136223846793005ull + 1442695040888963407ull);
    const uint64_t cycles = i % 1000 == 0 ? (v >> 40) % 2'500'000 : 2000 + (v >> 33) % 3000;
    pl.buckets[LatencyBucketOf(cycles)] += 1;
    pl.count += 1;
    pl.sum_cycles += cycles;
    pl.max_cycles = std::max(pl.max_cycles, cycles);
  }
  pl.buckets[LatencyBucketOf(7)] += 3;  // below 16 cycles: a bucket per cycle
  pl.count += 3;
  pl.sum_cycles += 21;
  w.ports.push_back(pl);
  perf.workers.push_back(w);
  StatsSnapshot s;
  CoreStats c;
  c.core = 1;
  s.cores.push_back(c);
  s.perf = perf;
  v1::Stats out;
  FillStats(s, nullptr, "magazine", 1, {}, {}, &out);
  ASSERT_EQ(out.cores_size(), 1);
  ASSERT_EQ(out.cores(0).latency_size(), 1);
  const v1::PortLatency& p = out.cores(0).latency(0);
  uint64_t n = 0, last_high = 0;
  for (const v1::LatencyBin& b : p.bins()) {
    EXPECT_GT(b.samples(), 0u);
    EXPECT_LE(b.low_ns(), b.high_ns());
    EXPECT_GE(b.low_ns(), last_high);  // ascending, not overlapping
    last_high = b.high_ns();
    n += b.samples();
  }
  EXPECT_GT(p.bins_size(), 20);
  EXPECT_EQ(n, p.total().samples());
  EXPECT_EQ(n, 5003u);
  EXPECT_EQ(PercentileFromBins(p, 0.50), p.total().p50_ns());
  EXPECT_EQ(PercentileFromBins(p, 0.99), p.total().p99_ns());
  EXPECT_EQ(PercentileFromBins(p, 0.999), p.total().p999_ns());
  EXPECT_EQ(PercentileFromBins(p, 1.0), p.total().max_ns());
}

class PerfBackend : public NullBackend {
 public:
  StatsSnapshot GetStats() const override { return Snapshot(2, std::chrono::seconds(1)); }
};

const prometheus::ClientMetric* Find(const std::vector<prometheus::MetricFamily>& fams,
                                     const MetricDef& d) {
  for (const prometheus::MetricFamily& f : fams) {
    if (f.name == d.name && !f.metric.empty()) return &f.metric[0];
  }
  return nullptr;
}

TEST(LatencyMetrics, HistogramIsCumulativeAndExactAtItsBounds) {
  PerfBackend backend;
  StatsSampler sampler(backend, std::chrono::hours(1), std::chrono::hours(1));
  SwapMetrics swaps;
  MetricsCollector collector(backend, sampler, swaps);
  const std::vector<prometheus::MetricFamily> fams = collector.Collect();
  const prometheus::ClientMetric* m = Find(fams, metric::kPacketLatencySeconds);
  ASSERT_NE(m, nullptr);
  const auto& h = m->histogram;
  EXPECT_EQ(h.sample_count, 6u);
  EXPECT_DOUBLE_EQ(h.sample_sum, 2 * 5500 / 1e9);
  ASSERT_EQ(h.bucket.size(),
            static_cast<size_t>(dpdk::kLatencyLeLastExp - dpdk::kLatencyLeFirstExp + 2));
  uint64_t last = 0;
  for (const auto& b : h.bucket) {
    EXPECT_GE(b.cumulative_count, last);
    last = b.cumulative_count;
    // samples at 200, 300 and 5000 ns: below 2^8 = 256 two, below 2^9 four, below 2^13 six
    const std::pair<double, uint64_t> kWant[] = {
        {256e-9, 2}, {512e-9, 4}, {4096e-9, 4}, {8192e-9, 6}};
    for (const auto& [le, n] : kWant) {
      if (b.upper_bound == le) {
        EXPECT_EQ(b.cumulative_count, n) << le;
      }
    }
  }
  EXPECT_EQ(h.bucket.back().upper_bound, std::numeric_limits<double>::infinity());
  EXPECT_EQ(h.bucket.back().cumulative_count, 6u);
  const prometheus::ClientMetric* it = Find(fams, metric::kWorkerIterationPackets);
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(it->histogram.sample_count, 20u);
  EXPECT_DOUBLE_EQ(it->histogram.sample_sum, 640);
  const prometheus::ClientMetric* slow = Find(fams, metric::kWorkerSlowIterationsTotal);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->counter.value, 1);
}

}  // namespace
}  // namespace skbnf::control
