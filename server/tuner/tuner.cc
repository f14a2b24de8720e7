// SPDX-License-Identifier: BSD-3-Clause
#include "server/tuner/tuner.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/rates.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/pool_share.h"

namespace skbnf::control {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollEvery{5};  // cancellation and epoch checks while waiting
constexpr double kExcessFactor = 1.5;  // disqualification: this many times the baseline rate
constexpr double kDropSlack = 1e-4;    // + this share of the packets (drops only)

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// Every worker's and port's counters at one instant.
struct Sample {
  StatsSnapshot stats;
  std::vector<PortInfo> ports;
};

Sample Take(const Backend& b) { return Sample{b.GetStats(), b.ListPorts()}; }

uint64_t Diff(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

uint64_t RxPackets(const StatsSnapshot& s) {
  uint64_t n = 0;
  for (const CoreStats& c : s.cores) {
    for (const PortCounters& p : c.ports) n += p.rx_packets;
  }
  return n;
}

TuneMeasurement Measure(const Sample& a, const Sample& b) {
  TuneMeasurement m;
  uint64_t cycles = 0, busy_packets = 0, pool_nombuf = 0, pmd_nombuf = 0, missed = 0;
  std::map<std::string, uint64_t> drops;
  for (const CoreStats& cb : b.stats.cores) {
    const CoreStats* ca = nullptr;
    for (const CoreStats& c : a.stats.cores) {
      if (c.core == cb.core) ca = &c;
    }
    if (ca == nullptr) continue;
    const uint64_t dc = Diff(cb.busy_cycles, ca->busy_cycles);
    const uint64_t dp = Diff(cb.busy_packets, ca->busy_packets);
    cycles += dc;
    busy_packets += dp;
    if (dp > 0) m.core_cycles_per_packet.emplace_back(cb.core, CyclesPerPacket(dc, 0, dp, 0));
    pool_nombuf += Diff(cb.pool.alloc_failures, ca->pool.alloc_failures);
    for (const PortCounters& pb : cb.ports) {
      const PortCounters* pa = nullptr;
      for (const PortCounters& p : ca->ports) {
        if (p.port == pb.port) pa = &p;
      }
      if (pa == nullptr) continue;
      m.packets += Diff(pb.rx_packets, pa->rx_packets);
      for (const auto& [reason, n] : pb.drops) {
        uint64_t before = 0;
        for (const auto& [r, v] : pa->drops) {
          if (r == reason) before = v;
        }
        drops[reason] += Diff(n, before);
      }
    }
  }
  for (const PortInfo& pb : b.ports) {
    for (const PortInfo& pa : a.ports) {
      if (pa.id != pb.id || !pa.has_pmd_stats || !pb.has_pmd_stats) continue;
      missed += Diff(pb.pmd.imissed, pa.pmd.imissed);
      pmd_nombuf += Diff(pb.pmd.rx_nombuf, pa.pmd.rx_nombuf);
    }
  }
  drops["rx_missed"] += missed;
  // The pool and the PMDs may both count one failed refill: the larger of the two.
  m.rx_nombuf = std::max(pool_nombuf, pmd_nombuf);
  m.cycles_per_packet = CyclesPerPacket(cycles, 0, busy_packets, 0);
  m.packets_per_second = Rate(m.packets, 0, Seconds(b.stats.taken - a.stats.taken));
  m.drops.assign(drops.begin(), drops.end());
  return m;
}

double Share(uint64_t n, uint64_t packets) {
  return packets == 0 ? 0 : static_cast<double>(n) / static_cast<double>(packets);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Figure(const TuneCandidate& c) {
  return absl::StrFormat("%.1f +- %.1f cycles/packet", c.median_cycles_per_packet, c.spread);
}

void Log(const std::string& line) { std::cerr << "skbnf-control: tune " << line << std::endl; }

void LogTable(const TuneReport& r) {
  Log(absl::StrFormat("%-4s %-32s %10s %8s %6s %12s %s", "RANK", "CANDIDATE", "CYC/PKT", "SPREAD",
                      "ROUNDS", "PPS", "NOTE"));
  for (const TuneCandidate& c : r.candidates) {
    Log(absl::StrFormat("%-4s %-32s %10.1f %8.1f %6d %12s %s",
                        c.rank > 0 ? absl::StrCat(c.rank) : "-", c.spec + (c.incumbent ? " *" : ""),
                        c.median_cycles_per_packet, c.spread, c.cycles_per_packet.size(),
                        HumanRate(c.median_packets_per_second),
                        c.disqualified ? "disqualified: " + c.disqualified_reason : ""));
    std::string modes;
    for (const TuneModeFigure& f : c.modes) {
      absl::StrAppendFormat(&modes, " %s: %d visits, %.1f cycles/packet, ratio %.3f;", f.mode,
                            f.visits, f.median_cycles_per_packet, f.median_ratio);
    }
    if (!modes.empty() || c.straddled > 0) {
      Log(absl::StrFormat("     %s by mode:%s %d straddled", c.spec, modes, c.straddled));
    }
  }
  Log(absl::StrCat("done: ", TuneOutcomeName(r.outcome), ": ", r.reason, "; in force ",
                   r.final_spec, " (epoch ", r.final_epoch, "), ", r.swaps, " swaps, ",
                   r.duration_ms, " ms, ", r.packets, " packets forwarded vs ",
                   r.baseline_rate_packets, " at the baseline rate"));
}

}  // namespace

const char* TuneOutcomeName(TuneOutcome o) {
  switch (o) {
    case TuneOutcome::kApplied:
      return "applied";
    case TuneOutcome::kKeptIncumbent:
      return "kept_incumbent";
    case TuneOutcome::kDryRun:
      return "dry_run";
    case TuneOutcome::kCancelled:
      return "cancelled";
    case TuneOutcome::kAborted:
      return "aborted";
    case TuneOutcome::kFailed:
      return "failed";
  }
  return "unknown";
}

void DisqualifyAgainst(TuneMeasurement& m, const TuneMeasurement& base) {
  if (m.packets == 0 || m.cycles_per_packet <= 0) {
    m.disqualified = true;
    m.disqualified_reason = "received no packet during the dwell";
    return;
  }
  const double pk = static_cast<double>(m.packets);
  const double nombuf_base = Share(base.rx_nombuf, base.packets);
  if (static_cast<double>(m.rx_nombuf) > kExcessFactor * nombuf_base * pk) {
    m.disqualified = true;
    m.disqualified_reason =
        absl::StrFormat("rx_nombuf grew by %d (%.3g per million packets; baseline %.3g)",
                        m.rx_nombuf, 1e6 * Share(m.rx_nombuf, m.packets), 1e6 * nombuf_base);
    return;
  }
  for (const auto& [reason, n] : m.drops) {
    uint64_t b = 0;
    for (const auto& [r, v] : base.drops) {
      if (r == reason) b = v;
    }
    const double base_share = Share(b, base.packets);
    if (static_cast<double>(n) > kExcessFactor * base_share * pk + kDropSlack * pk) {
      m.disqualified = true;
      m.disqualified_reason =
          absl::StrFormat("drops %s: %d in %d packets (%.4f %%; baseline %.4f %%)", reason, n,
                          m.packets, 100 * Share(n, m.packets), 100 * base_share);
      return;
    }
  }
}

void ScoreAndRank(std::vector<TuneCandidate>& cands) {
  auto ranked = [](const TuneCandidate& c) {
    return !c.disqualified && !c.cycles_per_packet.empty();
  };
  for (TuneCandidate& c : cands) {
    c.rank = 0;
    if (!ranked(c)) continue;
    c.median_cycles_per_packet = Median(c.cycles_per_packet);
    const auto [lo, hi] =
        std::minmax_element(c.cycles_per_packet.begin(), c.cycles_per_packet.end());
    c.spread = (*hi - *lo) / 2;
    c.median_packets_per_second = Median(c.packets_per_second);
  }
  std::stable_sort(cands.begin(), cands.end(), [&](const TuneCandidate& a, const TuneCandidate& b) {
    if (ranked(a) != ranked(b)) return ranked(a);
    return ranked(a) && a.median_cycles_per_packet < b.median_cycles_per_packet;
  });
  uint32_t rank = 0;
  for (TuneCandidate& c : cands) {
    if (ranked(c)) c.rank = ++rank;
  }
}

namespace {

// The modes of the references (see tuner.h): "one", or "fast"/"slow" split at the widest gap of
// their sorted log cycles/packet when it is wider than kTuneModeGap.
void LabelReferences(const std::vector<TuneMeasurement*>& refs) {
  std::vector<double> logs;
  for (const TuneMeasurement* r : refs) logs.push_back(std::log(r->cycles_per_packet));
  std::sort(logs.begin(), logs.end());
  double widest = 0, at = 0;
  for (size_t i = 1; i < logs.size(); ++i) {
    if (logs[i] - logs[i - 1] > widest) {
      widest = logs[i] - logs[i - 1];
      at = (logs[i] + logs[i - 1]) / 2;
    }
  }
  const bool two = widest > std::log1p(kTuneModeGap);
  for (TuneMeasurement* r : refs) {
    r->mode = !two ? "one" : std::log(r->cycles_per_packet) < at ? "fast" : "slow";
  }
}

double MeanOf(const std::vector<const TuneMeasurement*>& v) {
  double sum = 0;
  for (const TuneMeasurement* m : v) sum += m->cycles_per_packet;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// A candidate's summary by mode (straddled visits left out).
std::vector<TuneModeFigure> ByMode(const std::vector<const TuneMeasurement*>& visits) {
  std::vector<TuneModeFigure> out;
  for (const char* mode : {"fast", "slow", "one"}) {
    std::vector<double> cpp, ratio;
    for (const TuneMeasurement* m : visits) {
      if (m->mode != mode) continue;
      cpp.push_back(m->cycles_per_packet);
      if (m->ratio > 0) ratio.push_back(m->ratio);
    }
    if (cpp.empty()) continue;
    out.push_back(TuneModeFigure{mode, static_cast<uint32_t>(cpp.size()), Median(cpp),
                                 Median(ratio)});
  }
  return out;
}

}  // namespace

double LabelAndScore(TuneMeasurement& baseline, std::vector<TuneMeasurement>& visits,
                     std::vector<TuneCandidate>& cands, std::string* reference_mode) {
  std::vector<TuneMeasurement*> seq{&baseline};
  for (TuneMeasurement& m : visits) seq.push_back(&m);
  std::vector<TuneMeasurement*> refs;
  std::vector<size_t> ref_at;  // position in seq of each reference
  for (size_t i = 0; i < seq.size(); ++i) {
    if (seq[i]->reference && seq[i]->cycles_per_packet > 0) {
      refs.push_back(seq[i]);
      ref_at.push_back(i);
    }
  }
  if (refs.empty()) return 0;
  LabelReferences(refs);
  // A reference's ratio: over its neighbouring references in its mode.
  for (size_t k = 0; k < refs.size(); ++k) {
    std::vector<const TuneMeasurement*> near;
    if (k > 0 && refs[k - 1]->mode == refs[k]->mode) near.push_back(refs[k - 1]);
    if (k + 1 < refs.size() && refs[k + 1]->mode == refs[k]->mode) near.push_back(refs[k + 1]);
    refs[k]->ratio = near.empty() ? 0 : refs[k]->cycles_per_packet / MeanOf(near);
  }
  // A candidate's visit: between two references, in their mode, or straddled.
  for (size_t i = 0, k = 0; i < seq.size(); ++i) {
    while (k < ref_at.size() && ref_at[k] < i) ++k;  // refs[k] is the first at or after i
    TuneMeasurement& m = *seq[i];
    if (m.reference || m.cycles_per_packet <= 0) continue;
    const bool bracketed = k > 0 && k < refs.size();
    if (bracketed && refs[k - 1]->mode == refs[k]->mode) {
      m.mode = refs[k]->mode;
      m.ratio = m.cycles_per_packet / MeanOf({refs[k - 1], refs[k]});
    } else {
      m.mode = "straddle";
      m.ratio = 0;
    }
  }
  *reference_mode = baseline.mode.empty() ? refs[0]->mode : baseline.mode;
  std::vector<double> level;
  for (const TuneMeasurement* r : refs) {
    if (r->mode == *reference_mode) level.push_back(r->cycles_per_packet);
  }
  const double ref = Median(level);
  for (TuneCandidate& c : cands) {
    c.cycles_per_packet.clear();
    c.straddled = 0;
    std::vector<const TuneMeasurement*> mine;
    std::map<uint32_t, std::vector<double>> by_round;
    for (const TuneMeasurement* m : seq) {
      if (m->spec != c.spec || m->reference != c.incumbent || m->cycles_per_packet <= 0) continue;
      mine.push_back(m);
      if (m->mode == "straddle") ++c.straddled;
      if (m->disqualified || m->ratio <= 0 || m->round == 0) continue;
      by_round[m->round].push_back(m->ratio * ref);
    }
    for (const auto& [round, figures] : by_round) c.cycles_per_packet.push_back(Median(figures));
    if (c.incumbent) {
      // its rounds with reference visits but none scored (no neighbour in its mode)
      std::map<uint32_t, bool> rounds;
      for (const TuneMeasurement* m : mine) {
        if (m->round > 0 && !m->disqualified) rounds[m->round] = true;
      }
      for (const auto& [round, unused] : rounds) c.straddled += by_round.count(round) ? 0 : 1;
    }
    c.modes = ByMode(mine);
  }
  return ref;
}

TuneDecision Decide(const std::vector<TuneCandidate>& cands, const std::string& incumbent,
                    bool apply) {
  const TuneCandidate* winner = !cands.empty() && cands[0].rank == 1 ? &cands[0] : nullptr;
  const TuneCandidate* inc = nullptr;
  for (const TuneCandidate& c : cands) {
    if (c.spec == incumbent) inc = &c;
  }
  std::string verdict;
  bool beats = false;
  if (winner == nullptr) {
    verdict = "no candidate qualified";
  } else if (winner->spec == incumbent) {
    verdict = absl::StrCat("the incumbent ", incumbent, " ranked first (", Figure(*winner), ")");
  } else if (inc == nullptr || inc->rank == 0) {
    verdict = absl::StrCat(winner->spec, " ranked first (", Figure(*winner),
                           ") but the incumbent has no valid figure to beat",
                           inc != nullptr && inc->disqualified
                               ? absl::StrCat(" (", inc->disqualified_reason, ")")
                               : "");
  } else {
    const double gain = inc->median_cycles_per_packet - winner->median_cycles_per_packet;
    const double spread = inc->spread + winner->spread;
    beats = gain > spread;
    verdict = absl::StrFormat(
        "%s (%s) beat the incumbent %s (%s) by %.1f cycles/packet, %s the spread %.1f",
        winner->spec, Figure(*winner), inc->spec, Figure(*inc), gain,
        beats ? "more than" : "not more than", spread);
  }
  TuneDecision d;
  d.target = incumbent;
  if (!apply) {
    d.outcome = TuneOutcome::kDryRun;
    d.reason = absl::StrCat("dry run: ", verdict,
                            beats ? "; --apply would keep it" : "; the incumbent would stay",
                            "; the incumbent is back in force");
  } else if (beats) {
    d.outcome = TuneOutcome::kApplied;
    d.reason = absl::StrCat(verdict, ": applied");
    d.target = winner->spec;
  } else {
    d.outcome = TuneOutcome::kKeptIncumbent;
    d.reason = absl::StrCat(verdict, ": the incumbent stays");
  }
  return d;
}

absl::StatusOr<TunePlan> Tuner::Plan(const TuneRequest& r) const {
  TunePlan p;
  p.dwell = r.dwell.count() == 0 ? kTuneDefaultDwell : r.dwell;
  if (p.dwell < kTuneMinDwell || p.dwell > kTuneMaxDwell) {
    return Invalid("dwell_ms",
                   absl::StrCat(r.dwell.count(), " is out of range [", kTuneMinDwell.count(), ", ",
                                kTuneMaxDwell.count(), "] (0 = ", kTuneDefaultDwell.count(), ")"));
  }
  if (r.settle > kTuneMaxSettle) {
    return Invalid("settle_ms", absl::StrCat(r.settle.count(), " is out of range [0, ",
                                             kTuneMaxSettle.count(), "] (0 = dwell / 4)"));
  }
  p.settle = r.settle.count() != 0
                 ? r.settle
                 : std::clamp<milliseconds>(p.dwell / 4, milliseconds(20), milliseconds(2000));
  if (r.rounds > kTuneMaxRounds) {
    return Invalid("rounds", absl::StrCat(r.rounds, " is out of range [1, ", kTuneMaxRounds,
                                          "] (0 = ", kTuneDefaultRounds, ")"));
  }
  p.rounds = r.rounds != 0 ? r.rounds : kTuneDefaultRounds;
  p.apply = r.apply;
  if (p.apply && p.rounds < 2) {
    return Invalid("rounds",
                   "apply needs at least 2 rounds: a winner must beat the incumbent by more than "
                   "the spread measured over rounds");
  }
  if (r.quiesce_timeout > kTuneMaxQuiesceTimeout) {
    return Invalid("quiesce_timeout_ms",
                   absl::StrCat(r.quiesce_timeout.count(), " is out of range [0, ",
                                kTuneMaxQuiesceTimeout.count(), "] (0 = the pool's default)"));
  }
  p.quiesce_timeout = r.quiesce_timeout;
  if (r.candidates.size() > kTuneMaxCandidates) {
    return Invalid("candidates",
                   absl::StrCat(r.candidates.size(), " candidates; at most ", kTuneMaxCandidates));
  }
  std::vector<std::pair<std::string, pool::StrategySpec>> listed;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const std::string field = absl::StrCat("candidates[", i, "]");
    absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(r.candidates[i]);
    if (!spec.ok()) {
      return Invalid(field, absl::StrCat("'", r.candidates[i], "': ", spec.status().message()));
    }
    const std::string canonical = spec->ToString();
    for (size_t j = 0; j < listed.size(); ++j) {
      if (listed[j].first == canonical) {
        return Invalid(field, absl::StrCat("'", r.candidates[i],
                                           "' is the same strategy as "
                                           "candidates[",
                                           j, "] ('", canonical, "')"));
      }
    }
    listed.emplace_back(canonical, *spec);
  }
  // ValidateStrategy is a mutation-side call: through Mutations, which changes nothing here.
  absl::Status planned_candidates =
      mutations_.Run(ChangeSource::kTune, [&](Change& c) -> absl::Status {
        const pool::StrategySpec incumbent = c.backend().GetStrategy();
        p.incumbent = incumbent.ToString();
        if (absl::Status s = c.backend().ValidateStrategy(incumbent); !s.ok()) return s;  // native
        p.candidates.push_back(p.incumbent);
        if (listed.empty()) {
          for (const char* d : kTuneDefaultCandidates) {
            absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(d);
            // a default this backend cannot run, or that would hoard this pool
            // (server/core/pool_share.h), is left out, not refused
            if (!spec.ok() || !CheckStrategy(c.backend(), *spec).ok()) continue;
            if (spec->ToString() != p.incumbent) p.candidates.push_back(spec->ToString());
          }
        }
        for (size_t i = 0; i < listed.size(); ++i) {
          // the backend's own check and the same pool-share bound as SetStrategy
          absl::Status s = CheckStrategy(c.backend(), listed[i].second);
          if (s.code() == absl::StatusCode::kFailedPrecondition) return s;
          if (!s.ok()) return Invalid(absl::StrCat("candidates[", i, "]"), s.message());
          if (listed[i].first != p.incumbent) p.candidates.push_back(listed[i].first);
        }
        return absl::OkStatus();
      });
  if (!planned_candidates.ok()) return planned_candidates;
  if (p.candidates.size() < 2) {
    return Invalid("candidates", absl::StrCat("only the strategy in force ('", p.incumbent,
                                              "'): list at least one other strategy"));
  }
  // each round: every other candidate, each followed by a reference visit of the incumbent
  const auto planned = p.dwell + p.rounds * 2 * (p.candidates.size() - 1) * (p.settle + p.dwell);
  if (planned > kTuneMaxDuration) {
    return Invalid("rounds",
                   absl::StrCat("the tune would take ",
                                std::chrono::duration_cast<std::chrono::seconds>(planned).count(),
                                " s (baseline + rounds x 2 x (candidates - 1) x (settle + dwell): each candidate's "
                                "visit is followed by one of the incumbent); "
                                "at most ",
                                kTuneMaxDuration.count(),
                                " s: fewer rounds or candidates, or a shorter dwell"));
  }
  if (r.seed != 0) {
    p.seed = r.seed;
  } else {
    std::random_device rd;
    p.seed = (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  return p;
}

void Tuner::SetState(const char* state, const std::string& candidate) {
  absl::MutexLock l(&status_mu_);
  status_.state = state;
  status_.candidate = candidate;
  status_.running = std::string(state) != "idle";
}

Tuner::Status Tuner::GetStatus() const {
  absl::MutexLock l(&status_mu_);
  return status_;
}

// One tune in progress (Tuner::Run): its phases, one function each, in the order Run calls them
// (start, baseline, rounds, decision, restore, finish), over the state they share. The names are
// the locals Run had before it was split (issue 21: no function over 120 lines).
class TuneRun {
 public:
  TuneRun(Tuner& tuner, const TunePlan& p, const std::function<bool()>& is_cancelled,
          const std::function<bool(const TuneProgress&)>& on_progress)
      : tuner_(tuner),
        mutations_(tuner.mutations_),
        backend_(tuner.backend_),
        plan(p),
        cancelled(is_cancelled),
        progress(on_progress) {}

  enum class Stop { kNone, kCancelled, kAborted };
  enum class Swap { kOk, kAborted, kFailed };

  void Start();
  // FAILED_PRECONDITION when the baseline saw no traffic (nothing swapped).
  absl::Status Baseline();
  void Rounds();
  // The strategy to leave in force; sets the report's outcome and reason.
  std::string Decision();
  void Restore(const std::string& target);
  // The end sample and the table; then Tuner::Run records the report and calls Done.
  void Finish();
  void Done();

  TuneReport rep;

 private:
  void SetState(const char* state, const std::string& candidate) {
    tuner_.SetState(state, candidate);
  }
  Stop check();
  Stop wait(milliseconds d);
  // Puts `spec` in force (nothing to do when it is), only while the epoch is still the tune's.
  Swap swap_locked(Change& c, const std::string& spec);
  Swap swap_to(const std::string& spec);
  bool Visit(TuneCandidate& c, uint32_t round);
  void MeasureVisit(TuneCandidate& c, uint32_t round, TuneProgress& pr);

  Tuner& tuner_;
  Mutations& mutations_;
  Backend& backend_;
  const TunePlan& plan;
  const std::function<bool()>& cancelled;
  const std::function<bool(const TuneProgress&)>& progress;
  Clock::time_point t0;
  uint32_t visits = 0;
  // The epoch the tune's own last swap produced (or found): anything else is another client.
  uint64_t epoch = 0;
  std::string in_force;
  std::string swap_error;
  Stop stop = Stop::kNone;
  bool failed = false;
  Sample tune_start;
  std::vector<TuneCandidate> cands;
  uint32_t visit = 0;
};

void TuneRun::Start() {
  rep.incumbent = plan.incumbent;
  rep.rounds = plan.rounds;
  rep.dwell = plan.dwell;
  rep.settle = plan.settle;
  rep.seed = plan.seed;
  rep.apply = plan.apply;
  rep.started_unix_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  t0 = Clock::now();
  visits = plan.rounds * 2 * static_cast<uint32_t>(plan.candidates.size() - 1);
  Log(absl::StrCat("started: ", plan.candidates.size(), " candidates (",
                   absl::StrJoin(plan.candidates, " "), "), incumbent ", plan.incumbent, ", ",
                   plan.rounds, " rounds, dwell ", plan.dwell.count(), " ms, settle ",
                   plan.settle.count(), " ms, seed ", plan.seed,
                   plan.apply ? ", apply" : ", dry run"));
  mutations_.Run(ChangeSource::kTune, [&](Change& c) {
    epoch = c.backend().GetEpoch();
    in_force = c.backend().GetStrategy().ToString();
  });
  stop = in_force == plan.incumbent ? Stop::kNone : Stop::kAborted;
}

TuneRun::Stop TuneRun::check() {
  if (cancelled()) return Stop::kCancelled;
  if (backend_.GetEpoch() != epoch) return Stop::kAborted;
  return Stop::kNone;
}

TuneRun::Stop TuneRun::wait(milliseconds d) {
  const auto deadline = Clock::now() + d;
  for (;;) {
    const Stop s = check();
    if (s != Stop::kNone) return s;
    const auto now = Clock::now();
    if (now >= deadline) return Stop::kNone;
    std::this_thread::sleep_for(std::min<Clock::duration>(kPollEvery, deadline - now));
  }
}

TuneRun::Swap TuneRun::swap_locked(Change& c, const std::string& spec) {
  if (c.backend().GetEpoch() != epoch) return Swap::kAborted;
  if (in_force == spec) return Swap::kOk;
  absl::StatusOr<pool::StrategySpec> parsed = pool::StrategySpec::Parse(spec);  // canonical
  if (!parsed.ok()) {  // every spec here came from Plan's canonical forms
    swap_error = absl::StrCat("swap to ", spec, ": ", parsed.status().message());
    return Swap::kFailed;
  }
  pool::SwapReport r = c.SwapStrategy(*parsed, plan.quiesce_timeout);
  rep.swaps++;
  epoch = c.backend().GetEpoch();
  in_force = c.backend().GetStrategy().ToString();
  if (!r.status.ok()) {
    swap_error =
        absl::StrCat("swap to ", spec, " failed", r.rolled_back ? " and was rolled back" : "", ": ",
                     r.status.message());
    return Swap::kFailed;
  }
  return Swap::kOk;
}

TuneRun::Swap TuneRun::swap_to(const std::string& spec) {
  return mutations_.Run(ChangeSource::kTune, [&](Change& c) { return swap_locked(c, spec); });
}

// Baseline: the incumbent, before anything is swapped.
absl::Status TuneRun::Baseline() {
  if (stop == Stop::kNone) {
    SetState("baseline", plan.incumbent);
    Sample a = Take(backend_);
    stop = wait(plan.dwell);
    tune_start = Take(backend_);
    rep.baseline = Measure(a, tune_start);
    rep.baseline.spec = plan.incumbent;
    if (stop == Stop::kNone && (rep.baseline.packets == 0 || rep.baseline.cycles_per_packet <= 0)) {
      Log("refused: the workers received no packet in the baseline window; nothing swapped");
      return absl::FailedPreconditionError(
          absl::StrCat("no traffic: the workers received no packet during the ", plan.dwell.count(),
                       " ms baseline; tuning measures live traffic (nothing was swapped)"));
    }
    if (stop == Stop::kNone) {
      Log(absl::StrFormat("baseline %s: %.1f cycles/packet, %s pps", plan.incumbent,
                          rep.baseline.cycles_per_packet,
                          HumanRate(rep.baseline.packets_per_second)));
      TuneProgress pr;
      pr.phase = TuneProgress::Phase::kBaseline;
      pr.rounds = plan.rounds;
      pr.candidate = plan.incumbent;
      pr.visits = visits;
      pr.measurement = &rep.baseline;
      if (!progress(pr)) stop = Stop::kCancelled;
    }
  }
  return absl::OkStatus();
}

void TuneRun::Rounds() {
  cands.resize(plan.candidates.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    cands[i].spec = plan.candidates[i];
    cands[i].incumbent = plan.candidates[i] == plan.incumbent;
  }
  constexpr size_t incumbent = 0;  // TunePlan's candidates: the incumbent first (Tuner::Plan)
  rep.baseline.reference = true;
  std::mt19937_64 rng(plan.seed);
  for (uint32_t round = 1; round <= plan.rounds && stop == Stop::kNone && !failed; ++round) {
    std::vector<size_t> order;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i].disqualified && i != incumbent) order.push_back(i);
    }
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      // the candidate, then the incumbent: every candidate's visit between two references
      if (!Visit(cands[i], round) || !Visit(cands[incumbent], round)) break;
    }
  }
  rep.reference_cycles_per_packet =
      LabelAndScore(rep.baseline, rep.measurements, cands, &rep.reference_mode);
  ScoreAndRank(cands);
  if (!cands.empty() && cands[0].rank == 1) rep.winner = cands[0].spec;
}

