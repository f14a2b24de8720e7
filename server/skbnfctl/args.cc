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

const char* const kUsage = R"(usage: skbnfctl [flags] COMMAND [args]

commands:
  info                              version, build, EAL arguments, lcores, pool, mode
  ports                             ports: links, queues, rings and the PMD's error counters
  strategy list                     layers, modifiers and tunables a strategy can use
  strategy get                      the strategy in force
  strategy set SPEC [--dry-run]     validate (--dry-run) or swap the strategy under traffic
               [--quiesce-timeout-ms=N]
  strategy tune [CANDIDATE ...]     live tuning: try each candidate on the traffic forwarded,
               [--dwell=DURATION]   measure cycles per packet (dwell 2s per candidate per round,
               [--settle=DURATION]  after settle = dwell/4), rank by median over --rounds (3);
               [--rounds=N]         --apply keeps the winner only if it beats the strategy in
               [--apply|--dry-run]  force by more than the spread (default --dry-run: nothing
               [--seed=N]           changes). No candidates: in force + magazine, headpool,
               [--quiesce-timeout-ms=N]  recycle+magazine, lcache. Ctrl-C restores the incumbent
  stats [--core=N ...]              one table of per-core counters and rates
  top [--interval=MS] [--count=N]   live per-core view, refreshed every interval (1000 ms)
  routes add PREFIX PORT DST_MAC    l3 mode: route a.b.c.d/len to a next hop
  routes delete PREFIX              (del: the same, the old word)
  routes list
  worker pause CORE | resume CORE   park / unpark one worker core
  audit                             conservation audit of the buffer pool

flags:
  --addr=ADDR            server, host:port or unix:/path (default $SKBNF_ADDR or 127.0.0.1:50051)
  --tls                  use TLS with the system roots (implied by --tls-ca)
  --tls-ca=FILE          PEM CA that signed the server certificate
  --tls-cert=FILE        PEM client certificate (needed for changes on a TLS listener)
  --tls-key=FILE         PEM key of --tls-cert
  --tls-server-name=NAME expected server name (default: the host in --addr)
  --timeout=SECONDS      deadline of each call (default 10; not for top, nor for `strategy
                         tune` unless given: it cancels the tune). `strategy set` adds
                         2 x the quiesce timeout (swap + rollback) to it, so it never
                         reports a failure for a swap that then commits
  --json                 print responses as JSON
)";

Args ParseArgs(int argc, char** argv) {
  static const std::vector<std::string> kValueFlags = {
      "addr",  "tls_ca", "tls_cert",           "tls_key", "tls_server_name", "timeout", "interval",
      "count", "core",   "quiesce_timeout_ms", "dwell",   "settle",          "rounds",  "seed"};
  static const std::vector<std::string> kBoolFlags = {"json", "tls", "dry_run", "apply", "help"};
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
    if (!is_value && !is_bool) throw UsageError{absl::StrCat("unknown flag --", name)};
    if (is_bool) {
      if (has_value && value != "true" && value != "false") {
        throw UsageError{absl::StrCat("--", name, " takes no value")};
      }
      if (!has_value || value == "true") a.values[name] = "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError{absl::StrCat("--", name, " needs a value")};
      value = argv[++i];
    }
    if (name == "core")
      a.cores.push_back(value);
    else
      a.values[name] = value;
  }
  return a;
}

uint32_t ParseUint(const std::string& what, const std::string& s) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || s.empty() || s[0] == '-' || s[0] == '+') {
    throw UsageError{absl::StrCat(what, ": '", s, "' is not a non-negative whole number")};
  }
  return v;
}

std::string ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError{absl::StrCat("--", flag, ": cannot read '", path, "'")};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace skbnf::ctl
