// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/mutations.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/net_text.h"
#include "common/pool_ops.h"
#include "server/core/pool_share.h"

namespace skbnf::control {

absl::string_view ChangeSourceName(ChangeSource s) {
  switch (s) {
    case ChangeSource::kRpc:
      return "rpc";
    case ChangeSource::kConfig:
      return "config";
    case ChangeSource::kTune:
      return "tune";
    case ChangeSource::kConsole:
      return "console";
    case ChangeSource::kLease:
      return "lease";
  }
  return "rpc";
}

Caller Mutations::InProcessCaller(ChangeSource source) {
  Caller c;
  c.peer = absl::StrCat("local:", ChangeSourceName(source));
  c.transport = Caller::Transport::kInProcess;
  c.role = Role::kAdmin;
  c.granted_by = "skbnfd itself";
  return c;
}

uint64_t Change::Begin(absl::string_view rpc, absl::string_view what) {
  if (source_ == ChangeSource::kRpc) return 0;  // RunChange audits the call
  return log_.Begin(who_, rpc, what, ChangeSourceName(source_));
}

void Change::End(uint64_t id, absl::string_view rpc, absl::string_view what,
                 const absl::Status& s, absl::string_view result) {
  if (source_ == ChangeSource::kRpc) return;
  std::string label(result);
  if (label.empty()) label = ResultLabel(grpc::Status(static_cast<grpc::StatusCode>(s.code()), ""));
  log_.End(id, who_, rpc, what, label, s.message(), ChangeSourceName(source_));
}

namespace {
absl::Status CheckSwappable(const Backend& backend, const pool::StrategySpec& spec) {
  if (const PoolInfo pool = backend.GetInfo().pool; pool.native) {
    return dpdk::NativePoolSwapRefusal(pool.ops_name);
  }
  return control::CheckStrategy(backend, spec);
}
}  // namespace

absl::Status Mutations::Validate(const pool::StrategySpec& spec) const {
  return CheckSwappable(backend_, spec);
}

absl::StatusOr<CheckedStrategy> Change::CheckStrategy(const pool::StrategySpec& spec) {
  if (absl::Status s = CheckSwappable(backend_, spec); !s.ok()) return s;
  return CheckedStrategy(serial_, spec);
}

pool::SwapReport Change::SwapStrategy(const CheckedStrategy& checked,
                                      std::chrono::microseconds timeout) {
  const pool::StrategySpec& spec = checked.spec();
  const std::string what = absl::StrCat(backend_.GetStrategy().ToString(), " -> ", spec.ToString());
  const uint64_t id = Begin("SetStrategy", what);
  if (checked.by_ != serial_) {  // checked under another change's lock: the pool may have moved
    pool::SwapReport refused =
        RefusedSwap(backend_, spec, absl::InternalError("a strategy checked by another change"));
    End(id, "SetStrategy", what, refused.status);
    return refused;
  }
  pool::SwapReport r = backend_.SwapStrategy(spec, timeout);
  swaps_.Record(r);
  End(id, "SetStrategy", what, r.status,
      r.status.ok() ? "ok" : (r.rolled_back ? "rolled_back" : "failed"));
  return r;
}

pool::SwapReport Change::SwapStrategy(const pool::StrategySpec& spec,
                                      std::chrono::microseconds timeout) {
  absl::StatusOr<CheckedStrategy> checked = CheckStrategy(spec);
  if (checked.ok()) return SwapStrategy(*checked, timeout);
  pool::SwapReport refused = RefusedSwap(backend_, spec, checked.status());
  const std::string what = absl::StrCat(refused.old_spec, " -> ", refused.new_spec);
  End(Begin("SetStrategy", what), "SetStrategy", what, refused.status);
  return refused;
}

namespace {

absl::Status RoutesNeedL3(const Backend& backend) {
  if (backend.GetInfo().mode == ForwardingMode::kL3) return absl::OkStatus();
  return absl::FailedPreconditionError("routes are used only in l3 forwarding mode");
}

bool Routed(const Backend& backend, const Ipv4Prefix& prefix) {
  for (const RouteTable::Route& r : backend.ListRoutes().routes) {
    if (r.prefix == prefix) return true;
  }
  return false;
}

absl::StatusOr<uint32_t> AddRouteChecked(Backend& backend, const Ipv4Prefix& prefix,
                                         const NextHop& nh) {
  if (absl::Status s = RoutesNeedL3(backend); !s.ok()) return s;
  if (Routed(backend, prefix)) {
    return absl::AlreadyExistsError(
        absl::StrCat("prefix: ", net::FormatIpv4Prefix(prefix), " is already routed"));
  }
  return backend.AddRoute(prefix, nh);
}

absl::Status DeleteRouteChecked(Backend& backend, const Ipv4Prefix& prefix) {
  if (absl::Status s = RoutesNeedL3(backend); !s.ok()) return s;
  if (!Routed(backend, prefix)) {
    return absl::NotFoundError(
        absl::StrCat("prefix: ", net::FormatIpv4Prefix(prefix), " is not routed"));
  }
  return backend.DeleteRoute(prefix);
}

bool WorkerPaused(const Backend& backend, int core) {
  for (const CoreStats& c : backend.GetStats().cores) {
    if (c.core == core) return c.paused;
  }
  return false;
}

}  // namespace

absl::StatusOr<uint32_t> Change::AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  const std::string what = absl::StrCat(net::FormatIpv4Prefix(prefix), " port ", nh.port, " mac ",
                                        net::FormatMac(nh.dst_mac));
  const uint64_t audit = Begin("AddRoute", what);
  absl::StatusOr<uint32_t> id = AddRouteChecked(backend_, prefix, nh);
  End(audit, "AddRoute", what, id.status());
  return id;
}

