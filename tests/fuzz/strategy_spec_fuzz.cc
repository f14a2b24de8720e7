// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: the strategy spec parser (dataplane/pool/strategy_spec.h).
//
// Input: the text of a spec, e.g. "lcache:size=64+magazine,prefetch". Invariants:
//   - a rejected text gives INVALID_ARGUMENT with a non-empty message (and no crash);
//   - an accepted text prints canonically: Print(Parse(t)) parses back to the same spec and
//     prints to the same string (a fixed point), has no whitespace, and every tunable of a
//     present layer lies in its documented range while absent layers keep their defaults.
// An input whose first byte is NUL (never an accepted spec) is read instead as a StrategySpec
// (layer mask, prefetch, tunables) to check the other direction: Parse(Print(spec)) == spec
// for every valid spec, and an out-of-range tunable prints to a text that is refused.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dataplane/pool/strategy_spec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using skbnf::pool::AllTunables;
using skbnf::pool::Layer;
using skbnf::pool::StrategySpec;
using skbnf::pool::TunableInfo;

void CheckRejected(const absl::Status& s, absl::string_view text) {
  FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, "'%.*s' refused with %s",
             static_cast<int>(text.size()), text.data(), s.ToString().c_str());
  FUZZ_CHECK(!s.message().empty(), "'%.*s' refused without a message",
             static_cast<int>(text.size()), text.data());
}

void CheckInRange(const StrategySpec& spec, const std::string& printed) {
  const StrategySpec defaults;
  for (const TunableInfo& t : AllTunables()) {
    const uint32_t v = spec.Tunable(t.layer);
    if (spec.Has(t.layer)) {
      FUZZ_CHECK(v >= t.min && v <= t.max, "'%s': tunable %.*s = %u out of range", printed.c_str(),
                 static_cast<int>(t.key.size()), t.key.data(), v);
    } else {
      FUZZ_CHECK(v == defaults.Tunable(t.layer), "'%s': absent layer's tunable %.*s = %u",
                 printed.c_str(), static_cast<int>(t.key.size()), t.key.data(), v);
    }
  }
}

// Print -> Parse -> Print of an accepted spec.
void CheckRoundTrip(const StrategySpec& spec) {
  const std::string printed = spec.ToString();
  FUZZ_CHECK(!printed.empty(), "empty print");
  for (char c : printed) {
    FUZZ_CHECK(c != ' ' && c != '\t' && c != '\n', "'%s' has whitespace", printed.c_str());
  }
  CheckInRange(spec, printed);
  auto again = StrategySpec::Parse(printed);
  FUZZ_CHECK(again.ok(), "canonical '%s' refused: %s", printed.c_str(),
             again.status().ToString().c_str());
  FUZZ_CHECK(*again == spec, "'%s' parses back to a different spec '%s'", printed.c_str(),
             again->ToString().c_str());
  FUZZ_CHECK(again->ToString() == printed, "'%s' reprints as '%s'", printed.c_str(),
             again->ToString().c_str());
}

// The structured direction: a spec built from bytes, printed, parsed.
void FuzzStructured(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  StrategySpec spec;
  spec.layers = in.ConsumeIntegralInRange<unsigned>(0, (1u << skbnf::pool::kNumLayers) - 1);
  spec.prefetch = in.ConsumeBool();
  const bool allow_out_of_range = in.ConsumeBool();
  bool valid = true;
  for (const TunableInfo& t : AllTunables()) {
    if (!spec.Has(t.layer)) continue;
    uint32_t v = allow_out_of_range ? in.ConsumeIntegral<uint32_t>()
                                    : in.ConsumeIntegralInRange<uint32_t>(t.min, t.max);
    spec.Tunable(t.layer) = v;
    valid = valid && v >= t.min && v <= t.max;
  }
  if (valid) {
    CheckRoundTrip(spec);
    return;
  }
  const std::string printed = spec.ToString();
  auto parsed = StrategySpec::Parse(printed);
  FUZZ_CHECK(!parsed.ok(), "'%s' has an out-of-range tunable but was accepted", printed.c_str());
  CheckRejected(parsed.status(), printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = StrategySpec::Parse(text);
  if (!parsed.ok()) {
    CheckRejected(parsed.status(), text);
  } else {
    CheckRoundTrip(*parsed);
  }
  if (size >= 1 && data[0] == 0) {
    FUZZ_CHECK(!parsed.ok(), "a text starting with NUL was accepted");
    FuzzStructured(data + 1, size - 1);
  }
  return 0;
}
