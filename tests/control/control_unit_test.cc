// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the control plane's pure parts: listener classification (a security decision),
// prefix/MAC text forms, the structured strategy form, swap metrics, rate windows, and the live
// tuner's disqualification, scoring and decision on synthetic figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <thread>

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
#include "skbnf/v1/control.grpc.pb.h"
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

// Roles (access.h): what each transport's proven identity gets, and the denial text.
Caller TcpCaller(const char* peer) {
  Caller c;
  c.peer = peer;
  c.transport = Caller::Transport::kTcp;
  c.loopback = IsLoopbackPeer(peer);
  return c;
}
Caller CertCaller(std::vector<std::string> dns, std::vector<std::string> uri) {
  Caller c = TcpCaller("ipv4:192.0.2.1:5");
  c.verified_cert = true;
  c.dns_names = std::move(dns);
  c.uri_names = std::move(uri);
  c.common_name = "ops";
  return c;
}
Caller UnixCaller(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {},
                  bool path = true) {
  Caller c;
  c.peer = "fd:12";
  c.transport = Caller::Transport::kUnix;
  c.cred = PeerCredentials{42, uid, gid, std::move(groups), path};
  return c;
}

TEST(Access, RolesFromProvenIdentitiesOnly) {
  absl::StatusOr<std::vector<RoleBinding>> roles = ParseRoles(
      "dns:Ops.Example=operate, uri:spiffe://c/ns/mon/sa/prom=read,uid:1001=read,gid:2000=admin");
  ASSERT_TRUE(roles.ok()) << roles.status();
  AccessPolicy p;
  p.roles = *roles;
  p.owner_uid = 1000;
  auto role = [&](Caller c) {
    ResolveRole(p, c);
    return c.role;
  };
  EXPECT_EQ(role(TcpCaller("ipv4:127.0.0.1:5")), Role::kNone) << "loopback grants nothing";
  EXPECT_EQ(role(TcpCaller("ipv4:192.0.2.1:5")), Role::kNone);
  EXPECT_EQ(role(CertCaller({"ops.example"}, {})), Role::kOperate) << "DNS names: any case";
  EXPECT_EQ(role(CertCaller({}, {"spiffe://c/ns/mon/sa/prom"})), Role::kRead);
  EXPECT_EQ(role(CertCaller({"x.example"}, {})), Role::kNone) << "the CA alone grants nothing";
  Caller unverified = CertCaller({"ops.example"}, {});
  unverified.verified_cert = false;
  EXPECT_EQ(role(unverified), Role::kNone);
  EXPECT_EQ(role(UnixCaller(1000, 1000)), Role::kAdmin) << "skbnfd's own uid";
  EXPECT_EQ(role(UnixCaller(1000, 1000, {}, false)), Role::kNone) << "abstract: no owner rule";
  EXPECT_EQ(role(UnixCaller(1001, 1001)), Role::kRead);
  EXPECT_EQ(role(UnixCaller(1002, 1002)), Role::kNone);
  EXPECT_EQ(role(UnixCaller(1002, 2000)), Role::kAdmin) << "primary gid";
  EXPECT_EQ(role(UnixCaller(1001, 1001, {5, 2000})), Role::kAdmin) << "highest of the matches";
  p.roles.push_back(RoleBinding{RoleBinding::Kind::kUid, "", 1000, Role::kRead});
  EXPECT_EQ(role(UnixCaller(1000, 1000)), Role::kRead) << "--roles names the owner: it wins";
  p.loopback_role = Role::kOperate;
  EXPECT_EQ(role(TcpCaller("ipv6:[::1]:5")), Role::kOperate);
  EXPECT_EQ(role(TcpCaller("ipv4:10.0.0.1:5")), Role::kNone);
}

