// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/pci_env.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace skbnf::dpdk {

std::map<std::string, std::string> EnvironmentMap(const std::vector<std::string>& environment) {
  std::map<std::string, std::string> env;
  for (const std::string& e : environment) {
    const size_t eq = e.find('=');
    if (eq != std::string::npos) env.emplace(e.substr(0, eq), e.substr(eq + 1));
  }
  return env;
}

std::vector<PciDeviceVariable> PciDeviceVariables(const std::map<std::string, std::string>& env) {
  std::vector<PciDeviceVariable> out;
  for (const auto& [name, value] : env) {  // std::map: sorted by name
    if (!absl::StartsWith(name, "PCIDEVICE_")) continue;
    const bool json = absl::StartsWith(absl::StripLeadingAsciiWhitespace(value), "{");
    const bool info_name =
        absl::EndsWith(name, "_INFO") && env.count(name.substr(0, name.size() - 5)) > 0;
    out.push_back({name, value, json || info_name});
  }
  return out;
}

bool ValidPciAddress(absl::string_view a) {
  std::vector<absl::string_view> parts = absl::StrSplit(a, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0000");
  if (parts.size() != 3 || parts[0].size() != 4 || parts[1].size() != 2) return false;
  std::vector<absl::string_view> df = absl::StrSplit(parts[2], '.');
  if (df.size() != 2 || df[0].size() != 2 || df[1].size() != 1) return false;
  for (absl::string_view p : {parts[0], parts[1], df[0], df[1]}) {
    for (char c : p) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  return true;
}

std::string FullPciAddress(absl::string_view a) {
  return std::count(a.begin(), a.end(), ':') == 1 ? absl::StrCat("0000:", a) : std::string(a);
}

absl::StatusOr<std::vector<std::string>> PciAddresses(const PciDeviceVariable& v) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(v.value, ',', absl::SkipWhitespace())) {
    a = absl::StripAsciiWhitespace(a);
    if (!ValidPciAddress(a)) {
      return absl::InvalidArgumentError(
          absl::StrCat(v.name, "=", v.value, ": '", a,
                       "' is not a PCI address; expected [dddd:]bb:dd.f, e.g. 0000:3b:02.1"));
    }
    out.push_back(FullPciAddress(a));
  }
  return out;
}

}  // namespace skbnf::dpdk
