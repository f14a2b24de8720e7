// SPDX-License-Identifier: BSD-3-Clause
// Tuner: live strategy tuning (TuneStrategy, `skbnfctl strategy tune`). It does what an engineer
// would do by hand with `strategy set` and `top` - try candidate strategies on the traffic the
// daemon actually carries and keep the best - but measured properly and safe to leave running
// in production.
//
// A tune, step by step
//   plan       Validate the request (every bad field is INVALID_ARGUMENT naming it; nothing is
//              swapped), resolve the defaults, add the strategy in force (the incumbent) to the
//              candidates when it is not listed. Default candidates: the incumbent, magazine,
//              headpool, recycle+magazine, lcache (those the data plane accepts).
//   baseline   Measure the incumbent for one dwell before anything is swapped: the reference
//              for disqualification, and the rate a tune's cost in packets is counted against.
//              No packet received: FAILED_PRECONDITION (tuning needs live traffic).
//   rounds     Each round visits every candidate still qualified in a fresh random order (seeded;
//              the seed is reported so a run can be repeated), each visit followed by one of the
//              incumbent (a reference): swap, settle, measure for the dwell. The baseline is the
//              first reference, so every candidate's visit lies between two references:
//              B c1 I c2 I c3 I | c2 I c1 I c3 I | ... (issue 33 item 6: the tuner measures the
//              way bench/interleave.py does). A visit measures, over all workers, busy cycles /
//              busy packets (the per-core busy-cycle counters), packets per second, rx_nombuf
//              (pool allocation failures + the PMDs' rx_nombuf) and drops by reason (+ the NICs'
//              imissed as rx_missed).
//   modes      The machine may change speed at any moment (this VM: two modes about 1.6x apart,
//              mean spell 46 s; TSC ticks are wall time, so cycles/packet move with it). The
//              references label the modes: their log cycles/packet sorted, split at the widest
//              gap when it exceeds kTuneModeGap (15 %): "fast" below, "slow" above; no such gap:
//              "one". A candidate's visit takes the label its two references share, or
//              "straddle" when they differ (the mode changed between them): a straddled visit is
//              reported, not scored. Scored figure of a visit: its cycles/packet over the mean
//              of its two references, times the reference level (the references' median in the
//              baseline's mode): cycles per packet as they would be in the baseline's mode, so a
//              mode change halfway through a tune cannot flip its decision (tests/tuner). The
//              incumbent's per-round figure is the median of its references' figures against
//              their neighbours. The report keeps every raw figure and per-mode summaries.
//   disqualify A visit whose rx_nombuf or drops of any reason, per received packet, exceed 1.5x
//              the baseline's (+ 1 in 10,000 packets for drops; nothing for rx_nombuf), or that
//              received no packet, disqualifies its candidate: it is not visited again.
//   score      Per candidate, the median of its per-round scored figures (above); its spread is
//              half the range of those figures. Ranked lowest median first; disqualified last.
//   decide     With apply (at least 2 rounds, so there is a spread), the winner is put in force
//              only when incumbent median - winner median > incumbent spread + winner spread
//              (their median +- spread intervals do not overlap); otherwise the incumbent stays,
//              and the report says why. Without apply (dry run) the incumbent is back in force at
//              the end and the report says what would have happened.
//
// Safe by construction
//   - One tune at a time: a second gets FAILED_PRECONDITION while one runs.
//   - The tuner's swaps go through Mutations, which every change goes through (mutations.h: the
//   mutation lock,
//     validation, swap metrics, change log with source=tune), one at a time; the tune does not
//     hold the lock between swaps. Before each of its swaps (under the mutex) and every
//     few milliseconds while it waits, it compares the strategy epoch with the one its last swap
//     produced: any other change (SetStrategy from another client, a config reload, a swap
//     cycle) aborts the tune at once, and that change stays in force (ABORTED; not undone).
//   - Cancellation (client gone, Ctrl-C, deadline, server stopping) restores the incumbent
//     (CANCELLED); any failed swap restores the incumbent (FAILED). A restore is an ordinary
//     swap: the pool's quiescence protocol keeps conservation exact throughout.
//   - The final state and the whole table go to the client (the last progress message) and to
//     the log (stderr, "skbnf-control: tune ..." lines).
//   - Observable: Status() feeds /metrics (state, candidate under test, last result).
//
// Cost: a tune forwards fewer packets than the incumbent would have while slower candidates are
// measured, and each swap flushes the per-core layers. The report counts the packets forwarded
// during the tune beside what the baseline rate would have forwarded (BENCHMARKS.md).
#ifndef SKBNF_SERVER_TUNER_TUNER_H_
#define SKBNF_SERVER_TUNER_TUNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"
#include "server/core/mutations.h"
#include "server/core/swap_metrics.h"

