// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/flag_help.h"

#include <algorithm>
#include <iterator>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace skbnf::control {
namespace {

struct Topic {
  const char* title;
  bool in_help;  // false: --helpfull only
};

// In the order --help prints them.
constexpr Topic kTopics[] = {
    {"config file (the flags below override it at start)", true},
    {"ports and EAL (EAL's own arguments go after `--`)", true},
    {"buffer pool", true},
    {"control API and TLS", true},
    {"metrics", true},
    {"preflight (the pod set-up checks before EAL)", true},
    {"console and run time", true},
    {"demo (neither EAL arguments nor --config)", true},
    {"test hooks (the test suite's; not for production)", false},
    {"flag files and the environment (absl's)", false},
};
enum TopicId {
  kConfig,
  kPorts,
  kPool,
  kControl,
  kMetrics,
  kPreflight,
  kConsole,
  kDemo,
  kTest,
  kAbsl
};

struct FlagLine {
  const char* name;  // as registered (underscores)
  TopicId topic;
  const char* value;  // placeholder after '='; "" for a boolean flag
};

// Every flag skbnfd registers, by topic; in a topic, in the order a user reads them. A new flag
// needs its line here (tests/cli: FlagsWithoutTopic() must be empty).
constexpr FlagLine kFlags[] = {
    {"config", kConfig, "FILE"},
    {"mode", kPorts, "io|mac|l3"},
    {"burst", kPorts, "N"},
    {"rx_queues", kPorts, "N"},
    {"rx_ring", kPorts, "N"},
    {"tx_ring", kPorts, "N"},
    {"pcidevice_env", kPorts, ""},
    {"network_status_file", kPorts, "FILE"},
    {"network_status_timeout", kPorts, "DURATION"},
    {"strategy", kPool, "SPEC"},
    {"pool_ops", kPool, "skbnf|ring_mp_mc"},
    {"mbufs", kPool, "N"},
    {"mbuf_cache", kPool, "N"},
    {"colour", kPool, ""},
    {"pool_debug", kPool, ""},
    {"pool_flags", kPool, "no_iova_contig"},
    {"store_stride", kPool, "BYTES"},
    {"native_twin", kPool, "FILE"},
    {"listen", kControl, "ADDR[,ADDR...]"},
    {"roles", kControl, "SUBJECT=ROLE,..."},
    {"loopback_role", kControl, "none|read|operate|admin"},
    {"audit_log", kControl, "-|FILE"},
    {"tls_cert", kControl, "FILE"},
    {"tls_key", kControl, "FILE"},
    {"tls_client_ca", kControl, "FILE"},
    {"tls_client_names", kControl, "NAME,... (deprecated)"},
    {"tls_reload_interval", kControl, "SECONDS"},
    {"insecure_remote", kControl, ""},
    {"health_listen", kControl, "ADDR"},
    {"ready_file", kControl, "FILE"},
    {"grpc_threads", kControl, "N"},
    {"grpc_memory_mb", kControl, "MIB"},
    {"grpc_streams_per_connection", kControl, "N"},
    {"grpc_max_connection_age", kControl, "SECONDS"},
    {"grpc_max_message_bytes", kControl, "BYTES"},
    {"unix_connections", kControl, "N"},
    {"calls_per_identity", kControl, "N"},
    {"mutations_per_identity", kControl, "N"},
    {"watch_streams_per_client", kControl, "N"},
    {"watch_streams_total", kControl, "N"},
    {"watch_min_interval_ms", kControl, "MS"},
    {"audit_min_interval_ms", kControl, "MS"},
    {"metrics_addr", kMetrics, "[HOST]:PORT|off"},
    {"buffer_census_every", kMetrics, "DURATION"},
    {"latency_sample_every", kMetrics, "N"},
    {"slow_iteration_us", kMetrics, "US"},
    {"metrics_tls_cert", kMetrics, "FILE"},
    {"metrics_tls_key", kMetrics, "FILE"},
    {"metrics_tls_client_ca", kMetrics, "FILE"},
    {"preflight", kPreflight, ""},
    {"skip_preflight", kPreflight, ""},
    {"stats", kConsole, "SECONDS"},
    {"duration", kConsole, "SECONDS"},
    {"swap_cycle", kConsole, "SPEC;SPEC..."},
    {"swap_every", kConsole, "SECONDS"},
    {"heap_trim_every", kConsole, "DURATION"},
    {"mutex_deadlock_detection", kConsole, "off|report|abort"},
    {"demo_routes", kDemo, "N"},
    {"demo_dests", kDemo, "N"},
    {"test_stall_lcore", kTest, "LCORE"},
    {"test_stall_ms", kTest, "MS"},
    {"test_preflight_root", kTest, "DIR"},
    {"test_reload_gate", kTest, "PATH"},
    {"test_depot_hold_gate", kTest, "PATH"},
    {"test_depot_hold_ms", kTest, "MS"},
    {"flagfile", kAbsl, "FILE,..."},
    {"fromenv", kAbsl, "NAME,..."},
    {"tryfromenv", kAbsl, "NAME,..."},
    {"undefok", kAbsl, "NAME,..."},
};

constexpr size_t kWidth = 100;
constexpr absl::string_view kIndent = "      ";

const FlagLine* LineOf(absl::string_view name) {
  for (const FlagLine& f : kFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// `text` in lines of at most kWidth columns after kIndent, broken at spaces only (a flag
// example such as --pool-flags=no_iova_contig stays whole, for readers and for grep).
void Wrap(absl::string_view text, std::string& out) {
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && kIndent.size() + line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, kIndent, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, kIndent, line, "\n");
}

// The default, when it says something: not the "not given" markers ("", -1), not a false or 0
// that the help already explains.
std::string DefaultNote(const absl::CommandLineFlag& f) {
  const std::string d = f.DefaultValue();
  if (d.empty() || d == "-1" || d == "0" || d == "false") return "";
  return absl::StrCat(" Default: ", f.IsOfType<std::string>() ? absl::StrCat("\"", d, "\"") : d,
                      ".");
}

void AppendFlag(const absl::CommandLineFlag& f, std::string& out) {
  const std::string value = Placeholder(f.Name());
  absl::StrAppend(&out, "  ", Dashed(f.Name()), value.empty() ? "" : "=", value, "\n");
  Wrap(absl::StrCat(f.Help(), DefaultNote(f)), out);
}

}  // namespace

std::string Dashed(absl::string_view flag_name) {
  return absl::StrCat("--", absl::StrReplaceAll(flag_name, {{"_", "-"}}));
}

std::string Placeholder(absl::string_view flag_name) {
  if (const FlagLine* f = LineOf(flag_name)) return f->value;
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(flag_name);
  return flag != nullptr && flag->IsOfType<bool>() ? "" : "VALUE";
}

std::string FlagsHelp(absl::string_view usage, bool full) {
  const auto all = absl::GetAllFlags();
  std::string out = absl::StrCat(usage, "\n");
  for (size_t t = 0; t < std::size(kTopics); ++t) {
    if (!full && !kTopics[t].in_help) continue;
    absl::StrAppend(&out, "\n", kTopics[t].title, ":\n");
    for (const FlagLine& line : kFlags) {
      auto it = all.find(line.name);
      if (line.topic == static_cast<TopicId>(t) && it != all.end()) AppendFlag(*it->second, out);
    }
  }
  if (std::vector<std::string> other = FlagsWithoutTopic(); !other.empty()) {
    absl::StrAppend(&out, "\nother flags (no topic yet):\n");
    for (const std::string& name : other) AppendFlag(*all.at(name), out);
  }
  return out;
}

std::vector<std::string> FlagsWithoutTopic() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (LineOf(name) == nullptr) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> TopicsWithoutFlag() {
  const auto all = absl::GetAllFlags();
  std::vector<std::string> names;
  for (const FlagLine& f : kFlags) {
    if (!all.contains(f.name)) names.emplace_back(f.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace skbnf::control
