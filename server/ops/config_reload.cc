// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/config_reload.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/metric_families.h"
#include "server/core/pool_share.h"

namespace skbnf::control {
namespace {

std::atomic<bool> g_reload_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "RequestReload runs in a signal handler");


// The first line of `text` whose directive and first argument are `key` and `arg` (arg ""
// matches any): "line 7" for the log, "" when not found.
std::string LineOf(absl::string_view text, absl::string_view key, absl::string_view arg = "") {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> w =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (!w.empty() && w[0] == key && (arg.empty() || (w.size() > 1 && w[1] == arg))) {
      return absl::StrCat("line ", n, ": ");
    }
  }
  return "";
}

std::string PortText(const dpdk::PortSpec& p) {
  return absl::StrCat(p.name, p.peer.empty() ? "" : " peer=", p.peer,
                      p.dst_mac.empty() ? "" : " dst_mac=", p.dst_mac);
}

std::string WorkerText(const dpdk::WorkerSpec& w) {
  std::vector<std::string> rx;
  for (const auto& [port, q] : w.rx) rx.push_back(absl::StrCat(port, ":", q));
  return absl::StrCat(w.lcore, " ", absl::StrJoin(rx, " "));
}

template <typename T, typename F>
std::string ListText(const std::vector<T>& v, F f) {
  std::vector<std::string> s;
  for (const T& x : v) s.push_back(f(x));
  return absl::StrCat("[", absl::StrJoin(s, "; "), "]");
}

// Settings only a restart applies: "name old -> new" for each that differs.
std::vector<std::string> RestartOnlyChanges(const dpdk::DaemonConfig& a,
                                            const dpdk::DaemonConfig& b) {
  std::vector<std::string> out;
  auto cmp = [&](const char* name, const std::string& x, const std::string& y) {
    if (x != y) out.push_back(absl::StrCat(name, " ", x, " -> ", y));
  };
  const dpdk::EngineConfig& x = a.engine;
  const dpdk::EngineConfig& y = b.engine;
  cmp("mode", dpdk::ForwardingModeName(x.mode), dpdk::ForwardingModeName(y.mode));
  cmp("pool_ops", dpdk::PoolOpsName(x.pool_ops), dpdk::PoolOpsName(y.pool_ops));
  cmp("mbuf_cache", absl::StrCat(x.mbuf_cache), absl::StrCat(y.mbuf_cache));
  cmp("mbufs", absl::StrCat(x.mbufs), absl::StrCat(y.mbufs));
  cmp("burst", absl::StrCat(x.burst), absl::StrCat(y.burst));
  cmp("rx_ring", absl::StrCat(x.rx_ring), absl::StrCat(y.rx_ring));
  cmp("tx_ring", absl::StrCat(x.tx_ring), absl::StrCat(y.tx_ring));
  cmp("rx_queues", absl::StrCat(x.rx_queues), absl::StrCat(y.rx_queues));
  cmp("colour", x.colour ? "on" : "off", y.colour ? "on" : "off");
  // Start-up values: while skbnfd runs, `skbnfctl latency set` (SetLatency) changes them.
  cmp("latency_sample_every", absl::StrCat(x.latency.sample_every),
      absl::StrCat(y.latency.sample_every));
  cmp("slow_iteration_us", absl::StrCat(x.latency.slow_iteration_us),
      absl::StrCat(y.latency.slow_iteration_us));
  cmp("eal", absl::StrJoin(a.eal, " "), absl::StrJoin(b.eal, " "));
  cmp("port", ListText(x.ports, PortText), ListText(y.ports, PortText));
  cmp("worker", ListText(x.workers, WorkerText), ListText(y.workers, WorkerText));
  return out;
}

bool SameRoutes(const std::vector<dpdk::RouteSpec>& a, const std::vector<dpdk::RouteSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].prefix != b[i].prefix || a[i].port != b[i].port || a[i].mac != b[i].mac) return false;
  }
  return true;
}

