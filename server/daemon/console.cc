// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/console.h"

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/net_text.h"
#include "common/rates.h"
#include "dataplane/pool/strategy_spec.h"

ABSL_FLAG(double, stats, 1.0, "Seconds between per-worker console lines (0: none).");
ABSL_FLAG(double, duration, 0.0, "Stop after this many seconds (0: run until SIGINT/SIGTERM).");
ABSL_FLAG(std::string, swap_cycle, "",
          "Hot-swap the strategy while forwarding, cycling through these ';'-separated specs "
          "(e.g. 'headpool;recycle+headpool;magazine'), one swap every --swap-every seconds.");
ABSL_FLAG(double, swap_every, 5.0, "Seconds between the swaps of --swap-cycle.");

namespace skbnf::control {

absl::Status CheckSwapCycle(dpdk::PoolOps pool_ops) {
  for (absl::string_view spec :
       absl::StrSplit(absl::GetFlag(FLAGS_swap_cycle), ';', absl::SkipEmpty())) {
    if (pool_ops != dpdk::PoolOps::kSkbnf) {
      return absl::InvalidArgumentError(
          "--swap-cycle needs --pool-ops=skbnf: DPDK's ring_mp_mc pool cannot be swapped");
    }
    auto parsed = pool::StrategySpec::Parse(spec);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--swap-cycle: '", spec, "': ", parsed.status().message(),
                       "; write specs separated by ';', e.g. --swap-cycle='headpool;magazine'"));
    }
  }
  if (absl::GetFlag(FLAGS_swap_every) <= 0) {
    return absl::InvalidArgumentError("--swap-every must be > 0 seconds");
  }
  return absl::OkStatus();
}

Console::Console(const dpdk::Engine& engine)
    : engine_(engine),
      stats_s_(absl::GetFlag(FLAGS_stats)),
      duration_s_(absl::GetFlag(FLAGS_duration)),
      next_(t0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(stats_s_ > 0 ? stats_s_ : 1e9))),
      prev_(engine.Snapshot()) {}

void Console::PrintPorts() const {
  for (const dpdk::PortInfo& p : engine_.Ports()) {
    std::printf("port %d %s (%s) mac %s peer %d rxq %u txq %u%s rings %u/%u\n", p.id,
                p.name.c_str(), p.driver.c_str(), net::FormatMac(p.mac).c_str(), p.peer,
                p.rx_queues, p.tx_queues, p.tx_shared ? " (shared)" : "", p.rx_ring_size,
                p.tx_ring_size);
  }
}

void Console::PrintRunning() const {
  for (const dpdk::PortInfo& p : engine_.Ports()) {
    std::printf("port %d link %s %u Mbps\n", p.id,
                !p.has_link ? "unknown"
                : p.link_up ? "up"
                            : "down",
                p.link_speed_mbps);
  }
  std::printf("mode %s, pool %s, strategy %s, workers on lcores",
              ForwardingModeName(engine_.config().mode),
              dpdk::PoolOpsName(engine_.config().pool_ops), engine_.strategy().c_str());
  for (unsigned lc : engine_.WorkerLcores()) std::printf(" %u", lc);
  std::printf(", %zu routes\n", engine_.Routes().size());
  std::fflush(stdout);
}

bool Console::Tick() {
  const auto now = std::chrono::steady_clock::now();
  if (duration_s_ > 0 && now - t0_ >= std::chrono::duration<double>(duration_s_)) return false;
  if (stats_s_ <= 0 || now < next_) return true;
  next_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(stats_s_));
  dpdk::EngineSnapshot cur = engine_.Snapshot();
  const double dt = static_cast<double>(cur.monotonic_ns - prev_.monotonic_ns) / 1e9;
  for (size_t i = 0; i < cur.workers.size(); ++i) {
    const dpdk::WorkerSnapshot& a = prev_.workers[i];
    const dpdk::WorkerSnapshot& b = cur.workers[i];
    std::string pool =
        b.has_pool ? absl::StrCat("alloc/s ", HumanRate(Rate(b.pool.allocs, a.pool.allocs, dt)),
                                  " free/s ", HumanRate(Rate(b.pool.frees, a.pool.frees, dt)))
                   : "alloc/s - free/s -";
    const double cpp =
        CyclesPerPacket(b.busy_cycles, a.busy_cycles, b.busy_packets, a.busy_packets);
    const std::string cycles = cpp > 0 ? absl::StrFormat("%.1f", cpp) : "-";
    std::printf(
        "lcore %u: rx %s pps, tx %s pps, cycles/pkt %s, %s, drops/s %s, nombuf %lu%s, strategy "
        "%s\n",
        b.lcore, HumanRate(Rate(b.rx_packets, a.rx_packets, dt)).c_str(),
        HumanRate(Rate(b.tx_packets, a.tx_packets, dt)).c_str(), cycles.c_str(), pool.c_str(),
        HumanRate(Rate(b.dropped, a.dropped, dt)).c_str(), static_cast<unsigned long>(b.rx_nombuf),
        b.paused ? ", paused" : "", cur.strategy.c_str());
  }
  std::fflush(stdout);
  prev_ = std::move(cur);
  return true;
}

