// SPDX-License-Identifier: BSD-3-Clause
// ApplyConfigText (server/ops/config_reload.h) over the in-memory FakeBackend: the paths a running
// skbnfd cannot be pushed into on demand. A swap that rolls back puts the routes already
// changed back (a reload is applied whole or not at all); routes added over gRPC are replaced
// when the file's routes change and kept when they do not; routes outside l3 and strategy
// changes on the native pool; the log line names the line of a bad value.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/mutations.h"
#include "server/ops/config_reload.h"
#include "tests/control/fake_backend.h"

namespace skbnf::control {
namespace {

using testing::FakeBackend;
using testing::FakeOptions;
using ::testing::HasSubstr;

constexpr char kHead[] =
    "mode l3\n"
    "mbufs 8192\n";

std::map<std::string, std::string> Routes(const Backend& b) {
  RouteTable t = b.ListRoutes();
  std::map<uint32_t, NextHop> hops;
  for (const auto& n : t.next_hops) hops[n.id] = n.next_hop;
  std::map<std::string, std::string> out;
  for (const auto& r : t.routes) {
    const NextHop& nh = hops[r.next_hop_id];
    out[net::FormatIpv4Prefix(r.prefix)] = absl::StrCat(nh.port, " ", net::FormatMac(nh.dst_mac));
  }
  return out;
}

class ConfigReloadUnitTest : public ::testing::Test {
 protected:
  void Start(FakeOptions o, const std::string& text) {
    auto b = FakeBackend::Create(o);
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = std::move(*b);
    auto dc = dpdk::ParseConfig(text);
    ASSERT_TRUE(dc.ok()) << dc.status();
    started_ = applied_ = *dc;
    // what skbnfd does at start: the file's routes in the engine
    for (const auto& r : dc->engine.routes) {
      auto p = net::ParseIpv4Prefix(r.prefix);
      auto m = net::ParseMac(r.mac);
      ASSERT_TRUE(p.ok() && m.ok());
      ASSERT_TRUE(backend_->AddRoute(*p, NextHop{r.port == "net_null1" ? 1 : 0, *m}).ok());
    }
  }
  ReloadResult Apply(const std::string& text, const ConfigResolver& resolve = nullptr) {
    Mutations mutations(*backend_, swaps_, changes_);
    return mutations.Run(ChangeSource::kConfig, [&](Change& c) {
      return ApplyConfigText("skbnfd.conf", text, started_, applied_, c, resolve);
    });
  }

  std::unique_ptr<FakeBackend> backend_;
  dpdk::DaemonConfig started_, applied_;
  SwapMetrics swaps_;
  ChangeLog changes_;
};

TEST_F(ConfigReloadUnitTest, SwapThatRollsBackPutsTheRoutesBack) {
  FakeOptions o;
  o.stuck_core = 1;  // swaps time out and roll back
  Start(o,
        absl::StrCat(kHead, "strategy magazine\nroute 10.0.0.0/8 net_null1 02:00:00:00:01:01\n"));
  const auto before = Routes(*backend_);
  ReloadResult r = Apply(absl::StrCat(kHead,
                                      "strategy recycle+magazine\n"
                                      "route 10.1.0.0/16 net_null0 02:00:00:00:01:02\n"));
  EXPECT_EQ(r.kind, ReloadResult::kError) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("line 3: strategy swap to recycle+magazine failed"));
  EXPECT_THAT(r.summary, HasSubstr("nothing applied"));
  EXPECT_EQ(Routes(*backend_), before);
  EXPECT_EQ(backend_->GetStrategy().ToString(), "magazine");
  EXPECT_EQ(swaps_.Get().count[SwapMetrics::kRolledBack], 1u);
  // every change it made, and undid, went through Mutations: logged and counted as config
  EXPECT_EQ(changes_.Count("SetStrategy", "rolled_back", "config"), 1u);
  EXPECT_EQ(changes_.Count("AddRoute", "ok", "config"), 2u);     // 10.1/16, and 10/8 back
  EXPECT_EQ(changes_.Count("DeleteRoute", "ok", "config"), 2u);  // 10/8, and the undo of 10.1/16
  EXPECT_EQ(changes_.Count("SetStrategy", "rolled_back", "rpc"), 0u);
  EXPECT_FALSE(r.rollback_failed);
  // the same file again is still a change against what was applied: retried, not "unchanged"
  EXPECT_EQ(Apply(absl::StrCat(kHead, "strategy recycle+magazine\n")).kind, ReloadResult::kError);
}

TEST_F(ConfigReloadUnitTest, FileRoutesReplaceTheLiveTableOnlyWhenTheyChange) {
  Start({}, absl::StrCat(kHead, "route 10.0.0.0/8 net_null1 02:00:00:00:01:01\n"));
  auto p = net::ParseIpv4Prefix("192.168.0.0/16");
  ASSERT_TRUE(backend_->AddRoute(*p, NextHop{0, {2, 0, 0, 0, 0, 9}}).ok());  // over gRPC
  // the file's routes did not change (a strategy edit): the gRPC route stays
  ReloadResult r = Apply(
      absl::StrCat(kHead, "strategy headpool\nroute 10.0.0.0/8 net_null1 02:00:00:00:01:01\n"));
  EXPECT_EQ(r.kind, ReloadResult::kOk) << r.summary;
  EXPECT_EQ(Routes(*backend_).count("192.168.0.0/16"), 1u);
  // they changed: the live table becomes the file's (next hop of 10/8 changed, port by id)
  r = Apply(absl::StrCat(kHead,
                         "strategy headpool\n"
                         "route 10.0.0.0/8 0 02:00:00:00:01:0a\n"
                         "route 10.2.0.0/16 net_null1 02:00:00:00:01:02\n"));
  EXPECT_EQ(r.kind, ReloadResult::kOk) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("routes: 1 added, 1 replaced in place, 1 deleted"));
  EXPECT_EQ(Routes(*backend_),
            (std::map<std::string, std::string>{{"10.0.0.0/8", "0 02:00:00:00:01:0a"},
                                                {"10.2.0.0/16", "1 02:00:00:00:01:02"}}));
}

