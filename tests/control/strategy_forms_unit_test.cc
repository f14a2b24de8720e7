// SPDX-License-Identifier: BSD-3-Clause
// SetStrategy's two forms through one parser (server/control/strategy_convert.h): the same fault,
// written as a spec string and as a structured strategy, gives the same INVALID_ARGUMENT message,
// only the field naming where it is differs. A check written twice would drift: this table holds
// the two forms to each other, row by row.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "server/control/strategy_convert.h"

namespace skbnf::control {
namespace {

using Fill = std::function<void(v1::StructuredStrategy*)>;

v1::StructuredStrategy::LayerConfig* Add(v1::StructuredStrategy* s, v1::Layer l) {
  auto* lc = s->add_layers();
  lc->set_layer(l);
  return lc;
}

struct Fault {
  std::string name;
  std::string spec;   // the fault as a spec string
  Fill structured;    // the same fault, structured
  std::string field;  // the structured field it is reported at
};

std::vector<Fault> Faults() {
  return {
      {"unknown tunable", "magazine:colour=1",
       [](auto* s) { (*Add(s, v1::LAYER_MAGAZINE)->mutable_tunables())["colour"] = 1; },
       "structured.layers[0].tunables[colour]"},
      {"tunable below range", "headpool+magazine:size=0",
       [](auto* s) {
         Add(s, v1::LAYER_HEADPOOL);
         (*Add(s, v1::LAYER_MAGAZINE)->mutable_tunables())["size"] = 0;
       },
       "structured.layers[1].tunables[size]"},
      {"tunable above range", "headpool:hot_list_len=65537",
       [](auto* s) { (*Add(s, v1::LAYER_HEADPOOL)->mutable_tunables())["hot_list_len"] = 65537; },
       "structured.layers[0].tunables[hot_list_len]"},
      {"recycle limit above range", "recycle:limit=70000",
       [](auto* s) { (*Add(s, v1::LAYER_RECYCLE)->mutable_tunables())["limit"] = 70000; },
       "structured.layers[0].tunables[limit]"},
      {"layers out of order", "magazine+headpool",
       [](auto* s) {
         Add(s, v1::LAYER_MAGAZINE);
         Add(s, v1::LAYER_HEADPOOL);
       },
       "structured.layers[1].layer"},
      {"out of order after a tuned layer", "magazine:size=64+recycle",
       [](auto* s) {
         (*Add(s, v1::LAYER_MAGAZINE)->mutable_tunables())["size"] = 64;
         Add(s, v1::LAYER_RECYCLE);
       },
       "structured.layers[1].layer"},
      {"layer twice", "headpool+headpool",
       [](auto* s) {
         Add(s, v1::LAYER_HEADPOOL);
         Add(s, v1::LAYER_HEADPOOL);
       },
       "structured.layers[1].layer"},
      {"unknown modifier", "headpool,turbo",
       [](auto* s) {
         Add(s, v1::LAYER_HEADPOOL);
         s->add_modifiers("turbo");
       },
       "structured.modifiers[0]"},
      {"modifier twice", "slab,prefetch,prefetch",
       [](auto* s) {
         s->add_modifiers("prefetch");
         s->add_modifiers("prefetch");
       },
       "structured.modifiers[1]"},
  };
}

std::string Error(const v1::SetStrategyRequest& req) {
  absl::StatusOr<pool::StrategySpec> r = StrategyFromRequest(req);
  if (r.ok()) return "accepted as " + r->ToString();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  return std::string(r.status().message());
}

TEST(StrategyForms, TheSameFaultGivesTheSameErrorInBothForms) {
  for (const Fault& f : Faults()) {
    v1::SetStrategyRequest text, structured;
    text.set_spec(f.spec);
    f.structured(structured.mutable_structured());
    const std::string a = Error(text), b = Error(structured);
    ASSERT_EQ(a.rfind("spec: ", 0), 0u) << f.name << ": " << a;
    ASSERT_EQ(b.rfind(f.field + ": ", 0), 0u) << f.name << ": " << b;
    EXPECT_EQ(a.substr(6), b.substr(f.field.size() + 2)) << f.name;
  }
}

TEST(StrategyForms, TheSameStrategyInBothFormsIsTheSameSpec) {
  v1::SetStrategyRequest text, structured;
  text.set_spec("recycle+headpool:hot_list_len=64+magazine,prefetch");
  v1::StructuredStrategy* s = structured.mutable_structured();
  Add(s, v1::LAYER_RECYCLE);
  (*Add(s, v1::LAYER_HEADPOOL)->mutable_tunables())["hot_list_len"] = 64;
  (*Add(s, v1::LAYER_MAGAZINE)->mutable_tunables())["size"] = 32;  // the default, spelt out
  s->add_modifiers("prefetch");
  absl::StatusOr<pool::StrategySpec> a = StrategyFromRequest(text),
                                     b = StrategyFromRequest(structured);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  v1::SetStrategyRequest bare;
  bare.mutable_structured();
  EXPECT_EQ(StrategyFromRequest(bare)->ToString(), "slab");
}

// What only the structured form can get wrong: refused at its field before the parser sees a
// token, so no key or modifier can smuggle grammar into the text (a key "size=1,prefetch" would
// otherwise read as a tunable and a modifier).
TEST(StrategyForms, StructuredOnlyFaultsAndNoGrammarSmuggling) {
  auto error = [](const Fill& fill) {
    v1::SetStrategyRequest req;
    fill(req.mutable_structured());
    return Error(req);
  };
  EXPECT_EQ(error([](auto* s) {
              Add(s, v1::LAYER_UNSPECIFIED);
            }).rfind("structured.layers[0].layer: unspecified or unknown layer (0)", 0),
            0u);
  EXPECT_EQ(error([](auto* s) {
              Add(s, static_cast<v1::Layer>(9));
            }).rfind("structured.layers[0].layer: ", 0),
            0u);
  EXPECT_EQ(error([](auto* s) {
              (*Add(s, v1::LAYER_MAGAZINE)->mutable_tunables())["size=1,prefetch"] = 64;
            }).rfind("structured.layers[0].tunables[size=1,prefetch]: ", 0),
            0u);
  EXPECT_EQ(error([](auto* s) {
              Add(s, v1::LAYER_MAGAZINE);
              s->add_modifiers("prefetch+headpool");
            }).rfind("structured.modifiers[0]: ", 0),
            0u);
  EXPECT_EQ(error([](auto* s) { s->add_modifiers(""); }).rfind("structured.modifiers[0]: ", 0), 0u);
}

TEST(StrategyForms, NeitherFormIsTheStrategyField) {
  EXPECT_EQ(Error(v1::SetStrategyRequest()), "strategy: one of spec or structured is required");
}

TEST(StrategyForms, TheGrammarNamesTheStackOrderOfTheCatalogue) {
  std::string order;
  for (const pool::LayerInfo& l : pool::AllLayers()) {
    if (!order.empty()) order += '+';
    order.append(l.name.data(), l.name.size());
  }
  EXPECT_NE(StrategyGrammar().find("layers in order " + order + ", each at most once"),
            std::string::npos)
      << StrategyGrammar();
}

}  // namespace
}  // namespace skbnf::control
