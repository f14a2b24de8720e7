// SPDX-License-Identifier: BSD-3-Clause
// ConfigReloader: skbnfd's --config file as the declarative source of what can change while
// packets flow. In Kubernetes the file is a mounted ConfigMap that the kubelet replaces
// atomically (it writes a new timestamped directory, then renames the `..data` symlink over
// the old one); outside, people edit it and send SIGHUP.
//
// Triggers: inotify on the file's directory (IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE,
// IN_DELETE, IN_ATTRIB: an editor's write, a `mv` over it, the `..data` swap), coalesced over
// a short settle time; SIGHUP (skbnfd's handler calls RequestReload(); installed before EAL
// starts, so a SIGHUP during start-up is a reload once running, not the default termination).
// An event that leaves the file's bytes as they were is ignored; SIGHUP always re-reads. The
// watcher's first pass re-reads the file once: a change made while skbnfd was starting (EAL and
// port start take seconds) is applied then, not missed.
//
// What a reload does, all through Mutations, which every change goes through (mutations.h, source
// config: the lock of the mutating RPCs, and every swap/route change in the change log):
//   1. read and parse the file (server/ops/config.h). A parse error refuses the whole file:
//      nothing is applied, the log names the file, the line and the reason.
//   2. settings that cannot change at runtime (mode, pool_ops, mbuf_cache, mbufs, burst,
//      rx_ring, tx_ring, rx_queues, colour, eal, port, worker) differing from what skbnfd
//      started with are reported as "needs restart" (log + skbnf_config_restart_required 1) and
//      not applied; they take effect at the next start. They do not make the file bad.
//   3. `strategy`, when the file's line changed since the last applied file: validated as
//      SetStrategy validates it (the spec grammar, Backend::ValidateStrategy: e.g. refused on
//      the ring_mp_mc baseline), then hot-swapped with Pool::Swap like SetStrategy (counted in
//      skbnf_strategy_swaps_total, so dashboards annotate it).
//   4. the route table (`route`, `routes_random`), when the file's routes changed since the last
//      applied file: every route validated as AddRoute validates it (prefix, the port by name
//      or id, a unicast non-zero MAC), then the live table is made equal to the file's, with no
//      moment where a prefix the file keeps is unrouted: first the new prefixes (AddRoute) and
//      those whose next hop changed, replaced in place (Change::ReplaceRoute: DPDK 22.11's
//      rte_lpm_add on an existing rule updates its next hop and rewrites each table entry with
//      one atomic store, lib/lpm/rte_lpm.c rule_add/add_depth_small), then, after every add,
//      the prefixes that left the file (DeleteRoute). Routes added over gRPC since are removed
//      then: the file is the truth for what it says, when it says something new. Outside l3
//      mode routes are not used: a route change is reported and ignored.
//   Steps 1, 2 and the routes' validation run before the mutation lock is taken (ParseConfigText
//   below): RPCs, reads and changes, are served while a big file (1M generated routes) is
//   parsed; the lock is held only to diff against the live table and apply.
//   Validation of every changed part happens before anything is applied; if applying fails
//   half-way (a swap that rolls back, a route the engine refuses), the routes already changed
//   are put back, so a reload is applied whole or not at all.
//   A refused reload (unreadable or bad file, a swap that rolled back, a route the engine
//   refused) leaves the last applied file's bytes as the reference (an event with the refused
//   bytes again re-tries them) and is retried with a backoff: 1 s, doubling to 32 s, 6 retries
//   (63 s) after each failure that was not itself a retry, each re-reading the file
//   (skbnf_config_reload_retries_total); a success, a new event or SIGHUP ends the series.
//   Flags win over the file at start (--strategy=X with `strategy Y` in the file runs X); a
//   later change of the file's `strategy` line is applied all the same: the newest intent wins.
//
// Metrics (on /metrics with the rest; present without --config too, at zero, so dashboards and
// alerts need no fallback):
//   skbnf_config_reloads_total{result="ok|error|unchanged"}   counter
//   skbnf_config_last_reload_successful                       gauge 1|0
//   skbnf_config_last_reload_success_timestamp_seconds        gauge (start-up counts as one)
//   skbnf_config_reload_retries_total                         counter: retries of refused
//                                                             reloads (the backoff above)
//   skbnf_config_rollback_failures_total                      counter: failed reloads whose
//                                                             undo could not put every route
//                                                             back (named in the log line)
//   skbnf_config_restart_required                             gauge 1 when the file asks for a
//                                                             change only a restart applies
//   skbnf_config_watched                                      gauge 1 once the watcher runs
//                                                             (after its first pass), 0
//                                                             without --config
//   skbnf_config_drift{part="strategy|routes"}                gauge 1 while the running state
//                                                             differs from the last applied
//                                                             file (checked every second and
//                                                             after each reload; logged when
//                                                             it changes), 0 without --config
//   skbnf_config_watch_polls_total{result="events|quiet"}     counter: the watcher's polls of
//                                                             its inotify queue (one per 20 ms)
//                                                             by whether they found events.
//                                                             The watcher's acknowledgement: a
//                                                             poll counted after a change was
//                                                             written has seen its event, so a
//                                                             reader can tell "no event" from
//                                                             "not looked yet" without sleeping
#ifndef SKBNF_SERVER_OPS_CONFIG_RELOAD_H_
#define SKBNF_SERVER_OPS_CONFIG_RELOAD_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/control/config_diff.h"
#include "server/control/control_plane.h"
#include "server/core/backend.h"
#include "server/core/mutations.h"
#include "server/core/swap_metrics.h"
#include "server/ops/config.h"

