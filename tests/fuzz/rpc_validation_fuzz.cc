// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: every skbnf.v1 RPC's request validation, end to end. The real control plane
// (server/control/control_plane.h: the gRPC server skbnfd runs, with its ControlService) serves the
// in-memory data plane of the control tests (tests/control/fake_backend.h: a real
// skbnf::pool::Pool, simulated workers, l3 mode, 2 workers, 2 ports) on a unix socket. The
// input's first byte picks the RPC; the rest is decoded as that RPC's request message (bytes
// that do not decode are skipped: gRPC itself would refuse them) and sent with a deadline.
// Invariants, each against the backend's state read directly before and after the call:
//   - a refused request (any non-OK status) changes nothing: strategy, epoch, routes, paused
//     workers; INVALID_ARGUMENT carries "<field>: <why>";
//   - SetStrategy: a spec the strategy parser refuses, or a quiesce_timeout_ms over 10000, is
//     INVALID_ARGUMENT; an accepted one answers its canonical form; applied means the backend
//     now runs exactly that spec (a later epoch), validate_only or a roll-back changes no spec;
//   - AddRoute: OK means exactly one route more, the prefix as parsed, its next hop the port and
//     MAC requested; DeleteRoute: OK means exactly that prefix is gone;
//   - Pause/ResumeWorker: OK means that worker (a real worker core) is now paused/running and
//     was_paused told its state before; a core that is not a worker is INVALID_ARGUMENT;
//   - GetStats/WatchStats (one update: max_updates is forced to 1): OK lists exactly the cores
//     asked for (all when none); AuditPool: OK means the audit balanced (nothing lost);
//   - reads without arguments always answer OK.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/net_text.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/control/control_plane.h"
#include "server/control/strategy_convert.h"
#include "skbnf/v1/control.grpc.pb.h"
#include "tests/control/fake_backend.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace v1 = skbnf::v1;
using skbnf::control::testing::FakeBackend;
using skbnf::pool::StrategySpec;

struct World {
  std::unique_ptr<FakeBackend> backend;
  std::unique_ptr<skbnf::control::ControlPlane> control;
  std::unique_ptr<v1::Control::Stub> stub;
  std::string dir;
};

World& TheWorld() {
  static World* w = [] {
    auto* world = new World;
    // Bytes that are not UTF-8 in a string field fail to decode (skipped); no log line each.
    google::protobuf::SetLogHandler(nullptr);
    skbnf::control::testing::FakeOptions o;
    o.workers = 2;
    o.ports = 2;
    o.objects = 4096;
    o.poll_pause_us = 50;
    auto b = FakeBackend::Create(o);
    FUZZ_CHECK(b.ok(), "FakeBackend: %s", b.status().ToString().c_str());
    world->backend = std::move(*b);
    char tmpl[] = "/tmp/skbnf-rpc-fuzz-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl) != nullptr, "mkdtemp");
    world->dir = tmpl;
    skbnf::control::ControlOptions co;
    co.listen = "unix:" + world->dir + "/control.sock";
    co.metrics_addr = "off";
    auto cp = skbnf::control::ControlPlane::Start(*world->backend, co);
    FUZZ_CHECK(cp.ok(), "ControlPlane: %s", cp.status().ToString().c_str());
    world->control = std::move(*cp);
    world->stub = v1::Control::NewStub(
        grpc::CreateChannel(world->control->grpc_address(), grpc::InsecureChannelCredentials()));
    std::atexit([] {
      World& w = TheWorld();
      w.control->Shutdown();
      std::string cmd = "rm -rf '" + w.dir + "'";
      (void)std::system(cmd.c_str());
    });
    return world;
  }();
  return *w;
}

struct State {
  std::string spec;
  uint64_t epoch = 0;
  std::map<std::pair<uint32_t, uint8_t>, skbnf::control::NextHop> routes;
  std::set<uint32_t> paused;

  bool operator==(const State& o) const {
    return spec == o.spec && epoch == o.epoch && routes == o.routes && paused == o.paused;
  }
};