// Swap to `c`, settle, measure: false when the tune stops (cancelled, aborted, a failed swap).
bool TuneRun::Visit(TuneCandidate& c, uint32_t round) {
  ++visit;
  SetState("settling", c.spec);
  const Swap sw = swap_to(c.spec);
  if (sw == Swap::kAborted) stop = Stop::kAborted;
  if (sw == Swap::kFailed) failed = true;
  if (sw != Swap::kOk) return false;
  TuneProgress pr;
  pr.phase = TuneProgress::Phase::kSettling;
  pr.round = round;
  pr.rounds = plan.rounds;
  pr.candidate = c.spec;
  pr.visit = visit;
  pr.visits = visits;
  if (!progress(pr)) stop = Stop::kCancelled;
  if (stop == Stop::kNone) stop = wait(plan.settle);
  if (stop != Stop::kNone) return false;
  MeasureVisit(c, round, pr);
  return stop == Stop::kNone;
}

// One visit's dwell, after its settle: measured, judged against the baseline. Its scored figure
// comes when the visits are over (LabelAndScore), from its neighbouring references.
void TuneRun::MeasureVisit(TuneCandidate& c, uint32_t round, TuneProgress& pr) {
  SetState("measuring", c.spec);
  const Sample a = Take(backend_);
  stop = wait(plan.dwell);
  if (stop != Stop::kNone) return;
  TuneMeasurement m = Measure(a, Take(backend_));
  m.round = round;
  m.spec = c.spec;
  m.reference = c.incumbent;
  DisqualifyAgainst(m, rep.baseline);
  c.rx_nombuf += m.rx_nombuf;
  for (const auto& d : m.drops) c.drops += d.second;
  if (m.disqualified) {
    c.disqualified = true;
    c.disqualified_reason = absl::StrCat("round ", round, ": ", m.disqualified_reason);
  } else {
    c.packets_per_second.push_back(m.packets_per_second);
  }
  Log(absl::StrFormat("round %d/%d %s%s: %.1f cycles/packet, %s pps, rx_nombuf %d%s", round,
                      plan.rounds, c.spec, m.reference ? " (reference)" : "", m.cycles_per_packet,
                      HumanRate(m.packets_per_second),
                      m.rx_nombuf,
                      m.disqualified ? ", disqualified: " + m.disqualified_reason : ""));
  rep.measurements.push_back(std::move(m));
  pr.phase = TuneProgress::Phase::kMeasured;
  pr.measurement = &rep.measurements.back();
  if (!progress(pr)) stop = Stop::kCancelled;
}