// The file's routes as AddRoute would take them; the error names the line and the field.
absl::StatusOr<std::map<Ipv4Prefix, NextHop>> ResolveRoutes(
    absl::string_view text, const std::vector<dpdk::RouteSpec>& routes,
    const std::vector<PortInfo>& ports) {
  std::map<Ipv4Prefix, NextHop> out;
  std::vector<std::string> names;
  for (const PortInfo& p : ports) names.push_back(absl::StrCat(p.id, " ", p.name));
  for (const dpdk::RouteSpec& r : routes) {
    auto where = [&] {
      std::string l = LineOf(text, "route", r.prefix);
      return l.empty() ? LineOf(text, "routes_random") : l;
    };
    absl::StatusOr<Ipv4Prefix> prefix = net::ParseIpv4Prefix(r.prefix);
    if (!prefix.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "route prefix: ", prefix.status().message()));
    }
    std::optional<int> port;
    for (const PortInfo& p : ports) {
      int id;
      if (p.name == r.port || (absl::SimpleAtoi(r.port, &id) && id == p.id)) port = p.id;
    }
    if (!port) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "route ", r.prefix, ": port '", r.port,
                       "' is not a port (ports: ", absl::StrJoin(names, ", "), ")"));
    }
    absl::StatusOr<MacAddr> mac = net::ParseMac(r.mac);
    if (!mac.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "route ", r.prefix, " next-hop MAC: ", mac.status().message()));
    }
    if ((*mac)[0] & 1) {
      return absl::InvalidArgumentError(absl::StrCat(where(), "route ", r.prefix, ": next-hop '",
                                                     r.mac, "' is a group (multicast) address"));
    }
    if (*mac == MacAddr{}) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "route ", r.prefix, ": the all-zero address is not a next hop"));
    }
    out[*prefix] = NextHop{*port, *mac};  // a prefix listed twice: the later line wins
  }
  return out;
}

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Validates a changed strategy line as SetStrategy would; `spec` is set when the strategy must be
// swapped (a changed line naming the strategy in force needs no swap). The error's message is
// the reload's.
absl::Status CheckStrategyChange(const std::string& text, const dpdk::DaemonConfig& next,
                                 const dpdk::DaemonConfig& applied, Backend& backend,
                                 std::optional<pool::StrategySpec>& spec) {
  // The file's line was parsed by ParseConfig (a bad spec refused the file there, naming the line).
  const pool::StrategySpec& s = next.engine.strategy;
  if (s != applied.engine.strategy && s != backend.GetStrategy()) {
    // The backend's own check and the same pool-share bound as SetStrategy (pool_share.h).
    if (absl::Status v = CheckStrategy(backend, s); !v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(LineOf(text, "strategy"), "strategy ", s.ToString(), ": ", v.message()));
    }
    spec = s;
  }
  return absl::OkStatus();
}

// The live table against `want` (the file's routes), by prefix: each prefix routed differently
// (running only, file only, or both with different next hops). One walk of two sorted maps: the
// drift (gauge, log, DiffConfig) and the reload's batch come from this one comparison.
std::vector<RouteDrift> DiffRoutes(const RouteTable& live,
                                   const std::map<Ipv4Prefix, NextHop>& want) {
  std::map<uint32_t, NextHop> hops;
  for (const RouteTable::NextHopEntry& n : live.next_hops) hops[n.id] = n.next_hop;
  std::map<Ipv4Prefix, NextHop> have;
  for (const RouteTable::Route& r : live.routes) have[r.prefix] = hops[r.next_hop_id];
  std::map<Ipv4Prefix, RouteDrift> out;
  for (const auto& [p, nh] : have) {
    auto it = want.find(p);
    if (it == want.end() || !(it->second == nh)) out[p] = {p, nh, std::nullopt};
  }
  for (const auto& [p, nh] : want) {
    auto it = have.find(p);
    if (it == have.end() || !(it->second == nh)) {
      RouteDrift& d = out[p];
      d.prefix = p;
      d.file = nh;
    }
  }
  std::vector<RouteDrift> v;
  v.reserve(out.size());
  for (auto& [p, d] : out) v.push_back(std::move(d));
  return v;
}

