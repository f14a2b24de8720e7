// SPDX-License-Identifier: BSD-3-Clause
// ControlService: the RPC handlers of skbnf.v1.Control over a Backend. The conversions they
// use live beside them: strategy_convert.h (spec <-> proto), stats_convert.h (stats shaping).
//
// Every handler validates its whole request before touching the Backend; the first bad field
// gives INVALID_ARGUMENT whose message starts with the field path, and nothing is applied.
// Every handler first admits its caller: the role its RPC needs (access.h: read, operate,
// admin; PERMISSION_DENIED naming the role otherwise) and a per-identity slot (limits.h:
// RESOURCE_EXHAUSTED), refusals audited (change_log.h, throttled). Mutations (SetStrategy
// commit, AddRoute, DeleteRoute, Pause/ResumeWorker, AuditPool, which parks workers briefly,
// TuneStrategy) go through Mutations, the one way every change is made (mutations.h: one lock,
// shared with config reload, the tuner and --swap-cycle), and are audited with a begin record
// before and an end record after, whatever their result (change_log.h: RunChange). A strategy
// is also checked against the pool in use (pool_share.h). SetStrategy{validate_only} is a read:
// the same checks without the lock (Mutations::Validate), one "validate" audit record.
// Reads never take that mutex and never wait for a worker: GetInfo, ListPorts,
// GetStrategy, GetStats, WatchStats, ListRoutes and /metrics complete while a swap is waiting
// for a stalled worker (tested against the fake and against skbnfd). A SetStrategy whose client
// has gone (deadline, cancel) by the time it holds the mutex is not started.
#ifndef SKBNF_SERVER_CONTROL_CONTROL_SERVICE_H_
#define SKBNF_SERVER_CONTROL_CONTROL_SERVICE_H_

#include <atomic>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/control/config_diff.h"
#include "server/control/limits.h"
#include "server/control/pause_leases.h"
#include "server/control/stats_convert.h"
#include "server/control/strategy_convert.h"
#include "server/core/access.h"
#include "server/core/backend.h"
#include "server/core/change_log.h"
#include "server/core/mutations.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/tuner/tuner.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace skbnf::control {

class ControlService final : public v1::Control::Service {
 public:
  // `mutations` and `tuner` are shared by every ControlService of the daemon (one per server:
  // the unix-socket listeners have a server, and threads, of their own - control_plane.cc).
  ControlService(Backend& backend, StatsSampler& sampler, SwapMetrics& swaps, const Access& access,
                 ChangeLog& changes, CallLimits& limits, Mutations& mutations, Tuner& tuner,
                 PauseLeases& leases);

  // Makes streaming calls return promptly (server shutdown).
  void Stop() { stopping_.store(true); }

  // In-process changes (config reload, --swap-cycle): `f(Change&)` through Mutations
  // (mutations.h): under the lock of the mutating RPCs, validated, counted and logged with its
  // source, so they never interleave with a client's SetStrategy or AddRoute.
  template <typename F>
  auto Mutate(ChangeSource source, F&& f) {
    return mutations_.Run(source, std::forward<F>(f));
  }

  grpc::Status GetInfo(grpc::ServerContext* ctx, const v1::GetInfoRequest* req,
                       v1::GetInfoResponse* resp) override;
  grpc::Status ListPorts(grpc::ServerContext* ctx, const v1::ListPortsRequest* req,
                         v1::ListPortsResponse* resp) override;
  grpc::Status ListStrategies(grpc::ServerContext* ctx, const v1::ListStrategiesRequest* req,
                              v1::ListStrategiesResponse* resp) override;
  grpc::Status GetStrategy(grpc::ServerContext* ctx, const v1::GetStrategyRequest* req,
                           v1::GetStrategyResponse* resp) override;
  grpc::Status SetStrategy(grpc::ServerContext* ctx, const v1::SetStrategyRequest* req,
                           v1::SetStrategyResponse* resp) override;
  grpc::Status GetStats(grpc::ServerContext* ctx, const v1::GetStatsRequest* req,
                        v1::Stats* resp) override;
  grpc::Status WatchStats(grpc::ServerContext* ctx, const v1::WatchStatsRequest* req,
                          grpc::ServerWriter<v1::Stats>* writer) override;
  grpc::Status AddRoute(grpc::ServerContext* ctx, const v1::AddRouteRequest* req,
                        v1::AddRouteResponse* resp) override;
  grpc::Status DeleteRoute(grpc::ServerContext* ctx, const v1::DeleteRouteRequest* req,
                           v1::DeleteRouteResponse* resp) override;
  grpc::Status ListRoutes(grpc::ServerContext* ctx, const v1::ListRoutesRequest* req,
                          v1::ListRoutesResponse* resp) override;
  grpc::Status PauseWorker(grpc::ServerContext* ctx, const v1::PauseWorkerRequest* req,
                           v1::PauseWorkerResponse* resp) override;
  grpc::Status ResumeWorker(grpc::ServerContext* ctx, const v1::ResumeWorkerRequest* req,
                            v1::ResumeWorkerResponse* resp) override;
  grpc::Status AuditPool(grpc::ServerContext* ctx, const v1::AuditPoolRequest* req,
                         v1::AuditPoolResponse* resp) override;
  // Validates (Tuner::Plan) and delegates to the tuner (server/tuner/tuner.h).
  grpc::Status TuneStrategy(grpc::ServerContext* ctx, const v1::TuneStrategyRequest* req,
                            grpc::ServerWriter<v1::TuneProgress>* writer) override;

