// SPDX-License-Identifier: BSD-3-Clause
// Names of the engine's forwarding modes and drop reasons (engine.h), and the mode parser.
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

absl::StatusOr<Mode> ParseMode(absl::string_view text) {
  if (text == "io") return Mode::kIo;
  if (text == "mac") return Mode::kMac;
  if (text == "l3") return Mode::kL3;
  return absl::InvalidArgumentError(absl::StrCat("unknown mode '", text, "'; write io, mac or l3"));
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kIo:
      return "io";
    case Mode::kMac:
      return "mac";
    case Mode::kL3:
      return "l3";
  }
  return "?";
}

const char* DropReasonName(int reason) {
  static const char* const kNames[kNumDropReasons] = {"not_ipv4", "bad_header", "ttl_expired",
                                                      "no_route", "tx_full"};
  return reason >= 0 && reason < kNumDropReasons ? kNames[reason] : "?";
}

}  // namespace skbnf::dpdk