// A reload's route changes, made so that no prefix the file keeps is ever unrouted: first the
// prefixes the file adds and those whose next hop it changes (Change::ReplaceRoute: the engine's
// rte_lpm_add replaces a rule's next hop in place, one atomic store per table entry), then,
// after every add, the prefixes that left the file. Undo() puts back what Apply() changed, in
// the same safe order (re-adds and restores before deletes).
class RouteBatch {
 public:
  explicit RouteBatch(std::vector<RouteDrift> diff) : diff_(std::move(diff)) {}
  bool empty() const { return diff_.empty(); }
  // "routes: 1 added, 1 replaced in place, 1 deleted"
  std::string Summary() const {
    size_t added = 0, replaced = 0, deleted = 0;
    for (const RouteDrift& d : diff_) ++(!d.file ? deleted : d.running ? replaced : added);
    return absl::StrCat("routes: ", added, " added, ", replaced, " replaced in place, ", deleted,
                        " deleted");
  }

  // The first failure's message ("" when all applied).
  std::string Apply(Change& change) {
    for (const RouteDrift& d : diff_) {
      if (!d.file) continue;
      absl::StatusOr<uint32_t> id =
          d.running ? change.ReplaceRoute(d.prefix, *d.file) : change.AddRoute(d.prefix, *d.file);
      if (!id.ok()) {
        return absl::StrCat("AddRoute ", net::FormatIpv4Prefix(d.prefix), ": ",
                            id.status().message());
      }
      done_.push_back(&d);
    }
    for (const RouteDrift& d : diff_) {
      if (d.file) continue;
      if (absl::Status st = change.DeleteRoute(d.prefix); !st.ok()) {
        return absl::StrCat("DeleteRoute ", net::FormatIpv4Prefix(d.prefix), ": ", st.message());
      }
      done_.push_back(&d);
    }
    return "";
  }

  // What could not be put back, one entry per route ("" entries none).
  std::vector<std::string> Undo(Change& change) {
    std::vector<std::string> failed;
    auto note = [&](const char* what, const RouteDrift& d, const absl::Status& st) {
      if (!st.ok()) {
        failed.push_back(
            absl::StrCat(what, " ", net::FormatIpv4Prefix(d.prefix), ": ", st.message()));
      }
    };
    for (const RouteDrift* d : done_) {  // deleted: back first
      if (!d->file) note("re-add", *d, change.AddRoute(d->prefix, *d->running).status());
    }
    for (const RouteDrift* d : done_) {  // replaced: the old next hop, in place again
      if (d->file && d->running) {
        note("restore", *d, change.ReplaceRoute(d->prefix, *d->running).status());
      }
    }
    for (const RouteDrift* d : done_) {  // added: removed last
      if (d->file && !d->running) note("delete", *d, change.DeleteRoute(d->prefix));
    }
    done_.clear();
    return failed;
  }

 private:
  const std::vector<RouteDrift> diff_;
  std::vector<const RouteDrift*> done_;
};

}  // namespace

ConfigDrift DriftOf(const dpdk::DaemonConfig& applied, const Backend& backend) {
  ConfigDrift d;
  const Info info = backend.GetInfo();
  d.running_strategy = backend.GetStrategy().ToString();
  d.file_strategy = applied.engine.strategy.ToString();
  d.strategy = !info.pool.native && backend.GetStrategy() != applied.engine.strategy;
  if (info.mode == ForwardingMode::kL3) {
    absl::StatusOr<std::map<Ipv4Prefix, NextHop>> want =
        ResolveRoutes("", applied.engine.routes, backend.ListPorts());
    if (want.ok()) d.routes = DiffRoutes(backend.ListRoutes(), *want);
  }
  return d;
}

const char* ReloadResultName(ReloadResult::Kind k) {
  switch (k) {
    case ReloadResult::kOk:
      return "ok";
    case ReloadResult::kError:
      return "error";
    default:
      return "unchanged";
  }
}

