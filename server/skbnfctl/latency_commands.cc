// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl latency, skbnfctl latency set, and the latency lines of `stats` / `top`: the sampled
// packets' latency per core and RX port (Stats' CoreStats.latency), the poll loop's iterations
// and its slow iterations (CoreStats.iterations), the settings (SetLatency). Percentiles are
// the server's (an HDR bucket's upper bound, at most 6.25 % high).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {
namespace {

// 850ns, 12.3us, 1.20ms, 2.5s
std::string HumanNs(uint64_t ns) {
  if (ns < 1000) return absl::StrCat(ns, "ns");
  if (ns < 1000000) return absl::StrFormat("%.1fus", static_cast<double>(ns) / 1e3);
  if (ns < 1000000000) return absl::StrFormat("%.2fms", static_cast<double>(ns) / 1e6);
  return absl::StrFormat("%.2fs", static_cast<double>(ns) / 1e9);
}

std::string Bin(const v1::IterationBin& b, bool ns) {
  auto v = [&](uint64_t x) { return ns ? HumanNs(x) : absl::StrCat(x); };
  if (b.high() == UINT64_MAX) return absl::StrCat(v(b.low()), "+");
  if (!ns && b.low() == b.high()) return v(b.low());
  return ns ? absl::StrCat("<", v(b.high())) : absl::StrCat(v(b.low()), "-", v(b.high()));
}

void PrintSlow(const v1::Stats& s, const v1::CoreStats& c, size_t last) {
  const v1::IterationStats& it = c.iterations();
  const int n = it.slow_size();
  for (int i = n > static_cast<int>(last) ? n - static_cast<int>(last) : 0; i < n; ++i) {
    const v1::SlowIteration& x = it.slow(i);
    const double ago = s.monotonic_ns() > x.monotonic_ns()
                           ? static_cast<double>(s.monotonic_ns() - x.monotonic_ns()) / 1e9
                           : 0;
    std::cout << "  core " << c.core() << ": " << HumanNs(x.duration_ns()) << ", " << x.packets()
              << " packets, " << absl::StrJoin(x.causes(), ",") << " ("
              << absl::StrFormat("%.1f", ago) << " s ago)\n";
  }
}

}  // namespace

// The latency lines of stats/top: one row per core and RX port with samples; over the window
// when it has samples (top), since start otherwise.
void Client::PrintLatency(const v1::Stats& s) const {
  if (!s.has_latency_settings()) return;
  const v1::LatencySettings& ls = s.latency_settings();
  std::cout << "latency (1 in " << ls.sample_every() << " RX bursts"
            << (ls.sample_every() == 0 ? ": off" : "") << "; slow iterations over "
            << ls.slow_iteration_us() << " us):\n";
  Table t({"CORE", "PORT", "OVER", "SAMPLES", "P50", "P99", "P99.9", "MAX", "SLOW_ITER"});
  for (const v1::CoreStats& c : s.cores()) {
    for (const v1::PortLatency& p : c.latency()) {
      const bool window = p.has_window() && p.window().samples() > 0;
      const v1::LatencyPercentiles& q = window ? p.window() : p.total();
      t.Add({absl::StrCat(c.core()), absl::StrCat(p.port()), window ? "window" : "total",
             absl::StrCat(q.samples()), HumanNs(q.p50_ns()), HumanNs(q.p99_ns()),
             HumanNs(q.p999_ns()), HumanNs(q.max_ns()),
             absl::StrCat(c.iterations().slow_iterations())});
    }
  }
  t.Print(std::cout, "  ");
  for (const v1::CoreStats& c : s.cores()) PrintSlow(s, c, 3);
}

absl::StatusOr<int> Client::Latency(const std::vector<std::string>& p) {
  if (p.size() == 2 && p[1] == "set") {
    v1::SetLatencyRequest req;
    if (args_.Has("sample_every")) {
      absl::StatusOr<uint32_t> v = ParseUint("--sample-every", args_.Get("sample_every"));
      if (!v.ok()) return v.status();
      req.set_sample_every(*v);
    }
    if (args_.Has("slow_iteration_us")) {
      absl::StatusOr<uint32_t> v = ParseUint("--slow-iteration-us", args_.Get("slow_iteration_us"));
      if (!v.ok()) return v.status();
      req.set_slow_iteration_us(*v);
    }
    if (!req.has_sample_every() && !req.has_slow_iteration_us()) {
      return CommandUsage("latency set [--sample-every=N] [--slow-iteration-us=US]");
    }
    v1::SetLatencyResponse r;
    grpc::Status st = stub_->SetLatency(Ctx().get(), req, &r);
    if (!st.ok()) return Fail(st);
    if (json_) return Json(r), 0;
    std::cout << "latency: 1 in " << r.settings().sample_every() << " RX bursts"
              << (r.settings().sample_every() == 0 ? " (off)" : "") << ", slow iterations over "
              << r.settings().slow_iteration_us() << " us\n";
    return 0;
  }
  if (p.size() != 1)
    return CommandUsage("latency | latency set [--sample-every=N] [--slow-iteration-us=US]");
  v1::GetStatsRequest req;
  v1::Stats s;
  grpc::Status st = stub_->GetStats(Ctx().get(), req, &s);
  if (!st.ok()) return Fail(st);
  if (json_) return Json(s), 0;
  if (!s.has_latency_settings()) {
    std::cout << "this data plane records no packet latency\n";
    return 0;
  }
  PrintLatency(s);
  for (const v1::CoreStats& c : s.cores()) {
    const v1::IterationStats& it = c.iterations();
    std::cout << "core " << c.core() << ": " << it.iterations() << " iterations, "
              << it.slow_iterations() << " slow\n";
    Table t({"PACKETS", "ITERATIONS"});
    for (const v1::IterationBin& b : it.by_packets()) {
      t.Add({Bin(b, false), absl::StrCat(b.iterations())});
    }
    t.Print(std::cout, "  ");
    Table d({"DURATION", "ITERATIONS"});
    for (const v1::IterationBin& b : it.by_duration_ns()) {
      d.Add({Bin(b, true), absl::StrCat(b.iterations())});
    }
    d.Print(std::cout, "  ");
    std::cout << "  slow iterations (last " << it.slow_size() << "):\n";
    PrintSlow(s, c, static_cast<size_t>(it.slow_size()));
  }
  return 0;
}

}  // namespace skbnf::ctl
