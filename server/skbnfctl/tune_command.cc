// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl strategy tune [CANDIDATE ...] [--dwell=DURATION] [--settle=DURATION] [--rounds=N]
//                        [--apply|--dry-run] [--seed=N] [--quiesce-timeout-ms=N]
// Live strategy tuning (TuneStrategy; the rules are in server/tuner/tuner.h): a line per measured
// visit as the tune runs, then the candidates ranked and the outcome. --json: every progress
// message as one JSON line, the last one (phase PHASE_DONE) with the report. No deadline unless
// --timeout is given (a deadline that expires cancels the tune: skbnfd restores the incumbent).
// Ctrl-C cancels the tune the same way. Exit codes: 0 applied, incumbent kept or dry run; 1
// cancelled, aborted (another client changed the strategy), failed, or refused; 130 interrupted by
// Ctrl-C.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/rates.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {
namespace {

std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted.store(true); }

std::string Drops(const v1::TuneMeasurement& m) {
  uint64_t n = 0;
  for (const v1::DropCount& d : m.drops()) n += d.packets();
  return absl::StrCat(n);
}

const char* OutcomeName(v1::TuneOutcome o) {
  switch (o) {
    case v1::TUNE_OUTCOME_APPLIED:
      return "applied";
    case v1::TUNE_OUTCOME_KEPT_INCUMBENT:
      return "incumbent kept";
    case v1::TUNE_OUTCOME_DRY_RUN:
      return "dry run";
    case v1::TUNE_OUTCOME_CANCELLED:
      return "CANCELLED";
    case v1::TUNE_OUTCOME_ABORTED:
      return "ABORTED";
    case v1::TUNE_OUTCOME_FAILED:
      return "FAILED";
    default:
      return "unknown";
  }
}

// "fast 3 x0.90, slow 2 x0.91, 1 straddled": the visits by machine mode with their median
// ratio to the incumbent's neighbouring visits.
std::string Modes(const v1::TuneCandidate& c) {
  std::vector<std::string> parts;
  for (const v1::TuneModeFigure& f : c.modes()) {
    parts.push_back(absl::StrFormat("%s %d x%.2f", f.mode(), f.visits(), f.median_ratio()));
  }
  if (c.straddled() > 0) parts.push_back(absl::StrCat(c.straddled(), " straddled"));
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

void PrintReport(const v1::TuneReport& r) {
  std::cout << "ranked (median cycles per packet over rounds, each visit against its neighbouring "
               "incumbent visits, in the "
            << r.reference_mode() << " mode; +- half the range; * incumbent):\n";
  Table t({"RANK", "CANDIDATE", "CYC/PKT", "SPREAD", "ROUNDS", "PPS", "NOMBUF", "DROPS", "MODES",
           "NOTE"});
  for (const v1::TuneCandidate& c : r.candidates()) {
    t.Add({c.rank() > 0 ? absl::StrCat(c.rank()) : "-", c.spec() + (c.incumbent() ? " *" : ""),
           c.rank() > 0 ? absl::StrFormat("%.1f", c.median_cycles_per_packet()) : "-",
           c.rank() > 0 ? absl::StrFormat("%.1f", c.spread()) : "-",
           absl::StrCat(c.cycles_per_packet_size()),
           c.rank() > 0 ? control::HumanRate(c.median_packets_per_second()) : "-",
           absl::StrCat(c.rx_nombuf()), absl::StrCat(c.drops()), Modes(c),
           c.disqualified() ? "disqualified: " + c.disqualified_reason() : ""});
  }
  t.Print(std::cout, "  ");
  std::cout << "outcome: " << OutcomeName(r.outcome()) << ": " << r.reason() << "\n";
  std::cout << "in force: " << r.final_spec() << " (epoch " << r.final_epoch() << "); " << r.swaps()
            << " swaps in " << absl::StrFormat("%.1f", r.duration_ms() / 1e3) << " s; "
            << r.packets() << " packets forwarded during the tune, " << r.baseline_rate_packets()
            << " at the baseline rate\n";
}

// The TuneStrategyRequest of `strategy tune CANDIDATE... [flags]`, or a UsageError.
absl::StatusOr<v1::TuneStrategyRequest> TuneRequest(const std::vector<std::string>& p,
                                                    const Args& args) {
  v1::TuneStrategyRequest req;
  for (size_t i = 2; i < p.size(); ++i) req.add_candidates(p[i]);
  if (args.Has("apply") && args.Has("dry_run")) {
    return UsageError("--apply and --dry-run exclude each other (the default is --dry-run)");
  }
  req.set_apply(args.Has("apply"));
  if (args.Has("dwell")) {
    absl::StatusOr<uint32_t> v = ParseDuration("dwell", args.Get("dwell"));
    if (!v.ok()) return v.status();
    req.set_dwell_ms(*v);
  }
  if (args.Has("settle")) {
    absl::StatusOr<uint32_t> v = ParseDuration("settle", args.Get("settle"));
    if (!v.ok()) return v.status();
    req.set_settle_ms(*v);
  }
  if (args.Has("rounds")) {
    absl::StatusOr<uint32_t> v = ParseUint("--rounds", args.Get("rounds"));
    if (!v.ok()) return v.status();
    req.set_rounds(*v);
  }
  if (args.Has("seed")) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(args.Get("seed"), &seed)) {
      return UsageError(
          absl::StrCat("--seed: '", args.Get("seed"), "' is not a non-negative whole number"));
    }
    req.set_seed(seed);
  }
  if (args.Has("quiesce_timeout_ms")) {
    absl::StatusOr<uint32_t> v = ParseUint("--quiesce-timeout-ms", args.Get("quiesce_timeout_ms"));
    if (!v.ok()) return v.status();
    req.set_quiesce_timeout_ms(*v);
  }
  return req;
}

}  // namespace

