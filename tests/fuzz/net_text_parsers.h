// The MAC and IPv4 prefix parsers the net_text fuzz target checks, behind one small seam.
//
// Today they are server/net_text.h's (the API's); the engine keeps its own copies in
// dataplane/dpdk/ until both are unified into one parser. When that lands, repoint the four
// functions below (and SKBNF_NET_TEXT_SOURCES in tests/fuzz/CMakeLists.txt) at it: the target
// itself (net_text_fuzz.cc) only uses this header.
#ifndef SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_
#define SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/net_text.h"

namespace skbnf::fuzz {

struct Prefix {
  uint32_t addr = 0;  // host byte order
  uint32_t len = 0;
};
using Mac = std::array<uint8_t, 6>;

inline absl::StatusOr<Prefix> ParsePrefix(absl::string_view text) {
  auto p = control::ParseIpv4Prefix(text);
  if (!p.ok()) return p.status();
  return Prefix{p->addr, p->len};
}
inline std::string FormatPrefix(const Prefix& p) {
  return control::FormatIpv4Prefix({p.addr, static_cast<uint8_t>(p.len)});
}
inline absl::StatusOr<Mac> ParseMac(absl::string_view text) { return control::ParseMac(text); }
inline std::string FormatMac(const Mac& m) { return control::FormatMac(m); }

}  // namespace skbnf::fuzz

#endif  // SKBNF_TESTS_FUZZ_NET_TEXT_PARSERS_H_
