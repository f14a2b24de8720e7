// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/config.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net_text.h"
#include "common/pool_ops.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/ops/pci_env.h"

namespace skbnf::dpdk {
namespace {

template <typename T>
absl::Status ParseUint(absl::string_view word, uint64_t max, T* out) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(word, &v) || v > max) {
    return absl::InvalidArgumentError(absl::StrCat("'", word, "' is not a number in 0..", max));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

// key=value options after the positional words.
absl::Status Options(const std::vector<absl::string_view>& words, size_t first,
                     const std::set<std::string>& known,
                     std::vector<std::pair<std::string, std::string>>* out) {
  for (size_t i = first; i < words.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(words[i], absl::MaxSplits('=', 1));
    if (known.count(kv.first) == 0 || kv.second.empty()) {
      std::string k;
      for (const auto& s : known) absl::StrAppend(&k, k.empty() ? "" : ", ", s, "=...");
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", words[i], "'; known: ", k));
    }
    out->push_back(kv);
  }
  return absl::OkStatus();
}

// net=<network>[@<interface>]: a Kubernetes object name, optionally <namespace>/ before it (the
// Multus network-status spelling) and @<interface> after it (Multus' own selection syntax).
absl::Status CheckNetworkRef(absl::string_view port) {
  if (!IsNetworkRef(port)) return absl::OkStatus();
  absl::string_view n = port.substr(kNetworkRefPrefix.size());
  const size_t at = n.find('@'), slash = n.find('/');
  bool ok = !n.empty() && n.front() != '/' && n.front() != '@' && n.back() != '/' &&
            n.back() != '@' && std::count(n.begin(), n.end(), '/') <= 1 &&
            std::count(n.begin(), n.end(), '@') <= 1 &&
            (at == absl::string_view::npos || slash == absl::string_view::npos || at > slash + 1);
  for (char ch : n) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ||
                ch == '_' || ch == '/' || ch == '@');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", port,
                     "': write net=<network> as in the pod's Multus network-status: net=access, "
                     "net=<namespace>/access, or net=access@net1 for one interface of a network "
                     "attached twice"));
  }
  return absl::OkStatus();
}

// port <name> [peer=<name>] [dst_mac=<mac>]
absl::Status ParsePort(const std::vector<absl::string_view>& w, EngineConfig& c) {
  PortSpec p;
  p.name = std::string(w[1]);
  if (absl::Status st = CheckNetworkRef(p.name); !st.ok()) return st;
  std::vector<std::pair<std::string, std::string>> opts;
  if (auto st = Options(w, 2, {"peer", "dst_mac"}, &opts); !st.ok()) return st;
  for (const auto& [k, v] : opts) (k == "peer" ? p.peer : p.dst_mac) = v;
  if (absl::Status st = CheckNetworkRef(p.peer); !st.ok()) return st;
  if (!p.dst_mac.empty()) {
    if (auto m = net::ParseMac(p.dst_mac); !m.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("dst_mac ", m.status().message()));
    }
  }
  c.ports.push_back(p);
  return absl::OkStatus();
}

// routes_random <count> <port> [seed=<n>] [min_len=<n>] [max_len=<n>]
absl::Status ParseRoutesRandom(const std::vector<absl::string_view>& w, EngineConfig& c) {
  uint32_t count = 0;
  if (auto st = ParseUint(w[1], 1u << 20, &count); !st.ok()) return st;
  std::vector<std::pair<std::string, std::string>> opts;
  if (auto st = Options(w, 3, {"seed", "min_len", "max_len"}, &opts); !st.ok()) return st;
  uint64_t seed = 1;
  uint8_t lo = 16, hi = 24;
  for (const auto& [k, v] : opts) {
    absl::Status st = k == "seed"      ? ParseUint(v, ~0ull, &seed)
                      : k == "min_len" ? ParseUint(v, 32, &lo)
                                       : ParseUint(v, 32, &hi);
    if (!st.ok()) return st;
  }
  if (lo < 9 || hi < lo) {
    return absl::InvalidArgumentError("routes_random: need 9 <= min_len <= max_len <= 32");
  }
  // The port by network is checked as `route` checks it (the printed routes must parse).
  if (absl::Status st = CheckNetworkRef(w[2]); !st.ok()) return st;
  auto routes = RandomRoutes(count, std::string(w[2]), seed, lo, hi);
  c.routes.insert(c.routes.end(), routes.begin(), routes.end());
  return absl::OkStatus();
}

