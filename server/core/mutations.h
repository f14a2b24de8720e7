// SPDX-License-Identifier: BSD-3-Clause
// Mutations: the one way every change of the data plane is made.
//
//   source   who                                   recorded by
//   rpc      a client's mutating RPC               RunChange (change_log.h), once per call,
//                                                  with access denials and bad requests
//   config   a --config reload (SIGHUP, watcher)   Change, once per swap/route change
//   tune     a tune's candidate and restore swaps  Change, once per swap
//   console  --swap-cycle                          Change, once per swap
//
// Whatever the source, a change holds the one mutation lock (so no two interleave and a tune
// sees every other change as an epoch it did not make), passes the same validation (a strategy
// the backend refuses, or whose per-core holdings would strand the pool - pool_share.h - is
// refused before anything is swapped), is counted in the swap metrics, and is written to the
// change log and skbnf_control_changes_total{rpc,result,source}.
//
// Lock order (the only nesting in server/): Mutations::mu_ -> (Backend: the engine's control
// mutex -> the pool's swap mutex). Reads (GetStats, /metrics, ListRoutes, ...) never take mu_.
#ifndef SKBNF_SERVER_CORE_MUTATIONS_H_
#define SKBNF_SERVER_CORE_MUTATIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/core/access.h"
#include "server/core/backend.h"
#include "server/core/change_log.h"
#include "server/core/swap_metrics.h"

namespace skbnf::control {

enum class ChangeSource { kRpc, kConfig, kTune, kConsole, kLease };
// "rpc", "config", "tune", "console", "lease" (a PauseWorker lease that ran out resumes its
// worker: server/control/pause_leases.h): the change log's and the metric's `source`.
absl::string_view ChangeSourceName(ChangeSource s);

class Mutations;
class Change;

// A strategy that passed Mutations' check (Change::CheckStrategy) under the lock of the change
// that checked it: what Change::SwapStrategy takes without checking again. Only a Change makes
// one, and only that Change swaps it in.
class CheckedStrategy {
 public:
  const pool::StrategySpec& spec() const { return spec_; }

 private:
  friend class Change;
  CheckedStrategy(uint64_t by, pool::StrategySpec spec) : by_(by), spec_(std::move(spec)) {}
  uint64_t by_;  // the serial of the Change that checked it
  pool::StrategySpec spec_;
};

// A change in progress: made only by code that holds the Mutations lock (Mutations::Run), and every
// change made through it is validated, counted and (for in-process sources) logged.
class Change {
 public:
  Backend& backend() const { return backend_; }  // reads and validation
  SwapMetrics& swaps() const { return swaps_; }
  ChangeSource source() const { return source_; }

