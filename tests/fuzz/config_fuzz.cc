// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: skbnfd's configuration file parser (server/ops/config.h: ParseConfig) and the
// SR-IOV device-plugin environment reader (EalArgsFromPciDeviceEnv), on arbitrary text.
// Invariants:
//   - a refused file gives INVALID_ARGUMENT "line N: <reason>" with a non-empty reason, and N is
//     the first bad line: the lines before it parse, the file cut after line N fails with the
//     same message;
//   - an accepted file wrote each fixed-arity directive (mode, strategy, ..., route) with exactly
//     its values: extra words are refused, never ignored;
//   - an accepted file prints (Print below: one canonical directive per line; the parser has no
//     printer of its own, and routes_random prints as the routes it generated) to a text that
//     parses to the same configuration, and printing that gives the same text (a fixed point);
//     every MAC and prefix it kept parses with net_text.h;
//   - the input's lines read as environment variables: EalArgsFromPciDeviceEnv either refuses
//     with INVALID_ARGUMENT naming a PCIDEVICE_ variable, or returns "-a <addr>" pairs, one per
//     address listed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/net_text.h"
#include "common/pool_ops.h"
#include "server/ops/config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using skbnf::dpdk::DaemonConfig;
using skbnf::dpdk::EngineConfig;

std::string Print(const DaemonConfig& dc) {
  const EngineConfig& c = dc.engine;
  std::string s;
  absl::StrAppend(&s, "mode ", skbnf::dpdk::ForwardingModeName(c.mode), "\n");
  absl::StrAppend(&s, "strategy ", c.strategy.ToString(), "\n");
  absl::StrAppend(&s, "pool_ops ", skbnf::dpdk::PoolOpsName(c.pool_ops), "\n");
  absl::StrAppend(&s, "mbuf_cache ", c.mbuf_cache, "\nmbufs ", c.mbufs, "\nburst ", c.burst,
                  "\nrx_ring ", c.rx_ring, "\ntx_ring ", c.tx_ring, "\nrx_queues ", c.rx_queues,
                  "\ncolour ", c.colour ? "on" : "off", "\n");
  if (!dc.eal.empty()) absl::StrAppend(&s, "eal ", absl::StrJoin(dc.eal, " "), "\n");
  for (const auto& p : c.ports) {
    absl::StrAppend(&s, "port ", p.name);
    if (!p.peer.empty()) absl::StrAppend(&s, " peer=", p.peer);
    if (!p.dst_mac.empty()) absl::StrAppend(&s, " dst_mac=", p.dst_mac);
    s += "\n";
  }
  for (const auto& w : c.workers) {
    absl::StrAppend(&s, "worker ", w.lcore);
    for (const auto& [port, q] : w.rx) absl::StrAppend(&s, " ", port, ":", q);
    s += "\n";
  }
  for (const auto& r : c.routes)
    absl::StrAppend(&s, "route ", r.prefix, " ", r.port, " ", r.mac, "\n");
  return s;
}

bool Same(const DaemonConfig& a, const DaemonConfig& b) {
  const EngineConfig &x = a.engine, &y = b.engine;
  if (a.eal != b.eal || x.mode != y.mode || x.strategy != y.strategy || x.pool_ops != y.pool_ops ||
      x.mbuf_cache != y.mbuf_cache || x.mbufs != y.mbufs || x.burst != y.burst ||
      x.rx_ring != y.rx_ring || x.tx_ring != y.tx_ring || x.rx_queues != y.rx_queues ||
      x.colour != y.colour || x.ports.size() != y.ports.size() ||
      x.workers.size() != y.workers.size() || x.routes.size() != y.routes.size()) {
    return false;
  }
  for (size_t i = 0; i < x.ports.size(); ++i) {
    if (x.ports[i].name != y.ports[i].name || x.ports[i].peer != y.ports[i].peer ||
        x.ports[i].dst_mac != y.ports[i].dst_mac) {
      return false;
    }
  }
  for (size_t i = 0; i < x.workers.size(); ++i) {
    if (x.workers[i].lcore != y.workers[i].lcore || x.workers[i].rx != y.workers[i].rx) {
      return false;
    }
  }
  for (size_t i = 0; i < x.routes.size(); ++i) {
    if (x.routes[i].prefix != y.routes[i].prefix || x.routes[i].port != y.routes[i].port ||
        x.routes[i].mac != y.routes[i].mac) {
      return false;
    }
  }
  return true;
}