State Read(const FakeBackend& b) {
  State s;
  s.spec = b.GetStrategy().ToString();
  s.epoch = b.GetEpoch();
  skbnf::control::RouteTable t = b.ListRoutes();
  std::map<uint32_t, skbnf::control::NextHop> hops;
  for (const auto& h : t.next_hops) hops[h.id] = h.next_hop;
  for (const auto& r : t.routes) s.routes[{r.prefix.addr, r.prefix.len}] = hops[r.next_hop_id];
  for (const auto& c : b.GetStats().cores) {
    if (c.paused) s.paused.insert(static_cast<uint32_t>(c.core));
  }
  return s;
}

std::set<uint32_t> WorkerCores(const FakeBackend& b) {
  std::set<uint32_t> cores;
  for (const auto& l : b.GetInfo().lcores) {
    if (l.role == skbnf::control::LcoreInfo::Role::kWorker)
      cores.insert(static_cast<uint32_t>(l.core));
  }
  return cores;
}

void Context(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

void CheckRefusal(const grpc::Status& s, const State& before, const State& after, const char* rpc) {
  FUZZ_CHECK(before == after, "%s refused (%d %s) but the state changed", rpc,
             static_cast<int>(s.error_code()), s.error_message().c_str());
  FUZZ_CHECK(s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
                 s.error_code() != grpc::StatusCode::UNAVAILABLE &&
                 s.error_code() != grpc::StatusCode::INTERNAL &&
                 s.error_code() != grpc::StatusCode::UNKNOWN,
             "%s: %d %s", rpc, static_cast<int>(s.error_code()), s.error_message().c_str());
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    const size_t colon = s.error_message().find(": ");
    FUZZ_CHECK(colon != std::string::npos && colon > 0 && colon + 2 < s.error_message().size(),
               "%s: INVALID_ARGUMENT without '<field>: <why>': %s", rpc, s.error_message().c_str());
  }
}

template <typename Req>
bool Decode(const uint8_t* data, size_t size, Req* req) {
  return req->ParseFromArray(data, static_cast<int>(size));
}

void SetStrategy(World& w, const uint8_t* data, size_t size) {
  v1::SetStrategyRequest req;
  if (!Decode(data, size, &req)) return;
  absl::StatusOr<StrategySpec> expected = absl::InvalidArgumentError("no strategy");
  if (req.has_spec()) expected = StrategySpec::Parse(req.spec());
  if (req.has_structured()) expected = skbnf::control::StrategyFromStructured(req.structured());
  const State before = Read(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  v1::SetStrategyResponse resp;
  const grpc::Status s = w.stub->SetStrategy(&ctx, req, &resp);
  const State after = Read(*w.backend);
  if (!expected.ok() || req.quiesce_timeout_ms() > 10000) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT,
               "SetStrategy accepted an invalid request (%s): %d %s",
               expected.status().ToString().c_str(), static_cast<int>(s.error_code()),
               s.error_message().c_str());
  }
  if (!s.ok()) return CheckRefusal(s, before, after, "SetStrategy");
  FUZZ_CHECK(expected.ok(), "accepted");
  FUZZ_CHECK(resp.canonical_spec() == expected->ToString(), "canonical '%s', expected '%s'",
             resp.canonical_spec().c_str(), expected->ToString().c_str());
  if (resp.applied()) {
    FUZZ_CHECK(!req.validate_only() && resp.report().ok(), "applied without a good report");
    FUZZ_CHECK(after.spec == expected->ToString() && after.epoch > before.epoch,
               "applied, but the backend runs '%s' (epoch %lu -> %lu)", after.spec.c_str(),
               static_cast<unsigned long>(before.epoch), static_cast<unsigned long>(after.epoch));
  } else {
    FUZZ_CHECK(after.spec == before.spec, "not applied, but the spec changed to '%s'",
               after.spec.c_str());
    if (req.validate_only()) FUZZ_CHECK(after.epoch == before.epoch, "validate_only published");
  }
  FUZZ_CHECK(after.routes == before.routes && after.paused == before.paused, "side effects");
}

