// SPDX-License-Identifier: BSD-3-Clause
#include "common/forwarding_mode.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {

absl::StatusOr<ForwardingMode> ParseForwardingMode(absl::string_view text) {
  if (text == "io") return ForwardingMode::kIo;
  if (text == "mac") return ForwardingMode::kMac;
  if (text == "l3") return ForwardingMode::kL3;
  return absl::InvalidArgumentError(absl::StrCat("unknown mode '", text, "'; write io, mac or l3"));
}

const char* ForwardingModeName(ForwardingMode mode) {
  switch (mode) {
    case ForwardingMode::kIo:
      return "io";
    case ForwardingMode::kMac:
      return "mac";
    case ForwardingMode::kL3:
      return "l3";
  }
  return "?";
}

}  // namespace skbnf::dpdk
