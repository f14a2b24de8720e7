// SPDX-License-Identifier: BSD-3-Clause
// The start-up strategy is parsed once, where its text arrives (issue 30 item 2): the --strategy
// flag (server/daemon/daemon_flags.cc) and the config file's `strategy` line
// (server/ops/config.cc) turn the text into a pool::StrategySpec, and that spec travels down
// (EngineConfig::strategy; Engine::Init, the start-up checks and the config reload parse
// nothing). A bad text is refused where it was written, with what to write; skbnfd exits 2.
//
// The messages below are pinned as they were before the change (a bad --strategy: "--strategy=X:
// <the grammar's reason>; write e.g. --strategy=magazine or --strategy=recycle+headpool"), the
// reasons themselves being dataplane/pool/strategy_spec.cc's. The engine taking the parsed spec
// on EAL is tests/integration/strategy_init_test.cc.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <type_traits>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dataplane/pool/layer_facts.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/daemon/daemon_flags.h"
#include "server/daemon/startup_checks.h"
#include "server/ops/config.h"

ABSL_DECLARE_FLAG(std::string, strategy);
ABSL_DECLARE_FLAG(std::string, pool_ops);

namespace skbnf::control {
namespace {

static_assert(std::is_same_v<decltype(dpdk::EngineConfig::strategy), pool::StrategySpec>,
              "the engine takes the parsed spec, not its text");

class StrategyFlagTest : public ::testing::Test {
 protected:
  void TearDown() override {
    absl::SetFlag(&FLAGS_strategy, "");
    absl::SetFlag(&FLAGS_pool_ops, "");
  }
};

TEST_F(StrategyFlagTest, DefaultIsMagazine) {
  dpdk::EngineConfig c;
  EXPECT_EQ(c.strategy, pool::StrategySpec::Parse("magazine").value());
  ASSERT_TRUE(ApplyEngineFlags(c).ok());
  EXPECT_EQ(c.strategy.ToString(), "magazine");
}

TEST_F(StrategyFlagTest, TheFlagsTextBecomesTheSpec) {
  absl::SetFlag(&FLAGS_strategy, "lcache:size=64+recycle+magazine:size=48,prefetch");
  dpdk::EngineConfig c;
  ASSERT_TRUE(ApplyEngineFlags(c).ok());
  pool::StrategySpec want;
  want.layers = pool::LayerBit(pool::Layer::kLcache) | pool::LayerBit(pool::Layer::kRecycle) |
                pool::LayerBit(pool::Layer::kMagazine);
  want.Tunable(pool::Layer::kLcache) = 64;
  want.Tunable(pool::Layer::kMagazine) = 48;
  want.prefetch = true;
  EXPECT_EQ(c.strategy, want);
}

TEST_F(StrategyFlagTest, ABadFlagIsRefusedAsBefore) {
  const std::pair<const char*, const char*> cases[] = {
      {"magazine+recycle",
       "--strategy=magazine+recycle: layer 'recycle' must come before 'magazine' (order: "
       "lcache+recycle+headpool+magazine); write e.g. --strategy=magazine or "
       "--strategy=recycle+headpool"},
      {"magazine:size=0",
       "--strategy=magazine:size=0: tunable 'magazine:size' = 0 is out of range [1, 1024]; write "
       "e.g. --strategy=magazine or --strategy=recycle+headpool"},
  };
  for (const auto& [text, want] : cases) {
    absl::SetFlag(&FLAGS_strategy, text);
    dpdk::EngineConfig c;
    const pool::StrategySpec before = c.strategy;
    absl::Status st = ApplyEngineFlags(c);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(std::string(st.message()), want) << text;
    EXPECT_EQ(c.strategy, before) << "nothing changed";
  }
  // On the ring_mp_mc baseline the flag does not apply, whatever its text.
  absl::SetFlag(&FLAGS_strategy, "bogus");
  absl::SetFlag(&FLAGS_pool_ops, "ring_mp_mc");
  dpdk::EngineConfig c;
  EXPECT_EQ(ApplyEngineFlags(c).message(),
            "--strategy applies to --pool-ops=skbnf; the ring_mp_mc baseline has DPDK's own "
            "cache: write --mbuf-cache=N instead");
}

TEST_F(StrategyFlagTest, TheConfigLineIsParsedAtItsLine) {
  absl::StatusOr<dpdk::DaemonConfig> ok = dpdk::ParseConfig("mode l3\nstrategy recycle+magazine\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->engine.strategy, pool::StrategySpec::Parse("recycle+magazine").value());
  absl::StatusOr<dpdk::DaemonConfig> bad = dpdk::ParseConfig("mode l3\nstrategy magazine+lcache\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "line 2: strategy magazine+lcache: layer 'lcache' must come before 'magazine' "
            "(order: lcache+recycle+headpool+magazine)");
}

// Preflight's sizing reads the spec the flag parsed (no parse of its own that could fail to 0).
TEST_F(StrategyFlagTest, PreflightSizesTheParsedSpec) {
  absl::SetFlag(&FLAGS_strategy, "headpool:hot_list_len=500");
  dpdk::EngineConfig c;
  ASSERT_TRUE(ApplyEngineFlags(c).ok());
  const uint64_t held =
      pool::MaxHeld(c.strategy, pool::HoldEnv{.rx_ring_sizes = {c.rx_ring}}).total;
  EXPECT_GE(held, 500u);
  EXPECT_EQ(PoolNeedsOf(c, 2, 1).per_core_capacity, held);
}

// skbnfd itself: exit 2 and the same line on stderr, for the flag and for the config file.
std::pair<int, std::string> RunSkbnfd(const std::string& args) {
  const std::string cmd = absl::StrCat(SKBNF_SKBNFD, " ", args, " 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_F(StrategyFlagTest, SkbnfdExits2NamingWhatToWrite) {
  auto [rc, out] = RunSkbnfd("--strategy=magazine+recycle");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out,
            "skbnfd: --strategy=magazine+recycle: layer 'recycle' must come before 'magazine' "
            "(order: lcache+recycle+headpool+magazine); write e.g. --strategy=magazine or "
            "--strategy=recycle+headpool\n");

  const std::string path = ::testing::TempDir() + "/strategy_flag_test.conf";
  std::ofstream(path) << "# a config whose strategy line is bad\nstrategy lcache:size=99999\n";
  std::tie(rc, out) = RunSkbnfd(absl::StrCat("--config=", path));
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out, absl::StrCat("skbnfd: ", path,
                              ": line 2: strategy lcache:size=99999: tunable 'lcache:size' = "
                              "99999 is out of range [1, 1024]\n"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace skbnf::control
