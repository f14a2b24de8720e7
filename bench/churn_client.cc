// SPDX-License-Identifier: BSD-3-Clause
// churn_client: the control-plane load of the hour of churn (issue 34 item 6; bench/churn.sh),
// one process, one channel per activity, until --seconds have passed or SIGTERM:
//   routes   --route-ops-per-second (100) AddRoute/DeleteRoute, alternating, of /32 routes under
//            --route-base (default 10.1.0.0: more-specific routes over the traffic's own
//            destinations, to the same next hop, so that no frame may be lost to them), each
//            prefix deleted after it was added; at most --route-set prefixes exist at once
//   watchers --watchers (8) WatchStats streams at --watch-interval-ms (1000), each reopened when
//            the server ends it (it never should)
//   swaps    SetStrategy every --swap-every-s (10) seconds through --specs (';'-separated)
// Paced by absolute deadlines (no drift). Prints one JSON line at the end: counts of every
// call by outcome, and the first error text of each activity. Exit 0 when no call failed.
//
//   churn_client --addr=unix:/path --next-hop-port=1 --next-hop-mac=aa:.. [--seconds=3600] ...
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

using Clock = std::chrono::steady_clock;

struct Options {
  std::string addr;
  double seconds = 3600;
  int route_ops_per_second = 100;
  int route_set = 64;
  std::string route_base = "10.1.0.0";
  uint32_t next_hop_port = 1;
  std::string next_hop_mac;
  int watchers = 8;
  uint32_t watch_interval_ms = 1000;
  double swap_every_s = 10;
  std::vector<std::string> specs = {"headpool", "recycle+magazine", "magazine",
                                    "recycle+headpool", "lcache:size=64+magazine"};
};

struct Counts {
  std::mutex mu;
  uint64_t route_ok = 0, route_failed = 0, watch_updates = 0, watch_reopened = 0,
           watch_unavailable = 0, watch_retried = 0,
           swap_ok = 0, swap_failed = 0;
  std::string first_route_error, first_watch_error, first_swap_error, last_watch_unavailable;
  void Error(std::string& slot, const std::string& what) {
    std::lock_guard<std::mutex> l(mu);
    if (slot.empty()) slot = what;
  }
};

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n') ? ' ' : c;
  }
  return out + "\"";
}

bool Parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](absl::string_view key) -> const char* {
      return absl::StartsWith(a, key) ? a.c_str() + key.size() : nullptr;
    };
    const char* v = nullptr;
    bool ok = true;
    if ((v = val("--addr="))) {
      o.addr = v;
    } else if ((v = val("--seconds="))) {
      ok = absl::SimpleAtod(v, &o.seconds) && o.seconds > 0;
    } else if ((v = val("--route-ops-per-second="))) {
      ok = absl::SimpleAtoi(v, &o.route_ops_per_second) && o.route_ops_per_second >= 0;
    } else if ((v = val("--route-set="))) {
      ok = absl::SimpleAtoi(v, &o.route_set) && o.route_set > 0 && o.route_set <= 65536;
    } else if ((v = val("--route-base="))) {
      o.route_base = v;
    } else if ((v = val("--next-hop-port="))) {
      ok = absl::SimpleAtoi(v, &o.next_hop_port);
    } else if ((v = val("--next-hop-mac="))) {
      o.next_hop_mac = v;
    } else if ((v = val("--watchers="))) {
      ok = absl::SimpleAtoi(v, &o.watchers) && o.watchers >= 0;
    } else if ((v = val("--watch-interval-ms="))) {
      ok = absl::SimpleAtoi(v, &o.watch_interval_ms);
    } else if ((v = val("--swap-every-s="))) {
      ok = absl::SimpleAtod(v, &o.swap_every_s) && o.swap_every_s >= 0;
    } else if ((v = val("--specs="))) {
      o.specs = absl::StrSplit(v, ';', absl::SkipEmpty());
    } else {
      std::cerr << "churn_client: unknown argument " << a << "\n";
      return false;
    }
    if (!ok) {
      std::cerr << "churn_client: bad value in " << a << "\n";
      return false;
    }
  }
  if (o.addr.empty() || o.next_hop_mac.empty()) {
    std::cerr << "usage: churn_client --addr=ADDR --next-hop-mac=MAC [--next-hop-port=1] "
                 "[--seconds=3600] [--route-ops-per-second=100] [--watchers=8] "
                 "[--swap-every-s=10] [--specs=a;b]\n";
    return false;
  }
  return true;
}

