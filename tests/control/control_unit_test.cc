// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the control plane's pure parts: listener classification (a security decision),
// prefix/MAC text forms, the structured strategy form, swap metrics, rate windows, and the live
// tuner's disqualification, scoring and decision on synthetic figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include "common/net_text.h"
#include "common/rates.h"
#include "server/control/control_plane.h"
#include "server/control/control_service.h"
#include "server/control/limits.h"
#include "server/core/access.h"
#include "server/core/change_log.h"
#include "server/core/mutations.h"
#include "server/core/pool_share.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/tuner/tuner.h"
#include "tests/control/null_backend.h"

namespace skbnf::control {
namespace {

using net::FormatIpv4Prefix;
using net::FormatMac;
using net::ParseIpv4Prefix;
using net::ParseMac;

TEST(IsLocalAddress, OnlyLoopbackAndUnixSocketsAreLocal) {
  for (const char* a : {"127.0.0.1:50051", "127.0.0.1:0", "127.255.255.254:1", "localhost:50051",
                        "[::1]:50051", "unix:/run/skbnf.sock", "unix:///run/skbnf.sock"}) {
    EXPECT_TRUE(IsLocalAddress(a)) << a;
  }
  // Anything else, including forms gRPC accepts that we do not parse, counts as remote (and so
  // needs TLS): the check fails safe.
  for (const char* a :
       {"0.0.0.0:50051", "[::]:50051", "10.1.2.3:50051", "128.0.0.1:1", "127.0.0.1.example.com:1",
        ":50051", "127.0.0.1", "ipv4:127.0.0.1:1", "dns:///127.0.0.1:1", "[::ffff:10.0.0.1]:1",
        "127.0.0.256:1", "localhost.example.com:1",
        // No file, no permissions: anyone in the network namespace can connect.
        "unix-abstract:skbnf"}) {
    EXPECT_FALSE(IsLocalAddress(a)) << a;
  }
}

// Who may change the data plane (peer classification, access rules: access.h), the pool-share
// rule (pool_share.h), call limits (limits.h), the change log (change_log.h).
TEST(Access, LoopbackPeers) {
  for (const char* p : {"ipv4:127.0.0.1:5", "ipv4:127.9.9.9:5", "ipv6:[::1]:5", "ipv6:%5B::1%5D:5",
                        "ipv6:[::ffff:127.0.0.1]:5", "ipv6:%5B::ffff:127.0.0.2%5D:5"}) {
    EXPECT_TRUE(IsLoopbackPeer(p)) << p;
  }
  for (const char* p :
       {"ipv4:192.0.2.1:5", "ipv4:128.0.0.1:5", "ipv6:[fd00::2]:5", "ipv6:[::ffff:10.0.0.1]:5",
        "unix:", "unix:/run/x.sock", "unix-abstract:x", "", "ipv6:[::1", "127.0.0.1:5"}) {
    EXPECT_FALSE(IsLoopbackPeer(p)) << p;
  }
}

TEST(Access, WhoMayChange) {
  Caller remote{"ipv4:192.0.2.1:5", false, false, {}, ""};
  Caller local{"ipv4:127.0.0.1:5", true, false, {}, ""};
  Caller unix_peer{"unix:", false, false, {}, ""};
  Caller ops{"ipv4:192.0.2.1:5", false, true, {"ops.example"}, "ops"};
  Caller other{"ipv4:192.0.2.1:5", false, true, {"x.example"}, "x"};
  AccessPolicy plain;  // kPlaintext
  EXPECT_TRUE(AuthorizeChange(plain, local, "SetStrategy").ok());
  EXPECT_EQ(AuthorizeChange(plain, remote, "SetStrategy").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  AccessPolicy path{AccessPolicy::Listener::kUnixPath, false, {}};
  EXPECT_TRUE(AuthorizeChange(path, unix_peer, "PauseWorker").ok());
  AccessPolicy abstract{AccessPolicy::Listener::kAbstract, false, {}};
  EXPECT_FALSE(AuthorizeChange(abstract, unix_peer, "PauseWorker").ok());
  EXPECT_FALSE(AuthorizeChange(abstract, local, "PauseWorker").ok());
  AccessPolicy tls_no_ca{AccessPolicy::Listener::kTls, false, {}};
  EXPECT_FALSE(AuthorizeChange(tls_no_ca, ops, "AddRoute").ok());
  AccessPolicy tls{AccessPolicy::Listener::kTls, true, {}};
  EXPECT_TRUE(AuthorizeChange(tls, ops, "AddRoute").ok());
  EXPECT_TRUE(AuthorizeChange(tls, other, "AddRoute").ok());
  EXPECT_FALSE(AuthorizeChange(tls, local, "AddRoute").ok()) << "TLS: loopback is no certificate";
  AccessPolicy named{AccessPolicy::Listener::kTls, true, {"ops.example"}};
  EXPECT_TRUE(AuthorizeChange(named, ops, "AddRoute").ok());
  grpc::Status s = AuthorizeChange(named, other, "AddRoute");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("CN=x SAN=x.example"), std::string::npos) << s.error_message();
  EXPECT_EQ(ops.ClientKey(), "CN=ops SAN=ops.example");
  EXPECT_EQ(remote.ClientKey(), "192.0.2.1");
  EXPECT_EQ(unix_peer.ClientKey(), "unix");
  EXPECT_EQ(local.Identity(), "-");
}

Info TwoWorkers(uint64_t populated) {
  Info info;
  info.pool.populated = populated;
  info.lcores.push_back(LcoreInfo{0, LcoreInfo::Role::kMain, -1, 0, {}, {}});
  info.lcores.push_back(LcoreInfo{1, LcoreInfo::Role::kWorker, 0, 0, {0}, {1}});
  info.lcores.push_back(LcoreInfo{2, LcoreInfo::Role::kWorker, 1, 0, {0, 1}, {0}});
  return info;
}

TEST(PoolShare, MostHeldPerLayerAndCore) {
  std::vector<PortInfo> ports(2);
  ports[0].id = 0;
  ports[0].rx_ring_size = 1024;
  ports[1].id = 1;
  ports[1].rx_ring_size = 512;
  auto spec = pool::StrategySpec::Parse("lcache:size=255+recycle+headpool:hot_list_len=7+magazine");
  ASSERT_TRUE(spec.ok());
  std::vector<CoreHolding> h = MaxHoldings(*spec, TwoWorkers(0), ports);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].core, 0);
  EXPECT_EQ(h[0].by_layer[0],
            382u);  // 1.5 x 255 rounded down: the lcache's flush threshold (pool::MaxHeld)
  EXPECT_EQ(h[0].by_layer[1], 1024u);         // recycle limit 0: ring of port 0
  EXPECT_EQ(h[1].by_layer[1], 1024u + 512u);  // one list per RX port
  EXPECT_EQ(h[0].by_layer[2], 7u);
  EXPECT_EQ(h[0].by_layer[3], 64u);  // loaded + previous
  EXPECT_EQ(h[1].total(), 382u + 1536u + 7u + 64u);
}

