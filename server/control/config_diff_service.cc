// SPDX-License-Identifier: BSD-3-Clause
// ControlService::DiffConfig: the running state against the --config file (config_diff.h), a
// read: the read role, a read slot, no mutation lock. The drift is the watcher's own computation
// (server/ops/config_reload.h DriftOf: the same value as skbnf_config_drift), reached through
// ControlPlane's ConfigDriftSlot, so server/control needs nothing of server/ops.
#include "absl/strings/str_cat.h"
#include "server/control/control_service.h"

namespace skbnf::control {
namespace {

void SetNextHop(const NextHop& nh, v1::NextHop* out) {
  out->set_port(static_cast<uint32_t>(nh.port));
  out->set_dst_mac(net::FormatMac(nh.dst_mac));
}

}  // namespace

grpc::Status ControlService::DiffConfig(grpc::ServerContext* ctx, const v1::DiffConfigRequest*,
                                        v1::DiffConfigResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "DiffConfig", &slot); !a.ok()) return a;
  if (config_drift_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this server has no config file to compare the running state with");
  }
  absl::StatusOr<ConfigDrift> d = config_drift_->Get();
  if (!d.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(d.status().code()),
                        std::string(d.status().message()));
  }
  resp->set_config_path(d->path);
  resp->set_strategy_differs(d->strategy);
  resp->set_running_strategy(d->running_strategy);
  resp->set_file_strategy(d->file_strategy);
  for (const RouteDrift& r : d->routes) {
    v1::RouteDifference* pr = resp->add_routes();
    pr->set_prefix(net::FormatIpv4Prefix(r.prefix));
    if (r.running) SetNextHop(*r.running, pr->mutable_running());
    if (r.file) SetNextHop(*r.file, pr->mutable_file());
  }
  return grpc::Status::OK;
}

}  // namespace skbnf::control
