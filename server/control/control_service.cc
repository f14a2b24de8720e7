// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/control_service.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net_text.h"
#include "common/wait_until.h"
#include "server/control/stats_convert.h"
#include "server/control/strategy_convert.h"
#include "server/control/tuner_convert.h"
#include "server/core/build_info.h"

namespace skbnf::control {
namespace {

using pool::Layer;
using pool::StrategySpec;

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status Invalid(absl::string_view field, absl::string_view why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(field, ": ", why));
}

std::vector<int> WorkerCores(const Info& info) {
  std::vector<int> cores;
  for (const LcoreInfo& l : info.lcores) {
    if (l.role == LcoreInfo::Role::kWorker) cores.push_back(l.core);
  }
  std::sort(cores.begin(), cores.end());
  return cores;
}

}  // namespace

ControlService::ControlService(Backend& backend, StatsSampler& sampler, SwapMetrics& swaps,
                               const Access& access, ChangeLog& changes, CallLimits& limits,
                               Mutations& mutations, Tuner& tuner, PauseLeases& leases)
    : backend_(backend),
      sampler_(sampler),
      swaps_(swaps),
      access_(access),
      changes_(changes),
      limits_(limits),
      pool_(backend.GetInfo().pool),
      lcores_(backend.GetInfo().lcores),
      mutations_(mutations),
      tuner_(tuner),
      leases_(leases) {}

grpc::Status ControlService::Admit(grpc::ServerContext* ctx, absl::string_view rpc, Role needed,
                                   CallLimits::Kind kind, CallLimits::Slot* slot, Caller* caller) {
  *caller = access_.Identify(*ctx);
  grpc::Status s = Authorize(*caller, rpc, needed);
  if (s.ok()) {
    s = kind == CallLimits::Kind::kStream
            ? limits_.AcquireStream(rpc, caller->ClientKey(), slot)
            : limits_.AcquireCall(rpc, caller->ClientKey(), kind, slot);
  }
  if (!s.ok()) changes_.Denied(*caller, rpc, needed, s);
  return s;
}

absl::Status ControlService::CheckCores(const google::protobuf::RepeatedField<uint32_t>& cores,
                                        const char* field, std::vector<int>* out) const {
  if (cores.empty()) return absl::OkStatus();
  std::vector<int> workers = WorkerCores(backend_.GetInfo());
  for (int i = 0; i < cores.size(); ++i) {
    int c = static_cast<int>(cores[i]);
    if (std::find(workers.begin(), workers.end(), c) == workers.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: ", cores[i],
                       " is not a worker core (workers: ", absl::StrJoin(workers, ", "), ")"));
    }
    out->push_back(c);
  }
  return absl::OkStatus();
}

absl::Status ControlService::CheckWorkerCore(bool has, uint32_t core) const {
  if (!has) return absl::InvalidArgumentError("core: required");
  std::vector<int> workers = WorkerCores(backend_.GetInfo());
  if (std::find(workers.begin(), workers.end(), static_cast<int>(core)) == workers.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "core: ", core, " is not a worker core (workers: ", absl::StrJoin(workers, ", "), ")"));
  }
  return absl::OkStatus();
}

