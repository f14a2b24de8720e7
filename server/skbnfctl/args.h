// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl's command line: its usage text and its argument parser (flags anywhere, values as
// --flag=V or --flag V, --core repeatable, a `--` ends the flags). A bad command line is an
// InvalidArgument status (UsageError): main prints its message with the usage and exits 2
// without calling the server. Every parser here returns absl::Status(Or), as the rest of skbnf.
#ifndef SKBNF_SERVER_SKBNFCTL_ARGS_H_
#define SKBNF_SERVER_SKBNFCTL_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::ctl {

extern const char* const kUsage;

// A command-line error: nothing is sent, skbnfctl exits 2 (absl::InvalidArgumentError(message)).
absl::Status UsageError(absl::string_view message);
// "usage: skbnfctl <what>": a command given the wrong arguments.
absl::Status CommandUsage(absl::string_view what);

// Flag names are kept canonical (underscores): Has("validate_only") for --validate-only.
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

absl::StatusOr<Args> ParseArgs(int argc, char** argv);
// `s` as a non-negative whole number; the error names `what` (a flag or an argument).
absl::StatusOr<uint32_t> ParseUint(const std::string& what, const std::string& s);
// "500ms", "2s", "1.5s", "1m" -> milliseconds; a UsageError naming --`flag` otherwise.
absl::StatusOr<uint32_t> ParseDuration(const std::string& flag, const std::string& s);
absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path);

}  // namespace skbnf::ctl

#endif  // SKBNF_SERVER_SKBNFCTL_ARGS_H_
