// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/command_line.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "server/daemon/flag_help.h"

namespace skbnf::control {
namespace {

// absl's usage flags are not registered flags; skbnfd answers these three and refuses the rest
// (--helpon, --helpmatch, --version, ...) as unknown.
std::optional<HelpRequest> HelpFlag(absl::string_view name) {
  if (name == "help" || name == "helpshort") return HelpRequest::kShort;
  if (name == "helpfull") return HelpRequest::kFull;
  return std::nullopt;
}

template <typename T>
bool Parses(absl::string_view value) {
  T parsed{};
  std::string error;
  return absl::ParseFlag(value, &parsed, &error);
}

// Whether `value` parses as a value of `f` (absl's own parser of its type, nothing set); if not,
// `kind` says what such a value is. Strings and lists take any text.
bool ValueParses(const absl::CommandLineFlag& f, absl::string_view value, std::string& kind) {
  if (f.IsOfType<bool>()) return kind = "true or false", Parses<bool>(value);
  if (f.IsOfType<int32_t>()) return kind = "a whole number in range", Parses<int32_t>(value);
  if (f.IsOfType<int64_t>()) return kind = "a whole number in range", Parses<int64_t>(value);
  if (f.IsOfType<double>()) return kind = "a number", Parses<double>(value);
  if (f.IsOfType<absl::Duration>()) {
    return kind = "a duration with a unit, e.g. 30s or 2m", Parses<absl::Duration>(value);
  }
  return true;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The flag a mistyped `name` most likely meant, if one is near enough to be a typo.
std::optional<std::string> Nearest(absl::string_view name) {
  std::vector<std::string> known = {"help", "helpfull"};
  for (const auto& [n, flag] : absl::GetAllFlags()) known.emplace_back(n);
  std::sort(known.begin(), known.end());  // ties: the first in order, the same every run
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 4) + 1;
  for (const std::string& k : known) {
    if (size_t d = EditDistance(name, k); d < best_distance) best = k, best_distance = d;
  }
  return best;
}

absl::Status Unknown(absl::string_view name) {
  std::optional<std::string> near = Nearest(name);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag ", Dashed(name),
                   near ? absl::StrCat("; did you mean ", Dashed(*near), "?") : "",
                   " (`skbnfd --help` lists the flags)"));
}

// "--name=value" / "--name" after its dashes: the name canonical (underscores), the value if
// written with '='.
struct Written {
  std::string name;
  std::optional<std::string> value;
};
Written Split(absl::string_view arg) {
  arg.remove_prefix(absl::StartsWith(arg, "--") ? 2 : 1);
  const size_t eq = arg.find('=');
  Written w{CanonicalFlagName(absl::StrCat("--", arg.substr(0, eq))).substr(2), std::nullopt};
  if (eq != absl::string_view::npos) w.value = std::string(arg.substr(eq + 1));
  return w;
}

// Checks the flag at argv[i] (which may take argv[i + 1] as its value, advancing i).
absl::Status CheckFlag(int argc, char** argv, int& i) {
  Written w = Split(argv[i]);
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(w.name);
  if (flag == nullptr && absl::StartsWith(w.name, "no")) {  // --nocolour: a boolean's "false"
    absl::CommandLineFlag* negated = absl::FindCommandLineFlag(w.name.substr(2));
    if (negated != nullptr && negated->IsOfType<bool>()) {
      if (!w.value) return absl::OkStatus();
      const std::string flag_name = Dashed(negated->Name());
      return absl::InvalidArgumentError(absl::StrCat(Dashed(w.name), " takes no value; write ",
                                                     flag_name, "=false or ", flag_name, "=true"));
    }
  }
  if (flag == nullptr) return Unknown(w.name);
  const std::string name = Dashed(flag->Name());
  const std::string write = flag->IsOfType<bool>()
                                ? absl::StrCat(name, " or ", name, "=false")
                                : absl::StrCat(name, "=", Placeholder(flag->Name()));
  if (!w.value) {
    if (flag->IsOfType<bool>()) return absl::OkStatus();
    if (i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs a value; write ", write));
    }
    w.value = argv[++i];  // absl's "--name value"
  }
  if (std::string kind; !ValueParses(*flag, *w.value, kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", *w.value, ": '", *w.value, "' is not ", kind, "; write ", write));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HelpRequest> CheckCommandLine(int argc, char** argv) {
  HelpRequest help = HelpRequest::kNone;
  absl::Status first_error;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;                         // EAL arguments follow
    if (arg.size() < 2 || arg[0] != '-') continue;  // positional
    if (arg == "-h") {
      help = std::max(help, HelpRequest::kShort);
      continue;
    }
    if (std::optional<HelpRequest> h = HelpFlag(Split(arg).name)) {
      help = std::max(help, *h);
      continue;
    }
    if (absl::Status st = CheckFlag(argc, argv, i); !st.ok() && first_error.ok()) first_error = st;
  }
  if (help != HelpRequest::kNone) return help;
  if (!first_error.ok()) return first_error;
  return HelpRequest::kNone;
}

}  // namespace skbnf::control
