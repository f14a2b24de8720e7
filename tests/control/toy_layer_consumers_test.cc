// SPDX-License-Identifier: BSD-3-Clause
// A layer owns its facts (issue 30 item 1): the test toy layer (tests/unit/toy_layer.h), added
// by that one file and its one list entry (ToyLayers), reaches every consumer of a layer's facts
// with no edit to any of them. One test per consumer (parsing is ToyLayerTest.
// ItIsParsedUnderItsListsCatalog in tests/unit/toy_layer_test.cc):
//   - the pool-share check (server/core/pool_share.h) bounds what it holds,
//   - preflight's sizing (server/daemon/startup_checks.h PoolNeedsOf, server/ops/preflight.h
//     CheckPoolSizing) counts it,
//   - ListStrategies, what `skbnfctl strategy list` prints (server/control/strategy_convert.h
//     FillStrategyList), lists it,
//   - the metrics (server/metrics/metrics.h) export a real ToyPool's counters and gauge under
//     layer="toy" and state="toy".
// Each reads the catalogue the spec was parsed under (StrategySpec::Catalog()) or is given
// one; each check fails if that consumer walks the four production layers instead.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "server/control/strategy_convert.h"
#include "server/core/metric_families.h"
#include "server/core/pool_share.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/daemon/startup_checks.h"
#include "server/metrics/metrics.h"
#include "server/ops/preflight.h"
#include "tests/control/null_backend.h"
#include "tests/unit/test_pool.h"
#include "tests/unit/toy_layer.h"

namespace skbnf::control {
namespace {

using pool::testing::ToyLayers;
using pool::testing::ToyStash;

pool::StrategySpec ToySpec(const std::string& text) {
  absl::StatusOr<pool::StrategySpec> s = pool::StrategySpec::Parse(text, ToyLayers::Catalog());
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : pool::StrategySpec{};
}

Info TwoWorkers(uint64_t populated) {
  Info info;
  info.pool.populated = populated;
  info.lcores.push_back(LcoreInfo{0, LcoreInfo::Role::kMain, -1, 0, {}, {}});
  info.lcores.push_back(LcoreInfo{1, LcoreInfo::Role::kWorker, 0, 0, {0}, {0}});
  info.lcores.push_back(LcoreInfo{2, LcoreInfo::Role::kWorker, 1, 0, {0}, {0}});
  return info;
}

TEST(ToyLayerConsumers, ThePoolShareCheckBoundsIt) {
  const std::vector<PortInfo> ports;
  const std::vector<CoreHolding> h =
      MaxHoldings(ToySpec("toy+headpool:hot_list_len=100"), TwoWorkers(0), ports);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].by_layer[ToyStash::kIndex], ToyStash::kCapacity);
  EXPECT_EQ(h[0].by_layer[static_cast<int>(pool::Layer::kHeadPool)], 100u);
  EXPECT_EQ(h[1].total(), ToyStash::kCapacity + 100u);
  // Two workers' toys hold 8: a pool of 16 keeps half reachable, one of 15 does not.
  EXPECT_TRUE(CheckPoolShare(ToySpec("toy"), TwoWorkers(16), ports).ok());
  const absl::Status s = CheckPoolShare(ToySpec("toy"), TwoWorkers(15), ports);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "toy:keep=4: the per-core layers of 2 workers could hold 8 objects (toy alone 8), "
            "more than the bound of 7, half of the pool's 15 objects (the other half must stay "
            "reachable by every core); lower toy:keep or give the pool more objects");
  // Its tunable bounds it: keep=3 holds 3 per core, 6 in all, which a pool of 15 takes.
  EXPECT_EQ(MaxHoldings(ToySpec("toy:keep=3"), TwoWorkers(0), ports)[0].total(), 3u);
  EXPECT_TRUE(CheckPoolShare(ToySpec("toy:keep=3"), TwoWorkers(15), ports).ok());
  const absl::Status big = CheckPoolShare(ToySpec("toy:keep=8"), TwoWorkers(31), ports);
  EXPECT_TRUE(absl::StartsWith(big.message(),
                               "toy:keep=8: the per-core layers of 2 workers "
                               "could hold 16 objects (toy alone 16)"))
      << big.message();
}

