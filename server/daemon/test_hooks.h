// SPDX-License-Identifier: BSD-3-Clause
// Test hooks of skbnfd: flags that exist for the test suite only and are left out of --help
// (listed by --helpfull). They make states reachable from outside that production never asks
// for, so the control tests can run against skbnfd itself:
//   --test-stall-lcore=L --test-stall-ms=N   the worker on lcore L, each time a new strategy
//       epoch is published, is late to its quiescent point by N ms (a dpdk::WorkerHooks: the
//       engine runs its hooked worker loop only in a process given these flags): a
//       SetStrategy with a shorter quiesce timeout fails naming core L and rolls back, and the
//       reads the API promises never wait for a swap can be shown not to.
//   --test-preflight-root=DIR   the start-up checks (server/daemon/startup_checks.h) read
//       /sys, /proc, /dev and the cgroup tree under DIR instead of / (a fake node: VFs, drivers,
//       hugepages, cpuset), so tests see skbnfd refuse to start with the message a real pod
//       would get.
//   --test-reload-gate=PATH   each --config reload (server/ops/config_reload.h), once it has
//       parsed the file and before it takes the mutation lock, logs "test gate: parsed N routes"
//       and waits until PATH exists (at most 15 s), then removes it (one pass per file created):
//       a test holds a reload between its unlocked parse and its apply and shows RPCs answered
//       meanwhile, by that event and not by a race with the parser.
//   --test-depot-hold-gate=PATH --test-depot-hold-ms=N   each time PATH exists, the skbnf
//       pool's current depot lock is held N ms (as another core's exchange would hold it),
//       then PATH is removed and a line logged: a worker that exchanges a magazine meanwhile
//       spins, and its slow iteration names `depot_wait` (tests/integration/
//       latency_skbnfd_test.py).
#ifndef SKBNF_SERVER_DAEMON_TEST_HOOKS_H_
#define SKBNF_SERVER_DAEMON_TEST_HOOKS_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataplane/dpdk/engine.h"
#include "server/ops/config_reload.h"

namespace skbnf::control {

class DepotHold;
// Before Engine::Start: the stall hook and the depot hold (nullptr without its flags; kept
// until the engine stops). InvalidArgument when the lcore is not a worker, or when only one of
// the depot hold's flags is given, its N is not positive, or the engine has no skbnf pool.
absl::StatusOr<std::unique_ptr<DepotHold>> ApplyTestHooks(dpdk::Engine& engine);

// --test-depot-hold-gate/--test-depot-hold-ms: the thread that holds the depot when the gate
// appears (stopped and joined by the destructor).
class DepotHold {
 public:
  DepotHold(pool::Pool& pool, std::string gate, std::chrono::milliseconds hold);
  ~DepotHold();
  DepotHold(const DepotHold&) = delete;
  DepotHold& operator=(const DepotHold&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --test-preflight-root, default "/".
std::string PreflightRoot();

// --test-reload-gate: ConfigReloader's before_parse hook; nullptr without the flag.
std::function<void(const ParsedConfig&)> ReloadTestGate();

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_TEST_HOOKS_H_