std::unique_ptr<skbnf::v1::Control::Stub> Stub(const Options& o) {
  return skbnf::v1::Control::NewStub(
      grpc::CreateChannel(o.addr, grpc::InsecureChannelCredentials()));
}

std::string Prefix(const std::string& base, int i) {
  std::vector<std::string> p = absl::StrSplit(base, '.');
  int b2 = 0, b3 = 0;
  if (p.size() != 4 || !absl::SimpleAtoi(p[2], &b2) || !absl::SimpleAtoi(p[3], &b3)) return "";
  const int v = b2 * 256 + b3 + i;
  return absl::StrCat(p[0], ".", p[1], ".", (v / 256) % 256, ".", v % 256, "/32");
}

void Routes(const Options& o, Clock::time_point end, Counts& c) {
  if (o.route_ops_per_second == 0) return;
  auto stub = Stub(o);
  const auto step = std::chrono::nanoseconds(1000000000LL / o.route_ops_per_second);
  auto next = Clock::now();
  // Op k: add of prefix k/2 (k even) or its delete (k odd): at most one extra route at a time
  // beyond those in flight, prefixes cycling through --route-set.
  for (uint64_t k = 0; !g_stop.load() && Clock::now() < end; ++k) {
    const std::string prefix = Prefix(o.route_base, static_cast<int>((k / 2) % o.route_set));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status s;
    if (k % 2 == 0) {
      skbnf::v1::AddRouteRequest req;
      req.set_prefix(prefix);
      req.mutable_next_hop()->set_port(o.next_hop_port);
      req.mutable_next_hop()->set_dst_mac(o.next_hop_mac);
      skbnf::v1::AddRouteResponse resp;
      s = stub->AddRoute(&ctx, req, &resp);
    } else {
      skbnf::v1::DeleteRouteRequest req;
      req.set_prefix(prefix);
      skbnf::v1::DeleteRouteResponse resp;
      s = stub->DeleteRoute(&ctx, req, &resp);
    }
    {
      std::lock_guard<std::mutex> l(c.mu);
      (s.ok() ? c.route_ok : c.route_failed)++;
    }
    if (!s.ok()) c.Error(c.first_route_error, absl::StrCat(prefix, ": ", s.error_message()));
    next += step;
    std::this_thread::sleep_until(next);
  }
}

