// SPDX-License-Identifier: BSD-3-Clause
// Command-line flags of skbnf's daemons (skbnfd, the test daemon): how they are written and how
// --help lists them.
//
// Flags are written with dashes (--pool-ops) or underscores (--pool_ops); absl knows the latter,
// so ParseFlags rewrites dashes in flag names (never in values, never after a `--`, which starts
// the EAL arguments) and runs absl::ParseCommandLine. CanonicalFlagName is that one rewrite;
// skbnfctl uses it too.
//
// --help lists every flag of the files that register with HelpGroup (one file per group: data
// plane, demo, console, control plane), so absl's "flags from <file>" headings are the groups.
#ifndef SKBNF_COMMON_FLAGS_H_
#define SKBNF_COMMON_FLAGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace skbnf::control {

// "pool-ops" -> "pool_ops" (the name part of "--name[=value]"; the value is kept as written).
std::string CanonicalFlagName(absl::string_view arg);

// Sets the usage message (shown by --help before the flag groups) and makes --help / --helpfull
// list the flags of every file whose path contains one of `help_paths` (e.g. "server/").
void SetUsage(const std::string& usage, std::vector<std::string> help_paths);

// Rewrites dashes in flag names up to a "--" and runs absl::ParseCommandLine. Returns the
// positional arguments (argv[0] first, then everything after "--").
std::vector<char*> ParseFlags(int argc, char** argv);

}  // namespace skbnf::control

#endif  // SKBNF_COMMON_FLAGS_H_
