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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/metric_families.h"
#include "server/core/pool_share.h"

namespace skbnf::control {
namespace {

std::atomic<bool> g_reload_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "RequestReload runs in a signal handler");

using Clock = std::chrono::steady_clock;

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

// The route changes that turn the live table into `want`: what to delete, what to add.
void DiffRoutes(const RouteTable& live, const std::map<Ipv4Prefix, NextHop>& want,
                std::vector<std::pair<Ipv4Prefix, NextHop>>& to_delete,
                std::vector<std::pair<Ipv4Prefix, NextHop>>& to_add) {
  std::map<uint32_t, NextHop> hops;
  for (const RouteTable::NextHopEntry& n : live.next_hops) hops[n.id] = n.next_hop;
  std::map<Ipv4Prefix, NextHop> have;
  for (const RouteTable::Route& r : live.routes) have[r.prefix] = hops[r.next_hop_id];
  for (const auto& [p, nh] : have) {
    auto it = want.find(p);
    if (it == want.end() || !(it->second == nh)) to_delete.emplace_back(p, nh);
  }
  for (const auto& [p, nh] : want) {
    auto it = have.find(p);
    if (it == have.end() || !(it->second == nh)) to_add.emplace_back(p, nh);
  }
}

}  // namespace

ConfigDrift DriftOf(const dpdk::DaemonConfig& applied, const Backend& backend) {
  ConfigDrift d;
  std::vector<std::string> parts;
  const Info info = backend.GetInfo();
  if (!info.pool.native && backend.GetStrategy() != applied.engine.strategy) {
    d.strategy = true;
    parts.push_back(absl::StrCat("strategy ", backend.GetStrategy().ToString(),
                                 " (file: ", applied.engine.strategy.ToString(), ")"));
  }
  if (info.mode == ForwardingMode::kL3) {
    absl::StatusOr<std::map<Ipv4Prefix, NextHop>> want =
        ResolveRoutes("", applied.engine.routes, backend.ListPorts());
    if (want.ok()) {
      std::vector<std::pair<Ipv4Prefix, NextHop>> extra, missing;
      DiffRoutes(backend.ListRoutes(), *want, extra, missing);
      if (!extra.empty() || !missing.empty()) {
        d.routes = true;
        parts.push_back(absl::StrCat("routes: ", extra.size(), " not in the file, ", missing.size(),
                                     " of the file's missing or different"));
      }
    }
  }
  d.summary = absl::StrJoin(parts, "; ");
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

ReloadResult ApplyConfigText(const std::string& path, const std::string& text,
                             const dpdk::DaemonConfig& started, dpdk::DaemonConfig& applied,
                             Change& change, const ConfigResolver& resolve) {
  Backend& backend = change.backend();  // reads and validation; changes go through `change`
  ReloadResult res;
  auto error = [&](std::string why) {
    res.kind = ReloadResult::kError;
    res.summary = absl::StrCat(path, ": ", why, "; nothing applied");
    return res;
  };
  absl::StatusOr<dpdk::DaemonConfig> parsed = dpdk::ParseConfig(text);
  if (!parsed.ok()) return error(std::string(parsed.status().message()));
  if (resolve) {
    if (absl::Status st = resolve(*parsed); !st.ok()) return error(std::string(st.message()));
  }
  const dpdk::DaemonConfig& next = *parsed;
  res.needs_restart = RestartOnlyChanges(started, next);

  // Validate every changed part before applying any.
  std::optional<pool::StrategySpec> spec;
  if (absl::Status st = CheckStrategyChange(text, next, applied, backend, spec); !st.ok()) {
    return error(std::string(st.message()));
  }
  std::vector<std::pair<Ipv4Prefix, NextHop>> to_delete, to_add;
  std::string routes_note;
  if (!SameRoutes(next.engine.routes, applied.engine.routes)) {
    if (backend.GetInfo().mode != ForwardingMode::kL3) {
      routes_note = "routes changed but unused outside l3 mode (not applied)";
    } else {
      absl::StatusOr<std::map<Ipv4Prefix, NextHop>> want =
          ResolveRoutes(text, next.engine.routes, backend.ListPorts());
      if (!want.ok()) return error(std::string(want.status().message()));
      DiffRoutes(backend.ListRoutes(), *want, to_delete, to_add);
    }
  }

  // Apply: routes (undoable), then the swap; a failure puts the routes back.
  std::vector<std::pair<Ipv4Prefix, NextHop>> deleted, added;
  // Puts the routes already changed back. What cannot be put back is reported, never dropped:
  // the reload's error says which routes and why, ReloadResult::rollback_failed counts it
  // (skbnf_config_rollback_failures_total), and the live table is then defined as "the old
  // table minus what failed to come back": the next reload diffs against the live table, so it
  // repairs it.
  auto undo_routes = [&] {
    std::vector<std::string> failed;
    for (const auto& [p, nh] : added) {
      if (absl::Status st = change.DeleteRoute(p); !st.ok()) {
        failed.push_back(absl::StrCat("delete ", net::FormatIpv4Prefix(p), ": ", st.message()));
      }
    }
    for (const auto& [p, nh] : deleted) {
      if (absl::StatusOr<uint32_t> id = change.AddRoute(p, nh); !id.ok()) {
        failed.push_back(
            absl::StrCat("re-add ", net::FormatIpv4Prefix(p), ": ", id.status().message()));
      }
    }
    if (failed.empty()) return std::string();
    res.rollback_failed = true;
    return absl::StrCat("; ROLLBACK INCOMPLETE (", absl::StrJoin(failed, "; "),
                        "): the live route table differs from the last applied file until the "
                        "next reload");
  };
  auto failed = [&](std::string why) {
    const std::string rollback = undo_routes();
    ReloadResult r = error(why);
    if (!rollback.empty()) r.summary = absl::StrCat(path, ": ", why, rollback);
    return r;
  };
  for (const auto& [p, nh] : to_delete) {
    if (absl::Status st = change.DeleteRoute(p); !st.ok()) {
      return failed(absl::StrCat("DeleteRoute ", net::FormatIpv4Prefix(p), ": ", st.message()));
    }
    deleted.emplace_back(p, nh);
  }
  for (const auto& [p, nh] : to_add) {
    if (absl::StatusOr<uint32_t> id = change.AddRoute(p, nh); !id.ok()) {
      return failed(
          absl::StrCat("AddRoute ", net::FormatIpv4Prefix(p), ": ", id.status().message()));
    }
    added.emplace_back(p, nh);
  }
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
  if (!to_delete.empty() || !to_add.empty()) {
    done.push_back(absl::StrCat("routes -", to_delete.size(), " +", to_add.size()));
  }
  if (!routes_note.empty()) done.push_back(routes_note);
  applied.engine.strategy = next.engine.strategy;
  applied.engine.routes = next.engine.routes;
  res.kind =
      spec || !to_delete.empty() || !to_add.empty() ? ReloadResult::kOk : ReloadResult::kUnchanged;
  res.summary = absl::StrCat(
      path, ": ",
      done.empty() ? std::string("nothing to change at runtime") : absl::StrJoin(done, ", "));
  return res;
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
  drift_routes_ = d.routes;
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
    std::shared_ptr<ConfigReloadMetrics> metrics, ConfigResolver resolve) {
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
  std::unique_ptr<ConfigReloader> r(
      new ConfigReloader(path, started, control, std::move(metrics), fd, std::move(resolve)));
  r->thread_ = std::thread([p = r.get()] { p->Loop(); });
  return r;
}

ConfigReloader::ConfigReloader(std::string path, const dpdk::DaemonConfig& started,
                               ControlPlane& control, std::shared_ptr<ConfigReloadMetrics> metrics,
                               int inotify_fd, ConfigResolver resolve)
    : path_(std::move(path)),
      started_(started),
      applied_(started),
      last_text_(),  // the first pass of Loop() reads it
      control_(control),
      inotify_fd_(inotify_fd),
      metrics_(std::move(metrics)),
      resolve_(std::move(resolve)) {}

ConfigReloader::~ConfigReloader() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  metrics_->SetWatched(false);
  ::close(inotify_fd_);
}