  // The running state against the --config file (config_diff.h; config_diff_service.cc).
  grpc::Status DiffConfig(grpc::ServerContext* ctx, const v1::DiffConfigRequest* req,
                          v1::DiffConfigResponse* resp) override;
  // The latest buffer census (buffer_ages.h; buffer_ages_service.cc), a read.
  grpc::Status GetBufferAges(grpc::ServerContext* ctx, const v1::GetBufferAgesRequest* req,
                             v1::BufferAges* resp) override;
  // Latency sampling and the slow-iteration threshold (Change::SetLatency).
  grpc::Status SetLatency(grpc::ServerContext* ctx, const v1::SetLatencyRequest* req,
                          v1::SetLatencyResponse* resp) override;

  // Where DiffConfig asks (ControlPlane's, set before serving; nullptr: FAILED_PRECONDITION).
  void set_config_drift(const ConfigDriftSlot* slot) { config_drift_ = slot; }

  const Tuner& tuner() const { return tuner_; }  // for /metrics

 private:
  // The caller of `ctx` admitted to `rpc`: it holds `needed` (access.h) and gets a per-identity
  // slot of `kind` (limits.h). A refusal (PERMISSION_DENIED, RESOURCE_EXHAUSTED) is audited,
  // throttled (change_log.h), and returned.
  grpc::Status Admit(grpc::ServerContext* ctx, absl::string_view rpc, Role needed,
                     CallLimits::Kind kind, CallLimits::Slot* slot, Caller* caller);
  // A unary read: its role and a read slot held until the handler returns.
  grpc::Status Reading(grpc::ServerContext* ctx, absl::string_view rpc, CallLimits::Slot* slot) {
    Caller unused;
    return Admit(ctx, rpc, RequiredRole(rpc), CallLimits::Kind::kRead, slot, &unused);
  }
  // A change: admitted, then run between its begin and end audit records (RunChange).
  template <typename Apply>
  grpc::Status Changing(grpc::ServerContext* ctx, absl::string_view rpc, absl::string_view what,
                        Apply&& apply) {
    return ChangingAs(ctx, rpc, what,
                      [&](const Caller&, std::string* result) { return apply(result); });
  }
  // The same, `apply(caller, result)` told who the admitted caller is (a pause lease's holder).
  template <typename Apply>
  grpc::Status ChangingAs(grpc::ServerContext* ctx, absl::string_view rpc, absl::string_view what,
                          Apply&& apply) {
    Caller caller;
    CallLimits::Slot slot;
    if (grpc::Status s =
            Admit(ctx, rpc, RequiredRole(rpc), CallLimits::Kind::kMutation, &slot, &caller);
        !s.ok()) {
      return s;
    }
    return RunChange(changes_, caller, rpc, what,
                     [&](std::string* result) { return apply(caller, result); });
  }
  grpc::Status ValidateStrategy(grpc::ServerContext* ctx, const v1::SetStrategyRequest* req,
                                v1::SetStrategyResponse* resp);
  grpc::Status SetStrategyImpl(grpc::ServerContext* ctx, const v1::SetStrategyRequest* req,
                               v1::SetStrategyResponse* resp);
  grpc::Status SetStrategyLocked(Change& change, grpc::ServerContext* ctx,
                                 const v1::SetStrategyRequest* req, const pool::StrategySpec& spec,
                                 v1::SetStrategyResponse* resp);
  grpc::Status AddRouteImpl(const v1::AddRouteRequest* req, v1::AddRouteResponse* resp);
  grpc::Status DeleteRouteImpl(const v1::DeleteRouteRequest* req);
  grpc::Status AuditPoolImpl(v1::AuditPoolResponse* resp);
  absl::Status CheckCores(const google::protobuf::RepeatedField<uint32_t>& cores, const char* field,
                          std::vector<int>* out) const;
  absl::Status CheckWorkerCore(bool has, uint32_t core) const;
  // pause: `lease_ms` as PauseWorkerRequest's; its lease's end in `*lease_until_ms`.
  grpc::Status SetWorkerPaused(grpc::ServerContext* ctx, bool has_core, uint32_t core, bool pause,
                               uint32_t lease_ms, bool* was_paused, uint32_t* lease_granted_ms,
                               uint64_t* lease_until_ms);

  Backend& backend_;
  StatsSampler& sampler_;
  SwapMetrics& swaps_;
  const Access& access_;
  ChangeLog& changes_;
  CallLimits& limits_;
  const PoolInfo pool_;                  // native or not, ops name: fixed for the daemon's life
  const std::vector<LcoreInfo> lcores_;  // core -> lcore id for Stats: fixed as well
  Mutations& mutations_;  // the one way every change is made
  Tuner& tuner_;          // each of its swaps goes through Mutations (source tune)
  PauseLeases& leases_;   // every PauseWorker is a lease (pause_leases.h)
  std::atomic<bool> stopping_{false};
  const ConfigDriftSlot* config_drift_ = nullptr;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_CONTROL_SERVICE_H_