std::string TuneRun::Decision() {
  std::string target = plan.incumbent;
  if (stop == Stop::kAborted) {
    rep.outcome = TuneOutcome::kAborted;
    rep.reason =
        "another client changed the strategy during the tune: the tune stopped and left "
        "that change in force";
  } else if (stop == Stop::kCancelled) {
    rep.outcome = TuneOutcome::kCancelled;
    rep.reason = "cancelled (client gone, deadline or server stopping): the incumbent is restored";
  } else if (failed) {
    rep.outcome = TuneOutcome::kFailed;
    rep.reason = absl::StrCat(swap_error, ": the incumbent is restored");
  } else {
    const TuneDecision d = Decide(cands, plan.incumbent, plan.apply);
    rep.outcome = d.outcome;
    rep.reason = d.reason;
    target = d.target;
  }
  return target;
}

void TuneRun::Restore(const std::string& target) {
  if (rep.outcome != TuneOutcome::kAborted) {
    SetState("finishing", "");
    const Swap sw = swap_to(target);
    if (sw == Swap::kAborted) {
      rep.outcome = TuneOutcome::kAborted;
      rep.reason = absl::StrCat(rep.reason,
                                "; then another client changed the strategy before "
                                "the tune's last swap: that change stays");
    } else if (sw == Swap::kFailed) {
      rep.outcome = TuneOutcome::kFailed;
      rep.reason = absl::StrCat(rep.reason, "; the final ", swap_error);
      if (target != plan.incumbent && swap_to(plan.incumbent) == Swap::kOk) {
        absl::StrAppend(&rep.reason, "; the incumbent is restored");
      }
    }
  }
}