TEST_F(ConfigReloadUnitTest, BadValuesNameTheLineAndApplyNothing) {
  Start({}, absl::StrCat(kHead, "route 10.0.0.0/8 net_null1 02:00:00:00:01:01\n"));
  const auto before = Routes(*backend_);
  struct Case {
    std::string text, want;
  } cases[] = {
      {"strategy magazine:size=0\n", "skbnfd.conf: line 3: strategy magazine:size=0:"},
      {"strategy headpool\nroute 10.0.0.0/8 net_null7 02:00:00:00:01:01\n",
       "line 4: route 10.0.0.0/8: port 'net_null7' is not a port (ports: 0 net_null0, 1 "
       "net_null1)"},
      {"route 10.0.0.0/8 1 00:00:00:00:00:00\n", "line 3: route 10.0.0.0/8: the all-zero"},
      {"routes_random 10 net_nope\n", "line 3: route 10."},
      {"burst 100000\n", "line 3: "},
      // the pool-share bound of SetStrategy (server/core/pool_share.h) holds for the file too
      {"strategy headpool:hot_list_len=65536\n",
       "line 3: strategy headpool:hot_list_len=65536: headpool:hot_list_len=65536"},
  };
  for (const Case& c : cases) {
    ReloadResult r = Apply(absl::StrCat(kHead, c.text));
    EXPECT_EQ(r.kind, ReloadResult::kError) << c.text;
    EXPECT_THAT(r.summary, HasSubstr(c.want)) << c.text;
    EXPECT_EQ(Routes(*backend_), before) << c.text;
    EXPECT_EQ(backend_->GetStrategy().ToString(), "magazine") << c.text;
  }
}

TEST_F(ConfigReloadUnitTest, RoutesOutsideL3AreReportedNotApplied) {
  FakeOptions o;
  o.mode = ForwardingMode::kIo;
  Start(o, "mode io\n");
  ReloadResult r = Apply("mode io\nroute 10.0.0.0/8 net_null1 02:00:00:00:01:01\n");
  EXPECT_EQ(r.kind, ReloadResult::kUnchanged) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("unused outside l3 mode"));
  EXPECT_TRUE(Routes(*backend_).empty());
}

TEST_F(ConfigReloadUnitTest, StrategyOnTheNativePoolIsRefused) {
  FakeOptions o;
  o.native = true;
  Start(o, kHead);
  ReloadResult r = Apply(absl::StrCat(kHead, "strategy headpool\n"));
  EXPECT_EQ(r.kind, ReloadResult::kError);
  EXPECT_THAT(r.summary, HasSubstr("line 3: strategy headpool:"));
}

TEST_F(ConfigReloadUnitTest, RestartOnlySettingsAreListed) {
  Start({}, kHead);
  ReloadResult r = Apply("mode io\nmbufs 4096\nrx_ring 512\nport net_null0\n");
  EXPECT_EQ(r.kind, ReloadResult::kUnchanged);
  EXPECT_THAT(r.needs_restart,
              ::testing::ElementsAre("mode l3 -> io", "mbufs 8192 -> 4096", "rx_ring 1024 -> 512",
                                     "port [] -> [net_null0]"));
}

}  // namespace
}  // namespace skbnf::control

namespace skbnf::control {
namespace {

// Ports named by network (port net=<network>, server/daemon/daemon_flags.h ResolveNetworkPorts): a
// reload resolves the file as the start did, so a route by network applies and an unknown
// network refuses the file whole.
TEST_F(ConfigReloadUnitTest, ReloadResolvesPortsNamedByNetwork) {
  Start({}, absl::StrCat(kHead, "route 10.0.0.0/8 net_null1 02:00:00:00:01:01\n"));
  const ConfigResolver resolve = [](dpdk::DaemonConfig& dc) {
    return dpdk::ResolvePortNetworks(dc, [](absl::string_view n) -> absl::StatusOr<std::string> {
      if (n == "core") return std::string("net_null1");
      return absl::NotFoundError(absl::StrCat("no network '", n, "'"));
    });
  };
  ReloadResult r =
      Apply(absl::StrCat(kHead, "route 10.0.0.0/8 net=core 02:00:00:00:01:01\n"), resolve);
  EXPECT_EQ(r.kind, ReloadResult::kUnchanged) << r.summary;  // the same route, by network
  r = Apply(absl::StrCat(kHead, "route 10.0.0.0/8 net=core 02:00:00:00:01:01\n",
                         "route 10.4.0.0/16 net=core 02:00:00:00:01:04\n"),
            resolve);
  EXPECT_EQ(r.kind, ReloadResult::kOk) << r.summary;
  EXPECT_EQ(Routes(*backend_).at("10.4.0.0/16"), "1 02:00:00:00:01:04");
  const auto before = Routes(*backend_);
  r = Apply(absl::StrCat(kHead, "route 10.5.0.0/16 net=gone 02:00:00:00:01:05\n"), resolve);
  EXPECT_EQ(r.kind, ReloadResult::kError);
  EXPECT_THAT(r.summary, HasSubstr("route 10.5.0.0/16 net=gone: no network 'gone'"));
  EXPECT_EQ(Routes(*backend_), before);
}

}  // namespace
}  // namespace skbnf::control
