// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: the MAC ("aa:bb:cc:dd:ee:ff") and IPv4 prefix ("10.1.0.0/16") parsers, through
// net_text_parsers.h. The input text goes to both parsers. Invariants:
//   - a rejected text gives INVALID_ARGUMENT with a non-empty message (and no crash);
//   - an accepted prefix has len <= 32 and no host bits, and the parsers are strict: the
//     text is exactly its canonical print (no leading zeros, no signs, no whitespace);
//   - an accepted MAC prints as the text in lower case and parses back to the same bytes.
// An input whose first byte is NUL (never accepted) is read instead as a prefix and a MAC:
// print -> parse is identity for every valid value, and a prefix with host bits is refused.
#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/net_text_parsers.h"

namespace {

using skbnf::fuzz::Mac;
using skbnf::fuzz::Prefix;

void CheckRejected(const absl::Status& s, absl::string_view what, absl::string_view text) {
  FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument && !s.message().empty(),
             "%.*s '%.*s' refused with '%s'", static_cast<int>(what.size()), what.data(),
             static_cast<int>(text.size()), text.data(), s.ToString().c_str());
}

uint32_t Mask(uint32_t len) { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }

void CheckPrefix(const Prefix& p, absl::string_view text) {
  FUZZ_CHECK(p.len <= 32 && (p.addr & ~Mask(p.len)) == 0, "'%.*s' -> %08x/%u",
             static_cast<int>(text.size()), text.data(), p.addr, p.len);
  const std::string printed = skbnf::fuzz::FormatPrefix(p);
  auto again = skbnf::fuzz::ParsePrefix(printed);
  FUZZ_CHECK(again.ok() && again->addr == p.addr && again->len == p.len, "'%s' does not parse back",
             printed.c_str());
}

void CheckMac(const Mac& m) {
  const std::string printed = skbnf::fuzz::FormatMac(m);
  auto again = skbnf::fuzz::ParseMac(printed);
  FUZZ_CHECK(again.ok() && *again == m, "'%s' does not parse back", printed.c_str());
}

void FuzzStructured(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Prefix p;
  p.addr = in.ConsumeIntegral<uint32_t>();
  p.len = in.ConsumeIntegralInRange<uint32_t>(0, 32);
  if ((p.addr & ~Mask(p.len)) != 0) {
    const std::string printed = skbnf::fuzz::FormatPrefix(p);
    auto parsed = skbnf::fuzz::ParsePrefix(printed);
    FUZZ_CHECK(!parsed.ok(), "'%s' has host bits but was accepted", printed.c_str());
    CheckRejected(parsed.status(), "prefix", printed);
    p.addr &= Mask(p.len);
  }
  CheckPrefix(p, "(structured)");
  Mac m{};
  for (uint8_t& b : m) b = in.ConsumeIntegral<uint8_t>();
  CheckMac(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto prefix = skbnf::fuzz::ParsePrefix(text);
  if (!prefix.ok()) {
    CheckRejected(prefix.status(), "prefix", text);
  } else {
    CheckPrefix(*prefix, text);
    const std::string printed = skbnf::fuzz::FormatPrefix(*prefix);
    FUZZ_CHECK(printed == text, "'%.*s' accepted but its canonical form is '%s'",
               static_cast<int>(text.size()), text.data(), printed.c_str());
  }
  auto mac = skbnf::fuzz::ParseMac(text);
  if (!mac.ok()) {
    CheckRejected(mac.status(), "MAC", text);
  } else {
    CheckMac(*mac);
    std::string lower(text);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string printed = skbnf::fuzz::FormatMac(*mac);
    FUZZ_CHECK(printed == lower, "MAC '%.*s' accepted but prints as '%s'",
               static_cast<int>(text.size()), text.data(), printed.c_str());
  }
  if (size >= 1 && data[0] == 0) {
    FUZZ_CHECK(!prefix.ok() && !mac.ok(), "a text starting with NUL was accepted");
    FuzzStructured(data + 1, size - 1);
  }
  return 0;
}
