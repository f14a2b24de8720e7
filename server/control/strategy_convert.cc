// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/strategy_convert.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::control {

using pool::Layer;
using pool::StrategySpec;

v1::Layer LayerToProto(Layer l) { return static_cast<v1::Layer>(static_cast<int>(l) + 1); }

absl::StatusOr<StrategySpec> StrategyFromStructured(const v1::StructuredStrategy& s) {
  StrategySpec spec;
  int last = -1;
  for (int i = 0; i < s.layers_size(); ++i) {
    const v1::StructuredStrategy::LayerConfig& lc = s.layers(i);
    std::string field = absl::StrCat("structured.layers[", i, "]");
    if (lc.layer() <= v1::LAYER_UNSPECIFIED || lc.layer() > pool::kNumLayers) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".layer: unspecified or unknown layer (", lc.layer(), ")"));
    }
    Layer layer = static_cast<Layer>(lc.layer() - 1);
    absl::string_view name = pool::LayerName(layer);
    if (spec.Has(layer)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".layer: layer '", name, "' appears twice"));
    }
    if (static_cast<int>(layer) < last) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".layer: layer '", name, "' must come before '",
                       pool::LayerName(static_cast<Layer>(last)),
                       "' (order: lcache, recycle, headpool, magazine)"));
    }
    last = static_cast<int>(layer);
    spec.layers |= pool::LayerBit(layer);
    // Sorted, so the first bad key reported does not depend on map order.
    std::map<std::string, uint32_t> tunables(lc.tunables().begin(), lc.tunables().end());
    for (const auto& [key, value] : tunables) {
      const pool::TunableInfo* info = nullptr;
      std::vector<std::string> keys;
      for (const pool::TunableInfo& t : pool::AllTunables()) {
        if (t.layer != layer) continue;
        keys.emplace_back(t.key);
        if (t.key == key) info = &t;
      }
      std::string tfield = absl::StrCat(field, ".tunables[", key, "]");
      if (info == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(tfield, ": layer '", name, "' has no tunable '", key,
                         "' (it has: ", absl::StrJoin(keys, ", "), ")"));
      }
      if (value < info->min || value > info->max) {
        return absl::InvalidArgumentError(absl::StrCat(tfield, ": ", value, " is out of range [",
                                                       info->min, ", ", info->max, "]"));
      }
      spec.Tunable(layer) = value;
    }
  }
  for (int i = 0; i < s.modifiers_size(); ++i) {
    const std::string& m = s.modifiers(i);
    std::string field = absl::StrCat("structured.modifiers[", i, "]");
    if (m != "prefetch") {
      std::vector<std::string> known;
      for (const pool::ModifierInfo& mi : pool::AllModifiers()) known.emplace_back(mi.name);
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": unknown modifier '", m, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (spec.prefetch) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": modifier '", m, "' given twice"));
    }
    spec.prefetch = true;
  }
  return spec;
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
}

}  // namespace skbnf::control