absl::StatusOr<ParsedConfig> ParseConfigText(const std::string& text,
                                             const dpdk::DaemonConfig& started,
                                             const dpdk::DaemonConfig& applied,
                                             const Backend& backend,
                                             const ConfigResolver& resolve) {
  absl::StatusOr<dpdk::DaemonConfig> parsed = dpdk::ParseConfig(text);
  if (!parsed.ok()) return parsed.status();
  if (resolve) {
    if (absl::Status st = resolve(*parsed); !st.ok()) return st;
  }
  ParsedConfig p;
  p.next = *std::move(parsed);
  p.needs_restart = RestartOnlyChanges(started, p.next);
  if (!SameRoutes(p.next.engine.routes, applied.engine.routes)) {
    // The mode and the ports never change at run time: resolved here, without the lock.
    if (backend.GetInfo().mode != ForwardingMode::kL3) {
      p.routes_note = "routes changed but unused outside l3 mode (not applied)";
    } else {
      absl::StatusOr<std::map<Ipv4Prefix, NextHop>> want =
          ResolveRoutes(text, p.next.engine.routes, backend.ListPorts());
      if (!want.ok()) return want.status();
      p.routes = *std::move(want);
    }
  }
  return p;
}

ReloadResult ApplyParsedConfig(const std::string& path, const std::string& text,
                               ParsedConfig parsed, dpdk::DaemonConfig& applied, Change& change) {
  Backend& backend = change.backend();  // reads and validation; changes go through `change`
  ReloadResult res;
  res.needs_restart = parsed.needs_restart;
  auto error = [&](std::string why, std::string rollback = "") {
    res.kind = ReloadResult::kError;
    res.summary = absl::StrCat(path, ": ", why, rollback.empty() ? "; nothing applied" : rollback);
    return res;
  };
  // Validate every changed part before applying any.
  std::optional<pool::StrategySpec> spec;
  if (absl::Status st = CheckStrategyChange(text, parsed.next, applied, backend, spec); !st.ok()) {
    return error(std::string(st.message()));
  }
  RouteBatch routes(parsed.routes ? DiffRoutes(backend.ListRoutes(), *parsed.routes)
                                  : std::vector<RouteDrift>{});
  // Puts the routes already changed back. What cannot be put back is reported, never dropped:
  // the reload's error says which routes and why, ReloadResult::rollback_failed counts it
  // (skbnf_config_rollback_failures_total), and the live table is then defined as "the old
  // table minus what failed to come back": the next reload diffs against the live table, so it
  // repairs it.
  auto failed = [&](std::string why) {
    const std::vector<std::string> undo = routes.Undo(change);
    if (undo.empty()) return error(why);
    res.rollback_failed = true;
    return error(why, absl::StrCat("; ROLLBACK INCOMPLETE (", absl::StrJoin(undo, "; "),
                                   "): the live route table differs from the last applied file "
                                   "until the next reload"));
  };
  // Apply: routes (undoable), then the swap; a failure puts the routes back.
  if (std::string why = routes.Apply(change); !why.empty()) return failed(why);
  std::vector<std::string> done;
  if (spec) {
    pool::SwapReport r = change.SwapStrategy(*spec, std::chrono::microseconds(0));
    if (!r.status.ok()) {
      return failed(absl::StrCat(LineOf(text, "strategy"), "strategy swap to ", spec->ToString(),
                                 " failed", r.rolled_back ? " and was rolled back" : "", ": ",
                                 r.status.message()));
    }
    done.push_back(
        absl::StrCat("strategy ", r.old_spec, " -> ", r.new_spec, " (epoch ", r.epoch, ")"));
  }
  if (!routes.empty()) done.push_back(routes.Summary());
  if (!parsed.routes_note.empty()) done.push_back(parsed.routes_note);
  applied.engine.strategy = parsed.next.engine.strategy;
  applied.engine.routes = std::move(parsed.next.engine.routes);  // up to 1M: moved, not copied
  res.kind = spec || !routes.empty() ? ReloadResult::kOk : ReloadResult::kUnchanged;
  res.summary = absl::StrCat(
      path, ": ",
      done.empty() ? std::string("nothing to change at runtime") : absl::StrJoin(done, ", "));
  return res;
}

ReloadResult ApplyConfigText(const std::string& path, const std::string& text,
                             const dpdk::DaemonConfig& started, dpdk::DaemonConfig& applied,
                             Change& change, const ConfigResolver& resolve) {
  absl::StatusOr<ParsedConfig> parsed =
      ParseConfigText(text, started, applied, change.backend(), resolve);
  if (!parsed.ok()) return RefusedReload(path, parsed.status());
  return ApplyParsedConfig(path, text, *std::move(parsed), applied, change);
}

