// SPDX-License-Identifier: BSD-3-Clause
#include "common/flags.h"

#include <algorithm>

#include "absl/flags/parse.h"
#include "absl/strings/match.h"

namespace skbnf::control {

std::string CanonicalFlagName(absl::string_view arg) {
  std::string a(arg);
  if (!absl::StartsWith(a, "--") || a == "--") return a;
  const size_t end = std::min(a.find('='), a.size());
  std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  return a;
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