TEST(ToyLayerConsumers, PreflightSizesThePoolForIt) {
  dpdk::EngineConfig c;
  c.pool_ops = dpdk::PoolOps::kSkbnf;
  c.strategy = ToySpec("toy+headpool:hot_list_len=100");
  c.rx_ring = 256;
  const preflight::PoolNeeds n = PoolNeedsOf(c, /*ports=*/1, /*workers=*/2);
  EXPECT_EQ(n.per_core_capacity, ToyStash::kCapacity + 100u);
  const uint64_t need = preflight::MinPoolObjects(n);
  // The production spec without the toy needs two toys fewer.
  c.strategy = *pool::StrategySpec::Parse("headpool:hot_list_len=100");
  EXPECT_EQ(preflight::MinPoolObjects(PoolNeedsOf(c, 1, 2)), need - 2 * ToyStash::kCapacity);
  c.strategy = ToySpec("toy+headpool:hot_list_len=100");
  EXPECT_EQ(preflight::CheckPoolSizing(n, need).severity, preflight::Severity::kOk);
  const preflight::Finding short_one = preflight::CheckPoolSizing(n, need - 1);
  EXPECT_EQ(short_one.severity, preflight::Severity::kError);
  EXPECT_TRUE(absl::StrContains(short_one.message, "2 workers x 104 per-core layers"))
      << short_one.message;
  // Its tunable sizes it: keep=7 needs 3 more per worker than the default 4.
  c.strategy = ToySpec("toy:keep=7+headpool:hot_list_len=100");
  EXPECT_EQ(PoolNeedsOf(c, 1, 2).per_core_capacity, 7u + 100u);
  EXPECT_EQ(preflight::MinPoolObjects(PoolNeedsOf(c, 1, 2)), need + 2 * 3u);
}

// One held-objects definition (the drift of issue 30: the pool-share check had the lcache at
// (size*3+1)/2, preflight at size*3/2): for the same spec and one worker refilling one RX ring,
// both consumers count the same per core, the toy's and an odd-sized lcache's included.
TEST(ToyLayerConsumers, ThePoolShareCheckAndPreflightCountTheSame) {
  std::vector<PortInfo> ports(1);
  ports[0].id = 0;
  ports[0].rx_ring_size = 512;
  Info one;
  one.lcores.push_back(LcoreInfo{1, LcoreInfo::Role::kWorker, 0, 0, {0}, {0}});
  for (const char* text : {"toy", "toy+lcache:size=255+recycle+headpool:hot_list_len=7+magazine",
                           "lcache:size=255", "lcache:size=255+recycle:limit=33+magazine:size=9"}) {
    dpdk::EngineConfig c;
    c.pool_ops = dpdk::PoolOps::kSkbnf;
    c.rx_ring = 512;
    c.strategy = ToySpec(text);
    const std::vector<CoreHolding> h = MaxHoldings(c.strategy, one, ports);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].total(), PoolNeedsOf(c, 1, 1).per_core_capacity) << text;
  }
  // The odd lcache: 1.5 x 255 rounded down (DPDK's flush threshold), in both.
  dpdk::EngineConfig c;
  c.pool_ops = dpdk::PoolOps::kSkbnf;
  c.strategy = *pool::StrategySpec::Parse("lcache:size=255");
  EXPECT_EQ(PoolNeedsOf(c, 1, 1).per_core_capacity, 382u);
  EXPECT_EQ(MaxHoldings(c.strategy, one, ports)[0].total(), 382u);
}

