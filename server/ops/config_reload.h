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
//      or id, a unicast non-zero MAC), then the live table is made equal to the file's: the
//      diff is applied with DeleteRoute/AddRoute (a prefix whose next hop changed is deleted
//      and added). Routes added over gRPC since are removed then: the file is the truth for
//      what it says, when it says something new. Outside l3 mode routes are not used: a route
//      change is reported and ignored.
//   Validation of every changed part happens before anything is applied; if applying fails
//   half-way (a swap that rolls back, a route the engine refuses), the routes already changed
//   are put back, so a reload is applied whole or not at all.
//   Flags win over the file at start (--strategy=X with `strategy Y` in the file runs X); a
//   later change of the file's `strategy` line is applied all the same: the newest intent wins.
//
// Metrics (on /metrics with the rest; present without --config too, at zero, so dashboards and
// alerts need no fallback):
//   skbnf_config_reloads_total{result="ok|error|unchanged"}   counter
//   skbnf_config_last_reload_successful                       gauge 1|0
//   skbnf_config_last_reload_success_timestamp_seconds        gauge (start-up counts as one)
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
// live route table against the file's routes (as a reload would apply them). `summary` says
// what differs, for the log: "strategy headpool (file: recycle+magazine); routes: 1 not in the
// file, 1 of the file's missing or different".
struct ConfigDrift {
  bool strategy = false;
  bool routes = false;
  std::string summary;
  bool any() const { return strategy || routes; }
};
ConfigDrift DriftOf(const dpdk::DaemonConfig& applied, const Backend& backend);

// The skbnf_config_* families. Register with ControlPlane::AddMetrics.
class ConfigReloadMetrics : public prometheus::Collectable {
 public:
  ConfigReloadMetrics();  // the start-up load counts as the last success
  void Record(ReloadResult::Kind k, bool restart_required, bool rollback_failed = false);
  void SetWatched(bool watched);
  void RecordPoll(bool events);  // one poll of the inotify queue
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
  uint64_t polls_[2] ABSL_GUARDED_BY(mu_) = {};  // [quiet, events]
  bool drift_strategy_ ABSL_GUARDED_BY(mu_) = false;
  bool drift_routes_ ABSL_GUARDED_BY(mu_) = false;
};

class ConfigReloader {
 public:
  // Watches `path`. `started`: the file as skbnfd parsed it at start (before flags).
  static absl::StatusOr<std::unique_ptr<ConfigReloader>> Start(
      const std::string& path, const dpdk::DaemonConfig& started, ControlPlane& control,
      std::shared_ptr<ConfigReloadMetrics> metrics, ConfigResolver resolve = nullptr);
  ~ConfigReloader();  // stops the watcher thread
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Async-signal-safe: the watcher re-reads the file within its poll interval (SIGHUP).
  static void RequestReload();

 private:
  ConfigReloader(std::string path, const dpdk::DaemonConfig& started, ControlPlane& control,
                 std::shared_ptr<ConfigReloadMetrics> metrics, int inotify_fd,
                 ConfigResolver resolve);
  void Loop();
  // always: re-read even when no event says the bytes changed (SIGHUP, the first pass).
  void Reload(const char* trigger, bool always, bool quiet_unchanged = false);
  // The running state against applied_ (under the mutation lock): the gauge, and a log line
  // when what differs changes.
  void CheckDrift();

  const std::string path_;
  const dpdk::DaemonConfig started_;
  dpdk::DaemonConfig applied_;
  std::string last_text_;
  ControlPlane& control_;
  const int inotify_fd_;
  std::shared_ptr<ConfigReloadMetrics> metrics_;
  const ConfigResolver resolve_;
  std::string last_drift_;  // the summary last logged ("" = none)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_OPS_CONFIG_RELOAD_H_