void ConfigReloader::Loop() {
  constexpr auto kSettle = std::chrono::milliseconds(100);
  std::optional<Clock::time_point> due;
  alignas(inotify_event) char buf[16384];
  // The file may have changed between skbnfd reading it and this watch starting (EAL and port
  // start take seconds with real NICs): one pass now, silent when nothing changed.
  Reload("start", true, /*quiet_unchanged=*/true);
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
      Reload("SIGHUP", true);
      next_drift = Clock::now();
    }
    if (due && Clock::now() >= *due) {
      due.reset();
      Reload("inotify", false);
      next_drift = Clock::now();
    }
    if (Clock::now() >= next_drift) {
      CheckDrift();
      next_drift = Clock::now() + std::chrono::seconds(1);
    }
  }
}

void ConfigReloader::CheckDrift() {
  ConfigDrift d;
  // Under the mutation lock: no RPC's change is half-applied while the state is read.
  control_.Mutate(ChangeSource::kConfig,
                  [&](Change& change) { d = DriftOf(applied_, change.backend()); });
  metrics_->SetDrift(d);
  if (d.summary == last_drift_) return;
  if (d.any()) {
    std::fprintf(stderr, "skbnfd: config drift: the running state differs from %s: %s\n",
                 path_.c_str(), d.summary.c_str());
  } else {
    std::fprintf(stderr, "skbnfd: config drift: none, the running state is %s's again\n",
                 path_.c_str());
  }
  last_drift_ = d.summary;
}

void ConfigReloader::Reload(const char* trigger, bool always, bool quiet_unchanged) {
  std::optional<std::string> text = ReadText(path_);
  if (!text) {
    // A file that vanished for a moment (an editor's rename) comes back with its own event.
    if (!always) return;
    // Logged before it is counted: whoever sees the count finds the line.
    std::fprintf(stderr, "skbnfd: config reload (%s): error: cannot read %s; nothing applied\n",
                 trigger, path_.c_str());
    metrics_->Record(ReloadResult::kError, false);
    return;
  }
  if (!always && *text == last_text_) return;
  last_text_ = *text;
  ReloadResult r;
  control_.Mutate(ChangeSource::kConfig, [&](Change& change) {
    r = ApplyConfigText(path_, *text, started_, applied_, change, resolve_);
  });
  if (quiet_unchanged && r.kind == ReloadResult::kUnchanged && r.needs_restart.empty()) return;
  std::fprintf(stderr, "skbnfd: config reload (%s): %s: %s\n", trigger, ReloadResultName(r.kind),
               r.summary.c_str());
  if (!r.needs_restart.empty()) {
    std::fprintf(stderr, "skbnfd: config reload (%s): needs restart, not applied: %s\n", trigger,
                 absl::StrJoin(r.needs_restart, "; ").c_str());
  }
  metrics_->Record(r.kind, !r.needs_restart.empty(), r.rollback_failed);
}

}  // namespace skbnf::control