ReloadResult RefusedReload(const std::string& path, const absl::Status& why) {
  ReloadResult r;
  r.kind = ReloadResult::kError;
  r.summary = absl::StrCat(path, ": ", why.message(), "; nothing applied");
  return r;
}

// ---- metrics

ConfigReloadMetrics::ConfigReloadMetrics() : last_success_(Now()) {}

void ConfigReloadMetrics::Record(ReloadResult::Kind k, bool restart_required,
                                 bool rollback_failed) {
  absl::MutexLock l(&mu_);
  count_[k]++;
  if (rollback_failed) rollback_failures_++;
  last_ok_ = k != ReloadResult::kError;
  if (last_ok_) {  // a refused file says nothing about what the running one needs
    last_success_ = Now();
    restart_required_ = restart_required;
  }
}

void ConfigReloadMetrics::SetWatched(bool watched) {
  absl::MutexLock l(&mu_);
  watched_ = watched;
}

void ConfigReloadMetrics::SetDrift(const ConfigDrift& d) {
  absl::MutexLock l(&mu_);
  drift_strategy_ = d.strategy;
  drift_routes_ = d.routes_differ();
}

void ConfigReloadMetrics::RecordRetry() {
  absl::MutexLock l(&mu_);
  ++retries_;
}

void ConfigReloadMetrics::RecordPoll(bool events) {
  absl::MutexLock l(&mu_);
  ++polls_[events ? 1 : 0];
}

std::vector<prometheus::MetricFamily> ConfigReloadMetrics::Collect() const {
  absl::MutexLock l(&mu_);
  // The families are server/core/metric_families.h's; the samples are this collector's.
  std::vector<prometheus::MetricFamily> out;
  auto one = [&](const MetricDef& d, double v) {
    prometheus::MetricFamily f = NewFamily(d);
    prometheus::ClientMetric& m = f.metric.emplace_back();
    (d.type == metric::kCounter ? m.counter.value : m.gauge.value) = v;
    out.push_back(std::move(f));
  };
  auto by_result = [&](const MetricDef& d, const std::vector<std::pair<std::string, double>>& v) {
    prometheus::MetricFamily f = NewFamily(d);
    for (const auto& [result, value] : v) {
      prometheus::ClientMetric& m = f.metric.emplace_back();
      m.label = {{"result", result}};
      m.counter.value = value;
    }
    out.push_back(std::move(f));
  };
  std::vector<std::pair<std::string, double>> reloads;
  for (int k = 0; k < 3; ++k) {
    reloads.emplace_back(ReloadResultName(static_cast<ReloadResult::Kind>(k)),
                         static_cast<double>(count_[k]));
  }
  by_result(metric::kConfigReloadsTotal, reloads);
  one(metric::kConfigReloadRetriesTotal, static_cast<double>(retries_));
  one(metric::kConfigRollbackFailuresTotal, static_cast<double>(rollback_failures_));
  one(metric::kConfigLastReloadSuccessful, last_ok_ ? 1 : 0);
  one(metric::kConfigLastReloadSuccessTimestampSeconds, last_success_);
  one(metric::kConfigRestartRequired, restart_required_ ? 1 : 0);
  one(metric::kConfigWatched, watched_ ? 1 : 0);
  by_result(metric::kConfigWatchPollsTotal, {{"quiet", static_cast<double>(polls_[0])},
                                             {"events", static_cast<double>(polls_[1])}});
  prometheus::MetricFamily drift = NewFamily(metric::kConfigDrift);
  for (const auto& [part, on] :
       {std::pair{"strategy", drift_strategy_}, {"routes", drift_routes_}}) {
    prometheus::ClientMetric& m = drift.metric.emplace_back();
    m.label = {{"part", part}};
    m.gauge.value = on ? 1 : 0;
  }
  out.push_back(std::move(drift));
  return out;
}

// ---- watcher

void ConfigReloader::RequestReload() { g_reload_requested.store(true); }