grpc::Status ControlService::GetInfo(grpc::ServerContext* ctx, const v1::GetInfoRequest*,
                                     v1::GetInfoResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "GetInfo", &slot); !a.ok()) return a;
  const BuildInfo& b = GetBuildInfo();
  Info info = backend_.GetInfo();
  resp->set_version(b.version);
  resp->set_git_commit(b.git_commit);
  resp->set_compiler(b.compiler);
  resp->set_build_type(b.build_type);
  for (const std::string& a : info.eal_args) resp->add_eal_args(a);
  for (const LcoreInfo& l : info.lcores) {
    v1::Lcore* pl = resp->add_lcores();
    pl->set_lcore_id(l.lcore_id);
    switch (l.role) {
      case LcoreInfo::Role::kMain:
        pl->set_role(v1::LCORE_ROLE_MAIN);
        break;
      case LcoreInfo::Role::kWorker:
        pl->set_role(v1::LCORE_ROLE_WORKER);
        pl->set_core(static_cast<uint32_t>(l.core));
        break;
      case LcoreInfo::Role::kService:
        pl->set_role(v1::LCORE_ROLE_SERVICE);
        break;
    }
    if (l.socket_id >= 0) pl->set_socket_id(static_cast<uint32_t>(l.socket_id));
    for (int p : l.rx_ports) pl->add_rx_ports(static_cast<uint32_t>(p));
    for (int p : l.tx_ports) pl->add_tx_ports(static_cast<uint32_t>(p));
  }
  v1::PoolInfo* pi = resp->mutable_pool();
  pi->set_name(info.pool.name);
  pi->set_native(info.pool.native);
  pi->set_ops_name(info.pool.ops_name);
  pi->set_populated(info.pool.populated);
  pi->set_element_size(info.pool.element_size);
  pi->set_objects_per_slab(info.pool.objects_per_slab);
  pi->set_colour(info.pool.colour);
  pi->set_debug(info.pool.debug);
  pi->set_quiesce_timeout_us(static_cast<uint32_t>(info.pool.quiesce_timeout.count()));
  pi->set_quiesce_timeout_ms(static_cast<uint32_t>(
      std::chrono::ceil<std::chrono::milliseconds>(info.pool.quiesce_timeout).count()));
  pi->set_native_cache_size(info.pool.native_cache_size);
  switch (info.mode) {
    case ForwardingMode::kIo:
      resp->set_mode(v1::FORWARDING_MODE_IO);
      break;
    case ForwardingMode::kMac:
      resp->set_mode(v1::FORWARDING_MODE_MAC);
      break;
    case ForwardingMode::kL3:
      resp->set_mode(v1::FORWARDING_MODE_L3);
      break;
  }
  resp->set_uptime_seconds(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::steady_clock::now() - info.started)
                                .count()));
  resp->set_backend(info.backend);
  return grpc::Status::OK;
}

grpc::Status ControlService::ListPorts(grpc::ServerContext* ctx, const v1::ListPortsRequest*,
                                       v1::ListPortsResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "ListPorts", &slot); !a.ok()) return a;
  for (const PortInfo& p : backend_.ListPorts()) {
    v1::Port* pp = resp->add_ports();
    pp->set_id(static_cast<uint32_t>(p.id));
    pp->set_name(p.name);
    pp->set_driver(p.driver);
    pp->set_device(p.device);
    pp->set_mac(net::FormatMac(p.mac));
    if (p.has_link) pp->set_link_up(p.link_up);
    pp->set_link_speed_mbps(p.link_speed_mbps);
    pp->set_rx_queues(p.rx_queues);
    pp->set_tx_queues(p.tx_queues);
    pp->set_rx_ring_size(p.rx_ring_size);
    pp->set_tx_ring_size(p.tx_ring_size);
    if (p.socket_id >= 0) pp->set_socket_id(static_cast<uint32_t>(p.socket_id));
    if (p.has_pmd_stats) {
      v1::PmdStats* ps = pp->mutable_pmd();
      ps->set_ipackets(p.pmd.ipackets);
      ps->set_opackets(p.pmd.opackets);
      ps->set_ibytes(p.pmd.ibytes);
      ps->set_obytes(p.pmd.obytes);
      ps->set_imissed(p.pmd.imissed);
      ps->set_ierrors(p.pmd.ierrors);
      ps->set_oerrors(p.pmd.oerrors);
      ps->set_rx_nombuf(p.pmd.rx_nombuf);
    }
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::ListStrategies(grpc::ServerContext* ctx,
                                            const v1::ListStrategiesRequest*,
                                            v1::ListStrategiesResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "ListStrategies", &slot); !a.ok()) return a;
  FillStrategyList(pool::LayerCatalog(), resp);
  resp->set_swappable(!pool_.native);
  return grpc::Status::OK;
}

grpc::Status ControlService::GetStrategy(grpc::ServerContext* ctx, const v1::GetStrategyRequest*,
                                         v1::GetStrategyResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "GetStrategy", &slot); !a.ok()) return a;
  const bool native = pool_.native;
  StrategySpec spec = backend_.GetStrategy();
  resp->set_spec(StrategyText(backend_, pool_));
  if (!native) StrategyToStructured(spec, resp->mutable_structured());
  resp->set_epoch(backend_.GetEpoch());
  resp->set_swappable(!native);
  return grpc::Status::OK;
}

