// SPDX-License-Identifier: BSD-3-Clause
#include "common/net_text.h"

#include <charconv>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace skbnf::net {
namespace {

bool ParseDecimal(absl::string_view s, uint32_t max, uint32_t* out) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) return false;
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

absl::StatusOr<Ipv4Prefix> ParseIpv4Prefix(absl::string_view text) {
  size_t slash = text.find('/');
  if (slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an IPv4 prefix a.b.c.d/len (missing '/len')"));
  }
  std::vector<absl::string_view> octets = absl::StrSplit(text.substr(0, slash), '.');
  uint32_t addr = 0;
  if (octets.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an IPv4 prefix a.b.c.d/len (need 4 octets)"));
  }
  for (absl::string_view o : octets) {
    uint32_t v = 0;
    if (!ParseDecimal(o, 255, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "': octet '", o, "' is not a number 0..255"));
    }
    addr = addr << 8 | v;
  }
  uint32_t len = 0;
  if (!ParseDecimal(text.substr(slash + 1), 32, &len)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "': prefix length must be a number 0..32"));
  }
  const Ipv4Prefix masked{addr & Ipv4Prefix{0, static_cast<uint8_t>(len)}.Mask(),
                          static_cast<uint8_t>(len)};
  if (masked.addr != addr) {
    const Ipv4Prefix& canon = masked;
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' has host bits set (did you mean ",
                                                   FormatIpv4Prefix(canon), "?)"));
  }
  return Ipv4Prefix{addr, static_cast<uint8_t>(len)};
}

std::string FormatIpv4Prefix(const Ipv4Prefix& p) {
  return absl::StrFormat("%u.%u.%u.%u/%u", p.addr >> 24, (p.addr >> 16) & 0xff,
                         (p.addr >> 8) & 0xff, p.addr & 0xff, p.len);
}

absl::StatusOr<MacAddr> ParseMac(absl::string_view text) {
  MacAddr mac{};
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  bool ok = parts.size() == 6;
  for (size_t i = 0; ok && i < 6; ++i) {
    absl::string_view p = parts[i];
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v, 16);
    ok = p.size() == 2 && ec == std::errc() && ptr == p.data() + p.size();
    mac[i] = static_cast<uint8_t>(v);
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a MAC address aa:bb:cc:dd:ee:ff"));
  }
  return mac;
}

std::string FormatMac(const MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

}  // namespace skbnf::net
