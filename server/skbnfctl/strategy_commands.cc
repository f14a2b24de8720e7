// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl strategy list | get | set (strategy tune: tune_command.cc).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {

namespace {

// A swap's outcome: old -> new, epoch, result, times, then one line per worker core.
void PrintSwapReport(const v1::SwapReport& rep) {
  std::cout << rep.old_spec() << " -> " << rep.new_spec() << "  epoch " << rep.epoch() << "  "
            << (rep.ok()            ? "ok"
                : rep.rolled_back() ? "ROLLED BACK"
                                    : "FAILED")
            << "  total " << absl::StrFormat("%.1f", static_cast<double>(rep.total_ns()) / 1e3)
            << " us  depot drained " << rep.depot_drained() << "\n";
  Table t({"CORE", "ACK", "ON_BEHALF", "QUIESCE_US", "FLUSHED"});
  for (const v1::CoreSwap& c : rep.cores()) {
    t.Add({absl::StrCat(c.core()), Yes(c.acknowledged()), Yes(c.on_behalf()),
           absl::StrFormat("%.1f", static_cast<double>(c.quiesce_ns()) / 1e3),
           absl::StrCat(c.objects_flushed())});
  }
  t.Print(std::cout);
}

}  // namespace

absl::StatusOr<int> Client::Strategy(const std::vector<std::string>& p) {
  const char* usage =
      "strategy list | strategy get | strategy set SPEC [--validate-only] | strategy tune "
      "[CANDIDATE ...]";
  if (p.size() < 2) return CommandUsage(usage);
  if (p[1] == "tune") return Tune(p);
  if (p[1] == "set") return Set(p);
  if (p[1] == "list") {
    if (absl::Status st = Need(p, 2, usage); !st.ok()) return st;
    v1::ListStrategiesResponse r;
    grpc::Status s = stub_->ListStrategies(Ctx().get(), v1::ListStrategiesRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "layers (top to bottom; a stack lists them in this order):\n";
    for (const v1::LayerDescription& l : r.layers()) {
      std::cout << "  " << l.name() << "  " << l.help() << "\n";
      for (const v1::TunableDescription& t : l.tunables()) {
        std::cout << "      " << l.name() << ":" << t.key() << "=N  default " << t.default_value()
                  << ", range " << t.min() << ".." << t.max() << "  " << t.help() << "\n";
      }
    }
    std::cout << "  slab  the slab store alone (always at the bottom)\n";
    std::cout << "modifiers:\n";
    for (const v1::ModifierDescription& m : r.modifiers()) {
      std::cout << "  " << m.name() << "  " << m.help() << "\n";
    }
    std::cout << "grammar: " << r.grammar() << "\n";
    std::cout << "swappable: " << Yes(r.swappable()) << "\n";
    return 0;
  }
  if (p[1] == "get") {
    if (absl::Status st = Need(p, 2, usage); !st.ok()) return st;
    v1::GetStrategyResponse r;
    grpc::Status s = stub_->GetStrategy(Ctx().get(), v1::GetStrategyRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    Table t({"spec", r.spec()});
    t.Add({"epoch", absl::StrCat(r.epoch())});
    t.Add({"swappable", Yes(r.swappable())});
    t.Print(std::cout);
    return 0;
  }
  return CommandUsage(usage);
}

absl::StatusOr<int> Client::Set(const std::vector<std::string>& p) {
  absl::Status st = Need(p, 3, "strategy set SPEC [--validate-only] [--quiesce-timeout-ms=N]");
  if (!st.ok()) return st;
  v1::SetStrategyRequest req;
  req.set_spec(p[2]);
  // --dry-run: the old word for --validate-only, still accepted (tests, scripts).
  req.set_validate_only(args_.Has("validate_only") || args_.Has("dry_run"));
  absl::StatusOr<uint32_t> quiesce_ms =
      ParseUint("--quiesce-timeout-ms", args_.Get("quiesce_timeout_ms", "0"));
  if (!quiesce_ms.ok()) return quiesce_ms.status();
  req.set_quiesce_timeout_ms(*quiesce_ms);
  // The deadline covers the whole swap: a quiesce wait and, when a worker does not answer,
  // the rollback's quiesce wait, on top of --timeout. The quiesce timeout is the flag's, or
  // the server's default (GetInfo), so no deadline expires under a swap that then commits.
  std::chrono::milliseconds quiesce(req.quiesce_timeout_ms());
  if (quiesce.count() == 0) {
    v1::GetInfoResponse info;
    grpc::Status is = stub_->GetInfo(Ctx().get(), v1::GetInfoRequest(), &info);
    if (!is.ok()) return Fail(is);
    quiesce = std::chrono::milliseconds(QuiesceTimeoutMs(info.pool()));
  }
  v1::SetStrategyResponse r;
  grpc::Status s = stub_->SetStrategy(Ctx(2 * quiesce).get(), req, &r);
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    Fail(s);
    std::cerr << "skbnfctl: the swap's outcome is unknown (a swap that had begun completes; one "
                 "that had not is not started): see `skbnfctl strategy get`\n";
    return 1;
  }
  if (!s.ok()) return Fail(s);
  const v1::SwapReport& rep = r.report();
  bool failed = !req.validate_only() && !rep.ok();
  if (json_) {
    Json(r);
  } else if (req.validate_only()) {
    std::cout << "valid: " << r.canonical_spec() << " (validated only, not applied)\n";
  } else {
    PrintSwapReport(rep);
  }
  if (failed) {
    std::cerr << "skbnfctl: swap failed" << (rep.rolled_back() ? " and rolled back" : "") << ": "
              << rep.error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace skbnf::ctl
