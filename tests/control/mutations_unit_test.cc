// SPDX-License-Identifier: BSD-3-Clause
// The rules of Mutations (server/core/mutations.h), held against a backend that only records what
// it is asked: the route rules, pause idempotence, the native-mempool refusal and the one check of
// a strategy are Mutations', so they hold for every backend (the fake, the engine) without one.
#include <gtest/gtest.h>

#include <optional>
#include <utility>

#include "common/net_text.h"
#include "common/pool_ops.h"
#include "server/core/change_log.h"
#include "server/core/mutations.h"
#include "server/core/swap_metrics.h"
#include "tests/control/null_backend.h"

namespace skbnf::control {
namespace {

class RecordingBackend final : public NullBackend {
 public:
  Info GetInfo() const override {
    Info i;
    i.mode = mode;
    i.pool.native = native;
    i.pool.ops_name = native ? "ring_mp_mc" : "skbnf";
    i.lcores.push_back({1, LcoreInfo::Role::kWorker, 1, 0, {0}, {0}});
    return i;
  }
  StatsSnapshot GetStats() const override {
    StatsSnapshot s;
    CoreStats c;
    c.core = 1;
    c.paused = paused;
    s.cores.push_back(c);
    return s;
  }
  RouteTable ListRoutes() const override { return routes; }
  absl::Status ValidateStrategy(const pool::StrategySpec&) const override {
    ++validations;
    return absl::OkStatus();
  }
  pool::SwapReport SwapStrategy(const pool::StrategySpec&, std::chrono::microseconds) override {
    ++swaps;
    return {};
  }
  absl::StatusOr<uint32_t> AddRoute(const Ipv4Prefix&, const NextHop&) override {
    ++adds;
    return 7;
  }
  absl::Status DeleteRoute(const Ipv4Prefix&) override {
    ++deletes;
    return absl::OkStatus();
  }
  absl::Status PauseWorker(int) override {
    ++pauses;
    paused = true;
    return absl::OkStatus();
  }
  absl::Status ResumeWorker(int) override {
    ++resumes;
    paused = false;
    return absl::OkStatus();
  }

  ForwardingMode mode = ForwardingMode::kL3;
  bool native = false;
  bool paused = false;
  RouteTable routes;
  mutable int validations = 0;
  int swaps = 0, adds = 0, deletes = 0, pauses = 0, resumes = 0;
};

class MutationsTest : public ::testing::Test {
 protected:
  template <typename F>
  auto Run(F&& f) {
    return door_.Run(ChangeSource::kConfig, std::forward<F>(f));
  }
  static Ipv4Prefix Prefix(const char* text) { return *net::ParseIpv4Prefix(text); }

  RecordingBackend backend_;
  SwapMetrics metrics_;
  ChangeLog log_;
  Mutations door_{backend_, metrics_, log_};
};

TEST_F(MutationsTest, RoutesOnlyInL3Mode) {
  backend_.mode = ForwardingMode::kIo;
  absl::StatusOr<uint32_t> id = Run([&](Change& c) {
    return c.AddRoute(Prefix("10.0.0.0/8"), NextHop{0, {2}});
  });
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(id.status().message(), "routes are used only in l3 forwarding mode");
  absl::Status del = Run([&](Change& c) { return c.DeleteRoute(Prefix("10.0.0.0/8")); });
  EXPECT_EQ(del.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(backend_.adds + backend_.deletes, 0) << "the backend was asked";
}

TEST_F(MutationsTest, APrefixIsRoutedOnceAndOnlyARoutedOneIsDeleted) {
  backend_.routes.routes.push_back({Prefix("10.0.0.0/8"), 3});
  absl::StatusOr<uint32_t> again = Run([&](Change& c) {
    return c.AddRoute(Prefix("10.0.0.0/8"), NextHop{0, {2}});
  });
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().message(), "prefix: 10.0.0.0/8 is already routed");
  absl::Status missing = Run([&](Change& c) { return c.DeleteRoute(Prefix("10.1.0.0/16")); });
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "prefix: 10.1.0.0/16 is not routed");
  EXPECT_EQ(backend_.adds + backend_.deletes, 0);
  // What passes the rules reaches the backend, its next-hop id unchanged.
  absl::StatusOr<uint32_t> id = Run([&](Change& c) {
    return c.AddRoute(Prefix("10.1.0.0/16"), NextHop{0, {2}});
  });
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 7u);
  EXPECT_TRUE(Run([&](Change& c) { return c.DeleteRoute(Prefix("10.0.0.0/8")); }).ok());
  EXPECT_EQ(backend_.adds, 1);
  EXPECT_EQ(backend_.deletes, 1);
}