void AddRoute(World& w, const uint8_t* data, size_t size) {
  v1::AddRouteRequest req;
  if (!Decode(data, size, &req)) return;
  const State before = Read(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  v1::AddRouteResponse resp;
  const grpc::Status s = w.stub->AddRoute(&ctx, req, &resp);
  const State after = Read(*w.backend);
  auto prefix = skbnf::net::ParseIpv4Prefix(req.prefix());
  auto mac = skbnf::net::ParseMac(req.next_hop().dst_mac());
  if (!prefix.ok() || !req.has_next_hop() || !mac.ok()) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "AddRoute '%s' via '%s': %d",
               req.prefix().c_str(), req.next_hop().dst_mac().c_str(),
               static_cast<int>(s.error_code()));
  }
  if (!s.ok()) return CheckRefusal(s, before, after, "AddRoute");
  FUZZ_CHECK(prefix.ok() && mac.ok(), "accepted");
  State expect = before;
  FUZZ_CHECK(expect.routes.count({prefix->addr, prefix->len}) == 0, "added a routed prefix");
  expect.routes[{prefix->addr, prefix->len}] =
      skbnf::control::NextHop{static_cast<int>(req.next_hop().port()), *mac};
  expect.epoch = after.epoch;  // routes do not publish strategy epochs; compared below
  FUZZ_CHECK(after.epoch == before.epoch, "AddRoute moved the strategy epoch");
  FUZZ_CHECK(after == expect, "AddRoute %s applied something else", req.prefix().c_str());
}

void DeleteRoute(World& w, const uint8_t* data, size_t size) {
  v1::DeleteRouteRequest req;
  if (!Decode(data, size, &req)) return;
  const State before = Read(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  v1::DeleteRouteResponse resp;
  const grpc::Status s = w.stub->DeleteRoute(&ctx, req, &resp);
  const State after = Read(*w.backend);
  auto prefix = skbnf::net::ParseIpv4Prefix(req.prefix());
  if (!prefix.ok()) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "DeleteRoute '%s': %d",
               req.prefix().c_str(), static_cast<int>(s.error_code()));
  }
  if (!s.ok()) return CheckRefusal(s, before, after, "DeleteRoute");
  State expect = before;
  FUZZ_CHECK(expect.routes.erase({prefix->addr, prefix->len}) == 1, "deleted an unrouted prefix");
  FUZZ_CHECK(after == expect, "DeleteRoute %s removed something else", req.prefix().c_str());
}

template <typename Req, typename Resp>
void SetPaused(World& w, const uint8_t* data, size_t size, bool pause,
               grpc::Status (v1::Control::Stub::*call)(grpc::ClientContext*, const Req&, Resp*)) {
  Req req;
  if (!Decode(data, size, &req)) return;
  const State before = Read(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  Resp resp;
  const grpc::Status s = ((*w.stub).*call)(&ctx, req, &resp);
  const State after = Read(*w.backend);
  const bool worker = req.has_core() && WorkerCores(*w.backend).count(req.core()) == 1;
  if (!worker) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "%s core %u: %d",
               pause ? "PauseWorker" : "ResumeWorker", req.core(),
               static_cast<int>(s.error_code()));
  }
  if (!s.ok()) return CheckRefusal(s, before, after, pause ? "PauseWorker" : "ResumeWorker");
  FUZZ_CHECK(worker, "accepted a core that is not a worker");
  FUZZ_CHECK(resp.was_paused() == (before.paused.count(req.core()) == 1), "was_paused wrong");
  State expect = before;
  if (pause) {
    expect.paused.insert(req.core());
  } else {
    expect.paused.erase(req.core());
  }
  FUZZ_CHECK(after == expect, "%s %u: applied something else", pause ? "Pause" : "Resume",
             req.core());
}

void CheckCores(const google::protobuf::RepeatedField<uint32_t>& asked, const v1::Stats& stats,
                const std::set<uint32_t>& workers, const char* rpc) {
  std::set<uint32_t> want(asked.begin(), asked.end());
  if (want.empty()) want = workers;
  std::set<uint32_t> got;
  for (const auto& c : stats.cores()) got.insert(c.core());
  FUZZ_CHECK(got == want, "%s listed %zu cores, asked for %zu", rpc, got.size(), want.size());
}

void GetStats(World& w, const uint8_t* data, size_t size) {
  v1::GetStatsRequest req;
  if (!Decode(data, size, &req)) return;
  const std::set<uint32_t> workers = WorkerCores(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  v1::Stats resp;
  const grpc::Status s = w.stub->GetStats(&ctx, req, &resp);
  bool valid = true;
  for (uint32_t c : req.cores()) valid &= workers.count(c) == 1;
  FUZZ_CHECK(s.ok() == valid, "GetStats: %d %s", static_cast<int>(s.error_code()),
             s.error_message().c_str());
  if (!s.ok()) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "GetStats: %d",
               static_cast<int>(s.error_code()));
    return;
  }
  CheckCores(req.cores(), resp, workers, "GetStats");
}

