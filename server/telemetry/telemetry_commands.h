// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's DPDK telemetry commands: what `dpdk-telemetry.py -f <file-prefix>` asks a running
// skbnfd, next to DPDK's own /ethdev/*, /mempool/* and /eal/* (README.md has the JSON shapes).
//
//   command                  answer (one JSON object; figures from the Backend's reads)
//   -----------------------  -------------------------------------------------------------------
//   /skbnf/info              version, backend, mode, uptime, the pool's facts, lcores, ports,
//                            whether secondary processes can attach (multi_process)
//   /skbnf/strategy          the strategy in use, epoch, swappable, swaps ok/failed
//   /skbnf/stats[,CORE]      totals and per worker; with a core id that worker in detail (per
//                            port, drops by reason, per layer)
//   /skbnf/buffers           every object of the pool by place: store, each layer (summed and
//                            per core), depots, in flight, each port's rings where the PMD
//                            tells; and DPDK's own count (rte_mempool_avail_count) beside ours
//   /skbnf/latency           the latency settings; per worker: per RX port the sampled packets'
//                            latency (samples, p50/p99/p99.9/max/mean in ns, since start), its
//                            iterations by packets and by duration, the slow iterations (count
//                            and the last 32 with their causes): common/worker_perf.h
//
// The shape is DPDK 22.11's lib/telemetry/rte_telemetry.h: rte_telemetry_register_cmd(cmd, fn,
// help) with fn(cmd, params, rte_tel_data*), dicts of u64/int/string and nested containers
// (rte_tel_data_add_dict_container).
//
// Threads. DPDK runs a callback on its telemetry thread, one thread per connected client (up to
// 10 at once, lib/telemetry/telemetry.c MAX_CONNECTIONS), so callbacks may run concurrently with
// each other, with the workers and with gRPC. They call only the Backend's reads, which are safe
// from any thread and never wait for a worker (server/core/backend.h, "Threading contract"), and
// rte_mempool_lookup/rte_mempool_avail_count (the mempool list's read lock; the ops' get_count
// reads gauges). Never Audit(): it parks the workers and is a mutation.
//
// Lifetime. DPDK 22.11 cannot unregister a command, so the commands are registered once per
// process and serve whichever Backend is attached: a TelemetryCommands attaches one, and its
// destructor detaches it after any callback in progress returned. With none attached (start-up,
// shutdown) a command answers null (DPDK's answer for a callback error), never a stale figure.
#ifndef SKBNF_SERVER_TELEMETRY_TELEMETRY_COMMANDS_H_
#define SKBNF_SERVER_TELEMETRY_TELEMETRY_COMMANDS_H_

#include <chrono>
#include <memory>

#include "absl/status/statusor.h"
#include "server/core/backend.h"

namespace skbnf::telemetry {

class TelemetryCommands {
 public:
  // Registers the commands (first call only) and serves them from `backend` until destroyed.
  // `backend` must outlive the result. FailedPrecondition when another one is attached; Internal
  // when DPDK refuses a registration (the message names the command).
  static absl::StatusOr<std::unique_ptr<TelemetryCommands>> Attach(const control::Backend& backend);
  ~TelemetryCommands();

  TelemetryCommands(const TelemetryCommands&) = delete;
  TelemetryCommands& operator=(const TelemetryCommands&) = delete;

 private:
  TelemetryCommands() = default;
};

// Waits until every worker of the attached Backend went round its poll loop twice (polls or, when
// parked, parked_loops moved by 2: Backend::GetStats), so that no worker is still inside an RX/TX
// callback removed before the call; at most `bound`. True when they did (or no Backend is
// attached: nothing runs callbacks for skbnfd then). multi_process.cc uses it for pdump.
bool WaitForEveryWorkerLoop(std::chrono::milliseconds bound);

}  // namespace skbnf::telemetry

#endif  // SKBNF_SERVER_TELEMETRY_TELEMETRY_COMMANDS_H_