namespace skbnf::control {

inline constexpr size_t kTuneMaxCandidates = 16;
inline constexpr std::chrono::milliseconds kTuneDefaultDwell{2000};
inline constexpr std::chrono::milliseconds kTuneMinDwell{50};
inline constexpr std::chrono::milliseconds kTuneMaxDwell{600000};
inline constexpr std::chrono::milliseconds kTuneMaxSettle{60000};
inline constexpr uint32_t kTuneDefaultRounds = 3;
inline constexpr uint32_t kTuneMaxRounds = 20;
inline constexpr std::chrono::seconds kTuneMaxDuration{3600};  // planned: baseline + visits
inline constexpr std::chrono::milliseconds kTuneMaxQuiesceTimeout{10000};
// The widest gap between the references' sorted log cycles/packet that splits them into two
// modes: 15 %, bench/interleave.py's --mode-gap default (the modes here differ by about 60 %;
// one mode's figures by a few %).
inline constexpr double kTuneModeGap = 0.15;
// The default candidates besides the incumbent.
inline constexpr const char* kTuneDefaultCandidates[] = {"magazine", "headpool", "recycle+magazine",
                                                         "lcache"};

enum class TuneOutcome { kApplied, kKeptIncumbent, kDryRun, kCancelled, kAborted, kFailed };
inline constexpr int kNumTuneOutcomes = 6;
const char* TuneOutcomeName(TuneOutcome o);  // "applied", "kept_incumbent", ...

struct TuneRequest {
  std::vector<std::string> candidates;  // empty: the default set
  std::chrono::milliseconds dwell{0};   // 0: kTuneDefaultDwell
  std::chrono::milliseconds settle{0};  // 0: dwell / 4 clamped to 20 ms .. 2 s
  uint32_t rounds = 0;                  // 0: kTuneDefaultRounds
  bool apply = false;
  uint64_t seed = 0;                             // 0: random
  std::chrono::milliseconds quiesce_timeout{0};  // per swap; 0: the pool's default
};

// A validated request, defaults resolved.
struct TunePlan {
  std::vector<std::string> candidates;  // canonical specs, the incumbent first
  std::string incumbent;
  std::chrono::milliseconds dwell{0}, settle{0};
  uint32_t rounds = 0;
  bool apply = false;
  uint64_t seed = 0;
  std::chrono::milliseconds quiesce_timeout{0};
};

struct TuneMeasurement {
  uint32_t round = 0;  // 0: the baseline
  std::string spec;
  double cycles_per_packet = 0;
  std::vector<std::pair<int, double>>
      core_cycles_per_packet;  // (core, figure), cores that received
  double packets_per_second = 0;
  uint64_t packets = 0;
  uint64_t rx_nombuf = 0;
  std::vector<std::pair<std::string, uint64_t>> drops;  // by reason
  bool disqualified = false;
  std::string disqualified_reason;
  // Set when the tune's visits are over (LabelAndScore):
  bool reference = false;  // a visit of the incumbent between candidates' (the baseline too)
  std::string mode;        // "fast", "slow", "one" or "straddle" (see the header comment)
  // cycles_per_packet over the mean of the neighbouring references (for a reference: over its
  // neighbours'); 0 when it has none in its mode (straddled, the baseline, disqualified)
  double ratio = 0;
};

// One candidate's visits in one machine mode.
struct TuneModeFigure {
  std::string mode;  // fast, slow or one
  uint32_t visits = 0;
  double median_cycles_per_packet = 0;  // raw, as measured in that mode
  double median_ratio = 0;              // against the neighbouring references
};

struct TuneCandidate {
  std::string spec;
  bool incumbent = false;
  uint32_t rank = 0;  // 1 = best; 0 = not ranked
  double median_cycles_per_packet = 0;
  double spread = 0;
  // per measured round: the scored figure (cycles/packet in the baseline's mode, from the ratio
  // to the neighbouring references); rounds whose visit straddled a mode change have none
  std::vector<double> cycles_per_packet;
  std::vector<double> packets_per_second;  // per measured round
  std::vector<TuneModeFigure> modes;       // raw figures by machine mode
  // visits not scored: the mode changed around them (the incumbent: its rounds none of whose
  // reference visits had a neighbouring reference in its mode)
  uint32_t straddled = 0;
  double median_packets_per_second = 0;
  uint64_t rx_nombuf = 0, drops = 0;
  bool disqualified = false;
  std::string disqualified_reason;
};

struct TuneReport {
  TuneOutcome outcome = TuneOutcome::kFailed;
  std::string reason;
  std::string incumbent, winner, final_spec;
  uint64_t final_epoch = 0;
  std::vector<TuneCandidate> candidates;  // ranked, then unranked
  std::vector<TuneMeasurement> measurements;
  TuneMeasurement baseline;
  double reference_cycles_per_packet = 0;  // the references' median in the baseline's mode
  std::string reference_mode;              // the baseline's mode
  uint32_t rounds = 0;
  std::chrono::milliseconds dwell{0}, settle{0};
  uint64_t seed = 0;
  bool apply = false;
  uint32_t swaps = 0;
  uint64_t started_unix_ms = 0, duration_ms = 0;
  uint64_t packets = 0, baseline_rate_packets = 0;  // from the first swap to the end
};

// The tune's pure parts, one function each (control_unit_test and tests/tuner test them on
// synthetic figures).
// Labels the baseline and every visit (in visit order; references marked) with its mode and
// ratio, fills
// each candidate's scored per-round figures, modes and straddled count from them, and returns
// the reference level (0 when no reference was measured). Candidates are matched by spec.
double LabelAndScore(TuneMeasurement& baseline, std::vector<TuneMeasurement>& visits,
                     std::vector<TuneCandidate>& candidates, std::string* reference_mode);
// Sets m.disqualified (and why) against the baseline's rates per received packet.
void DisqualifyAgainst(TuneMeasurement& m, const TuneMeasurement& baseline);
// Scores every candidate (median, spread; from cycles_per_packet and packets_per_second) and
// sorts them: ranked by median, best first, then the unranked (disqualified or never measured).
void ScoreAndRank(std::vector<TuneCandidate>& candidates);
struct TuneDecision {
  TuneOutcome outcome = TuneOutcome::kKeptIncumbent;  // kApplied, kKeptIncumbent or kDryRun
  std::string target;                                 // the strategy to leave in force
  std::string reason;
};
// The decision after a complete tune over ranked candidates (ScoreAndRank).
TuneDecision Decide(const std::vector<TuneCandidate>& ranked, const std::string& incumbent,
                    bool apply);

struct TuneProgress {
  enum class Phase { kBaseline, kSettling, kMeasured, kDone };
  Phase phase = Phase::kBaseline;
  uint32_t round = 0, rounds = 0;
  std::string candidate;
  uint32_t visit = 0, visits = 0;
  const TuneMeasurement* measurement = nullptr;  // kBaseline, kMeasured
  const TuneReport* report = nullptr;            // kDone
};

class Tuner {
 public:
  // `mutations` is Mutations, which every change goes through (mutations.h): each of the tuner's
  // swaps goes through it (source tune: logged and counted like any other change).
  explicit Tuner(Mutations& mutations) : mutations_(mutations), backend_(mutations.backend()) {}