void WatchStats(World& w, const uint8_t* data, size_t size) {
  v1::WatchStatsRequest req;
  if (!Decode(data, size, &req)) return;
  req.set_max_updates(1);  // one update, sent at once: no waiting out the interval
  const std::set<uint32_t> workers = WorkerCores(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  auto reader = w.stub->WatchStats(&ctx, req);
  v1::Stats msg;
  int n = 0;
  bool listed_right = true;
  while (reader->Read(&msg)) {
    ++n;
    std::set<uint32_t> want(req.cores().begin(), req.cores().end());
    if (want.empty()) want = workers;
    std::set<uint32_t> got;
    for (const auto& c : msg.cores()) got.insert(c.core());
    listed_right &= got == want;
  }
  const grpc::Status s = reader->Finish();
  const uint32_t interval = req.interval_ms() == 0 ? 1000 : req.interval_ms();
  bool valid = interval >= 10 && interval <= 60000;
  for (uint32_t c : req.cores()) valid &= workers.count(c) == 1;
  if (!valid) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT && n == 0,
               "WatchStats (interval %u): %d, %d updates", req.interval_ms(),
               static_cast<int>(s.error_code()), n);
    return;
  }
  // A valid stream may still be refused for a limit (RESOURCE_EXHAUSTED), never half-answered.
  if (!s.ok()) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && n == 0,
               "WatchStats: %d %s", static_cast<int>(s.error_code()), s.error_message().c_str());
    return;
  }
  FUZZ_CHECK(n == 1 && listed_right, "WatchStats: %d updates, cores right: %d", n, listed_right);
}

void AuditPool(World& w, const uint8_t* data, size_t size) {
  v1::AuditPoolRequest req;
  if (!Decode(data, size, &req)) return;
  const State before = Read(*w.backend);
  grpc::ClientContext ctx;
  Context(ctx);
  v1::AuditPoolResponse resp;
  const grpc::Status s = w.stub->AuditPool(&ctx, req, &resp);
  const State after = Read(*w.backend);
  FUZZ_CHECK(before == after, "AuditPool changed the state");
  if (!s.ok()) {
    FUZZ_CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED, "AuditPool: %d %s",
               static_cast<int>(s.error_code()), s.error_message().c_str());
    return;
  }
  FUZZ_CHECK(resp.ok(), "audit: %s", resp.message().c_str());
}

template <typename Req, typename Resp>
void Read0(World& w, const uint8_t* data, size_t size,
           grpc::Status (v1::Control::Stub::*call)(grpc::ClientContext*, const Req&, Resp*),
           const char* rpc) {
  Req req;
  if (!Decode(data, size, &req)) return;
  grpc::ClientContext ctx;
  Context(ctx);
  Resp resp;
  const grpc::Status s = ((*w.stub).*call)(&ctx, req, &resp);
  FUZZ_CHECK(s.ok(), "%s: %d %s", rpc, static_cast<int>(s.error_code()), s.error_message().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  World& w = TheWorld();
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 13) {
    case 0:
      SetStrategy(w, body, n);
      break;
    case 1:
      AddRoute(w, body, n);
      break;
    case 2:
      DeleteRoute(w, body, n);
      break;
    case 3:
      SetPaused(w, body, n, true, &v1::Control::Stub::PauseWorker);
      break;
    case 4:
      SetPaused(w, body, n, false, &v1::Control::Stub::ResumeWorker);
      break;
    case 5:
      GetStats(w, body, n);
      break;
    case 6:
      WatchStats(w, body, n);
      break;
    case 7:
      AuditPool(w, body, n);
      break;
    case 8:
      Read0(w, body, n, &v1::Control::Stub::GetInfo, "GetInfo");
      break;
    case 9:
      Read0(w, body, n, &v1::Control::Stub::ListPorts, "ListPorts");
      break;
    case 10:
      Read0(w, body, n, &v1::Control::Stub::ListStrategies, "ListStrategies");
      break;
    case 11:
      Read0(w, body, n, &v1::Control::Stub::GetStrategy, "GetStrategy");
      break;
    case 12:
      Read0(w, body, n, &v1::Control::Stub::ListRoutes, "ListRoutes");
      break;
  }
  return 0;
}