absl::Status ParseLine(const std::vector<absl::string_view>& w, DaemonConfig& dc) {
  EngineConfig& c = dc.engine;
  const absl::string_view key = w[0];
  // Directives with a fixed number of values refuse extra words (a typo such as
  // "mode l3 io" must not be half-read); eal, port, worker and routes_random take more.
  const bool variadic = key == "eal" || key == "port" || key == "worker" || key == "routes_random";
  auto need = [&](size_t n) -> absl::Status {
    if (w.size() < n + 1) {
      return absl::InvalidArgumentError(absl::StrCat("'", key, "' needs ", n, " value(s)"));
    }
    if (!variadic && w.size() > n + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", key, "' takes ", n, " value(s); '", w[n + 1], "' is one too many"));
    }
    return absl::OkStatus();
  };
  if (key == "mode") {
    if (auto st = need(1); !st.ok()) return st;
    auto m = ParseForwardingMode(w[1]);
    if (!m.ok()) return m.status();
    c.mode = *m;
  } else if (key == "strategy") {
    if (auto st = need(1); !st.ok()) return st;
    // Parsed here, at the line that says it; the spec travels down as is (EngineConfig).
    absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(w[1]);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy ", w[1], ": ", spec.status().message()));
    }
    c.strategy = *spec;
  } else if (key == "pool_ops") {
    if (auto st = need(1); !st.ok()) return st;
    auto ops = ParsePoolOps(w[1]);  // refused here, at the line that says it
    if (!ops.ok()) return ops.status();
    c.pool_ops = *ops;
  } else if (key == "mbuf_cache") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 512, &c.mbuf_cache);
  } else if (key == "mbufs") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 1u << 26, &c.mbufs);
  } else if (key == "burst") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 512, &c.burst);
  } else if (key == "rx_ring") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 32768, &c.rx_ring);
  } else if (key == "tx_ring") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 32768, &c.tx_ring);
  } else if (key == "rx_queues") {
    if (auto st = need(1); !st.ok()) return st;
    return ParseUint(w[1], 64, &c.rx_queues);
  } else if (key == "latency_sample_every") {
    if (auto st = need(1); !st.ok()) return st;
    if (auto st = ParseUint(w[1], dpdk::kMaxSampleEvery, &c.latency.sample_every); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "latency_sample_every ", st.message(), ": 1 in N RX bursts timed, 0 off (default 256)"));
    }
  } else if (key == "slow_iteration_us") {
    if (auto st = need(1); !st.ok()) return st;
    if (auto st = ParseUint(w[1], dpdk::kMaxSlowIterationUs, &c.latency.slow_iteration_us);
        !st.ok() || c.latency.slow_iteration_us == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("slow_iteration_us '", w[1], "' is not a number in 1..",
                       dpdk::kMaxSlowIterationUs, " (microseconds; default 250)"));
    }
  } else if (key == "colour") {
    if (auto st = need(1); !st.ok()) return st;
    if (w[1] != "on" && w[1] != "off") {
      return absl::InvalidArgumentError("write 'colour on' or 'colour off'");
    }
    c.colour = w[1] == "on";
  } else if (key == "eal") {
    for (size_t i = 1; i < w.size(); ++i) dc.eal.emplace_back(w[i]);
  } else if (key == "port") {
    if (auto st = need(1); !st.ok()) return st;
    return ParsePort(w, c);
  } else if (key == "worker") {
    if (auto st = need(2); !st.ok()) return st;
    WorkerSpec ws;
    if (auto st = ParseUint(w[1], 1023, &ws.lcore); !st.ok()) return st;
    for (size_t i = 2; i < w.size(); ++i) {
      std::pair<std::string, std::string> pq = absl::StrSplit(w[i], absl::MaxSplits(':', 1));
      uint16_t q = 0;
      if (!pq.second.empty()) {
        if (auto st = ParseUint(pq.second, 63, &q); !st.ok()) return st;
      }
      if (absl::Status st = CheckNetworkRef(pq.first); !st.ok()) return st;
      ws.rx.emplace_back(pq.first, q);
    }
    c.workers.push_back(ws);
  } else if (key == "route") {
    if (auto st = need(3); !st.ok()) return st;
    RouteSpec r{std::string(w[1]), std::string(w[2]), std::string(w[3])};
    if (absl::Status st = CheckNetworkRef(r.port); !st.ok()) return st;
    if (auto p = net::ParseIpv4Prefix(r.prefix); !p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("route prefix ", p.status().message()));
    }
    if (auto m = net::ParseMac(r.mac); !m.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("route next-hop MAC ", m.status().message()));
    }
    c.routes.push_back(r);
  } else if (key == "routes_random") {
    if (auto st = need(2); !st.ok()) return st;
    return ParseRoutesRandom(w, c);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown directive '", key,
        "'; known: mode strategy pool_ops mbuf_cache mbufs burst rx_ring tx_ring rx_queues "
        "latency_sample_every slow_iteration_us colour eal port worker route routes_random"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DaemonConfig> ParseConfig(absl::string_view text) {
  DaemonConfig dc;
  int lineno = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++lineno;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (absl::Status st = ParseLine(words, dc); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", lineno, ": ", st.message()));
    }
  }
  return dc;
}

