// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's console (the "console" topic of --help): what skbnfd prints on stdout for people and
// scripts. Start-up: one line per port, then its link, then "mode ..., pool ..., strategy ...,
// workers on lcores ..., N routes". Every --stats seconds: one line per worker (rates from
// common/rates.h; `cycles/pkt N` from the worker's busy-cycle counters over the period, `-` when
// it received nothing; bench/run parses it). Hot swaps of --swap-cycle: one line each. At exit:
// one summary line with the totals, the drop reasons, the swap counts and the final audit.
#ifndef SKBNF_SERVER_DAEMON_CONSOLE_H_
#define SKBNF_SERVER_DAEMON_CONSOLE_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/pool/pool.h"
#include "server/control/control_plane.h"

namespace skbnf::control {

// --swap-cycle is valid for `pool_ops` (it needs skbnf) and every spec in it parses.
absl::Status CheckSwapCycle(dpdk::PoolOps pool_ops);

class Console {
 public:
  explicit Console(const dpdk::Engine& engine);

  void PrintPorts() const;    // after Create
  void PrintRunning() const;  // after Start: links, mode, pool, strategy, workers, routes
  // Prints the per-worker lines when --stats says it is time; returns false once --duration
  // has passed.
  bool Tick();
  static void PrintSwap(const pool::SwapReport& report);
  // After Stop; returns the exit code (0, or 1 when the final audit failed).
  int PrintSummary() const;

 private:
  const dpdk::Engine& engine_;
  const double stats_s_;
  const double duration_s_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_;
  dpdk::EngineSnapshot prev_;
};

// --swap-cycle / --swap-every: hot swaps while forwarding, one console line each. Each swap goes
// through Mutations, which every change goes through (mutations.h, source console): the mutation
// lock, the same validation as SetStrategy, the swap metrics and the change log.
class SwapCycle {
 public:
  SwapCycle();
  void Tick(ControlPlane& control);  // swaps when it is time

 private:
  const std::vector<std::string> cycle_;
  const std::chrono::duration<double> every_;
  std::chrono::steady_clock::time_point next_;
  size_t index_ = 0;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_CONSOLE_H_
