// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl's command line: its usage text and its argument parser (flags anywhere, values as
// --flag=V or --flag V, --core repeatable, a `--` ends the flags). A bad command line is a
// UsageError: skbnfctl prints it with the usage and exits 2 without calling the server.
#ifndef SKBNF_SERVER_SKBNFCTL_ARGS_H_
#define SKBNF_SERVER_SKBNFCTL_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace skbnf::ctl {

extern const char* const kUsage;

struct UsageError {
  std::string message;
};

// Flag names are kept canonical (underscores): Has("dry_run") for --dry-run.
struct Args {
  std::map<std::string, std::string> values;  // last value of each flag
  std::vector<std::string> cores;             // --core, repeatable
  std::vector<std::string> positional;
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
  }
};

Args ParseArgs(int argc, char** argv);
uint32_t ParseUint(const std::string& what, const std::string& s);
std::string ReadFile(const std::string& flag, const std::string& path);

}  // namespace skbnf::ctl

#endif  // SKBNF_SERVER_SKBNFCTL_ARGS_H_
