// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's --help: the flags by topic (ports and EAL, buffer pool, control API and TLS, ...),
// as a user looks for them, not by the file that defines them (absl's default, "Flags from
// server/daemon/daemon_flags.cc:"). The flags stay defined by concept in their own files; one
// table here, keyed by flag name, gives each its topic and its value's placeholder, and the
// text is built from absl's registry (absl::GetAllFlags), so a flag's help is written once, at
// its definition. A registered flag missing from the table is listed under "other flags" and
// named by FlagsWithoutTopic (tests/cli fails on one); a table line naming no registered flag
// is named by TopicsWithoutFlag.
//
//   --help      the topics a user needs; --helpfull  every flag, the test hooks and absl's
//   flag-file flags too (tests and bench/run discover flags there).
#ifndef SKBNF_SERVER_DAEMON_FLAG_HELP_H_
#define SKBNF_SERVER_DAEMON_FLAG_HELP_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace skbnf::control {

// `usage`, then each topic's flags: `--name=PLACEHOLDER`, its help and default. `full`: also
// the topics --help leaves out.
std::string FlagsHelp(absl::string_view usage, bool full);

// How a flag is written on skbnfd's command line and in its messages: "pool_ops" -> "--pool-ops".
std::string Dashed(absl::string_view flag_name);

// What to write after `--name=` ("io|mac|l3", "N", "FILE"); "" for a boolean flag.
std::string Placeholder(absl::string_view flag_name);

// Registered flags (absl::GetAllFlags) that have no line in the topic table, sorted.
std::vector<std::string> FlagsWithoutTopic();
// Topic-table lines that name no registered flag, sorted.
std::vector<std::string> TopicsWithoutFlag();

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_FLAG_HELP_H_
