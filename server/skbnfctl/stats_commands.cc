// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl stats, skbnfctl top: per-core counters and rates (GetStats, WatchStats). CYC/PKT is
// the worker's cycles per packet over the window (busy TSC cycles / packets; `-`: no packet).
#include <unistd.h>

#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/rates.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {

using control::HumanRate;

void Client::PrintStats(const v1::Stats& s) const {
  std::cout << "strategy " << s.spec() << " (epoch " << s.epoch() << ")  rates over "
            << absl::StrFormat("%.2f", s.window_seconds()) << " s\n";
  Table t({"CORE", "LCORE", "STATE", "RX_PPS", "TX_PPS", "RX_PKTS", "TX_PKTS", "DROPS", "NOMBUF",
           "BUSY", "CYC/PKT", "ALLOC/S", "FREE/S", "FAILS"});
  for (const v1::CoreStats& c : s.cores()) {
    uint64_t rx = 0, tx = 0, drops = 0, nombuf = 0;
    for (const v1::PortStats& p : c.ports()) {
      rx += p.rx_packets();
      tx += p.tx_packets();
      nombuf += p.rx_nombuf();
      for (const v1::DropCount& d : p.drops()) drops += d.packets();
    }
    t.Add({absl::StrCat(c.core()), absl::StrCat(c.lcore()), c.paused() ? "paused" : "running",
           HumanRate(c.rx_pps()), HumanRate(c.tx_pps()), absl::StrCat(rx), absl::StrCat(tx),
           absl::StrCat(drops), absl::StrCat(nombuf),
           absl::StrFormat("%.0f%%", 100 * c.busy_ratio()),
           c.cycles_per_packet() > 0 ? absl::StrFormat("%.1f", c.cycles_per_packet()) : "-",
           HumanRate(c.pool().host_allocs_per_second()),
           HumanRate(c.pool().host_frees_per_second()), absl::StrCat(c.pool().alloc_failures())});
  }
  t.Print(std::cout);
  // Where the buffers are: in each port's rings, where the PMD tells.
  for (const v1::PortRingMbufs& r : s.port_rings()) {
    std::cout << "port " << r.port() << " " << r.name() << " ring mbufs: rx " << r.rx_mbufs()
              << " tx " << r.tx_mbufs() << " (" << r.source() << ")\n";
  }
  std::cout << "per-layer allocs (hit/miss) per core:\n";
  Table l(
      {"CORE", "LAYER", "OBJECTS", "ALLOC_HIT", "ALLOC_MISS", "FREE_HIT", "FREE_MISS", "ALLOC/S"});
  for (const v1::CoreStats& c : s.cores()) {
    for (const v1::LayerStats& ls : c.pool().layers()) {
      if (ls.alloc_hits() + ls.alloc_misses() + ls.free_hits() + ls.free_misses() == 0) continue;
      l.Add({absl::StrCat(c.core()), LayerName(ls.layer()), absl::StrCat(ls.objects()),
             absl::StrCat(ls.alloc_hits()), absl::StrCat(ls.alloc_misses()),
             absl::StrCat(ls.free_hits()), absl::StrCat(ls.free_misses()),
             HumanRate(ls.allocs_per_second())});
    }
  }
  l.Print(std::cout, "  ");
  const v1::PoolObjects& po = s.pool();
  std::cout << "pool: " << po.populated() << " objects: store " << po.in_store() << ", depots "
            << po.in_depots();
  for (const v1::LayerObjectCount& lo : po.in_layers()) {
    std::cout << ", " << LayerName(lo.layer()) << " " << lo.objects();
  }
  std::cout << ", in flight " << po.in_flight() << "\n";
  PrintLatency(s);
}

