// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl: command-line client of skbnf.v1.Control.
//
//   skbnfctl [flags] info | ports | strategy list|get | stats | top | routes list | audit
//                    | config diff
//                    | strategy set SPEC [--validate-only] [--quiesce-timeout-ms=N]
//                    | strategy tune [CANDIDATE ...] [--dwell=D] [--rounds=N] [--apply|--dry-run]
//                    | routes add PREFIX PORT DST_MAC | routes delete PREFIX
//                    | worker pause|resume CORE
//                    | latency | latency set [--sample-every=N] [--slow-iteration-us=US]
//
// Exit codes: 0 success, 2 usage error (nothing sent), 1 the server refused or failed (its
// status code and message on stderr), or the swap rolled back. `config diff` answers as diff(1):
// 0 no drift, 1 drift, 2 trouble (config_commands.cc).
// Text output is for people (tables); --json prints the response message as JSON (proto field
// names, every field present), one object per command, or one per line for `top`.
//
// Files: args.h (command line), client.h (channel, deadlines, errors, JSON), table.h (text
// tables), info_commands.cc, strategy_commands.cc, tune_command.cc, stats_commands.cc,
// mutation_commands.cc, config_commands.cc.
#include <iostream>

#include "server/skbnfctl/args.h"
#include "server/skbnfctl/client.h"

namespace {

// A command line that names no valid command: what is wrong, then the usage; exit 2.
int UsageFailure(const absl::Status& st) {
  std::cerr << "skbnfctl: " << st.message() << "\n\n" << skbnf::ctl::kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<skbnf::ctl::Args> a = skbnf::ctl::ParseArgs(argc, argv);
  if (!a.ok()) return UsageFailure(a.status());
  if (a->Has("help")) {
    std::cout << skbnf::ctl::kUsage;
    return 0;
  }
  if (a->positional.empty()) return UsageFailure(skbnf::ctl::UsageError("no command given"));
  absl::StatusOr<std::unique_ptr<skbnf::ctl::Client>> c = skbnf::ctl::Client::Create(*a);
  if (!c.ok()) return UsageFailure(c.status());
  absl::StatusOr<int> rc = (*c)->Run(a->positional);
  return rc.ok() ? *rc : UsageFailure(rc.status());
}