  // INVALID_ARGUMENT naming the field for a bad request; FAILED_PRECONDITION when strategies
  // cannot be swapped. Swaps nothing.
  absl::StatusOr<TunePlan> Plan(const TuneRequest& request) const;

  // Runs `plan` (see the header comment). `cancelled` is polled every few milliseconds;
  // `progress` gets every event (false: the client is gone, which cancels). FAILED_PRECONDITION
  // when a tune is already running or the baseline saw no traffic (nothing swapped in both
  // cases). Otherwise the report, whatever the outcome; the last progress event is kDone.
  absl::StatusOr<TuneReport> Run(const TunePlan& plan, const std::function<bool()>& cancelled,
                                 const std::function<bool(const TuneProgress&)>& progress);

  // For /metrics.
  struct Status {
    bool running = false;
    std::string state = "idle";  // idle | baseline | settling | measuring | finishing
    std::string candidate;       // under test ("" unless settling or measuring)
    uint64_t runs[kNumTuneOutcomes] = {};
    std::shared_ptr<const TuneReport> last;  // nullptr before the first tune ends
  };
  Status GetStatus() const;

 private:
  friend class TuneRun;  // Run's phases (tuner.cc)
  void SetState(const char* state, const std::string& candidate);

  Mutations& mutations_;
  Backend& backend_;  // reads only (samples, epoch); every change goes through mutations_
  std::atomic<bool> running_{false};
  mutable absl::Mutex status_mu_;
  Status status_ ABSL_GUARDED_BY(status_mu_);
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_TUNER_TUNER_H_