grpc::Status ControlService::SetStrategy(grpc::ServerContext* ctx,
                                         const v1::SetStrategyRequest* req,
                                         v1::SetStrategyResponse* resp) {
  if (req->validate_only()) return ValidateStrategy(ctx, req, resp);  // a read
  const std::string what = absl::StrCat(StrategyText(backend_, pool_), " -> ",
                                        req->strategy_case() == v1::SetStrategyRequest::kStructured
                                            ? req->structured().ShortDebugString()
                                            : req->spec());
  return Changing(ctx, "SetStrategy", what, [&](std::string* result) {
    grpc::Status s = SetStrategyImpl(ctx, req, resp);
    if (s.ok() && !resp->applied())
      *result = resp->report().rolled_back() ? "rolled_back" : "failed";
    return s;
  });
}

grpc::Status ControlService::ValidateStrategy(grpc::ServerContext* ctx,
                                              const v1::SetStrategyRequest* req,
                                              v1::SetStrategyResponse* resp) {
  Caller caller;
  CallLimits::Slot slot;
  if (grpc::Status a = Admit(ctx, "SetStrategy", RequiredRole("SetStrategy", true),
                             CallLimits::Kind::kRead, &slot, &caller);
      !a.ok()) {
    return a;
  }
  const std::string what = req->strategy_case() == v1::SetStrategyRequest::kStructured
                               ? req->structured().ShortDebugString()
                               : req->spec();
  grpc::Status s = [&] {
    absl::StatusOr<StrategySpec> parsed = StrategyFromRequest(*req);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    if (req->quiesce_timeout_ms() > 10000) {
      return Invalid("quiesce_timeout_ms",
                     absl::StrCat(req->quiesce_timeout_ms(), " is out of range [0, 10000]"));
    }
    resp->set_canonical_spec(parsed->ToString());
    absl::Status checked = mutations_.Validate(*parsed);  // no lock: never behind a swap
    if (checked.ok()) return grpc::Status::OK;
    if (!absl::IsInvalidArgument(checked)) return ToGrpc(checked);
    return Invalid(
        req->strategy_case() == v1::SetStrategyRequest::kStructured ? "structured" : "spec",
        checked.message());
  }();
  changes_.Validated(caller, what, ResultLabel(s), s.error_message());
  return s;
}

grpc::Status ControlService::SetStrategyImpl(grpc::ServerContext* ctx,
                                             const v1::SetStrategyRequest* req,
                                             v1::SetStrategyResponse* resp) {
  absl::StatusOr<StrategySpec> parsed = StrategyFromRequest(*req);
  if (!parsed.ok()) return ToGrpc(parsed.status());
  const StrategySpec& spec = *parsed;
  if (req->quiesce_timeout_ms() > 10000) {
    return Invalid("quiesce_timeout_ms",
                   absl::StrCat(req->quiesce_timeout_ms(), " is out of range [0, 10000]"));
  }
  resp->set_canonical_spec(spec.ToString());
  return mutations_.Run(ChangeSource::kRpc,
                        [&](Change& c) { return SetStrategyLocked(c, ctx, req, spec, resp); });
}