absl::StatusOr<std::unique_ptr<ConfigReloader>> ConfigReloader::Start(
    const std::string& path, const dpdk::DaemonConfig& started, ControlPlane& control,
    const Backend& backend, std::shared_ptr<ConfigReloadMetrics> metrics, ConfigResolver resolve,
    std::function<void(const ParsedConfig&)> before_lock) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("--config: inotify_init1: ", std::strerror(errno)));
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (inotify_add_watch(fd, dir.c_str(),
                        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB) < 0) {
    const int e = errno;
    ::close(fd);
    return absl::InternalError(
        absl::StrCat("--config: cannot watch ", dir.string(), ": ", std::strerror(e)));
  }
  std::unique_ptr<ConfigReloader> r(new ConfigReloader(path, started, control, backend,
                                                       std::move(metrics), fd, std::move(resolve),
                                                       std::move(before_lock)));
  r->thread_ = std::thread([p = r.get()] { p->Loop(); });
  control.config_drift().Set([p = r.get()] { return p->Drift(); });  // DiffConfig
  return r;
}

ConfigReloader::ConfigReloader(std::string path, const dpdk::DaemonConfig& started,
                               ControlPlane& control, const Backend& backend,
                               std::shared_ptr<ConfigReloadMetrics> metrics, int inotify_fd,
                               ConfigResolver resolve, std::function<void(const ParsedConfig&)> before_lock)
    : path_(std::move(path)),
      started_(started),
      applied_(started),
      last_text_(),  // the first pass of Loop() reads it
      control_(control),
      backend_(backend),
      inotify_fd_(inotify_fd),
      metrics_(std::move(metrics)),
      resolve_(std::move(resolve)),
      before_lock_(std::move(before_lock)) {}

ConfigReloader::~ConfigReloader() {
  control_.config_drift().Set(nullptr);  // waits for a DiffConfig in flight
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  metrics_->SetWatched(false);
  ::close(inotify_fd_);
}

ConfigDrift ConfigReloader::Drift() const {
  absl::ReaderMutexLock l(&applied_mu_);
  ConfigDrift d = DriftOf(applied_, backend_);
  d.path = path_;
  return d;
}

void ConfigReloader::Loop() {
  constexpr auto kSettle = std::chrono::milliseconds(100);
  std::optional<Clock::time_point> due;
  alignas(inotify_event) char buf[16384];
  RetrySchedule retry;
  // The file may have changed between skbnfd reading it and this watch starting (EAL and port
  // start take seconds with real NICs): one pass now, silent when nothing changed.
  retry.After(Reload("start", true, /*quiet_unchanged=*/true), false, path_);
  CheckDrift();
  metrics_->SetWatched(true);
  auto next_drift = Clock::now() + std::chrono::seconds(1);
  while (!stop_.load()) {
    pollfd p{inotify_fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, 20);
    const bool events = n > 0 && (p.revents & POLLIN);
    if (events) {
      while (::read(inotify_fd_, buf, sizeof(buf)) > 0) {
        // Any event in the directory may be the file (a symlink swap renames `..data`, not
        // the file): re-read after the burst settles; unchanged bytes are ignored.
      }
      due = Clock::now() + kSettle;
    }
    metrics_->RecordPoll(events);  // after the events are taken in: see the metric's comment
    if (g_reload_requested.exchange(false)) {
      retry.After(Reload("SIGHUP", true), false, path_);
      next_drift = Clock::now();
    }
    if (due && Clock::now() >= *due) {
      due.reset();
      retry.After(Reload("inotify", false), false, path_);
      next_drift = Clock::now();
    }
    if (retry.Due(Clock::now())) {
      metrics_->RecordRetry();
      retry.After(Reload("retry", true), true, path_);
      next_drift = Clock::now();
    }
    if (Clock::now() >= next_drift) {
      CheckDrift();
      next_drift = Clock::now() + std::chrono::seconds(1);
    }
  }
}

bool ConfigReloader::RetrySchedule::Due(Clock::time_point now) {
  if (!at || now < *at) return false;
  at.reset();
  return true;
}