void TuneRun::Finish() {
  rep.candidates = std::move(cands);
  const Sample end = Take(backend_);
  rep.final_spec = backend_.GetStrategy().ToString();
  rep.final_epoch = backend_.GetEpoch();
  if (!tune_start.stats.cores.empty()) {
    rep.packets = Diff(RxPackets(end.stats), RxPackets(tune_start.stats));
    rep.baseline_rate_packets = static_cast<uint64_t>(
        rep.baseline.packets_per_second * Seconds(end.stats.taken - tune_start.stats.taken));
  }
  rep.duration_ms =
      static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count());
  LogTable(rep);
}

void TuneRun::Done() {
  TuneProgress done;
  done.phase = TuneProgress::Phase::kDone;
  done.round = plan.rounds;
  done.rounds = plan.rounds;
  done.visit = visit;
  done.visits = visits;
  done.report = &rep;
  // kDone is the last event: the tune is over, so a client gone now cancels nothing.
  (void)progress(done);
}

absl::StatusOr<TuneReport> Tuner::Run(const TunePlan& plan, const std::function<bool()>& cancelled,
                                      const std::function<bool(const TuneProgress&)>& progress) {
  bool idle = false;
  if (!running_.compare_exchange_strong(idle, true)) {
    const Status s = GetStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("a tune is already running (", s.state, s.candidate.empty() ? "" : " ",
                     s.candidate, "); one at a time: wait for it to end or cancel it"));
  }
  struct Idle {
    Tuner* t;
    ~Idle() {
      t->SetState("idle", "");
      t->running_.store(false);
    }
  } idle_at_exit{this};

  TuneRun run(*this, plan, cancelled, progress);
  run.Start();
  if (absl::Status s = run.Baseline(); !s.ok()) return s;
  run.Rounds();
  run.Restore(run.Decision());
  run.Finish();
  {
    absl::MutexLock l(&status_mu_);
    status_.runs[static_cast<int>(run.rep.outcome)]++;
    status_.last = std::make_shared<const TuneReport>(run.rep);
  }
  run.Done();
  return std::move(run.rep);
}

}  // namespace skbnf::control