void Watcher(const Options& o, Clock::time_point end, Counts& c) {
  auto stub = Stub(o);
  bool first = true;
  Clock::time_point last_unavailable{};
  while (!g_stop.load() && Clock::now() < end) {
    if (!first) {
      std::lock_guard<std::mutex> l(c.mu);
      ++c.watch_reopened;
    }
    first = false;
    grpc::ClientContext ctx;
    const auto left = end - Clock::now();
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
    skbnf::v1::WatchStatsRequest req;
    req.set_interval_ms(o.watch_interval_ms);
    auto reader = stub->WatchStats(&ctx, req);
    skbnf::v1::Stats st;
    while (reader->Read(&st)) {
      std::lock_guard<std::mutex> l(c.mu);
      ++c.watch_updates;
      if (g_stop.load()) ctx.TryCancel();
    }
    grpc::Status s = reader->Finish();
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        Clock::now() - last_unavailable < std::chrono::seconds(5)) {
      // Just after a stream was cut by the connection age, the server may still count it
      // against this identity's streams until its handler sees the cut (at the next interval):
      // back off and open again, as a client does with RESOURCE_EXHAUSTED.
      {
        std::lock_guard<std::mutex> l(c.mu);
        ++c.watch_retried;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      last_unavailable = Clock::now();
      // The server's connection age (--grpc-max-connection-age, 1800 s, then GOAWAY and 60 s of
      // grace: server/control/limits.h) ends a stream older than that: a client reconnects and
      // opens it again, as this loop does. Counted, not an error; the next stream's updates show
      // the reconnect worked (a server that is gone fails the routes' and swaps' calls too).
      std::lock_guard<std::mutex> l(c.mu);
      ++c.watch_unavailable;
      c.last_watch_unavailable = s.error_message();
    } else if (!s.ok() && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
               s.error_code() != grpc::StatusCode::CANCELLED) {
      c.Error(c.first_watch_error, s.error_message());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

void Swaps(const Options& o, Clock::time_point end, Counts& c) {
  if (o.swap_every_s <= 0 || o.specs.empty()) return;
  auto stub = Stub(o);
  const auto step = std::chrono::nanoseconds(static_cast<int64_t>(o.swap_every_s * 1e9));
  auto next = Clock::now() + step;
  for (size_t k = 0; !g_stop.load(); ++k) {
    while (!g_stop.load() && Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (g_stop.load() || Clock::now() >= end) return;
    next += step;
    skbnf::v1::SetStrategyRequest req;
    req.set_spec(o.specs[k % o.specs.size()]);
    req.set_quiesce_timeout_ms(5000);
    skbnf::v1::SetStrategyResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status s = stub->SetStrategy(&ctx, req, &resp);
    const bool ok = s.ok() && resp.report().ok();
    {
      std::lock_guard<std::mutex> l(c.mu);
      (ok ? c.swap_ok : c.swap_failed)++;
    }
    if (!ok) {
      c.Error(c.first_swap_error,
              absl::StrCat(req.spec(), ": ", s.ok() ? resp.report().error() : s.error_message()));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, o)) return 2;
  std::signal(SIGTERM, &OnSignal);
  std::signal(SIGINT, &OnSignal);
  const auto end = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(o.seconds * 1e9));
  Counts c;
  std::vector<std::thread> threads(static_cast<size_t>(o.watchers) + 2);
  threads[0] = std::thread([&] { Routes(o, end, c); });
  threads[1] = std::thread([&] { Swaps(o, end, c); });
  for (size_t i = 2; i < threads.size(); ++i) threads[i] = std::thread([&] { Watcher(o, end, c); });
  // A stop request ends the streams too: their deadline is the end of the run otherwise.
  std::thread stopper([&] {
    while (!g_stop.load() && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  stopper.join();
  g_stop.store(true);
  for (auto& t : threads) t.join();
  std::lock_guard<std::mutex> l(c.mu);
  std::printf(
      "{\"route_ok\":%llu,\"route_failed\":%llu,\"watch_updates\":%llu,\"watch_reopened\":%llu,"
      "\"watch_unavailable\":%llu,\"watch_retried\":%llu,\"swap_ok\":%llu,\"swap_failed\":%llu,"
      "\"first_route_error\":%s,\"first_watch_error\":%s,\"last_watch_unavailable\":%s,"
      "\"first_swap_error\":%s}\n",
      static_cast<unsigned long long>(c.route_ok), static_cast<unsigned long long>(c.route_failed),
      static_cast<unsigned long long>(c.watch_updates),
      static_cast<unsigned long long>(c.watch_reopened),
      static_cast<unsigned long long>(c.watch_unavailable),
      static_cast<unsigned long long>(c.watch_retried),
      static_cast<unsigned long long>(c.swap_ok), static_cast<unsigned long long>(c.swap_failed),
      Quote(c.first_route_error).c_str(), Quote(c.first_watch_error).c_str(),
      Quote(c.last_watch_unavailable).c_str(), Quote(c.first_swap_error).c_str());
  return (c.route_failed || c.swap_failed || !c.first_watch_error.empty()) ? 1 : 0;
}