absl::StatusOr<uint32_t> Change::ReplaceRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  const std::string what = absl::StrCat(net::FormatIpv4Prefix(prefix), " port ", nh.port, " mac ",
                                        net::FormatMac(nh.dst_mac), " (replaces in place)");
  const uint64_t audit = Begin("AddRoute", what);
  absl::StatusOr<uint32_t> id;
  if (absl::Status s = RoutesNeedL3(backend_); !s.ok()) {
    id = s;
  } else if (!Routed(backend_, prefix)) {
    id = absl::NotFoundError(
        absl::StrCat("prefix: ", net::FormatIpv4Prefix(prefix), " is not routed"));
  } else {
    id = backend_.AddRoute(prefix, nh);
  }
  End(audit, "AddRoute", what, id.status());
  return id;
}

absl::Status Change::DeleteRoute(const Ipv4Prefix& prefix) {
  const std::string what = net::FormatIpv4Prefix(prefix);
  const uint64_t audit = Begin("DeleteRoute", what);
  absl::Status s = DeleteRouteChecked(backend_, prefix);
  End(audit, "DeleteRoute", what, s);
  return s;
}

absl::StatusOr<bool> Change::PauseWorker(int core) {
  if (WorkerPaused(backend_, core)) return true;
  if (absl::Status s = backend_.PauseWorker(core); !s.ok()) return s;
  return false;
}

absl::StatusOr<bool> Change::ResumeWorker(int core) {
  if (!WorkerPaused(backend_, core)) return false;
  // audited here for in-process sources (a PauseWorker lease that ran out); RunChange audits RPCs
  const std::string what = absl::StrCat("core ", core);
  const uint64_t audit = Begin("ResumeWorker", what);
  absl::Status s = backend_.ResumeWorker(core);
  End(audit, "ResumeWorker", what, s);
  if (!s.ok()) return s;
  return true;
}

absl::StatusOr<dpdk::LatencySettings> Change::SetLatency(
    std::optional<uint32_t> sample_every, std::optional<uint32_t> slow_iteration_us) {
  const StatsSnapshot now = backend_.GetStats();
  // A malformed request is INVALID_ARGUMENT whatever the data plane (then the precondition).
  dpdk::LatencySettings next = now.perf.has_value() ? now.perf->settings : dpdk::LatencySettings{};
  if (sample_every.has_value()) next.sample_every = *sample_every;
  if (slow_iteration_us.has_value()) next.slow_iteration_us = *slow_iteration_us;
  if (absl::Status s = dpdk::CheckLatencySettings(next); !s.ok()) return s;
  if (!now.perf.has_value()) {
    return absl::FailedPreconditionError("this data plane records no packet latency");
  }
  const std::string what = absl::StrCat("sample_every ", next.sample_every,
                                        ", slow_iteration_us ", next.slow_iteration_us);
  const uint64_t audit = Begin("SetLatency", what);
  absl::Status s = backend_.SetLatencySettings(next);
  End(audit, "SetLatency", what, s);
  if (!s.ok()) return s;
  return next;
}

}  // namespace skbnf::control
