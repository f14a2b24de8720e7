// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl: command-line client of skbnf.v1.Control.
//
//   skbnfctl [flags] info | ports | strategy list|get|set SPEC [--dry-run] | stats | top
//                    | strategy tune [CANDIDATE ...] [--dwell=D] [--rounds=N] [--apply|--dry-run]
//                    | routes add PREFIX PORT DST_MAC | routes delete PREFIX | routes list
//                    | worker pause|resume CORE | audit
//
// Exit codes: 0 success, 2 usage error (nothing sent), 1 the server refused or failed (its
// status code and message on stderr), or the swap rolled back.
// Text output is for people (tables); --json prints the response message as JSON (proto field
// names, every field present), one object per command, or one per line for `top`.
//
// Files: args.h (command line), client.h (channel, deadlines, errors, JSON), table.h (text
// tables), info_commands.cc, strategy_commands.cc, tune_command.cc, stats_commands.cc,
// mutation_commands.cc.
#include <iostream>

#include "server/skbnfctl/args.h"
#include "server/skbnfctl/client.h"

int main(int argc, char** argv) {
  using skbnf::ctl::UsageError;
  try {
    skbnf::ctl::Args a = skbnf::ctl::ParseArgs(argc, argv);
    if (a.Has("help")) {
      std::cout << skbnf::ctl::kUsage;
      return 0;
    }
    if (a.positional.empty()) throw UsageError{"no command given"};
    skbnf::ctl::Client c(a);
    return c.Run(a.positional);
  } catch (const UsageError& e) {
    std::cerr << "skbnfctl: " << e.message << "\n\n" << skbnf::ctl::kUsage;
    return 2;
  }
}