// skbnfctl buffers: where every object of the pool is (skbnf.v1 BufferPlaces).
void Client::PrintBuffers(const v1::BufferPlaces& b) const {
  std::cout << "pool: " << b.populated() << " objects, "
            << (b.exact() ? "exact (the workers parked for an audit)"
                          : "read while the workers run (a figure may be off by a burst; "
                            "--exact parks them)")
            << "\n";
  Table t({"PLACE", "WHERE", "OBJECTS"});
  t.Add({"store", "-", absl::StrCat(b.in_store())});
  for (const v1::CoreBuffers& c : b.cores()) {
    for (const v1::LayerObjectCount& l : c.in_layers()) {
      if (l.objects() != 0) {
        t.Add({"layer " + LayerName(l.layer()), absl::StrCat("core ", c.core()),
               absl::StrCat(l.objects())});
      }
    }
  }
  if (b.cores().empty() || b.exact()) {
    for (const v1::LayerObjectCount& l : b.in_layers()) {
      if (l.objects() != 0) {
        t.Add({"layer " + LayerName(l.layer()), "all cores", absl::StrCat(l.objects())});
      }
    }
  }
  t.Add({"depots", "-", absl::StrCat(b.in_depots())});
  for (const v1::PortBuffers& p : b.ports()) {
    const std::string where = absl::StrCat("port ", p.port(), " ", p.name());
    const std::string pmd_rx =
        p.has_pmd_rx() ? absl::StrCat(" (", p.pmd_source(), ": ", p.pmd_rx(), ")") : "";
    const std::string pmd_tx =
        p.has_pmd_tx() ? absl::StrCat(" (", p.pmd_source(), ": ", p.pmd_tx(), ")") : "";
    t.Add({"rx ring", where, absl::StrCat(p.rx_ring(), pmd_rx)});
    t.Add({"tx ring", where, absl::StrCat(p.tx_ring(), pmd_tx)});
  }
  for (const v1::CoreBuffers& c : b.cores()) {
    t.Add({"worker's hands", absl::StrCat("core ", c.core()), absl::StrCat(c.in_hands())});
  }
  t.Add({"other threads", "-", absl::StrCat(b.other_threads())});
  t.Add({"unaccounted", "-", absl::StrCat(b.unaccounted())});
  t.Print(std::cout);
}

int Client::Buffers() {
  const bool exact = args_.Has("exact");
  std::optional<v1::BufferPlaces> places;  // unset: the data plane does not count them
  v1::AuditPoolResponse audit;             // exact only
  if (exact) {
    grpc::Status s = CallAudit(&audit);
    if (!s.ok()) return Fail(s);
    if (audit.has_buffers()) places = audit.buffers();
  } else {
    v1::Stats s;
    grpc::Status st = stub_->GetStats(Ctx().get(), v1::GetStatsRequest(), &s);
    if (!st.ok()) return Fail(st);
    if (s.has_buffers()) places = s.buffers();
  }
  if (!places.has_value()) {
    std::cerr << "skbnfctl: this data plane does not count where its buffers are (DPDK's "
                 "native mempool)\n";
    return 1;
  }
  const v1::BufferPlaces& b = *places;
  // Exact: the audit failed, or something is unaccounted.
  const bool failed = exact && (!audit.ok() || b.unaccounted() != 0);
  if (exact && !audit.ok()) std::cerr << "skbnfctl: the audit failed: " << audit.message() << "\n";
  if (json_) {
    Json(b);
  } else {
    PrintBuffers(b);
  }
  return failed ? 1 : 0;
}

namespace {

std::string SiteText(const v1::AllocationSite& s) {
  std::string out = s.site();
  if (s.has_core()) absl::StrAppend(&out, " core ", s.core());
  if (s.has_rx_port()) absl::StrAppend(&out, " port ", s.rx_port());
  return out;
}

// Objects in `b` older than `seconds` (a bound of the census's buckets).
uint64_t OlderThan(const v1::SiteAges& s, double seconds) {
  for (const v1::AgeBucket& b : s.buckets()) {
    if (b.le_seconds() == seconds) return s.objects() - b.objects();
  }
  return 0;
}

std::string Seconds(double s) {
  return s < 1 ? absl::StrFormat("%.1f ms", s * 1e3) : absl::StrFormat("%.1f s", s);
}

}  // namespace