void ConfigReloader::RetrySchedule::After(bool ok, bool was_retry, const std::string& path) {
  if (ok) {
    at.reset();
    left = 0;
    return;
  }
  if (!was_retry) {  // a new failure: a new series
    left = kRetries;
    backoff = kFirstBackoff;
  }
  if (left == 0) {
    at.reset();
    std::fprintf(stderr,
                 "skbnfd: config reload: %s still refused after %d retries; the next change of "
                 "the file or SIGHUP tries again\n",
                 path.c_str(), kRetries);
    return;
  }
  --left;
  at = Clock::now() + backoff;
  std::fprintf(stderr, "skbnfd: config reload: retrying %s in %lld s (%d retries left after it)\n",
               path.c_str(), static_cast<long long>(backoff.count()), left);
  backoff = std::min(backoff * 2, kMaxBackoff);
}

void ConfigReloader::CheckDrift() {
  ConfigDrift d;
  // Under the mutation lock: no RPC's change is half-applied while the state is read.
  control_.Mutate(ChangeSource::kConfig, [&](Change& change) {
    absl::ReaderMutexLock l(&applied_mu_);
    d = DriftOf(applied_, change.backend());
  });
  metrics_->SetDrift(d);
  const std::string summary = d.Summary();
  if (summary == last_drift_) return;
  if (d.any()) {
    std::fprintf(stderr, "skbnfd: config drift: the running state differs from %s: %s\n",
                 path_.c_str(), summary.c_str());
  } else {
    std::fprintf(stderr, "skbnfd: config drift: none, the running state is %s's again\n",
                 path_.c_str());
  }
  last_drift_ = summary;
}

bool ConfigReloader::Reload(const char* trigger, bool always, bool quiet_unchanged) {
  std::optional<std::string> text = ReadText(path_);
  if (!text) {
    // A file that vanished for a moment (an editor's rename) comes back with its own event.
    if (!always) return true;
    // Logged before it is counted: whoever sees the count finds the line.
    std::fprintf(stderr, "skbnfd: config reload (%s): error: cannot read %s; nothing applied\n",
                 trigger, path_.c_str());
    metrics_->Record(ReloadResult::kError, false);
    return false;
  }
  if (!always && *text == last_text_) return true;
  // Parsed without the mutation lock (only this thread writes applied_, so it reads it freely).
  const Clock::time_point t0 = Clock::now();
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(*text, started_, applied_, backend_,
                                                        resolve_);
  const Clock::time_point t1 = Clock::now();
  ReloadResult r;
  if (!parsed.ok()) {
    r = RefusedReload(path_, parsed.status());
  } else {
    if (before_lock_) before_lock_(*parsed);
    dpdk::DaemonConfig next = applied_;
    Clock::time_point t2, t3;
    control_.Mutate(ChangeSource::kConfig, [&](Change& change) {
      t2 = Clock::now();
      r = ApplyParsedConfig(path_, *text, *std::move(parsed), next, change);
      t3 = Clock::now();
    });
    absl::WriterMutexLock l(&applied_mu_);
    applied_ = std::move(next);
    // How long the lock was held (RPC changes waited that long) and what ran before it.
    absl::StrAppendFormat(&r.summary, " (parsed in %.3f s without the lock, applied in %.3f s)",
                          std::chrono::duration<double>(t1 - t0).count(),
                          std::chrono::duration<double>(t3 - t2).count());
  }
  // The reference for "unchanged bytes" only once applied: refused bytes are tried again.
  if (r.kind != ReloadResult::kError) last_text_ = *std::move(text);
  if (!(quiet_unchanged && r.kind == ReloadResult::kUnchanged && r.needs_restart.empty())) {
    std::fprintf(stderr, "skbnfd: config reload (%s): %s: %s\n", trigger,
                 ReloadResultName(r.kind), r.summary.c_str());
    if (!r.needs_restart.empty()) {
      std::fprintf(stderr, "skbnfd: config reload (%s): needs restart, not applied: %s\n",
                   trigger, absl::StrJoin(r.needs_restart, "; ").c_str());
    }
    metrics_->Record(r.kind, !r.needs_restart.empty(), r.rollback_failed);
  }
  return r.kind != ReloadResult::kError;
}

}  // namespace skbnf::control
