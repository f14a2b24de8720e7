// SPDX-License-Identifier: BSD-3-Clause
#include "common/flags.h"

#include <algorithm>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace skbnf::control {
namespace {

std::vector<std::string>* g_help_paths = new std::vector<std::string>();

bool InHelp(absl::string_view file) {
  for (const std::string& p : *g_help_paths) {
    if (absl::StrContains(file, p)) return true;
  }
  return false;
}

// "/src/skbnf/server/daemon/demo.cc" -> "server/daemon/demo.cc": --help's group headings name the
// file by its place in the repository, wherever it was built.
std::string RepoPath(absl::string_view file) {
  for (absl::string_view top : {"server/", "dataplane/", "tests/"}) {
    if (size_t at = file.rfind(top); at != absl::string_view::npos) {
      return std::string(file.substr(at));
    }
  }
  return std::string(file);
}

}  // namespace

std::string CanonicalFlagName(absl::string_view arg) {
  std::string a(arg);
  if (!absl::StartsWith(a, "--") || a == "--") return a;
  const size_t end = std::min(a.find('='), a.size());
  std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  return a;
}

void SetUsage(const std::string& usage, std::vector<std::string> help_paths) {
  *g_help_paths = std::move(help_paths);
  absl::SetProgramUsageMessage(usage);
  // absl's default filter keeps only flags defined in a file named after the program (e.g.
  // skbnfd.cc), which prints "No flags matched" for flags defined by concept in other files.
  absl::FlagsUsageConfig config;
  config.contains_help_flags = &InHelp;
  config.contains_helpshort_flags = &InHelp;
  config.normalize_filename = &RepoPath;
  absl::SetFlagsUsageConfig(config);
}

std::vector<char*> ParseFlags(int argc, char** argv) {
  // The strings must outlive the returned pointers: keep them for the process' life.
  static std::vector<std::string>* storage = new std::vector<std::string>();
  storage->clear();
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") flags_done = true;
    storage->push_back(!flags_done && i > 0 ? CanonicalFlagName(a) : a);
  }
  std::vector<char*> ptrs;
  for (std::string& s : *storage) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  return absl::ParseCommandLine(static_cast<int>(ptrs.size()) - 1, ptrs.data());
}

}  // namespace skbnf::control
