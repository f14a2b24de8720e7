// SPDX-License-Identifier: BSD-3-Clause
#include "server/skbnfctl/args.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flags.h"

namespace skbnf::ctl {

// Commands by what they do to the daemon, flags by what they set; every flag once.
const char* const kUsage = R"(usage: skbnfctl [flags] COMMAND [args]

commands that read:
  info                              version, build, EAL arguments, lcores, pool, mode
  ports                             ports: links, queues, rings and the PMD's error counters
  strategy list                     layers, modifiers and tunables a strategy can use
  strategy get                      the strategy in force
  stats [--core=N ...]              one table of per-core counters and rates
  top [--interval=MS] [--count=N]   live per-core view, refreshed every interval (1000 ms)
  routes list                       the route table (l3 mode)
  audit                             conservation audit of the buffer pool
  buffers [--exact]                 where every buffer of the pool is: store, each core's
                                    layers, depots, each port's RX and TX rings, each
                                    worker's hands, other threads, unaccounted. Read while
                                    the workers run; --exact: parked for an audit (AuditPool)
  buffers --ages [--oldest=N] [--older-than=DURATION]
                                    since when, and who took it: ages of the buffers in
                                    flight by allocation site, and the oldest of them with
                                    their site and address (the strategy needs `track`:
                                    strategy set 'SPEC,track')
  config diff                       the running state against skbnfd's --config file, as
                                    diff -u FILE RUNNING; exit 0 none, 1 drift, 2 trouble
  latency                           packet latency per core and RX port (p50, p99, p99.9,
                                    max), the poll loop's iterations by packets and duration,
                                    the last slow iterations and their causes

commands that change:
  strategy set SPEC [--validate-only] [--quiesce-timeout-ms=N]
                                    swap the strategy under traffic, or only validate SPEC
  strategy tune [CANDIDATE ...] [--dwell=DURATION] [--settle=DURATION] [--rounds=N]
                [--apply|--dry-run] [--seed=N] [--quiesce-timeout-ms=N]
                                    live tuning: try each candidate on the traffic forwarded,
                                    measure cycles per packet, rank by median over the rounds;
                                    --apply keeps the winner only if it beats the strategy in
                                    force by more than the spread (default --dry-run: nothing
                                    changes). No candidates: in force + magazine, headpool,
                                    recycle+magazine, lcache. Ctrl-C restores the incumbent
  routes add PREFIX PORT DST_MAC    l3 mode: route a.b.c.d/len to a next hop
  routes delete PREFIX              (del: the same, the old word)
  latency set [--sample-every=N] [--slow-iteration-us=US]
                                    time 1 in N RX bursts (0: off); log iterations over US
  worker pause CORE [--lease=DURATION] | worker resume CORE
                                    park / unpark one worker core. A pause is a lease (60s;
                                    1s..1h): the worker resumes by itself when it runs out;
                                    pausing again renews it. Readiness is NOT_SERVING meanwhile

flags: server and TLS
  --addr=ADDR            server, host:port or unix:/path (default $SKBNF_ADDR or 127.0.0.1:50051)
  --tls                  use TLS with the system roots (implied by --tls-ca)
  --tls-ca=FILE          PEM CA that signed the server certificate
  --tls-cert=FILE        PEM client certificate (needed for changes on a TLS listener)
  --tls-key=FILE         PEM key of --tls-cert
  --tls-server-name=NAME expected server name (default: the host in --addr)

flags: calls and output
  --timeout=SECONDS      deadline of each call (default 10; not for top, nor for `strategy
                         tune` unless given: it cancels the tune). `strategy set` adds
                         2 x the quiesce timeout (swap + rollback) to it, so it never
                         reports a failure for a swap that then commits
  --json                 print responses as JSON
  --help                 this text

flags: strategy set and strategy tune
  --validate-only        set: check SPEC and print its canonical form; nothing changes
                         (the request's validate_only; --dry-run is the old word for it)
  --quiesce-timeout-ms=N how long each worker has to acknowledge a swap, in ms (default:
                         the daemon's, shown by `info`)
  --dwell=DURATION       tune: measuring time per candidate per round (2s; 500ms, 1.5s, 1m)
  --settle=DURATION      tune: time after each swap before measuring (dwell/4)
  --rounds=N             tune: rounds over every candidate (3)
  --apply | --dry-run    tune: keep the winner / change nothing (the default)
  --seed=N               tune: seed of the per-round random order (0: a random one, reported)

flags: worker pause
  --lease=DURATION       how long the pause holds before the worker resumes by itself
                         (60s; 1s..1h); pausing a paused core again renews it

flags: latency set
  --sample-every=N       1 in N RX bursts timed, every packet of it (0: off; default 256)
  --slow-iteration-us=US iterations longer than this are slow: logged with their cause (250)

flags: buffers
  --exact                the workers parked for the moment of an audit: the places add up
                         to the pool exactly (the audit's rule: operate role)
  --ages                 the ages of the buffers in flight (the daemon's latest census)
  --oldest=N             --ages: list the N oldest buffers (0..1000; default 10)
  --older-than=DURATION  --ages: list only buffers at least this old (300s, 5m); with it,
                         --oldest defaults to 1000

flags: stats and top
  --core=N               only core N (repeatable)
  --interval=MS          top: refresh period in ms (1000)
  --count=N              top: stop after N updates
)";

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }
absl::Status CommandUsage(absl::string_view what) {
  return UsageError(absl::StrCat("usage: skbnfctl ", what));
}

// "500ms", "2s", "1.5s", "1m" -> milliseconds.
absl::StatusOr<uint32_t> ParseDuration(const std::string& flag, const std::string& s) {
  double v = 0;
  double unit = 0;
  std::string num;
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms") {
    unit = 1, num = s.substr(0, s.size() - 2);
  } else if (s.size() > 1 && s.back() == 's') {
    unit = 1000, num = s.substr(0, s.size() - 1);
  } else if (s.size() > 1 && s.back() == 'm') {
    unit = 60000, num = s.substr(0, s.size() - 1);
  }
  if (unit == 0 || !absl::SimpleAtod(num, &v) || v < 0 || v * unit > 4e9 || num[0] == '+') {
    return UsageError(absl::StrCat("--", flag, ": '", s,
                                   "' is not a duration: write a number with a unit, e.g. 500ms, "
                                   "2s, 1.5s or 1m"));
  }
  return static_cast<uint32_t>(v * unit + 0.5);
}

absl::StatusOr<Args> ParseArgs(int argc, char** argv) {
  static const std::vector<std::string> kValueFlags = {
      "addr",         "tls_ca",           "tls_cert", "tls_key", "tls_server_name",
      "timeout",      "interval",         "count",    "core",    "quiesce_timeout_ms",
      "dwell",        "settle",           "rounds",   "seed",    "lease",
      "sample_every", "slow_iteration_us", "oldest", "older_than"};
  static const std::vector<std::string> kBoolFlags = {"json",  "tls",  "validate_only", "dry_run",
                                                      "apply", "help", "exact", "ages"};
  Args a;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (flags_done || !absl::StartsWith(s, "--")) {
      a.positional.push_back(s);
      continue;
    }
    if (s == "--") {
      flags_done = true;
      continue;
    }
    // Dashes or underscores alike: the daemons' one rewrite (common/flags.h).
    std::string name = control::CanonicalFlagName(s).substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    bool is_value = std::find(kValueFlags.begin(), kValueFlags.end(), name) != kValueFlags.end();
    bool is_bool = std::find(kBoolFlags.begin(), kBoolFlags.end(), name) != kBoolFlags.end();
    if (!is_value && !is_bool) return UsageError(absl::StrCat("unknown flag --", name));
    if (is_bool) {
      if (has_value && value != "true" && value != "false") {
        return UsageError(absl::StrCat("--", name, " takes no value"));
      }
      if (!has_value || value == "true") a.values[name] = "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return UsageError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    if (name == "core")
      a.cores.push_back(value);
    else
      a.values[name] = value;
  }
  return a;
}

absl::StatusOr<uint32_t> ParseUint(const std::string& what, const std::string& s) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || s.empty() || s[0] == '-' || s[0] == '+') {
    return UsageError(absl::StrCat(what, ": '", s, "' is not a non-negative whole number"));
  }
  return v;
}

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return UsageError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace skbnf::ctl
