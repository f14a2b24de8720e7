// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's command line before absl parses it. absl::ParseCommandLine answers --help with exit 1
// and its own layout, and a mistake with "ERROR: Unknown command line flag 'x'" and exit 1;
// skbnfd's contract is exit 0 for help and exit 2, with what to write, for a bad flag (as for
// every refused start-up: skbnfd.cc). So CheckCommandLine reads argv first, with absl's rules
// (--name=value, --name value, --noname for a boolean, one or two dashes, dashes or underscores
// in names, flags end at `--`) and absl's registry (FindCommandLineFlag; each value parsed by
// absl's parser of the flag's type, nothing set); when it passes, absl's parse does not fail
// on a flag written on the command line (a --flagfile's contents are still absl's to check).
#ifndef SKBNF_SERVER_DAEMON_COMMAND_LINE_H_
#define SKBNF_SERVER_DAEMON_COMMAND_LINE_H_

#include "absl/status/statusor.h"

namespace skbnf::control {

enum class HelpRequest {
  kNone,   // run
  kShort,  // --help, --helpshort, -h: print FlagsHelp(usage, false), exit 0
  kFull,   // --helpfull: print FlagsHelp(usage, true), exit 0
};

// What argv asks for; InvalidArgument naming the first bad flag and what to write instead
// (unknown flag, with the nearest known one; a value its flag cannot parse; a missing value).
// A help flag wins over a bad one: `skbnfd --frobnicate --help` prints the help.
absl::StatusOr<HelpRequest> CheckCommandLine(int argc, char** argv);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_COMMAND_LINE_H_