TEST(ToyLayerConsumers, StrategyListListsIt) {
  v1::ListStrategiesResponse r;
  FillStrategyList(ToyLayers::Catalog(), &r);
  ASSERT_EQ(r.layers_size(), 5);
  EXPECT_EQ(r.layers(0).name(), "toy");
  EXPECT_EQ(r.layers(0).help(), std::string(ToyStash::kFacts.help));
  EXPECT_EQ(r.layers(0).position(), 0u);
  // Its tunable, with the default and range of its kFacts.
  ASSERT_EQ(r.layers(0).tunables_size(), 1);
  EXPECT_EQ(r.layers(0).tunables(0).key(), "keep");
  EXPECT_EQ(r.layers(0).tunables(0).default_value(), ToyStash::kCapacity);
  EXPECT_EQ(r.layers(0).tunables(0).min(), 1u);
  EXPECT_EQ(r.layers(0).tunables(0).max(), ToyStash::kMaxKeep);
  EXPECT_EQ(r.layers(0).tunables(0).help(), std::string(ToyStash::kFacts.tunable.help));
  EXPECT_EQ(r.layers(3).name(), "headpool");
  EXPECT_EQ(r.layers(3).position(), 3u);
  EXPECT_EQ(r.layers(3).layer(), v1::LAYER_HEADPOOL);  // skbnf.v1's numbers: kIndex + 1
  EXPECT_TRUE(
      absl::StrContains(r.grammar(), "layers in order toy+lcache+recycle+headpool+magazine"))
      << r.grammar();
  // The production listing: the four layers in their wire order.
  v1::ListStrategiesResponse prod;
  FillStrategyList(pool::LayerCatalog(), &prod);
  ASSERT_EQ(prod.layers_size(), 4);
  EXPECT_EQ(prod.layers(0).layer(), v1::LAYER_LCACHE);
  EXPECT_EQ(prod.layers(3).layer(), v1::LAYER_MAGAZINE);
  EXPECT_EQ(prod.layers(3).position(), 3u);
  EXPECT_EQ(prod.layers(3).tunables(0).key(), "size");
}

// A backend whose stats are a real ToyPool's: core 0's counters and gauges.
class ToyPoolBackend : public NullBackend {
 public:
  explicit ToyPoolBackend(const pool::testing::ToyPool& p) : pool_(p) {}
  StatsSnapshot GetStats() const override {
    StatsSnapshot s;
    s.taken = std::chrono::steady_clock::now();
    CoreStats c;
    c.core = 0;
    c.pool = pool_.CoreStats(0);
    c.layer_objects = pool_.CoreGauges(0);
    for (int i = 0; i < pool::kMaxLayers; ++i) s.pool.in_layers[i] += c.layer_objects.objects[i];
    s.cores.push_back(c);
    return s;
  }

 private:
  const pool::testing::ToyPool& pool_;
};

double Sample(const std::vector<prometheus::MetricFamily>& fams, const MetricDef& family,
              const std::vector<std::pair<std::string, std::string>>& labels, bool* found) {
  *found = false;
  for (const prometheus::MetricFamily& f : fams) {
    if (f.name != family.name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      size_t matched = 0;
      for (const auto& [k, v] : labels) {
        for (const prometheus::ClientMetric::Label& l : m.label)
          matched += l.name == k && l.value == v;
      }
      if (matched != labels.size()) continue;
      *found = true;
      return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return 0;
}

TEST(ToyLayerConsumers, TheMetricsExportIt) {
  auto t = pool::testing::MakePool("headpool", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  std::vector<void*> held(3);
  ASSERT_TRUE(t->Get(0, held.data(), 3));  // the toy is empty: 3 misses
  for (void* o : held) t->Put(0, &o, 1);   // it keeps all three: 3 hits
  ASSERT_TRUE(t->Get(0, held.data(), 2));  // served whole from it: 2 hits
  ToyPoolBackend backend(*t.pool);
  StatsSampler sampler(backend, std::chrono::hours(1), std::chrono::hours(1));
  SwapMetrics swaps;
  MetricsCollector collector(backend, sampler, swaps, nullptr, ToyLayers::Catalog());
  const std::vector<prometheus::MetricFamily> fams = collector.Collect();
  bool found = false;
  EXPECT_EQ(Sample(fams, metric::kPoolAllocsTotal,
                   {{"core", "0"}, {"layer", "toy"}, {"result", "miss"}}, &found),
            3);
  EXPECT_TRUE(found);
  EXPECT_EQ(Sample(fams, metric::kPoolAllocsTotal,
                   {{"core", "0"}, {"layer", "toy"}, {"result", "hit"}}, &found),
            2);
  EXPECT_TRUE(found);
  EXPECT_EQ(Sample(fams, metric::kPoolFreesTotal,
                   {{"core", "0"}, {"layer", "toy"}, {"result", "hit"}}, &found),
            3);
  EXPECT_TRUE(found);
  EXPECT_EQ(Sample(fams, metric::kPoolObjects, {{"state", "toy"}}, &found), 1);
  EXPECT_TRUE(found);
  // The production layers are still there, by their names.
  Sample(fams, metric::kPoolAllocsTotal, {{"core", "0"}, {"layer", "headpool"}, {"result", "miss"}},
         &found);
  EXPECT_TRUE(found);
  t->Put(0, held.data(), 2);
}

}  // namespace
}  // namespace skbnf::control
