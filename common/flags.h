// SPDX-License-Identifier: BSD-3-Clause
// Command-line flags of skbnf's daemons (skbnfd, the test daemon): how they are written.
//
// Flags are written with dashes (--pool-ops) or underscores (--pool_ops); absl knows the latter,
// so ParseFlags rewrites dashes in flag names (never in values, never after a `--`, which starts
// the EAL arguments) and runs absl::ParseCommandLine. CanonicalFlagName is that one rewrite;
// skbnfctl uses it too.
//
// How --help lists them is skbnfd's own (server/daemon/flag_help.h: by topic, one table).
#ifndef SKBNF_COMMON_FLAGS_H_
#define SKBNF_COMMON_FLAGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace skbnf::control {

// "pool-ops" -> "pool_ops" (the name part of "--name[=value]"; the value is kept as written).
std::string CanonicalFlagName(absl::string_view arg);

// Rewrites dashes in flag names up to a "--" and runs absl::ParseCommandLine. Returns the
// positional arguments (argv[0] first, then everything after "--").
std::vector<char*> ParseFlags(int argc, char** argv);

}  // namespace skbnf::control

#endif  // SKBNF_COMMON_FLAGS_H_
