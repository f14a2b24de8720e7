// SPDX-License-Identifier: BSD-3-Clause
// Engine::Create takes the parsed start-up strategy (EngineConfig::strategy, a pool::StrategySpec;
// issue 30 item 2): a spec built field by field, never text, is the pool's strategy once the
// engine runs, through the skbnf mempool driver (MempoolOptions::strategy) with no print and
// parse in between; the plugin's SKBNF_STRATEGY text is the only strategy text the driver
// parses. The flag's and the config line's parsing: tests/cli/strategy_flag_test.cc.
// EAL: the dataplane_integration_tests process's (eal_environment.h, main in dataplane_test.cc).
#include <rte_bus_vdev.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/pool/strategy_spec.h"
#include "gtest/gtest.h"

namespace skbnf::dpdk {
namespace {

TEST(StrategyInitTest, CreateRunsTheParsedSpecAsGiven) {
  const std::string a = "net_null200", b = "net_null201";
  ASSERT_EQ(rte_vdev_init(a.c_str(), ""), 0);
  ASSERT_EQ(rte_vdev_init(b.c_str(), ""), 0);
  pool::StrategySpec spec;  // recycle+headpool:hot_list_len=96, never written as text
  spec.layers = pool::LayerBit(pool::Layer::kRecycle) | pool::LayerBit(pool::Layer::kHeadPool);
  spec.Tunable(pool::Layer::kHeadPool) = 96;
  EngineConfig c;
  c.mode = ForwardingMode::kIo;
  c.strategy = spec;
  c.ports = {{a, b, ""}, {b, a, ""}};
  c.workers = {{1, {{a, 0}, {b, 0}}}};
  {
    absl::StatusOr<std::unique_ptr<Engine>> e = Engine::Create(c);
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_NE((*e)->pool(), nullptr);
    EXPECT_EQ((*e)->pool()->strategy(), spec);
    EXPECT_EQ((*e)->strategy(), "recycle+headpool:hot_list_len=96");
    ASSERT_TRUE((*e)->Start().ok());
    EXPECT_EQ((*e)->Snapshot().strategy, "recycle+headpool:hot_list_len=96");
    ASSERT_TRUE((*e)->Stop().ok());
    EXPECT_TRUE((*e)->final_audit().ok) << (*e)->final_audit().message;
  }
  rte_vdev_uninit(a.c_str());
  rte_vdev_uninit(b.c_str());
}

}  // namespace
}  // namespace skbnf::dpdk
