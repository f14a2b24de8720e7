// Text forms used by the API: IPv4 prefixes ("10.1.0.0/16") and MAC addresses
// ("02:00:00:00:00:01"). Parsing is strict (no leading zeros games, no whitespace) because a
// malformed route must be refused with INVALID_ARGUMENT, never guessed at.
#ifndef SKBNF_SERVER_NET_TEXT_H_
#define SKBNF_SERVER_NET_TEXT_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend.h"

namespace skbnf::control {

// "a.b.c.d/len", len 0..32, host bits must be zero. Messages do not name the field (the caller
// prefixes it).
absl::StatusOr<Ipv4Prefix> ParseIpv4Prefix(absl::string_view text);
std::string FormatIpv4Prefix(const Ipv4Prefix& p);

// "aa:bb:cc:dd:ee:ff" (hex, either case).
absl::StatusOr<std::array<uint8_t, 6>> ParseMac(absl::string_view text);
std::string FormatMac(const std::array<uint8_t, 6>& mac);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_NET_TEXT_H_
