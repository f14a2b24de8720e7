// SPDX-License-Identifier: BSD-3-Clause
// A table of bad requests, per RPC: each must fail with its expected status code, the message
// must start with the offending field's path, and the data plane's state (strategy and epoch,
// routes, paused workers, swap counts) must be exactly what it was.
//
// RPCs without request fields (GetInfo, ListPorts, ListStrategies, GetStrategy, ListRoutes,
// AuditPool) have nothing to get wrong and are not in the table.
#include <gtest/gtest.h>

#include <functional>

#include "tests/control/daemon_harness.h"

namespace skbnf::control::testing {
namespace {

using grpc::StatusCode;

struct BadRequest {
  std::string name;
  std::function<grpc::Status(v1::Control::Stub&)> call;
  StatusCode code;
  std::string field;  // the message must start with this
};

using Stub = v1::Control::Stub;

BadRequest SetSpec(const std::string& name, const std::string& spec, bool validate_only = false) {
  return {name,
          [spec, validate_only](Stub& s) {
            grpc::ClientContext ctx;
            v1::SetStrategyRequest req;
            req.set_spec(spec);
            req.set_validate_only(validate_only);
            v1::SetStrategyResponse r;
            return s.SetStrategy(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, "spec"};
}

BadRequest SetStructured(const std::string& name, std::function<void(v1::StructuredStrategy*)> fill,
                         const std::string& field) {
  return {name,
          [fill](Stub& s) {
            grpc::ClientContext ctx;
            v1::SetStrategyRequest req;
            fill(req.mutable_structured());
            v1::SetStrategyResponse r;
            return s.SetStrategy(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, field};
}

v1::StructuredStrategy::LayerConfig* AddLayer(v1::StructuredStrategy* st, v1::Layer l) {
  auto* lc = st->add_layers();
  lc->set_layer(l);
  return lc;
}

BadRequest Ages(const std::string& name, uint32_t oldest, uint64_t older_than_ms,
                const std::string& field) {
  return {name,
          [oldest, older_than_ms](Stub& s) {
            grpc::ClientContext ctx;
            v1::GetBufferAgesRequest req;
            req.set_oldest(oldest);
            req.set_older_than_ms(older_than_ms);
            v1::BufferAges r;
            return s.GetBufferAges(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, field};
}

BadRequest Latency(const std::string& name, std::optional<uint32_t> every,
                   std::optional<uint32_t> slow_us, const std::string& field) {
  return {name,
          [every, slow_us](Stub& s) {
            grpc::ClientContext ctx;
            v1::SetLatencyRequest req;
            if (every.has_value()) req.set_sample_every(*every);
            if (slow_us.has_value()) req.set_slow_iteration_us(*slow_us);
            v1::SetLatencyResponse r;
            return s.SetLatency(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, field};
}

BadRequest AddRoute(const std::string& name, const std::string& prefix, int port,
                    const std::string& mac, const std::string& field, bool next_hop = true) {
  return {name,
          [=](Stub& s) {
            grpc::ClientContext ctx;
            v1::AddRouteRequest req;
            req.set_prefix(prefix);
            if (next_hop) {
              req.mutable_next_hop()->set_port(static_cast<uint32_t>(port));
              req.mutable_next_hop()->set_dst_mac(mac);
            }
            v1::AddRouteResponse r;
            return s.AddRoute(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, field};
}

BadRequest DeleteRoute(const std::string& name, const std::string& prefix) {
  return {name,
          [=](Stub& s) {
            grpc::ClientContext ctx;
            v1::DeleteRouteRequest req;
            req.set_prefix(prefix);
            v1::DeleteRouteResponse r;
            return s.DeleteRoute(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, "prefix"};
}

BadRequest Worker(const std::string& name, bool pause, std::optional<uint32_t> core) {
  return {name,
          [=](Stub& s) {
            grpc::ClientContext ctx;
            if (pause) {
              v1::PauseWorkerRequest req;
              if (core) req.set_core(*core);
              v1::PauseWorkerResponse r;
              return s.PauseWorker(&ctx, req, &r);
            }
            v1::ResumeWorkerRequest req;
            if (core) req.set_core(*core);
            v1::ResumeWorkerResponse r;
            return s.ResumeWorker(&ctx, req, &r);
          },
          StatusCode::INVALID_ARGUMENT, "core"};
}

std::vector<BadRequest> Table(uint32_t worker) {
  const std::string ok_mac = "02:00:00:00:00:42";
  std::vector<BadRequest> t = {
      // ---- SetStrategy, spec form
      {"SetStrategy/neither form",
       [](Stub& s) {
         grpc::ClientContext ctx;
         v1::SetStrategyRequest req;
         v1::SetStrategyResponse r;
         return s.SetStrategy(&ctx, req, &r);
       },
       StatusCode::INVALID_ARGUMENT, "strategy"},
      SetSpec("SetStrategy/empty spec", ""),
      SetSpec("SetStrategy/unknown layer", "turbo"),
      SetSpec("SetStrategy/unknown modifier", "headpool,turbo"),
      SetSpec("SetStrategy/unknown tunable", "magazine:colour=1"),
      SetSpec("SetStrategy/tunable below range", "magazine:size=0"),
      SetSpec("SetStrategy/tunable above range", "magazine:size=1025"),
      SetSpec("SetStrategy/hot_list_len above range", "headpool:hot_list_len=65537"),
      SetSpec("SetStrategy/tunable not a number", "magazine:size=big"),
      SetSpec("SetStrategy/layers out of order", "magazine+headpool"),
      SetSpec("SetStrategy/layer twice", "headpool+headpool"),
      SetSpec("SetStrategy/slab with layers", "slab+magazine"),
      SetSpec("SetStrategy/whitespace", "headpool, prefetch"),
      SetSpec("SetStrategy/validate_only still validates", "magazine:size=0", true),
      {"SetStrategy/quiesce timeout above range",
       [](Stub& s) {
         grpc::ClientContext ctx;
         v1::SetStrategyRequest req;
         req.set_spec("headpool");
         req.set_quiesce_timeout_ms(10001);
         v1::SetStrategyResponse r;
         return s.SetStrategy(&ctx, req, &r);
       },
       StatusCode::INVALID_ARGUMENT, "quiesce_timeout_ms"},
      // ---- SetStrategy, structured form
      SetStructured(
          "SetStrategy/structured unspecified layer",
          [](v1::StructuredStrategy* st) { AddLayer(st, v1::LAYER_UNSPECIFIED); },
          "structured.layers[0].layer"),
      SetStructured(
          "SetStrategy/structured unknown layer",
          [](v1::StructuredStrategy* st) { AddLayer(st, static_cast<v1::Layer>(9)); },
          "structured.layers[0].layer"),
      SetStructured(
          "SetStrategy/structured layer twice",
          [](v1::StructuredStrategy* st) {
            AddLayer(st, v1::LAYER_HEADPOOL);
            AddLayer(st, v1::LAYER_HEADPOOL);
          },
          "structured.layers[1].layer"),
      SetStructured(
          "SetStrategy/structured out of order",
          [](v1::StructuredStrategy* st) {
            AddLayer(st, v1::LAYER_MAGAZINE);
            AddLayer(st, v1::LAYER_RECYCLE);
          },
          "structured.layers[1].layer"),
      SetStructured(
          "SetStrategy/structured unknown tunable",
          [](v1::StructuredStrategy* st) {
            (*AddLayer(st, v1::LAYER_MAGAZINE)->mutable_tunables())["hot_list_len"] = 8;
          },
          "structured.layers[0].tunables[hot_list_len]"),
      SetStructured(
          "SetStrategy/structured tunable out of range",
          [](v1::StructuredStrategy* st) {
            AddLayer(st, v1::LAYER_HEADPOOL);
            (*AddLayer(st, v1::LAYER_MAGAZINE)->mutable_tunables())["size"] = 0;
          },
          "structured.layers[1].tunables[size]"),
      SetStructured(
          "SetStrategy/structured unknown modifier",
          [](v1::StructuredStrategy* st) {
            AddLayer(st, v1::LAYER_HEADPOOL);
            st->add_modifiers("turbo");
          },
          "structured.modifiers[0]"),
      SetStructured(
          "SetStrategy/structured modifier twice",
          [](v1::StructuredStrategy* st) {
            st->add_modifiers("prefetch");
            st->add_modifiers("prefetch");
          },
          "structured.modifiers[1]"),
      // ---- GetStats / WatchStats
      {"GetStats/unknown core",
       [](Stub& s) {
         grpc::ClientContext ctx;
         v1::GetStatsRequest req;
         req.add_cores(999);
         v1::Stats r;
         return s.GetStats(&ctx, req, &r);
       },
       StatusCode::INVALID_ARGUMENT, "cores[0]"},
      {"WatchStats/interval too short",
       [](Stub& s) {
         grpc::ClientContext ctx;
         v1::WatchStatsRequest req;
         req.set_interval_ms(5);
         auto rd = s.WatchStats(&ctx, req);
         v1::Stats st;
         while (rd->Read(&st)) {
         }
         return rd->Finish();
       },
       StatusCode::INVALID_ARGUMENT, "interval_ms"},
      {"WatchStats/interval too long",
       [](Stub& s) {
         grpc::ClientContext ctx;
         v1::WatchStatsRequest req;
         req.set_interval_ms(60001);
         auto rd = s.WatchStats(&ctx, req);
         v1::Stats st;
         while (rd->Read(&st)) {
         }
         return rd->Finish();
       },
       StatusCode::INVALID_ARGUMENT, "interval_ms"},
      {"WatchStats/unknown core",
       [worker](Stub& s) {
         grpc::ClientContext ctx;
         v1::WatchStatsRequest req;
         req.set_max_updates(1);
         req.add_cores(worker);
         req.add_cores(4096);
         auto rd = s.WatchStats(&ctx, req);
         v1::Stats st;
         while (rd->Read(&st)) {
         }
         return rd->Finish();
       },
       StatusCode::INVALID_ARGUMENT, "cores[1]"},
      // ---- AddRoute / DeleteRoute
      AddRoute("AddRoute/empty prefix", "", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/no length", "10.0.0.0", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/length 33", "10.0.0.0/33", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/host bits set", "10.0.0.1/8", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/octet 256", "256.0.0.0/8", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/three octets", "10.0.0/8", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/leading zero", "010.0.0.0/8", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/IPv6", "2001:db8::/32", 0, ok_mac, "prefix"),
      AddRoute("AddRoute/no next hop", "10.0.0.0/8", 0, ok_mac, "next_hop", false),
      AddRoute("AddRoute/unknown port", "10.0.0.0/8", 999, ok_mac, "next_hop.port"),
      AddRoute("AddRoute/malformed MAC", "10.0.0.0/8", 0, "02:00:00:00:00", "next_hop.dst_mac"),
      AddRoute("AddRoute/non-hex MAC", "10.0.0.0/8", 0, "02:00:00:00:00:zz", "next_hop.dst_mac"),
      AddRoute("AddRoute/multicast MAC", "10.0.0.0/8", 0, "01:00:5e:00:00:01", "next_hop.dst_mac"),
      AddRoute("AddRoute/broadcast MAC", "10.0.0.0/8", 0, "ff:ff:ff:ff:ff:ff", "next_hop.dst_mac"),
      AddRoute("AddRoute/zero MAC", "10.0.0.0/8", 0, "00:00:00:00:00:00", "next_hop.dst_mac"),
      DeleteRoute("DeleteRoute/empty prefix", ""),
      DeleteRoute("DeleteRoute/host bits set", "192.168.1.1/24"),
      // ---- PauseWorker / ResumeWorker
      Worker("PauseWorker/core missing", true, std::nullopt),
      Worker("PauseWorker/unknown core", true, 999),
      Worker("ResumeWorker/core missing", false, std::nullopt),
      Worker("ResumeWorker/unknown core", false, 4096),
      // ---- SetLatency (common/worker_perf.h's ranges)
      Latency("SetLatency/sample_every above 2^20", 1048577, std::nullopt, "sample_every"),
      Latency("SetLatency/sample_every huge", 4000000000u, std::nullopt, "sample_every"),
      Latency("SetLatency/slow_iteration_us 0", std::nullopt, 0, "slow_iteration_us"),
      Latency("SetLatency/slow_iteration_us above 10 s", 64, 10000001, "slow_iteration_us"),
      // ---- GetBufferAges (server/core/buffer_ages.h kKeepOldest; a year), checked before
      // whether tracking is on
      Ages("GetBufferAges/oldest above 1000", 1001, 0, "oldest"),
      Ages("GetBufferAges/older_than_ms above a year", 10, uint64_t{367} * 24 * 3600 * 1000,
           "older_than_ms"),
  };
  return t;
}

// What a bad request must not change.
std::string Fingerprint(Stub& s) {
  std::string out;
  {
    grpc::ClientContext ctx;
    v1::GetStrategyResponse r;
    EXPECT_TRUE(s.GetStrategy(&ctx, v1::GetStrategyRequest(), &r).ok());
    out += r.spec() + " epoch " + std::to_string(r.epoch()) + "\n";
  }
  {
    grpc::ClientContext ctx;
    v1::ListRoutesResponse r;
    EXPECT_TRUE(s.ListRoutes(&ctx, v1::ListRoutesRequest(), &r).ok());
    out += r.DebugString();
  }
  {
    grpc::ClientContext ctx;
    v1::Stats r;
    EXPECT_TRUE(s.GetStats(&ctx, v1::GetStatsRequest(), &r).ok());
    for (const v1::CoreStats& c : r.cores()) {
      out += "core " + std::to_string(c.core()) + (c.paused() ? " paused\n" : " running\n");
    }
    out += "swaps " + std::to_string(r.swaps_ok()) + "/" + std::to_string(r.swaps_failed()) + "\n";
    out += "latency " + r.latency_settings().ShortDebugString() + "\n";
  }
  return out;
}

TEST(BadRequestTest, EveryBadRequestIsRefusedNamingItsFieldAndChangesNothing) {
  std::string error;
  auto d = Daemon::Start({}, &error);
  ASSERT_NE(d, nullptr) << error;
  auto stub = d->Stub();
  // One real route so that route-table changes would show.
  uint32_t worker = 0;
  {
    grpc::ClientContext ctx;
    v1::GetInfoResponse info;
    ASSERT_TRUE(stub->GetInfo(&ctx, v1::GetInfoRequest(), &info).ok());
    for (const v1::Lcore& l : info.lcores()) {
      if (l.role() == v1::LCORE_ROLE_WORKER) worker = l.core();
    }
    if (info.mode() == v1::FORWARDING_MODE_L3) {
      grpc::ClientContext c2;
      v1::AddRouteRequest req;
      req.set_prefix("192.0.2.0/24");
      req.mutable_next_hop()->set_port(0);
      req.mutable_next_hop()->set_dst_mac("02:00:00:00:00:07");
      v1::AddRouteResponse r;
      ASSERT_TRUE(stub->AddRoute(&c2, req, &r).ok());
    }
  }
  const std::string before = Fingerprint(*stub);
  int checked = 0;
  for (const BadRequest& b : Table(worker)) {
    SCOPED_TRACE(b.name);
    grpc::Status s = b.call(*stub);
    EXPECT_EQ(s.error_code(), b.code) << s.error_message();
    EXPECT_EQ(s.error_message().rfind(b.field, 0), 0u)
        << "message does not start with '" << b.field << "': " << s.error_message();
    EXPECT_EQ(Fingerprint(*stub), before);
    ++checked;
  }
  EXPECT_GE(checked, 40);
  EXPECT_EQ(d->Stop(), 0);
}

}  // namespace
}  // namespace skbnf::control::testing