absl::StatusOr<int> Client::Tune(const std::vector<std::string>& p) {
  absl::StatusOr<v1::TuneStrategyRequest> req = TuneRequest(p, args_);
  if (!req.ok()) return req.status();
  grpc::ClientContext ctx;
  if (args_.Has("timeout")) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s_));
  }
  // Ctrl-C cancels the call (skbnfd then restores the incumbent); a signal handler may not call
  // into gRPC, so a watcher does.
  std::signal(SIGINT, &OnInterrupt);
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished.load()) {
      if (g_interrupted.load()) {
        ctx.TryCancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::unique_ptr<grpc::ClientReader<v1::TuneProgress>> reader = stub_->TuneStrategy(&ctx, *req);
  v1::TuneProgress msg;
  v1::TuneReport report;
  bool done = false;
  while (reader->Read(&msg)) {
    if (json_) {
      Json(msg, true);
    } else {
      switch (msg.phase()) {
        case v1::TuneProgress::PHASE_BASELINE:
          // each round: every other candidate, each followed by a reference visit of the
          // incumbent (server/tuner/tuner.h)
          std::cout << "tuning " << (msg.visits() / std::max<uint32_t>(2 * msg.rounds(), 1) + 1)
                    << " candidates x " << msg.rounds()
                    << " rounds, each visit followed by the incumbent's; baseline "
                    << msg.candidate()
                    << ": " << absl::StrFormat("%.1f", msg.measurement().cycles_per_packet())
                    << " cycles/pkt, " << control::HumanRate(msg.measurement().packets_per_second())
                    << " pps\n"
                    << absl::StrFormat("%-6s %-7s %-32s %9s %9s %7s %7s  %s\n", "ROUND", "VISIT",
                                       "CANDIDATE", "CYC/PKT", "PPS", "NOMBUF", "DROPS", "NOTE");
          break;
        case v1::TuneProgress::PHASE_MEASURED: {
          const v1::TuneMeasurement& m = msg.measurement();
          std::cout << absl::StrFormat(
              "%-6s %-7s %-32s %9.1f %9s %7d %7s  %s\n", absl::StrCat(msg.round()),
              absl::StrCat(msg.visit(), "/", msg.visits()), m.spec(), m.cycles_per_packet(),
              control::HumanRate(m.packets_per_second()), m.rx_nombuf(), Drops(m),
              m.disqualified()  ? "disqualified: " + m.disqualified_reason()
              : m.reference()   ? "reference"
                                : "");
          break;
        }
        default:
          break;
      }
    }
    std::cout.flush();
    if (msg.phase() == v1::TuneProgress::PHASE_DONE) {
      report = msg.report();
      done = true;
    }
  }
  grpc::Status s = reader->Finish();
  finished.store(true);
  watcher.join();
  std::signal(SIGINT, SIG_DFL);
  if (g_interrupted.load()) {
    std::cerr << "skbnfctl: tune interrupted: skbnfd restores the strategy that was in force "
                 "(see `skbnfctl strategy get` and its log)\n";
    return 130;
  }
  if (!s.ok()) return Fail(s);
  if (!done) {
    std::cerr << "skbnfctl: the tune ended without a report\n";
    return 1;
  }
  if (!json_) PrintReport(report);
  switch (report.outcome()) {
    case v1::TUNE_OUTCOME_APPLIED:
    case v1::TUNE_OUTCOME_KEPT_INCUMBENT:
    case v1::TUNE_OUTCOME_DRY_RUN:
      return 0;
    default:
      std::cerr << "skbnfctl: tune " << OutcomeName(report.outcome()) << ": " << report.reason()
                << "\n";
      return 1;
  }
}

}  // namespace skbnf::ctl