namespace skbnf::control {

// The outcome of one reload.
struct ReloadResult {
  enum Kind { kOk, kError, kUnchanged };
  Kind kind = kUnchanged;
  std::string summary;                     // one line for the log
  std::vector<std::string> needs_restart;  // "mbufs 16384 -> 32768", ...
  bool rollback_failed = false;            // kError whose undo could not put every route back
};
const char* ReloadResultName(ReloadResult::Kind k);  // "ok", "error", "unchanged"

// What skbnfd does to a parsed file before using it (ports named by network resolved to their
// PCI addresses: server/daemon/daemon_flags.h ResolveNetworkPorts); an error refuses the file.
using ConfigResolver = std::function<absl::Status(dpdk::DaemonConfig&)>;

// A reload in two steps. ParseConfigText: everything the file alone decides (the parse, up to
// 1M generated routes; `resolve`; the restart-only settings; the routes resolved against the
// ports, which never change at run time), with reads of `backend` only: ConfigReloader runs it
// before it takes the mutation lock, so RPCs (reads and changes) are served while a big file is
// parsed. ApplyParsedConfig: under the lock (`change`), the strategy checked and the routes
// diffed against the live table, then applied. ApplyConfigText is both.
struct ParsedConfig {
  dpdk::DaemonConfig next;
  std::vector<std::string> needs_restart;
  // The file's routes as AddRoute takes them, when they changed since `applied` (l3 mode only).
  std::optional<std::map<Ipv4Prefix, NextHop>> routes;
  std::string routes_note;  // routes changed outside l3 mode: not applied
};
absl::StatusOr<ParsedConfig> ParseConfigText(const std::string& text,
                                             const dpdk::DaemonConfig& started,
                                             const dpdk::DaemonConfig& applied,
                                             const Backend& backend,
                                             const ConfigResolver& resolve = nullptr);
ReloadResult ApplyParsedConfig(const std::string& path, const std::string& text,
                               ParsedConfig parsed, dpdk::DaemonConfig& applied, Change& change);
// A file refused before anything was tried: "<path>: <why>; nothing applied".
ReloadResult RefusedReload(const std::string& path, const absl::Status& why);

// The reload logic without the watching: applies `text` (the file `path`) against the last
// applied file `applied` and the configuration the daemon started with `started` (both as
// `resolve` left them), through Mutations, which every change goes through (`change`, source
// config: each swap and route change it makes is logged and counted). On kOk, `applied` becomes the
// new file.
ReloadResult ApplyConfigText(const std::string& path, const std::string& text,
                             const dpdk::DaemonConfig& started, dpdk::DaemonConfig& applied,
                             Change& change, const ConfigResolver& resolve = nullptr);

// How the running state differs from the last applied file (`applied`, as `resolve` left it):
// the strategy in force (not on DPDK's native pool, which has none to swap) and, in l3 mode, the
// live route table against the file's routes (as a reload would apply them), every differing
// prefix with both next hops (ConfigDrift: server/control/config_diff.h). The one computation
// behind skbnf_config_drift, the "config drift" log line and the DiffConfig RPC.
ConfigDrift DriftOf(const dpdk::DaemonConfig& applied, const Backend& backend);

// The skbnf_config_* families. Register with ControlPlane::AddMetrics.
class ConfigReloadMetrics : public prometheus::Collectable {
 public:
  ConfigReloadMetrics();  // the start-up load counts as the last success
  void Record(ReloadResult::Kind k, bool restart_required, bool rollback_failed = false);
  void SetWatched(bool watched);
  void RecordPoll(bool events);  // one poll of the inotify queue
  void RecordRetry();            // skbnf_config_reload_retries_total
  void SetDrift(const ConfigDrift& d);  // skbnf_config_drift{part}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable absl::Mutex mu_;
  uint64_t count_[3] ABSL_GUARDED_BY(mu_) = {};
  double last_success_ ABSL_GUARDED_BY(mu_);
  bool last_ok_ ABSL_GUARDED_BY(mu_) = true;
  bool restart_required_ ABSL_GUARDED_BY(mu_) = false;
  bool watched_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t rollback_failures_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t retries_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t polls_[2] ABSL_GUARDED_BY(mu_) = {};  // [quiet, events]
  bool drift_strategy_ ABSL_GUARDED_BY(mu_) = false;
  bool drift_routes_ ABSL_GUARDED_BY(mu_) = false;
};

class ConfigReloader {
 public:
  // Watches `path`. `started`: the file as skbnfd parsed it at start (before flags). `backend`:
  // for reads without the mutation lock (a reload's parse step, the DiffConfig RPC).
  // `before_lock`: run on the watcher thread after a reload has parsed the file, before it takes
  // the mutation lock to apply it (nullptr: none; skbnfd's --test-reload-gate).
  static absl::StatusOr<std::unique_ptr<ConfigReloader>> Start(
      const std::string& path, const dpdk::DaemonConfig& started, ControlPlane& control,
      const Backend& backend, std::shared_ptr<ConfigReloadMetrics> metrics,
      ConfigResolver resolve = nullptr, std::function<void(const ParsedConfig&)> before_lock = nullptr);
  ~ConfigReloader();  // stops the watcher thread
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Async-signal-safe: the watcher re-reads the file within its poll interval (SIGHUP).
  static void RequestReload();

