// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/strategy_convert.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/pool/layer_facts.h"

namespace skbnf::control {
namespace {

using pool::Layer;
using pool::StrategySpec;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// A key or modifier the grammar can carry as one token: letters, digits and '_' only (no
// separator of the grammar, no whitespace), so a token never parses as something else.
bool IsName(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// The structured form as the spec grammar's tokens, fed to the parser one at a time.
class TokenFeed {
 public:
  // Appends `token` (with the separator the grammar puts before it) and parses the text so far;
  // a refusal names `field`.
  absl::Status Feed(absl::string_view separator, absl::string_view token, absl::string_view field) {
    std::string next = absl::StrCat(text_, text_.empty() ? "" : separator, token);
    absl::StatusOr<StrategySpec> parsed = StrategySpec::Parse(next);
    if (!parsed.ok()) return Invalid(field, parsed.status().message());
    text_ = std::move(next);
    spec_ = *parsed;
    return absl::OkStatus();
  }
  // After a layer and its tunables: the stack so far in canonical form, so that the next layer
  // ('+') or modifier (',') follows a token the grammar can continue.
  void EndLayer() { text_ = spec_.ToString(); }
  StrategySpec spec() const { return spec_; }
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
  StrategySpec spec_;
};

absl::Status FeedLayer(const v1::StructuredStrategy::LayerConfig& lc, const std::string& field,
                       TokenFeed& feed) {
  if (lc.layer() <= v1::LAYER_UNSPECIFIED || lc.layer() > pool::kNumLayers) {
    return Invalid(absl::StrCat(field, ".layer"),
                   absl::StrCat("unspecified or unknown layer (", lc.layer(), ")"));
  }
  const absl::string_view name = pool::LayerName(static_cast<Layer>(lc.layer() - 1));
  if (absl::Status s = feed.Feed("+", name, absl::StrCat(field, ".layer")); !s.ok()) return s;
  // Sorted, so the first bad key reported does not depend on map order.
  const std::map<std::string, uint32_t> tunables(lc.tunables().begin(), lc.tunables().end());
  bool first = true;
  for (const auto& [key, value] : tunables) {
    const std::string tfield = absl::StrCat(field, ".tunables[", key, "]");
    if (!IsName(key)) return Invalid(tfield, "a tunable key is a name (letters, digits, '_')");
    if (absl::Status s = feed.Feed(first ? ":" : ",", absl::StrCat(key, "=", value), tfield);
        !s.ok()) {
      return s;
    }
    first = false;
  }
  feed.EndLayer();
  return absl::OkStatus();
}

}  // namespace

v1::Layer LayerToProto(Layer l) { return static_cast<v1::Layer>(static_cast<int>(l) + 1); }

absl::StatusOr<StrategySpec> StrategyFromStructured(const v1::StructuredStrategy& s) {
  TokenFeed feed;
  for (int i = 0; i < s.layers_size(); ++i) {
    absl::Status st = FeedLayer(s.layers(i), absl::StrCat("structured.layers[", i, "]"), feed);
    if (!st.ok()) return st;
  }
  if (s.modifiers_size() > 0 && feed.empty()) {  // modifiers over the bare store
    if (absl::Status st = feed.Feed("", "slab", "structured.layers"); !st.ok()) return st;
  }
  for (int i = 0; i < s.modifiers_size(); ++i) {
    const std::string field = absl::StrCat("structured.modifiers[", i, "]");
    if (!IsName(s.modifiers(i))) return Invalid(field, "a modifier is a name (e.g. prefetch)");
    if (absl::Status st = feed.Feed(",", s.modifiers(i), field); !st.ok()) return st;
  }
  return feed.spec();  // no layer, no modifier: the bare store
}

absl::StatusOr<StrategySpec> StrategyFromRequest(const v1::SetStrategyRequest& req) {
  switch (req.strategy_case()) {
    case v1::SetStrategyRequest::kSpec: {
      absl::StatusOr<StrategySpec> parsed = StrategySpec::Parse(req.spec());
      if (!parsed.ok()) return Invalid("spec", parsed.status().message());
      return parsed;
    }
    case v1::SetStrategyRequest::kStructured:
      return StrategyFromStructured(req.structured());
    default:
      return Invalid("strategy", "one of spec or structured is required");
  }
}

void StrategyToStructured(const StrategySpec& spec, v1::StructuredStrategy* out) {
  for (int i = 0; i < pool::kNumLayers; ++i) {
    Layer l = static_cast<Layer>(i);
    if (!spec.Has(l)) continue;
    v1::StructuredStrategy::LayerConfig* lc = out->add_layers();
    lc->set_layer(LayerToProto(l));
    for (const pool::TunableInfo& t : pool::AllTunables()) {
      if (t.layer == l) (*lc->mutable_tunables())[std::string(t.key)] = spec.Tunable(l);
    }
  }
  if (spec.prefetch) out->add_modifiers("prefetch");
  if (spec.track) out->add_modifiers("track");
}

// The grammar's shape is written here once; the layers and their order come from the buffer
// core's catalogue.
std::string StrategyGrammar(const std::vector<pool::CatalogEntry>& catalog) {
  return absl::StrCat(
      "spec := stack (',' modifier)* ; stack := 'slab' | layer ('+' layer)* ; "
      "layer := name [':' key '=' value (',' key '=' value)*] ; layers in order ",
      pool::StackOrderText(catalog), ", each at most once");
}

void FillStrategyList(const std::vector<pool::CatalogEntry>& catalog,
                      v1::ListStrategiesResponse* resp) {
  for (const pool::CatalogEntry& e : catalog) {
    if (e.index < 0) continue;  // no spec names it
    v1::LayerDescription* ld = resp->add_layers();
    ld->set_layer(LayerToProto(static_cast<Layer>(e.index)));
    ld->set_name(std::string(e.facts.name));
    ld->set_help(std::string(e.facts.help));
    ld->set_position(static_cast<uint32_t>(e.order));
    if (!e.facts.has_tunable) continue;
    const pool::TunableFacts& t = e.facts.tunable;
    v1::TunableDescription* td = ld->add_tunables();
    td->set_key(std::string(t.key));
    td->set_default_value(t.default_value);
    td->set_min(t.min);
    td->set_max(t.max);
    td->set_help(std::string(t.help));
  }
  for (const pool::ModifierInfo& m : pool::AllModifiers()) {
    v1::ModifierDescription* md = resp->add_modifiers();
    md->set_name(std::string(m.name));
    md->set_help(std::string(m.help));
  }
  resp->set_grammar(StrategyGrammar(catalog));
}

}  // namespace skbnf::control