grpc::Status ControlService::SetStrategyLocked(Change& change, grpc::ServerContext* ctx,
                                               const v1::SetStrategyRequest* req,
                                               const StrategySpec& spec,
                                               v1::SetStrategyResponse* resp) {
  // Checked once, here, and swapped as checked: the native pool (FAILED_PRECONDITION), what the
  // backend cannot build, and the tunables against the pool in use (INVALID_ARGUMENT naming the
  // request's strategy field).
  absl::StatusOr<CheckedStrategy> checked = change.CheckStrategy(spec);
  if (!checked.ok()) {
    if (!absl::IsInvalidArgument(checked.status())) return ToGrpc(checked.status());
    return Invalid(
        req->strategy_case() == v1::SetStrategyRequest::kStructured ? "structured" : "spec",
        checked.status().message());
  }
  // A client that gave up while another mutation held the lock must not have its swap run
  // afterwards: it would commit a change the client was told (DEADLINE_EXCEEDED) did not happen.
  if (ctx->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        "SetStrategy: cancelled before the swap began");
  }

  pool::SwapReport r =
      change.SwapStrategy(*checked, std::chrono::milliseconds(req->quiesce_timeout_ms()));
  v1::SwapReport* pr = resp->mutable_report();
  pr->set_ok(r.status.ok());
  pr->set_error(std::string(r.status.message()));
  pr->set_old_spec(r.old_spec);
  pr->set_new_spec(r.new_spec);
  pr->set_epoch(r.epoch);
  pr->set_rolled_back(r.rolled_back);
  std::vector<int> failed = r.failed_cores;
  std::sort(failed.begin(), failed.end());
  for (int c : failed) pr->add_failed_cores(static_cast<uint32_t>(c));
  std::vector<pool::CoreSwapResult> by_core = r.cores;  // the pool lists them by acknowledgement
  std::sort(
      by_core.begin(), by_core.end(),
      [](const pool::CoreSwapResult& a, const pool::CoreSwapResult& b) { return a.core < b.core; });
  for (const pool::CoreSwapResult& c : by_core) {
    v1::CoreSwap* pc = pr->add_cores();
    pc->set_core(static_cast<uint32_t>(c.core));
    pc->set_acknowledged(c.acknowledged);
    pc->set_on_behalf(c.on_behalf);
    pc->set_quiesce_ns(c.quiesce_ns);
    pc->set_objects_flushed(c.objects_flushed);
  }
  pr->set_total_ns(r.total_ns);
  pr->set_depot_drained(r.depot_drained);
  resp->set_applied(r.status.ok());
  return grpc::Status::OK;
}

namespace {
// Stats.port_rings: the ports whose PMD says how many mbufs its rings hold (PortInfo); and
// Stats.buffers when the data plane counts places.
void FillPortRings(const StatsSnapshot& now, const std::vector<PortInfo>& ports, v1::Stats* resp) {
  if (now.places.has_value()) {
    FillBufferPlaces(*now.places, false, now.pool, &now.cores, ports, resp->mutable_buffers());
  }
  for (const PortInfo& p : ports) {
    if (!p.has_ring_mbufs) continue;
    v1::PortRingMbufs* r = resp->add_port_rings();
    r->set_port(static_cast<uint32_t>(p.id));
    r->set_name(p.name);
    r->set_rx_mbufs(p.rx_ring_mbufs);
    r->set_tx_mbufs(p.tx_ring_mbufs);
    r->set_source(p.ring_mbufs_source);
  }
}
}  // namespace

grpc::Status ControlService::GetStats(grpc::ServerContext* ctx, const v1::GetStatsRequest* req,
                                      v1::Stats* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "GetStats", &slot); !a.ok()) return a;
  std::vector<int> cores;
  absl::Status s = CheckCores(req->cores(), "cores", &cores);
  if (!s.ok()) return ToGrpc(s);
  StatsSnapshot now = backend_.GetStats();
  std::optional<StatsSnapshot> before = sampler_.Baseline(now.taken);
  FillStats(now, before ? &*before : nullptr, StrategyText(backend_, pool_), backend_.GetEpoch(),
            cores, lcores_, resp);
  FillPortRings(now, backend_.ListPorts(), resp);
  return grpc::Status::OK;
}

