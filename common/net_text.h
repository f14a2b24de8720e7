// SPDX-License-Identifier: BSD-3-Clause
// Network text: the one parser and printer of MAC addresses ("02:00:00:00:00:01") and IPv4
// prefixes ("10.1.0.0/16", "0.0.0.0/0") in skbnf. The configuration file, the engine and the
// gRPC API all use it, so a route that one accepts the others accept too.
//
// Parsing is strict (two hex digits per MAC byte, no leading zeros in octets, no whitespace, host
// bits zero) because a malformed route must be refused, never guessed at. Messages do not name
// the field: the caller prefixes it (API field path, config line). No DPDK header here.
#ifndef SKBNF_COMMON_NET_TEXT_H_
#define SKBNF_COMMON_NET_TEXT_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::net {

using MacAddr = std::array<uint8_t, 6>;

struct Ipv4Prefix {
  uint32_t addr = 0;  // host byte order, host bits zero
  uint8_t len = 0;    // 0..32; 0 is the default route
  uint32_t Mask() const { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }
  friend bool operator==(const Ipv4Prefix&, const Ipv4Prefix&) = default;
  friend auto operator<=>(const Ipv4Prefix&, const Ipv4Prefix&) = default;
};

// "a.b.c.d/len", len 0..32, host bits must be zero.
absl::StatusOr<Ipv4Prefix> ParseIpv4Prefix(absl::string_view text);
std::string FormatIpv4Prefix(const Ipv4Prefix& p);

// "aa:bb:cc:dd:ee:ff" (hex, either case).
absl::StatusOr<MacAddr> ParseMac(absl::string_view text);
std::string FormatMac(const MacAddr& mac);

}  // namespace skbnf::net

#endif  // SKBNF_COMMON_NET_TEXT_H_
