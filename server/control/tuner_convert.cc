// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/tuner_convert.h"

namespace skbnf::control {
namespace {

v1::TuneOutcome OutcomeToProto(TuneOutcome o) {
  switch (o) {
    case TuneOutcome::kApplied:
      return v1::TUNE_OUTCOME_APPLIED;
    case TuneOutcome::kKeptIncumbent:
      return v1::TUNE_OUTCOME_KEPT_INCUMBENT;
    case TuneOutcome::kDryRun:
      return v1::TUNE_OUTCOME_DRY_RUN;
    case TuneOutcome::kCancelled:
      return v1::TUNE_OUTCOME_CANCELLED;
    case TuneOutcome::kAborted:
      return v1::TUNE_OUTCOME_ABORTED;
    case TuneOutcome::kFailed:
      return v1::TUNE_OUTCOME_FAILED;
  }
  return v1::TUNE_OUTCOME_UNSPECIFIED;
}

v1::TuneProgress::Phase PhaseToProto(TuneProgress::Phase p) {
  switch (p) {
    case TuneProgress::Phase::kBaseline:
      return v1::TuneProgress::PHASE_BASELINE;
    case TuneProgress::Phase::kSettling:
      return v1::TuneProgress::PHASE_SETTLING;
    case TuneProgress::Phase::kMeasured:
      return v1::TuneProgress::PHASE_MEASURED;
    case TuneProgress::Phase::kDone:
      return v1::TuneProgress::PHASE_DONE;
  }
  return v1::TuneProgress::PHASE_UNSPECIFIED;
}

void MeasurementToProto(const TuneMeasurement& m, v1::TuneMeasurement* out) {
  out->set_round(m.round);
  out->set_spec(m.spec);
  out->set_cycles_per_packet(m.cycles_per_packet);
  for (const auto& [core, cpp] : m.core_cycles_per_packet) {
    (*out->mutable_core_cycles_per_packet())[static_cast<uint32_t>(core)] = cpp;
  }
  out->set_packets_per_second(m.packets_per_second);
  out->set_packets(m.packets);
  out->set_rx_nombuf(m.rx_nombuf);
  for (const auto& [reason, n] : m.drops) {
    v1::DropCount* d = out->add_drops();
    d->set_reason(reason);
    d->set_packets(n);
  }
  out->set_disqualified(m.disqualified);
  out->set_disqualified_reason(m.disqualified_reason);
  out->set_reference(m.reference);
  out->set_mode(m.mode);
  out->set_ratio(m.ratio);
}

}  // namespace

TuneRequest TuneRequestFromProto(const v1::TuneStrategyRequest& req) {
  TuneRequest r;
  r.candidates.assign(req.candidates().begin(), req.candidates().end());
  r.dwell = std::chrono::milliseconds(req.dwell_ms());
  r.settle = std::chrono::milliseconds(req.settle_ms());
  r.rounds = req.rounds();
  r.apply = req.apply();
  r.seed = req.seed();
  r.quiesce_timeout = std::chrono::milliseconds(req.quiesce_timeout_ms());
  return r;
}

void TuneReportToProto(const TuneReport& r, v1::TuneReport* out) {
  out->set_outcome(OutcomeToProto(r.outcome));
  out->set_reason(r.reason);
  out->set_incumbent(r.incumbent);
  out->set_winner(r.winner);
  out->set_final_spec(r.final_spec);
  out->set_final_epoch(r.final_epoch);
  for (const TuneCandidate& c : r.candidates) {
    v1::TuneCandidate* pc = out->add_candidates();
    pc->set_spec(c.spec);
    pc->set_incumbent(c.incumbent);
    pc->set_rank(c.rank);
    pc->set_median_cycles_per_packet(c.median_cycles_per_packet);
    pc->set_spread(c.spread);
    for (double v : c.cycles_per_packet) pc->add_cycles_per_packet(v);
    pc->set_median_packets_per_second(c.median_packets_per_second);
    pc->set_rx_nombuf(c.rx_nombuf);
    pc->set_drops(c.drops);
    pc->set_disqualified(c.disqualified);
    pc->set_disqualified_reason(c.disqualified_reason);
    for (const TuneModeFigure& f : c.modes) {
      v1::TuneModeFigure* pf = pc->add_modes();
      pf->set_mode(f.mode);
      pf->set_visits(f.visits);
      pf->set_median_cycles_per_packet(f.median_cycles_per_packet);
      pf->set_median_ratio(f.median_ratio);
    }
    pc->set_straddled(c.straddled);
  }
  for (const TuneMeasurement& m : r.measurements) MeasurementToProto(m, out->add_measurements());
  MeasurementToProto(r.baseline, out->mutable_baseline());
  out->set_rounds(r.rounds);
  out->set_dwell_ms(static_cast<uint32_t>(r.dwell.count()));
  out->set_settle_ms(static_cast<uint32_t>(r.settle.count()));
  out->set_seed(r.seed);
  out->set_applied(r.apply);
  out->set_swaps(r.swaps);
  out->set_started_unix_ms(r.started_unix_ms);
  out->set_duration_ms(r.duration_ms);
  out->set_packets(r.packets);
  out->set_baseline_rate_packets(r.baseline_rate_packets);
  out->set_reference_cycles_per_packet(r.reference_cycles_per_packet);
  out->set_reference_mode(r.reference_mode);
}

void TuneProgressToProto(const TuneProgress& p, v1::TuneProgress* out) {
  out->set_phase(PhaseToProto(p.phase));
  out->set_round(p.round);
  out->set_rounds(p.rounds);
  out->set_candidate(p.candidate);
  out->set_visit(p.visit);
  out->set_visits(p.visits);
  if (p.measurement != nullptr) MeasurementToProto(*p.measurement, out->mutable_measurement());
  if (p.report != nullptr) TuneReportToProto(*p.report, out->mutable_report());
}

}  // namespace skbnf::control