grpc::Status ControlService::WatchStats(grpc::ServerContext* ctx, const v1::WatchStatsRequest* req,
                                        grpc::ServerWriter<v1::Stats>* writer) {
  Caller caller;
  CallLimits::Slot slot;  // held until the stream ends
  if (grpc::Status a = Admit(ctx, "WatchStats", RequiredRole("WatchStats"),
                             CallLimits::Kind::kStream, &slot, &caller);
      !a.ok()) {
    return a;
  }
  uint32_t interval_ms = req->interval_ms() == 0 ? 1000 : req->interval_ms();
  if (interval_ms < 10 || interval_ms > 60000) {
    return Invalid("interval_ms",
                   absl::StrCat(req->interval_ms(), " is out of range [10, 60000] (0 = 1000)"));
  }
  std::vector<int> cores;
  absl::Status s = CheckCores(req->cores(), "cores", &cores);
  if (!s.ok()) return ToGrpc(s);
  if (grpc::Status l = limits_.CheckInterval("WatchStats", interval_ms); !l.ok()) return l;
  StatsSnapshot now = backend_.GetStats();
  std::optional<StatsSnapshot> before = sampler_.Baseline(now.taken);
  for (uint32_t sent = 0; req->max_updates() == 0 || sent < req->max_updates(); ++sent) {
    if (sent > 0) {
      if (WaitUntil(
              std::chrono::milliseconds(interval_ms),
              [&] { return ctx->IsCancelled() || stopping_.load(); },
              std::chrono::milliseconds(20))) {
        return grpc::Status::OK;
      }
      before = std::move(now);
      now = backend_.GetStats();
    }
    v1::Stats msg;
    FillStats(now, before ? &*before : nullptr, StrategyText(backend_, pool_), backend_.GetEpoch(),
              cores, lcores_, &msg);
    FillPortRings(now, backend_.ListPorts(), &msg);
    if (!writer->Write(msg)) return grpc::Status::OK;  // client went away
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::AddRoute(grpc::ServerContext* ctx, const v1::AddRouteRequest* req,
                                      v1::AddRouteResponse* resp) {
  const std::string what = absl::StrCat(req->prefix(), " via port ", req->next_hop().port(), " ",
                                        req->next_hop().dst_mac());
  return Changing(ctx, "AddRoute", what, [&](std::string*) { return AddRouteImpl(req, resp); });
}

grpc::Status ControlService::AddRouteImpl(const v1::AddRouteRequest* req,
                                          v1::AddRouteResponse* resp) {
  absl::StatusOr<Ipv4Prefix> prefix = net::ParseIpv4Prefix(req->prefix());
  if (!prefix.ok()) return Invalid("prefix", prefix.status().message());
  if (!req->has_next_hop()) return Invalid("next_hop", "required");
  NextHop nh;
  std::vector<int> ports;
  for (const PortInfo& p : backend_.ListPorts()) ports.push_back(p.id);
  if (std::find(ports.begin(), ports.end(), static_cast<int>(req->next_hop().port())) ==
      ports.end()) {
    return Invalid("next_hop.port", absl::StrCat(req->next_hop().port(), " is not a port (ports: ",
                                                 absl::StrJoin(ports, ", "), ")"));
  }
  nh.port = static_cast<int>(req->next_hop().port());
  absl::StatusOr<MacAddr> mac = net::ParseMac(req->next_hop().dst_mac());
  if (!mac.ok()) return Invalid("next_hop.dst_mac", mac.status().message());
  if ((*mac)[0] & 1) {
    return Invalid("next_hop.dst_mac", absl::StrCat("'", req->next_hop().dst_mac(),
                                                    "' is a group (multicast) address"));
  }
  if (*mac == MacAddr{}) {
    return Invalid("next_hop.dst_mac", "the all-zero address is not a next hop");
  }
  nh.dst_mac = *mac;
  // The route rules (l3 only, routed once, AddRoute's next-hop id) are Mutations', for every
  // backend (Change::AddRoute).
  absl::StatusOr<uint32_t> id =
      mutations_.Run(ChangeSource::kRpc, [&](Change& c) { return c.AddRoute(*prefix, nh); });
  if (!id.ok()) return ToGrpc(id.status());
  resp->set_next_hop_id(*id);
  return grpc::Status::OK;
}

grpc::Status ControlService::DeleteRoute(grpc::ServerContext* ctx,
                                         const v1::DeleteRouteRequest* req,
                                         v1::DeleteRouteResponse*) {
  return Changing(ctx, "DeleteRoute", req->prefix(),
                  [&](std::string*) { return DeleteRouteImpl(req); });
}

grpc::Status ControlService::DeleteRouteImpl(const v1::DeleteRouteRequest* req) {
  absl::StatusOr<Ipv4Prefix> prefix = net::ParseIpv4Prefix(req->prefix());
  if (!prefix.ok()) return Invalid("prefix", prefix.status().message());
  return ToGrpc(
      mutations_.Run(ChangeSource::kRpc, [&](Change& c) { return c.DeleteRoute(*prefix); }));
}

grpc::Status ControlService::ListRoutes(grpc::ServerContext* ctx, const v1::ListRoutesRequest*,
                                        v1::ListRoutesResponse* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "ListRoutes", &slot); !a.ok()) return a;
  RouteTable t = backend_.ListRoutes();
  for (const RouteTable::Route& r : t.routes) {
    v1::Route* pr = resp->add_routes();
    pr->set_prefix(net::FormatIpv4Prefix(r.prefix));
    pr->set_next_hop_id(r.next_hop_id);
  }
  for (const RouteTable::NextHopEntry& n : t.next_hops) {
    v1::NextHopEntry* pn = resp->add_next_hops();
    pn->set_id(n.id);
    pn->mutable_next_hop()->set_port(static_cast<uint32_t>(n.next_hop.port));
    pn->mutable_next_hop()->set_dst_mac(net::FormatMac(n.next_hop.dst_mac));
    pn->set_routes(n.routes);
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::SetWorkerPaused(grpc::ServerContext* ctx, bool has_core, uint32_t core,
                                             bool pause, uint32_t lease_ms, bool* was_paused,
                                             uint32_t* lease_granted_ms, uint64_t* lease_until_ms) {
  const char* rpc = pause ? "PauseWorker" : "ResumeWorker";
  std::string what = has_core ? absl::StrCat("core ", core) : std::string("core unset");
  if (pause) absl::StrAppend(&what, ", lease_ms ", lease_ms);
  return ChangingAs(ctx, rpc, what, [&](const Caller& caller, std::string*) {
    absl::Status s = CheckWorkerCore(has_core, core);
    if (!s.ok()) return ToGrpc(s);
    absl::StatusOr<std::chrono::milliseconds> lease = PauseLeaseFromRequest(lease_ms);
    if (pause && !lease.ok()) return ToGrpc(lease.status());
    // Idempotent for every backend: Mutations' rule (Change::PauseWorker); the lease is granted
    // (renewed) or released in the same Change, under the Mutations lock (pause_leases.h).
    absl::StatusOr<bool> was = mutations_.Run(ChangeSource::kRpc, [&](Change& c) {
      const int k = static_cast<int>(core);
      absl::StatusOr<bool> r = pause ? c.PauseWorker(k) : c.ResumeWorker(k);
      if (r.ok() && pause) {
        *lease_until_ms = leases_.Grant(k, *lease, caller.Identity());
        *lease_granted_ms = static_cast<uint32_t>(lease->count());
      } else if (r.ok()) {
        leases_.Release(k);
      }
      return r;
    });
    if (!was.ok()) return ToGrpc(was.status());
    *was_paused = *was;
    return grpc::Status::OK;
  });
}

grpc::Status ControlService::PauseWorker(grpc::ServerContext* ctx,
                                         const v1::PauseWorkerRequest* req,
                                         v1::PauseWorkerResponse* resp) {
  bool was = false;
  uint32_t lease = 0;
  uint64_t until = 0;
  grpc::Status s = SetWorkerPaused(ctx, req->has_core(), req->core(), true, req->lease_ms(), &was,
                                   &lease, &until);
  resp->set_was_paused(was);
  resp->set_lease_ms(lease);
  resp->set_lease_expires_unix_ms(until);
  return s;
}

grpc::Status ControlService::ResumeWorker(grpc::ServerContext* ctx,
                                          const v1::ResumeWorkerRequest* req,
                                          v1::ResumeWorkerResponse* resp) {
  bool was = false;
  uint32_t lease = 0;
  uint64_t until = 0;
  grpc::Status s =
      SetWorkerPaused(ctx, req->has_core(), req->core(), false, 0, &was, &lease, &until);
  resp->set_was_paused(was);
  return s;
}

grpc::Status ControlService::SetLatency(grpc::ServerContext* ctx, const v1::SetLatencyRequest* req,
                                        v1::SetLatencyResponse* resp) {
  auto field = [](bool has, uint32_t v) {
    return has ? absl::StrCat(v) : std::string("unchanged");
  };
  const std::string what = absl::StrCat(
      "sample_every ", field(req->has_sample_every(), req->sample_every()), ", slow_iteration_us ",
      field(req->has_slow_iteration_us(), req->slow_iteration_us()));
  return Changing(ctx, "SetLatency", what, [&](std::string*) {
    std::optional<uint32_t> every, slow;
    if (req->has_sample_every()) every = req->sample_every();
    if (req->has_slow_iteration_us()) slow = req->slow_iteration_us();
    absl::StatusOr<dpdk::LatencySettings> r =
        mutations_.Run(ChangeSource::kRpc, [&](Change& c) { return c.SetLatency(every, slow); });
    if (!r.ok()) return ToGrpc(r.status());
    resp->mutable_settings()->set_sample_every(r->sample_every);
    resp->mutable_settings()->set_slow_iteration_us(r->slow_iteration_us);
    return grpc::Status::OK;
  });
}

grpc::Status ControlService::AuditPool(grpc::ServerContext* ctx, const v1::AuditPoolRequest*,
                                       v1::AuditPoolResponse* resp) {
  // Not a change, but it parks every worker: the same access rule, logged, and rate-limited.
  return Changing(ctx, "AuditPool", "audit", [&](std::string*) {
    grpc::Status l = limits_.Admit("AuditPool", limits_.audit_min_interval());
    return l.ok() ? AuditPoolImpl(resp) : l;
  });
}

grpc::Status ControlService::AuditPoolImpl(v1::AuditPoolResponse* resp) {
  absl::StatusOr<AuditResult> r =
      mutations_.Run(ChangeSource::kRpc, [&](Change& c) { return c.backend().Audit(); });
  if (!r.ok()) return ToGrpc(r.status());
  resp->set_ok(r->ok);
  resp->set_populated(r->populated);
  resp->set_in_store(r->in_store);
  for (int i = 0; i < pool::kNumLayers; ++i) {
    v1::LayerObjectCount* lo = resp->add_in_layers();
    lo->set_layer(LayerToProto(static_cast<Layer>(i)));
    lo->set_objects(r->in_layers[i]);
  }
  resp->set_in_depots(r->in_depots);
  resp->set_in_flight(r->in_flight);
  resp->set_handed_out(r->handed_out);
  resp->set_double_frees(r->double_frees);
  resp->set_foreign_frees(r->foreign_frees);
  resp->set_message(r->message);
  if (r->places.has_value()) {
    PoolGauges g;  // the audit's own figures (workers parked)
    g.populated = r->populated;
    g.in_store = r->in_store;
    for (int i = 0; i < pool::kMaxLayers; ++i) g.in_layers[i] = r->in_layers[i];
    g.in_depots = r->in_depots;
    g.in_flight = r->in_flight;
    FillBufferPlaces(*r->places, true, g, nullptr, backend_.ListPorts(), resp->mutable_buffers());
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::TuneStrategy(grpc::ServerContext* ctx,
                                          const v1::TuneStrategyRequest* req,
                                          grpc::ServerWriter<v1::TuneProgress>* writer) {
  // A change like SetStrategy (it swaps strategies): the same access rule, logged and counted
  // (change_log.h). One tune at a time is the tuner's own limit (FAILED_PRECONDITION).
  const std::string what = req->candidates().empty() ? std::string("default candidates")
                                                     : absl::StrJoin(req->candidates(), " ");
  return Changing(ctx, "TuneStrategy", what, [&](std::string* result) {
    absl::StatusOr<TunePlan> plan = tuner_.Plan(TuneRequestFromProto(*req));
    if (!plan.ok()) return ToGrpc(plan.status());
    absl::StatusOr<TuneReport> report = tuner_.Run(
        *plan, [&] { return ctx->IsCancelled() || stopping_.load(); },
        [&](const TuneProgress& p) {
          v1::TuneProgress msg;
          TuneProgressToProto(p, &msg);
          return writer->Write(msg);
        });
    if (!report.ok()) *result = ResultLabel(ToGrpc(report.status()));
    return ToGrpc(report.status());
  });
}

}  // namespace skbnf::control