void CheckConfig(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  absl::StatusOr<DaemonConfig> dc = skbnf::dpdk::ParseConfig(text);
  if (!dc.ok()) {
    const absl::Status& s = dc.status();
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, "%s", s.ToString().c_str());
    const absl::string_view msg = s.message();
    FUZZ_CHECK(absl::StartsWith(msg, "line "), "no line number: %s", s.ToString().c_str());
    const size_t colon = msg.find(": ");
    int line = 0;
    FUZZ_CHECK(colon != absl::string_view::npos &&
                   absl::SimpleAtoi(msg.substr(5, colon - 5), &line) && line >= 1 &&
                   static_cast<size_t>(line) <= lines.size() && colon + 2 < msg.size(),
               "malformed refusal: %s", s.ToString().c_str());
    const std::string head = absl::StrJoin(lines.begin(), lines.begin() + (line - 1), "\n");
    auto before = skbnf::dpdk::ParseConfig(head);
    FUZZ_CHECK(before.ok(), "refused at line %d, yet the lines before fail: %s", line,
               before.status().ToString().c_str());
    const std::string upto = absl::StrJoin(lines.begin(), lines.begin() + line, "\n");
    auto cut = skbnf::dpdk::ParseConfig(upto);
    FUZZ_CHECK(!cut.ok() && cut.status().message() == msg, "line %d alone: %s vs %s", line,
               cut.status().ToString().c_str(), s.ToString().c_str());
    return;
  }
  // Fixed-arity directives were written with exactly their values (extra words are refused).
  for (absl::string_view line : lines) {
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> w =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (w.empty()) continue;
    size_t values = 1;
    if (w[0] == "route") values = 3;
    if (w[0] == "eal" || w[0] == "port" || w[0] == "worker" || w[0] == "routes_random") continue;
    FUZZ_CHECK(w.size() == values + 1, "accepted '%.*s' with %zu words",
               static_cast<int>(line.size()), line.data(), w.size());
  }
  for (const auto& r : dc->engine.routes) {
    FUZZ_CHECK(skbnf::net::ParseIpv4Prefix(r.prefix).ok() && skbnf::net::ParseMac(r.mac).ok(),
               "route kept: %s %s", r.prefix.c_str(), r.mac.c_str());
  }
  for (const auto& p : dc->engine.ports) {
    FUZZ_CHECK(p.dst_mac.empty() || skbnf::net::ParseMac(p.dst_mac).ok(), "port dst_mac %s",
               p.dst_mac.c_str());
  }
  // routes_random may expand to 2^20 routes: the round trip is checked on tables of fuzzing size.
  if (dc->engine.routes.size() > 4096) return;
  const std::string printed = Print(*dc);
  absl::StatusOr<DaemonConfig> again = skbnf::dpdk::ParseConfig(printed);
  FUZZ_CHECK(again.ok(), "the printed configuration is refused: %s\n%s",
             again.status().ToString().c_str(), printed.c_str());
  FUZZ_CHECK(Same(*dc, *again), "print -> parse changed the configuration:\n%s", printed.c_str());
  FUZZ_CHECK(Print(*again) == printed, "print is not a fixed point:\n%s", printed.c_str());
}

void CheckPciEnv(absl::string_view text) {
  std::vector<std::string> env = absl::StrSplit(text, '\n');
  auto args = skbnf::dpdk::EalArgsFromPciDeviceEnv(env);
  if (!args.ok()) {
    FUZZ_CHECK(args.status().code() == absl::StatusCode::kInvalidArgument &&
                   absl::StartsWith(args.status().message(), "PCIDEVICE_"),
               "%s", args.status().ToString().c_str());
    return;
  }
  FUZZ_CHECK(args->size() % 2 == 0, "odd argument count %zu", args->size());
  for (size_t i = 0; i < args->size(); i += 2) {
    FUZZ_CHECK((*args)[i] == "-a" && !(*args)[i + 1].empty(), "argument %zu: %s", i,
               (*args)[i].c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  CheckConfig(text);
  CheckPciEnv(text);
  return 0;
}