void Console::PrintSwap(const pool::SwapReport& rep) {
  std::string cores;
  for (const pool::CoreSwapResult& r : rep.cores) {
    absl::StrAppend(&cores, " lcore ", r.core, r.on_behalf ? " (parked)" : "", ": ",
                    r.acknowledged ? "ack" : "NO ACK", " ", r.quiesce_ns / 1000, " us, ",
                    r.objects_flushed, " flushed;");
  }
  std::printf("swap %s: %s -> %s, epoch %lu, %lu us;%s %lu from retired depots\n",
              rep.status.ok() ? "ok" : "FAILED", rep.old_spec.c_str(), rep.new_spec.c_str(),
              static_cast<unsigned long>(rep.epoch),
              static_cast<unsigned long>(rep.total_ns / 1000), cores.c_str(),
              static_cast<unsigned long>(rep.depot_drained));
  if (!rep.status.ok()) std::printf("  %s\n", std::string(rep.status.message()).c_str());
  std::fflush(stdout);
}

int Console::PrintSummary() const {
  const double secs = Seconds(std::chrono::steady_clock::now() - t0_);
  dpdk::EngineSnapshot last = engine_.Snapshot();
  uint64_t rx = 0, tx = 0, nombuf = 0;
  uint64_t drops[dpdk::kNumDropReasons] = {};
  for (const dpdk::WorkerSnapshot& w : last.workers) {
    rx += w.rx_packets;
    tx += w.tx_packets;
    nombuf += w.rx_nombuf;
    for (int r = 0; r < dpdk::kNumDropReasons; ++r) drops[r] += w.drops[r];
  }
  std::string d;
  for (int r = 0; r < dpdk::kNumDropReasons; ++r) {
    absl::StrAppend(&d, " ", dpdk::DropReasonName(r), "=", drops[r]);
  }
  const dpdk::AuditReport& audit = engine_.final_audit();
  std::string swaps = engine_.pool() != nullptr
                          ? absl::StrCat("swaps ok ", engine_.pool()->swaps_ok(), " failed ",
                                         engine_.pool()->swaps_failed())
                          : "swaps n/a";
  std::printf(
      "skbnfd: %.1f s, rx %lu, tx %lu, drops%s, rx_nombuf %lu, strategy %s, %s; audit %s (%s)\n",
      secs, static_cast<unsigned long>(rx), static_cast<unsigned long>(tx), d.c_str(),
      static_cast<unsigned long>(nombuf), engine_.strategy().c_str(), swaps.c_str(),
      audit.ok ? "OK" : "FAILED", audit.message.c_str());
  std::fflush(stdout);
  return audit.ok ? 0 : 1;
}

SwapCycle::SwapCycle()
    : cycle_(absl::StrSplit(absl::GetFlag(FLAGS_swap_cycle), ';', absl::SkipEmpty())),
      every_(absl::GetFlag(FLAGS_swap_every)),
      next_(std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(every_)) {}

void SwapCycle::Tick(ControlPlane& control) {
  if (cycle_.empty() || std::chrono::steady_clock::now() < next_) return;
  next_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(every_);
  const std::string& text = cycle_[index_++ % cycle_.size()];
  absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(text);
  if (!spec.ok()) {  // CheckSwapCycle parsed every spec at start-up
    std::printf("swap: %s: %s\n", text.c_str(), std::string(spec.status().message()).c_str());
    std::fflush(stdout);
    return;
  }
  pool::SwapReport rep;
  control.Mutate(ChangeSource::kConsole,
                 [&](Change& c) { rep = c.SwapStrategy(*spec, std::chrono::microseconds(0)); });
  Console::PrintSwap(rep);
}

}  // namespace skbnf::control
