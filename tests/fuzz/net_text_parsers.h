// SPDX-License-Identifier: BSD-3-Clause
// The MAC and IPv4 prefix parsers the net_text fuzz target checks, behind one small seam.
//
// They are common/net_text.h's: the one parser that the configuration file, the engine
// and the gRPC API share. The target itself (net_text_fuzz.cc) only uses this header.
#ifndef SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_
#define SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/net_text.h"

namespace skbnf::fuzz {

struct Prefix {
  uint32_t addr = 0;  // host byte order
  uint32_t len = 0;
};
using Mac = std::array<uint8_t, 6>;

inline absl::StatusOr<Prefix> ParsePrefix(absl::string_view text) {
  auto p = net::ParseIpv4Prefix(text);
  if (!p.ok()) return p.status();
  return Prefix{p->addr, p->len};
}
inline std::string FormatPrefix(const Prefix& p) {
  return net::FormatIpv4Prefix({p.addr, static_cast<uint8_t>(p.len)});
}
inline absl::StatusOr<Mac> ParseMac(absl::string_view text) { return net::ParseMac(text); }
inline std::string FormatMac(const Mac& m) { return net::FormatMac(m); }

}  // namespace skbnf::fuzz

#endif  // SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_