  // Whether `spec` may be swapped in now, asked once per change: the native-mempool rule
  // (FAILED_PRECONDITION, dpdk::NativePoolSwapRefusal, common/pool_ops.h: the same text whichever
  // backend), then Backend::ValidateStrategy and the pool-share bound (CheckStrategy, pool_share.h:
  // INVALID_ARGUMENT). Applies nothing.
  absl::StatusOr<CheckedStrategy> CheckStrategy(const pool::StrategySpec& spec);
  // The swap of a checked strategy (no second check); counted in the swap metrics and logged as
  // SetStrategy.
  pool::SwapReport SwapStrategy(const CheckedStrategy& spec, std::chrono::microseconds timeout);
  // CheckStrategy, then the swap. A refusal comes back as a report with a non-OK status,
  // rolled_back false and the epoch unchanged (RefusedSwap, backend.h), logged, not counted as
  // a swap.
  pool::SwapReport SwapStrategy(const pool::StrategySpec& spec, std::chrono::microseconds timeout);
  // The route rules, the same whichever backend is behind Mutations: routes exist only in l3 mode
  // (FAILED_PRECONDITION "routes are used only in l3 forwarding mode"), a prefix is routed at
  // most once (ALREADY_EXISTS "prefix: <p> is already routed") and only a routed prefix can be
  // deleted (NOT_FOUND "prefix: <p> is not routed"). The backend is asked only when they pass.
  absl::StatusOr<uint32_t> AddRoute(const Ipv4Prefix& prefix, const NextHop& nh);
  absl::Status DeleteRoute(const Ipv4Prefix& prefix);
  // A routed prefix's next hop replaced in place, never absent in between (the --config reload's
  // changed routes): Backend::AddRoute on the routed prefix (the engine's rte_lpm_add updates the
  // rule and each table entry with one atomic store). NOT_FOUND "prefix: <p> is not routed"
  // otherwise. Logged and counted as AddRoute ("... (replaces in place)").
  absl::StatusOr<uint32_t> ReplaceRoute(const Ipv4Prefix& prefix, const NextHop& nh);
  // Pause and resume are idempotent here, for every backend: the result is whether the worker
  // was paused before the call, and a worker already in the asked state is left alone (the
  // backend is not called). `core` is a worker core (the caller checked).
  absl::StatusOr<bool> PauseWorker(int core);
  absl::StatusOr<bool> ResumeWorker(int core);
  // Latency sampling and the slow-iteration threshold (common/worker_perf.h): the settings in
  // force with the given fields replaced, checked (INVALID_ARGUMENT naming the field, nothing
  // changed), then set. FAILED_PRECONDITION when the backend records no latency. The settings
  // in force after the call.
  absl::StatusOr<dpdk::LatencySettings> SetLatency(std::optional<uint32_t> sample_every,
                                                   std::optional<uint32_t> slow_iteration_us);

 private:
  friend class Mutations;
  Change(Backend& backend, SwapMetrics& swaps, ChangeLog& log, ChangeSource source, Caller who,
         uint64_t serial)
      : backend_(backend),
        swaps_(swaps),
        log_(log),
        source_(source),
        who_(std::move(who)),
        serial_(serial) {}
  // In-process sources have no RPC to audit them: each change gets its begin record here
  // (before it is applied) and its end record after. No-ops for source rpc (RunChange audits).
  uint64_t Begin(absl::string_view rpc, absl::string_view what);
  void End(uint64_t id, absl::string_view rpc, absl::string_view what, const absl::Status& s,
           absl::string_view result = "");

  Backend& backend_;
  SwapMetrics& swaps_;
  ChangeLog& log_;
  const ChangeSource source_;
  const Caller who_;
  const uint64_t serial_;  // unique per change (two changes may share a stack address)
};

class Mutations {
 public:
  Mutations(Backend& backend, SwapMetrics& swaps, ChangeLog& log)
      : backend_(backend), swaps_(swaps), log_(log) {}
  Mutations(const Mutations&) = delete;
  Mutations& operator=(const Mutations&) = delete;

  // Runs f(Change&) under the lock. `who` is the RPC's caller, or Caller::InProcess(source).
  template <typename F>
  auto Run(ChangeSource source, Caller who, F&& f) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    Change c(backend_, swaps_, log_, source, std::move(who), ++serial_);
    return f(c);
  }
  // In-process changes: the caller is this process ("peer=local:<source>").
  template <typename F>
  auto Run(ChangeSource source, F&& f) ABSL_LOCKS_EXCLUDED(mu_) {
    return Run(source, InProcessCaller(source), std::forward<F>(f));
  }
  static Caller InProcessCaller(ChangeSource source);
  // SetStrategy{validate_only}: Change::CheckStrategy's rules without the lock (a read: it never
  // waits behind a swap; its answer is advice, the pool may change before a real SetStrategy,
  // which checks again under the lock).
  absl::Status Validate(const pool::StrategySpec& spec) const;
  // For reads only (stats samples, the epoch): never a change outside Run.
  Backend& backend() const { return backend_; }

 private:
  Backend& backend_;
  SwapMetrics& swaps_;
  ChangeLog& log_;
  absl::Mutex mu_;  // serialises every change of backend_ (see the lock order above)
  uint64_t serial_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_MUTATIONS_H_
