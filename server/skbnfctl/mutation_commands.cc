// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl routes, worker, audit: the commands that change or check the data plane (besides
// strategy set).
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {

absl::StatusOr<int> Client::Routes(const std::vector<std::string>& p) {
  const char* usage = "routes add PREFIX PORT DST_MAC | routes delete PREFIX | routes list";
  if (p.size() < 2) return CommandUsage(usage);
  if (p[1] == "add") {
    if (absl::Status st = Need(p, 5, "routes add PREFIX PORT DST_MAC"); !st.ok()) return st;
    absl::StatusOr<uint32_t> port = ParseUint("PORT", p[3]);
    if (!port.ok()) return port.status();
    v1::AddRouteRequest req;
    req.set_prefix(p[2]);
    req.mutable_next_hop()->set_port(*port);
    req.mutable_next_hop()->set_dst_mac(p[4]);
    v1::AddRouteResponse r;
    grpc::Status s = stub_->AddRoute(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "added " << p[2] << " via next hop " << r.next_hop_id() << "\n";
    return 0;
  }
  if (p[1] == "delete" || p[1] == "del") {  // the RPC's word; "del" still accepted (CHANGELOG.md)
    if (absl::Status st = Need(p, 3, "routes delete PREFIX"); !st.ok()) return st;
    v1::DeleteRouteRequest req;
    req.set_prefix(p[2]);
    v1::DeleteRouteResponse r;
    grpc::Status s = stub_->DeleteRoute(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "deleted " << p[2] << "\n";
    return 0;
  }
  if (p[1] == "list") {
    if (absl::Status st = Need(p, 2, "routes list"); !st.ok()) return st;
    v1::ListRoutesResponse r;
    grpc::Status s = stub_->ListRoutes(Ctx().get(), v1::ListRoutesRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::map<uint32_t, const v1::NextHopEntry*> nh;
    for (const v1::NextHopEntry& n : r.next_hops()) nh[n.id()] = &n;
    Table t({"PREFIX", "NEXT_HOP", "PORT", "DST_MAC"});
    for (const v1::Route& rt : r.routes()) {
      const v1::NextHopEntry* n = nh.count(rt.next_hop_id()) ? nh[rt.next_hop_id()] : nullptr;
      t.Add({rt.prefix(), absl::StrCat(rt.next_hop_id()),
             n ? absl::StrCat(n->next_hop().port()) : "?", n ? n->next_hop().dst_mac() : "?"});
    }
    t.Print(std::cout);
    return 0;
  }
  return CommandUsage(usage);
}

absl::StatusOr<int> Client::Worker(const std::vector<std::string>& p) {
  if (p.size() != 3 || (p[1] != "pause" && p[1] != "resume")) {
    return CommandUsage("worker pause CORE [--lease=DURATION] | worker resume CORE");
  }
  absl::StatusOr<uint32_t> parsed = ParseUint("CORE", p[2]);
  if (!parsed.ok()) return parsed.status();
  const uint32_t core = *parsed;
  bool was = false;
  double lease_s = 0;
  grpc::Status s;
  if (p[1] == "pause") {
    v1::PauseWorkerRequest req;
    req.set_core(core);
    if (args_.Has("lease")) {
      absl::StatusOr<uint32_t> lease = ParseDuration("lease", args_.Get("lease"));
      if (!lease.ok()) return lease.status();
      req.set_lease_ms(*lease);
    }
    v1::PauseWorkerResponse r;
    s = stub_->PauseWorker(Ctx().get(), req, &r);
    if (s.ok() && json_) Json(r);
    was = r.was_paused();
    lease_s = r.lease_ms() / 1000.0;
  } else {
    v1::ResumeWorkerRequest req;
    req.set_core(core);
    v1::ResumeWorkerResponse r;
    s = stub_->ResumeWorker(Ctx().get(), req, &r);
    if (s.ok() && json_) Json(r);
    was = r.was_paused();
  }
  if (!s.ok()) return Fail(s);
  if (!json_) {
    if (p[1] == "pause") {
      std::cout << "core " << core << (was ? " was already paused: lease renewed" : " paused")
                << " for " << lease_s << " s (it resumes by itself then; `worker pause " << core
                << "` again renews the lease)\n";
    } else {
      std::cout << "core " << core << (was ? " resumed" : " was not paused") << "\n";
    }
  }
  return 0;
}

grpc::Status Client::CallAudit(v1::AuditPoolResponse* r) const {
  grpc::Status s = stub_->AuditPool(Ctx().get(), v1::AuditPoolRequest(), r);
  if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return s;
  // The shape server/control/limits.cc (CallLimits::Admit) writes: "...; retry in N ms".
  const std::string& m = s.error_message();
  const size_t at = m.rfind("retry in ");
  uint32_t wait_ms = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(absl::StripSuffix(absl::string_view(m).substr(at + 9), " ms"), &wait_ms) ||
      wait_ms > 2000) {
    return s;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  r->Clear();
  return stub_->AuditPool(Ctx().get(), v1::AuditPoolRequest(), r);
}

int Client::Audit() {
  v1::AuditPoolResponse r;
  grpc::Status s = CallAudit(&r);
  if (!s.ok()) return Fail(s);
  if (json_) {
    Json(r);
  } else {
    uint64_t layers = 0;
    std::vector<std::string> parts;
    for (const v1::LayerObjectCount& l : r.in_layers()) {
      layers += l.objects();
      parts.push_back(absl::StrCat(LayerName(l.layer()), " ", l.objects()));
    }
    std::cout << "audit " << (r.ok() ? "ok" : "FAILED") << ": populated " << r.populated()
              << (r.ok() ? " = " : " != ") << "store " << r.in_store() << " + layers " << layers
              << " + depots " << r.in_depots() << " + in flight " << r.in_flight() << "\n";
    std::cout << "  layers: " << absl::StrJoin(parts, ", ") << "\n";
    std::cout << "  handed out " << r.handed_out() << ", double frees " << r.double_frees()
              << ", foreign frees " << r.foreign_frees() << "\n";
    if (!r.message().empty()) std::cout << "  " << r.message() << "\n";
  }
  if (!r.ok()) {
    std::cerr << "skbnfctl: audit failed: " << r.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace skbnf::ctl