// skbnfctl buffers --ages: since when, and who took it (skbnf.v1 GetBufferAges).
absl::StatusOr<int> Client::BufferAges() {
  v1::GetBufferAgesRequest req;
  const bool older = args_.Has("older_than");
  absl::StatusOr<uint32_t> oldest = ParseUint("--oldest", args_.Get("oldest", older ? "1000" : "10"));
  if (!oldest.ok()) return oldest.status();
  req.set_oldest(*oldest);
  if (older) {
    absl::StatusOr<uint32_t> ms = ParseDuration("older-than", args_.Get("older_than"));
    if (!ms.ok()) return ms.status();
    req.set_older_than_ms(*ms);
  }
  v1::BufferAges r;
  grpc::Status st = stub_->GetBufferAges(Ctx().get(), req, &r);
  if (!st.ok()) return Fail(st);
  if (json_) return Json(r), 0;
  const auto age_ms = absl::ToInt64Milliseconds(absl::Now() - absl::FromUnixMillis(r.taken_unix_ms()));
  std::cout << "census " << age_ms << " ms ago (every " << r.census_every_ms() << " ms, took "
            << r.census_us() << " us): " << r.in_flight() << " of " << r.populated()
            << " objects in flight, " << r.tracked() << " tracked, " << r.untracked()
            << " untracked (out since before tracking began)\n";
  if (!r.unanswered_cores().empty()) {
    std::cout << "cores that did not flush in time (their layers count as in flight): "
              << absl::StrJoin(r.unanswered_cores(), ",") << "\n";
  }
  Table t({"SITE", "OBJECTS", "MEAN", "MAX", ">1s", ">60s", ">300s", ">1h"});
  for (const v1::SiteAges& s : r.sites()) {
    t.Add({SiteText(s.site()), absl::StrCat(s.objects()),
           Seconds(s.objects() != 0 ? s.sum_seconds() / static_cast<double>(s.objects()) : 0),
           Seconds(s.max_seconds()), absl::StrCat(OlderThan(s, 1)), absl::StrCat(OlderThan(s, 60)),
           absl::StrCat(OlderThan(s, 300)), absl::StrCat(OlderThan(s, 3600))});
  }
  t.Print(std::cout);
  if (!r.oldest().empty()) {
    std::cout << "oldest" << (older ? absl::StrCat(" (at least ", args_.Get("older_than"), ")") : "")
              << ":\n";
    Table o({"AGE", "SITE", "ADDRESS"});
    for (const v1::AgedBuffer& b : r.oldest()) {
      o.Add({Seconds(b.age_seconds()), SiteText(b.site()), absl::StrFormat("0x%x", b.address())});
    }
    o.Print(std::cout, "  ");
  }
  return 0;
}

absl::StatusOr<int> Client::Stats(bool top) {
  std::vector<uint32_t> cores;
  for (const std::string& c : args_.cores) {
    absl::StatusOr<uint32_t> core = ParseUint("--core", c);
    if (!core.ok()) return core.status();
    cores.push_back(*core);
  }
  if (!top) {
    v1::GetStatsRequest req;
    for (uint32_t c : cores) req.add_cores(c);
    v1::Stats r;
    grpc::Status s = stub_->GetStats(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    PrintStats(r);
    return 0;
  }
  absl::StatusOr<uint32_t> interval = ParseUint("--interval", args_.Get("interval", "1000"));
  if (!interval.ok()) return interval.status();
  absl::StatusOr<uint32_t> count = ParseUint("--count", args_.Get("count", "0"));
  if (!count.ok()) return count.status();
  v1::WatchStatsRequest req;
  req.set_interval_ms(*interval);
  req.set_max_updates(*count);
  for (uint32_t c : cores) req.add_cores(c);
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<v1::Stats>> reader = stub_->WatchStats(&ctx, req);
  v1::Stats st;
  const bool tty = isatty(STDOUT_FILENO);
  while (reader->Read(&st)) {
    if (json_) {
      Json(st, true);
    } else {
      if (tty) std::cout << "\033[H\033[2J";  // home + clear, like top
      PrintStats(st);
    }
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  return s.ok() ? 0 : Fail(s);
}

}  // namespace skbnf::ctl
