// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/strategy_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skbnf::pool {
namespace {

TEST(StrategySpecTest, CanonicalSpecsRoundTrip) {
  const std::vector<std::string> canonical = {
      "slab",
      "headpool",
      "magazine",
      "recycle",
      "lcache",
      "headpool+magazine",
      "recycle+magazine,prefetch",
      "magazine:size=64",
      "headpool:hot_list_len=256+magazine:size=16",
      "lcache:size=512+recycle:limit=1024+headpool+magazine,prefetch",
      "slab,prefetch",
      "recycle:limit=64",
  };
  for (const std::string& text : canonical) {
    auto spec = StrategySpec::Parse(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status();
    EXPECT_EQ(spec->ToString(), text);
    auto again = StrategySpec::Parse(spec->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *spec);
  }
}

TEST(StrategySpecTest, EverySpecRoundTrips) {
  // Every layer combination, with and without prefetch, with default and non-default tunables.
  for (unsigned mask = 0; mask < (1u << kNumLayers); ++mask) {
    for (int prefetch = 0; prefetch < 2; ++prefetch) {
      for (int tuned = 0; tuned < 2; ++tuned) {
        StrategySpec s;
        s.layers = mask;
        s.prefetch = prefetch != 0;
        if (tuned) {
          s.Tunable(Layer::kLcache) = 100;
          s.Tunable(Layer::kRecycle) = 7;
          s.Tunable(Layer::kHeadPool) = 9;
          s.Tunable(Layer::kMagazine) = 3;
        }
        for (int i = 0; i < kNumLayers; ++i) {
          if (!s.Has(i)) s.Tunable(i) = StrategySpec().Tunable(i);
        }
        auto back = StrategySpec::Parse(s.ToString());
        ASSERT_TRUE(back.ok()) << s.ToString() << ": " << back.status();
        EXPECT_EQ(*back, s) << s.ToString();
      }
    }
  }
}

TEST(StrategySpecTest, NonCanonicalFormsNormalise) {
  EXPECT_EQ(StrategySpec::Parse("magazine:size=32")->ToString(), "magazine");
  EXPECT_EQ(StrategySpec::Parse("headpool:hot_list_len=128")->ToString(), "headpool");
  auto s = StrategySpec::Parse("recycle+magazine:size=64,prefetch");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Has(Layer::kRecycle));
  EXPECT_TRUE(s->Has(Layer::kMagazine));
  EXPECT_EQ(s->Tunable(Layer::kMagazine), 64u);
  EXPECT_TRUE(s->prefetch);
}

struct BadSpec {
  const char* text;
  const char* message_part;
};

TEST(StrategySpecTest, InvalidSpecsNameTheOffendingPart) {
  const BadSpec bad[] = {
      {"", "empty"},
      {"slub", "unknown layer 'slub'"},
      {"magazine+headpool", "'headpool' must come before 'magazine'"},
      {"magazine+magazine", "'magazine' appears twice"},
      {"headpool+slab", "'slab' names the empty stack"},
      {"magazine:size=0", "'magazine:size' = 0 is out of range [1, 1024]"},
      {"magazine:size=2000", "out of range"},
      {"magazine:size=abc", "'abc' is not a whole number"},
      {"magazine:size=-1", "is not a whole number"},
      {"magazine:depth=3", "layer 'magazine' has no tunable 'depth'"},
      {"headpool:len=3", "has no tunable 'len'"},
      {"magazine,prefetch,prefetch", "'prefetch' appears twice"},
      {"magazine,turbo", "unknown modifier 'turbo'"},
      {"magazine,size=3", "must follow a layer's ':'"},
      {"magazine:size=3,size=4", "'magazine:size' is given twice"},
      {"magazine:", "must be followed by key=value"},
      {"magazine:size", "'size' is not key=value"},
      {"headpool++magazine", "empty layer"},
      {"magazine,", "empty item"},
      {",prefetch", "no stack"},
      {"magazine, prefetch", "whitespace"},
      {"magazine,prefetch,size=3", "must follow a layer's ':'"},
      {"recycle:limit=70000", "out of range [0, 65536]"},
  };
  for (const BadSpec& b : bad) {
    auto s = StrategySpec::Parse(b.text);
    ASSERT_FALSE(s.ok()) << "'" << b.text << "' parsed as " << s->ToString();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find(b.message_part), std::string::npos)
        << "'" << b.text << "' -> " << s.status().message();
  }
}

TEST(StrategySpecTest, CatalogueDescribesEveryLayer) {
  EXPECT_EQ(AllLayers().size(), static_cast<size_t>(kNumLayers));
  for (const TunableInfo& t : AllTunables()) {
    EXPECT_LE(t.min, t.default_value);
    EXPECT_LE(t.default_value, t.max);
  }
}

}  // namespace
}  // namespace skbnf::pool