  // The running state against the last applied file now (DriftOf), from any thread, without
  // the mutation lock: the DiffConfig RPC's answer (config_diff.h).
  ConfigDrift Drift() const;

 private:
  using Clock = std::chrono::steady_clock;
  // The retries of a refused reload (the header's comment: 1 s doubling to 32 s, 6 retries).
  struct RetrySchedule {
    static constexpr int kRetries = 6;
    static constexpr std::chrono::seconds kFirstBackoff{1};
    static constexpr std::chrono::seconds kMaxBackoff{32};
    std::optional<Clock::time_point> at;  // the next retry; unset: none pending
    std::chrono::seconds backoff = kFirstBackoff;
    int left = 0;
    bool Due(Clock::time_point now);  // true once per scheduled retry
    // After a reload (`ok`: applied or nothing to apply); logs what is scheduled.
    void After(bool ok, bool was_retry, const std::string& path);
  };

  ConfigReloader(std::string path, const dpdk::DaemonConfig& started, ControlPlane& control,
                 const Backend& backend, std::shared_ptr<ConfigReloadMetrics> metrics,
                 int inotify_fd, ConfigResolver resolve, std::function<void(const ParsedConfig&)> before_lock);
  void Loop();
  // always: re-read even when no event says the bytes changed (SIGHUP, the first pass, a retry).
  // False when the reload was refused (to be retried).
  bool Reload(const char* trigger, bool always, bool quiet_unchanged = false);
  // The running state against applied_ (under the mutation lock): the gauge, and a log line
  // when what differs changes.
  void CheckDrift();

  const std::string path_;
  const dpdk::DaemonConfig started_;
  // The last applied file: written only by the watcher thread, under applied_mu_ (which it
  // needs not hold to read it); Drift() reads it under applied_mu_ from other threads.
  mutable absl::Mutex applied_mu_;
  dpdk::DaemonConfig applied_;
  std::string last_text_;  // the bytes of the last applied (or unchanged) file
  ControlPlane& control_;
  const Backend& backend_;
  const int inotify_fd_;
  std::shared_ptr<ConfigReloadMetrics> metrics_;
  const ConfigResolver resolve_;
  const std::function<void(const ParsedConfig&)> before_lock_;
  std::string last_drift_;  // the summary last logged ("" = none)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_OPS_CONFIG_RELOAD_H_