TEST(PoolShare, HalfThePoolStaysReachable) {
  const std::vector<PortInfo> ports;
  auto at = [&](uint32_t len, uint64_t populated) {
    auto spec = pool::StrategySpec::Parse("headpool:hot_list_len=" + std::to_string(len));
    return CheckPoolShare(*spec, TwoWorkers(populated), ports);
  };
  EXPECT_TRUE(at(2048, 8192).ok());  // 2 x 2048 = 4096 = half
  absl::Status s = at(2049, 8192);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 24), "headpool:hot_list_len=20") << s.message();
  EXPECT_NE(s.message().find("bound of 4096, half of the pool's 8192"), std::string::npos)
      << s.message();
  EXPECT_TRUE(at(65536, 0).ok()) << "unknown pool size: not checked";
  EXPECT_FALSE(at(65536, 8192).ok());
}

TEST(Limits, OptionsAndSlots) {
  EXPECT_TRUE(CheckLimitOptions(LimitOptions{}).ok());
  EXPECT_FALSE(CheckLimitOptions(LimitOptions{0, 64, 50, 200}).ok());
  EXPECT_FALSE(CheckLimitOptions(LimitOptions{8, 4, 50, 200}).ok());
  EXPECT_FALSE(CheckLimitOptions(LimitOptions{8, 64, 9, 200}).ok());
  EXPECT_FALSE(CheckLimitOptions(LimitOptions{8, 64, 50, -1}).ok());
  CallLimits l(LimitOptions{2, 3, 50, 0});
  {
    CallLimits::StreamSlot a1, a2, a3, b1, c1;
    EXPECT_TRUE(l.AcquireStream("WatchStats", "a", &a1).ok());
    EXPECT_TRUE(l.AcquireStream("WatchStats", "a", &a2).ok());
    EXPECT_EQ(l.AcquireStream("WatchStats", "a", &a3).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_TRUE(l.AcquireStream("WatchStats", "b", &b1).ok());
    EXPECT_EQ(l.AcquireStream("WatchStats", "c", &c1).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(l.Rejected("WatchStats", "streams_per_client"), 1u);
    EXPECT_EQ(l.Rejected("WatchStats", "streams_total"), 1u);
  }
  CallLimits::StreamSlot c1, c2, d1;  // every slot was given back
  EXPECT_TRUE(l.AcquireStream("WatchStats", "c", &c1).ok());
  EXPECT_TRUE(l.AcquireStream("WatchStats", "c", &c2).ok());
  EXPECT_TRUE(l.AcquireStream("WatchStats", "d", &d1).ok());
  EXPECT_FALSE(l.CheckInterval("WatchStats", 49).ok());
  EXPECT_TRUE(l.CheckInterval("WatchStats", 50).ok());
  EXPECT_TRUE(l.Admit("AuditPool", std::chrono::milliseconds(0)).ok());
  EXPECT_TRUE(l.Admit("AuditPool", std::chrono::hours(1)).ok());
  EXPECT_EQ(l.Admit("AuditPool", std::chrono::hours(1)).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(l.Admit("TuneStrategy", std::chrono::hours(1)).ok()) << "per RPC";
  EXPECT_EQ(l.Rejected("AuditPool", "rate"), 1u);
}

TEST(ChangeLog, OneEscapedBoundedLinePerChangeAndCounts) {
  ChangeLog log;
  Caller who{"ipv4:127.0.0.1:9", true, false, {}, ""};
  ::testing::internal::CaptureStderr();
  log.Record(who, "SetStrategy", "a\"b\nc\x1b[31m" + std::string(1000, 'x'), "ok", "");
  log.Record(who, "SetStrategy", "magazine", "invalid_argument", "spec: bad");
  log.Record(Mutations::InProcessCaller(ChangeSource::kConsole), "SetStrategy", "a -> b",
             "rolled_back", "core 1 late", "console");
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_NE(out.find("what=\"a\\\"b\\x0ac\\x1b[31mxxx"), std::string::npos) << out;
  EXPECT_NE(
      out.find("...(1010 bytes)\" peer=ipv4:127.0.0.1:9 identity=\"-\" result=ok source=rpc\n"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("result=invalid_argument source=rpc detail=\"spec: bad\"\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("change rpc=SetStrategy what=\"a -> b\" peer=local:console identity=\"-\" "
                     "result=rolled_back source=console detail=\"core 1 late\"\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(log.Count("SetStrategy", "ok"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "invalid_argument"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "rolled_back", "console"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "rolled_back", "rpc"), 0u);
  EXPECT_EQ(ResultLabel(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "")),
            "permission_denied");
}

TEST(NetText, PrefixRoundTripAndRefusals) {
  for (const char* p : {"0.0.0.0/0", "10.0.0.0/8", "192.0.2.0/24", "203.0.113.7/32"}) {
    absl::StatusOr<Ipv4Prefix> parsed = ParseIpv4Prefix(p);
    ASSERT_TRUE(parsed.ok()) << p << ": " << parsed.status();
    EXPECT_EQ(FormatIpv4Prefix(*parsed), p);
  }
  EXPECT_EQ(ParseIpv4Prefix("10.1.2.0/24")->addr, 0x0a010200u);
  for (const char* p : {"", "10.0.0.0", "10.0.0.0/", "10.0.0.0/33", "10.0.0.1/8", "10.0.0/8",
                        "10.0.0.0.0/8", "256.0.0.0/8", "010.0.0.0/8", "10.0.0.0/08", "-1.0.0.0/8",
                        " 10.0.0.0/8", "10.0.0.0/8 ", "a.b.c.d/8"}) {
    EXPECT_FALSE(ParseIpv4Prefix(p).ok()) << p;
  }
  EXPECT_NE(ParseIpv4Prefix("10.0.0.1/8").status().message().find("10.0.0.0/8"), std::string::npos)
      << "suggests the masked prefix";
}

TEST(NetText, Mac) {
  absl::StatusOr<MacAddr> m = ParseMac("02:AB:cd:00:00:ff");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(FormatMac(*m), "02:ab:cd:00:00:ff");
  for (const char* s : {"", "02:00:00:00:00", "02:00:00:00:00:00:00", "2:00:00:00:00:00",
                        "02-00-00-00-00-00", "02:00:00:00:00:0g", "002:00:00:00:00:0"}) {
    EXPECT_FALSE(ParseMac(s).ok()) << s;
  }
}

// Every strategy the buffer core can run survives spec -> structured -> spec.
TEST(StructuredStrategy, RoundTripsEveryLayerMaskAndModifier) {
  int n = 0;
  for (unsigned mask = 0; mask < (1u << pool::kNumLayers); ++mask) {
    for (int prefetch = 0; prefetch < 2; ++prefetch) {
      pool::StrategySpec spec;
      spec.layers = mask;
      spec.prefetch = prefetch != 0;
      if (spec.Has(pool::Layer::kMagazine)) spec.magazine_size = 8 + mask;
      if (spec.Has(pool::Layer::kHeadPool)) spec.hot_list_len = 64 + mask;
      v1::StructuredStrategy st;
      StrategyToStructured(spec, &st);
      absl::StatusOr<pool::StrategySpec> back = StrategyFromStructured(st);
      ASSERT_TRUE(back.ok()) << spec.ToString() << ": " << back.status();
      EXPECT_EQ(*back, spec) << spec.ToString();
      ++n;
    }
  }
  EXPECT_EQ(n, 32);
}

TEST(SwapMetrics, CountsByResultAndBucketsDurations) {
  SwapMetrics m;
  pool::SwapReport ok;
  ok.total_ns = 30'000;  // 30 us -> first bucket (50 us)
  m.Record(ok);
  ok.total_ns = 2'000'000;  // 2 ms -> 2.5 ms bucket
  m.Record(ok);
  pool::SwapReport rolled;
  rolled.status = absl::DeadlineExceededError("core 3");
  rolled.rolled_back = true;
  rolled.total_ns = 5'000'000'000;  // 5 s -> only +Inf
  m.Record(rolled);
  pool::SwapReport refused;
  refused.status = absl::FailedPreconditionError("native");
  m.Record(refused);
  SwapMetrics::Snapshot s = m.Get();
  EXPECT_EQ(s.count[SwapMetrics::kOk], 2u);
  EXPECT_EQ(s.count[SwapMetrics::kRolledBack], 1u);
  EXPECT_EQ(s.count[SwapMetrics::kFailed], 1u);
  EXPECT_EQ(s.observations, 4u);
  EXPECT_EQ(s.buckets[0], 2u);  // 30 us and the refused swap's 0
  EXPECT_EQ(s.buckets[5], 1u);  // 2.5 ms
  uint64_t in_buckets = 0;
  for (uint64_t b : s.buckets) in_buckets += b;
  EXPECT_EQ(in_buckets, 3u) << "the 5 s swap is above every finite bucket";
  EXPECT_DOUBLE_EQ(s.sum_seconds, 30e-6 + 2e-3 + 5.0);
}

TEST(Rate, GuardsEmptyWindowsAndResets) {
  EXPECT_DOUBLE_EQ(Rate(300, 100, 2.0), 100.0);
  EXPECT_DOUBLE_EQ(Rate(300, 100, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(Rate(100, 300, 1.0), 0.0) << "counter went backwards";
}

TEST(BusyRatio, IsAShareOfThePollsAndNeverAboveOne) {
  EXPECT_DOUBLE_EQ(BusyRatio(150, 100, 300, 100), 0.25);
  EXPECT_DOUBLE_EQ(BusyRatio(100, 100, 100, 100), 0.0) << "no poll in between";
  EXPECT_DOUBLE_EQ(BusyRatio(90, 100, 300, 100), 0.0) << "counter went backwards";
  EXPECT_DOUBLE_EQ(BusyRatio(200, 100, 300, 100), 0.5);
  // A reading torn by a poll (polls read before that poll's busy_polls was added).
  EXPECT_DOUBLE_EQ(BusyRatio(201, 100, 200, 100), 1.0);
}

// A Backend whose only moving part is the stats clock, for StatsSampler.
class ClockBackend final : public NullBackend {
 public:
  StatsSnapshot GetStats() const override {
    StatsSnapshot s;
    s.taken = std::chrono::steady_clock::now();
    return s;
  }
};

TEST(StatsSampler, BaselineIsOlderThanNowAndPrefersAFullWindow) {
  ClockBackend b;
  StatsSampler s(b, std::chrono::milliseconds(10), std::chrono::milliseconds(30));
  const auto first = std::chrono::steady_clock::now();
  // Nothing is older than a point before the sampler's first sample.
  EXPECT_FALSE(s.Baseline(first - std::chrono::hours(1)).has_value());
  // Later: a baseline exists, is strictly older than `now`, and once the sampler has run long
  // enough it is at least one window old. Waited for (bounded), not slept for: the sampler's
  // thread may run late on a loaded machine; a Baseline that never offers a full window (e.g.
  // always the newest sample) keeps the loop to its deadline and fails below.
  const auto deadline = first + std::chrono::seconds(10);
  auto now = first;
  std::optional<StatsSnapshot> base;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    now = std::chrono::steady_clock::now();
    base = s.Baseline(now);
  } while ((!base.has_value() || now - base->taken < std::chrono::milliseconds(30)) &&
           now < deadline);
  ASSERT_TRUE(base.has_value());
  EXPECT_LT(base->taken, now);
  EXPECT_GE(now - base->taken, std::chrono::milliseconds(30));
}

// ---------------------------------------------------------------------------------------------
// Tuner: disqualification against the baseline, scoring, the decision.

TuneMeasurement Visit(uint64_t packets, uint64_t nombuf,
                      std::vector<std::pair<std::string, uint64_t>> drops, double cpp = 100) {
  TuneMeasurement m;
  m.spec = "x";
  m.packets = packets;
  m.rx_nombuf = nombuf;
  m.drops = std::move(drops);
  m.cycles_per_packet = cpp;
  return m;
}

TEST(Tuner, DisqualifiesOnlyWhatGrewBeyondTheBaseline) {
  // Baseline: 1/64 no_route (the demo's traffic), no rx_nombuf.
  const TuneMeasurement base = Visit(640000, 0, {{"no_route", 10000}, {"tx_full", 0}});
  TuneMeasurement same = Visit(1280000, 0, {{"no_route", 20000}, {"tx_full", 0}});
  DisqualifyAgainst(same, base);
  EXPECT_FALSE(same.disqualified) << same.disqualified_reason;

  TuneMeasurement nombuf = Visit(1280000, 1, {{"no_route", 20000}});
  DisqualifyAgainst(nombuf, base);
  EXPECT_TRUE(nombuf.disqualified);
  EXPECT_NE(nombuf.disqualified_reason.find("rx_nombuf"), std::string::npos);

  TuneMeasurement more = Visit(1280000, 0, {{"no_route", 40000}});  // twice the share
  DisqualifyAgainst(more, base);
  EXPECT_TRUE(more.disqualified);
  EXPECT_NE(more.disqualified_reason.find("no_route"), std::string::npos);

  TuneMeasurement fresh = Visit(1000000, 0, {{"tx_full", 500}});  // a new reason: 5 in 10,000
  DisqualifyAgainst(fresh, base);
  EXPECT_TRUE(fresh.disqualified);
  EXPECT_NE(fresh.disqualified_reason.find("tx_full"), std::string::npos);

  TuneMeasurement rare = Visit(1000000, 0, {{"tx_full", 50}});  // under 1 in 10,000: tolerated
  DisqualifyAgainst(rare, base);
  EXPECT_FALSE(rare.disqualified);

  TuneMeasurement none = Visit(0, 0, {}, 0);
  DisqualifyAgainst(none, base);
  EXPECT_TRUE(none.disqualified);
}

TuneCandidate Cand(std::string spec, std::vector<double> cpp, bool disqualified = false) {
  TuneCandidate c;
  c.spec = std::move(spec);
  c.cycles_per_packet = std::move(cpp);
  c.packets_per_second.assign(c.cycles_per_packet.size(), 1e6);
  c.disqualified = disqualified;
  return c;
}

TEST(Tuner, ScoresByMedianWithHalfRangeSpreadAndRanksDisqualifiedLast) {
  std::vector<TuneCandidate> c = {Cand("magazine", {120, 100, 110}), Cand("headpool", {90, 95, 91}),
                                  Cand("lcache", {50, 50, 50}, /*disqualified=*/true),
                                  Cand("recycle+magazine", {})};
  ScoreAndRank(c);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].spec, "headpool");
  EXPECT_EQ(c[0].rank, 1u);
  EXPECT_DOUBLE_EQ(c[0].median_cycles_per_packet, 91);
  EXPECT_DOUBLE_EQ(c[0].spread, 2.5);
  EXPECT_EQ(c[1].spec, "magazine");
  EXPECT_EQ(c[1].rank, 2u);
  EXPECT_DOUBLE_EQ(c[1].median_cycles_per_packet, 110);
  EXPECT_DOUBLE_EQ(c[1].spread, 10);
  EXPECT_EQ(c[2].rank, 0u);  // disqualified, however fast
  EXPECT_EQ(c[3].rank, 0u);  // never measured
  std::vector<TuneCandidate> even = {Cand("magazine", {100, 110, 130, 120})};
  ScoreAndRank(even);
  EXPECT_DOUBLE_EQ(even[0].median_cycles_per_packet, 115);
}

TEST(Tuner, AppliesOnlyAWinBeyondTheSpread) {
  // headpool 91 +- 2.5 vs magazine 110 +- 10: a gain of 19 > 12.5.
  std::vector<TuneCandidate> c = {Cand("magazine", {120, 100, 110}),
                                  Cand("headpool", {90, 95, 91})};
  ScoreAndRank(c);
  TuneDecision d = Decide(c, "magazine", /*apply=*/true);
  EXPECT_EQ(d.outcome, TuneOutcome::kApplied);
  EXPECT_EQ(d.target, "headpool");
  d = Decide(c, "magazine", /*apply=*/false);
  EXPECT_EQ(d.outcome, TuneOutcome::kDryRun);
  EXPECT_EQ(d.target, "magazine");
  EXPECT_NE(d.reason.find("--apply would keep it"), std::string::npos) << d.reason;

  // headpool 100 +- 10 vs magazine 110 +- 10: a gain of 10, inside the spread of 20.
  c = {Cand("magazine", {120, 100, 110}), Cand("headpool", {90, 110, 100})};
  ScoreAndRank(c);
  d = Decide(c, "magazine", true);
  EXPECT_EQ(d.outcome, TuneOutcome::kKeptIncumbent);
  EXPECT_EQ(d.target, "magazine");
  EXPECT_NE(d.reason.find("not more than the spread"), std::string::npos) << d.reason;

  // The incumbent first: it stays.
  c = {Cand("magazine", {80, 81}), Cand("headpool", {90, 91})};
  ScoreAndRank(c);
  d = Decide(c, "magazine", true);
  EXPECT_EQ(d.outcome, TuneOutcome::kKeptIncumbent);
  EXPECT_NE(d.reason.find("ranked first"), std::string::npos) << d.reason;

  // An incumbent without a valid figure (disqualified) is not beaten: nothing is applied.
  c = {Cand("magazine", {80}, true), Cand("headpool", {90, 91})};
  c[0].disqualified_reason = "round 1: rx_nombuf grew by 3";
  ScoreAndRank(c);
  d = Decide(c, "magazine", true);
  EXPECT_EQ(d.outcome, TuneOutcome::kKeptIncumbent);
  EXPECT_EQ(d.target, "magazine");
  EXPECT_NE(d.reason.find("no valid figure"), std::string::npos) << d.reason;
}

}  // namespace
}  // namespace skbnf::control