TEST(Access, RequiredRolesAndDenial) {
  EXPECT_EQ(RequiredRole("GetStats"), Role::kRead);
  EXPECT_EQ(RequiredRole("SetStrategy", true), Role::kRead);
  EXPECT_EQ(RequiredRole("SetStrategy"), Role::kOperate);
  EXPECT_EQ(RequiredRole("PauseWorker"), Role::kOperate);
  EXPECT_EQ(RequiredRole("AddRoute"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("SomethingNew"), Role::kAdmin) << "fails closed";
  // Every method of the service has its line (a new RPC cannot slip through as admin-only
  // by accident without the table saying so).
  const google::protobuf::ServiceDescriptor* svc =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Control::service_full_name());
  ASSERT_NE(svc, nullptr);
  std::vector<std::string> known = KnownRpcs();
  for (int i = 0; i < svc->method_count(); ++i) {
    EXPECT_NE(std::find(known.begin(), known.end(), svc->method(i)->name()), known.end())
        << svc->method(i)->name();
  }
  EXPECT_EQ(known.size(), static_cast<size_t>(svc->method_count()));
  Caller reader = UnixCaller(1000, 1000);
  reader.role = Role::kRead;
  grpc::Status s = Authorize(reader, "SetStrategy", Role::kOperate);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("SetStrategy needs role operate (caller uid:1000 has read)"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(Authorize(reader, "GetInfo", Role::kRead).ok());
  grpc::Status l = Authorize(TcpCaller("ipv4:127.0.0.1:5"), "GetInfo", Role::kRead);
  EXPECT_NE(l.error_message().find("--loopback-role"), std::string::npos) << l.error_message();
  EXPECT_EQ(UnixCaller(7, 8).ClientKey(), "uid:7");
  EXPECT_EQ(TcpCaller("ipv4:127.0.0.2:9").ClientKey(), "loopback") << "not per address";
}

TEST(Access, RolesFlagRefusals) {
  for (const char* bad : {"uid:1000", "uid:x=admin", "uid:-1=read", "dns:=read", "uri:noscheme=read",
                          "host:a=read", "uid:1=root", "uid:1=read,uid:1=admin", "dns:a b=read"}) {
    absl::StatusOr<std::vector<RoleBinding>> r = ParseRoles(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--roles"), absl::string_view::npos) << r.status();
  }
  EXPECT_TRUE(ParseRoles("").ok());
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

TEST(ChangeLog, BeginEndJsonLinesEscapedBoundedAndCounted) {
  ChangeLog log;
  Caller who = TcpCaller("ipv4:127.0.0.1:9");
  who.role = Role::kAdmin;
  ::testing::internal::CaptureStderr();
  const std::string what = "a\"b\nc\x1b[31m" + std::string(1000, 'x');
  log.End(log.Begin(who, "SetStrategy", what), who, "SetStrategy", what, "ok", "");
  log.End(log.Begin(who, "SetStrategy", "magazine"), who, "SetStrategy", "magazine",
          "invalid_argument", "spec: bad");
  const Caller console = Mutations::InProcessCaller(ChangeSource::kConsole);
  log.End(log.Begin(console, "SetStrategy", "a -> b", "console"), console, "SetStrategy",
          "a -> b", "rolled_back", "core 1 late", "console");
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 6) << out;
  EXPECT_NE(out.find(R"("what":"a\"b\u000ac\u001b[31mxxx)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"x(...(1010 bytes)")x"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("event":"begin","rpc":"SetStrategy","source":"rpc","who":"loopback 127.0.0.1")"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"("result":"invalid_argument","what":"magazine","detail":"spec: bad"})"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"("event":"end","rpc":"SetStrategy","source":"console","who":"local:console")"),
            std::string::npos)
      << out;
  EXPECT_EQ(log.Count("SetStrategy", "ok"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "invalid_argument"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "rolled_back", "console"), 1u);
  EXPECT_EQ(log.Count("SetStrategy", "rolled_back", "rpc"), 0u);
  EXPECT_EQ(ResultLabel(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "")),
            "permission_denied");
}

// A flood of refusals: every one counted, one line per identity and RPC per second, with the
// number not written.
TEST(ChangeLog, DenialsThrottledWithCounts) {
  ChangeLog log;
  const Caller c = UnixCaller(1001, 1001);
  const grpc::Status no(grpc::StatusCode::PERMISSION_DENIED, "AddRoute needs role admin");
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 1000; ++i) log.Denied(c, "AddRoute", Role::kAdmin, no);
  log.Denied(c, "DeleteRoute", Role::kAdmin, no);
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(log.Count("AddRoute", "permission_denied"), 1000u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the throttle's period
  ::testing::internal::CaptureStderr();
  log.Denied(c, "AddRoute", Role::kAdmin, no);
  out = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find(R"("needs":"admin","result":"permission_denied","suppressed":999)"),
            std::string::npos)
      << out;
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
      if (spec.Has(pool::Layer::kMagazine)) spec.Tunable(pool::Layer::kMagazine) = 8 + mask;
      if (spec.Has(pool::Layer::kHeadPool)) spec.Tunable(pool::Layer::kHeadPool) = 64 + mask;
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