absl::StatusOr<DaemonConfig> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  auto dc = ParseConfig(ss.str());
  if (!dc.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", dc.status().message()));
  }
  return dc;
}

absl::StatusOr<std::vector<std::string>> EalArgsFromPciDeviceEnv(
    const std::vector<std::string>& environment) {
  std::vector<std::string> out;
  for (const PciDeviceVariable& v : PciDeviceVariables(EnvironmentMap(environment))) {
    if (v.info) continue;  // PCIDEVICE_<RES>_INFO: device information, not addresses
    absl::StatusOr<std::vector<std::string>> addresses = PciAddresses(v);
    if (!addresses.ok()) return addresses.status();
    for (const std::string& a : *addresses) {
      out.emplace_back("-a");
      out.emplace_back(a);
    }
  }
  return out;
}

bool IsNetworkRef(absl::string_view port) { return absl::StartsWith(port, kNetworkRefPrefix); }

bool UsesPortNetworks(const DaemonConfig& dc) {
  const EngineConfig& c = dc.engine;
  for (const PortSpec& p : c.ports) {
    if (IsNetworkRef(p.name) || IsNetworkRef(p.peer)) return true;
  }
  for (const WorkerSpec& w : c.workers) {
    for (const auto& [port, q] : w.rx) {
      if (IsNetworkRef(port)) return true;
    }
  }
  for (const RouteSpec& r : c.routes) {
    if (IsNetworkRef(r.port)) return true;
  }
  return false;
}

absl::Status ResolvePortNetworks(
    DaemonConfig& dc,
    const std::function<absl::StatusOr<std::string>(absl::string_view network)>& resolve) {
  std::map<std::string, std::string> done;  // net=<name> -> address
  auto fix = [&](std::string& port, absl::string_view where) -> absl::Status {
    if (!IsNetworkRef(port)) return absl::OkStatus();
    auto it = done.find(port);
    if (it == done.end()) {
      absl::StatusOr<std::string> a = resolve(port.substr(kNetworkRefPrefix.size()));
      if (!a.ok()) {
        return absl::Status(a.status().code(),
                            absl::StrCat(where, " ", port, ": ", a.status().message()));
      }
      it = done.emplace(port, *a).first;
    }
    port = it->second;
    return absl::OkStatus();
  };
  EngineConfig& c = dc.engine;
  for (PortSpec& p : c.ports) {
    if (absl::Status st = fix(p.name, "port"); !st.ok()) return st;
    if (absl::Status st = fix(p.peer, "port peer"); !st.ok()) return st;
  }
  for (WorkerSpec& w : c.workers) {
    for (auto& [port, q] : w.rx) {
      if (absl::Status st = fix(port, absl::StrCat("worker ", w.lcore)); !st.ok()) return st;
    }
  }
  for (RouteSpec& r : c.routes) {
    if (absl::Status st = fix(r.port, absl::StrCat("route ", r.prefix)); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::vector<RouteSpec> RandomRoutes(uint32_t count, const std::string& port, uint64_t seed,
                                    uint8_t min_len, uint8_t max_len) {
  std::mt19937_64 rng(seed);
  std::set<std::pair<uint32_t, uint8_t>> seen;
  std::vector<RouteSpec> out;
  out.reserve(count);
  // 10.0.0.0/8 holds 2^(len-8) prefixes of each length: enough for any count the lengths allow.
  uint64_t room = 0;
  for (unsigned l = min_len; l <= max_len; ++l) room += uint64_t{1} << (l - 8);
  count = static_cast<uint32_t>(std::min<uint64_t>(count, room));
  while (out.size() < count) {
    const uint8_t len = static_cast<uint8_t>(min_len + rng() % (max_len - min_len + 1));
    const uint32_t mask = len == 32 ? ~0u : ~(~0u >> len);
    const uint32_t prefix = ((10u << 24) | (static_cast<uint32_t>(rng()) & 0x00ffffff)) & mask;
    if (!seen.insert({prefix, len}).second) continue;
    const uint32_t i = static_cast<uint32_t>(out.size());
    out.push_back(RouteSpec{absl::StrFormat("%d.%d.%d.%d/%d", prefix >> 24, (prefix >> 16) & 0xff,
                                            (prefix >> 8) & 0xff, prefix & 0xff, len),
                            port, absl::StrFormat("02:00:00:00:01:%02x", i % 16)});
  }
  return out;
}

}  // namespace skbnf::dpdk