TEST_F(MutationsTest, PauseAndResumeAreIdempotent) {
  EXPECT_EQ(*Run([](Change& c) { return c.PauseWorker(1); }), false);
  EXPECT_EQ(*Run([](Change& c) { return c.PauseWorker(1); }), true);
  EXPECT_EQ(backend_.pauses, 1) << "an already paused worker was paused again";
  EXPECT_EQ(*Run([](Change& c) { return c.ResumeWorker(1); }), true);
  EXPECT_EQ(*Run([](Change& c) { return c.ResumeWorker(1); }), false);
  EXPECT_EQ(backend_.resumes, 1) << "a running worker was resumed again";
}

TEST_F(MutationsTest, AStrategyIsCheckedOnceAndSwappedAsChecked) {
  const pool::StrategySpec spec = *pool::StrategySpec::Parse("headpool");
  Run([&](Change& c) {
    absl::StatusOr<CheckedStrategy> checked = c.CheckStrategy(spec);
    ASSERT_TRUE(checked.ok()) << checked.status();
    EXPECT_EQ(checked->spec(), spec);
    EXPECT_TRUE(c.SwapStrategy(*checked, std::chrono::microseconds(0)).status.ok());
  });
  EXPECT_EQ(backend_.validations, 1) << "checked again on the way to the swap";
  EXPECT_EQ(backend_.swaps, 1);
  // The one-call form checks once too.
  Run([&](Change& c) { c.SwapStrategy(spec, std::chrono::microseconds(0)); });
  EXPECT_EQ(backend_.validations, 2);
  EXPECT_EQ(backend_.swaps, 2);
}

TEST_F(MutationsTest, ACheckedStrategyIsSwappedOnlyByTheChangeThatCheckedIt) {
  const pool::StrategySpec spec = *pool::StrategySpec::Parse("headpool");
  std::optional<CheckedStrategy> kept;
  Run([&](Change& c) { kept = *c.CheckStrategy(spec); });
  pool::SwapReport r = Run([&](Change& c) { return c.SwapStrategy(*kept, {}); });
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInternal) << r.status;
  EXPECT_EQ(backend_.swaps, 0);
}

TEST_F(MutationsTest, TheNativeMempoolRefusesWithOneTextAndAReportedRefusal) {
  backend_.native = true;
  const pool::StrategySpec spec = *pool::StrategySpec::Parse("headpool");
  pool::SwapReport r = Run([&](Change& c) { return c.SwapStrategy(spec, {}); });
  EXPECT_EQ(r.status, dpdk::NativePoolSwapRefusal("ring_mp_mc"));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status.message().find("native mempool (ring_mp_mc + lcore cache)"), std::string::npos)
      << r.status;
  EXPECT_FALSE(r.rolled_back);
  EXPECT_EQ(r.new_spec, "headpool");
  EXPECT_EQ(r.old_spec, "slab");
  EXPECT_EQ(backend_.validations + backend_.swaps, 0);
  EXPECT_EQ(metrics_.Get().observations, 0u) << "a refusal is no swap";
}

}  // namespace
}  // namespace skbnf::control
