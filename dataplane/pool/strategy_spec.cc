// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/strategy_spec.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dataplane/pool/layer_facts.h"

namespace skbnf::pool {
namespace {

// A listed layer's catalog row (its index is its place: default_layers.h).
const CatalogEntry& Row(int index) { return LayerCatalog()[static_cast<size_t>(index)]; }

std::string KnownLayers() {
  std::vector<absl::string_view> names;
  for (const CatalogEntry& e : LayerCatalog()) names.push_back(e.facts.name);
  return absl::StrJoin(names, ", ");
}

const TunableInfo* FindTunable(Layer l, absl::string_view key) {
  for (const TunableInfo& t : AllTunables()) {
    if (t.layer == l && t.key == key) return &t;
  }
  return nullptr;
}

absl::Status ParseLayer(absl::string_view token, StrategySpec& spec, int& last_index,
                        Layer& layer_out) {
  absl::string_view name = token;
  absl::string_view first_kv;
  if (size_t colon = token.find(':'); colon != absl::string_view::npos) {
    name = token.substr(0, colon);
    first_kv = token.substr(colon + 1);
    if (first_kv.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer '", name, "': ':' must be followed by key=value"));
    }
  }
  int index = -1;
  for (const CatalogEntry& e : LayerCatalog()) {
    if (e.facts.name == name) index = e.index;
  }
  if (index < 0) {
    if (name == "slab") {
      return absl::InvalidArgumentError(
          "'slab' names the empty stack and cannot be combined with layers");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown layer '", name, "' (known: ", KnownLayers(), ", or slab)"));
  }
  Layer layer = static_cast<Layer>(index);
  if (spec.Has(layer)) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' appears twice"));
  }
  if (index < last_index) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' must come before '",
                                                   Row(last_index).facts.name,
                                                   "' (order: ", StackOrderText(), ")"));
  }
  last_index = index;
  spec.layers |= LayerBit(layer);
  layer_out = layer;
  return absl::OkStatus();
}

absl::Status ParseTunable(absl::string_view kv, Layer layer, StrategySpec& spec,
                          std::vector<absl::string_view>& seen) {
  size_t eq = kv.find('=');
  absl::string_view key = kv.substr(0, eq);
  absl::string_view value = kv.substr(eq + 1);
  absl::string_view lname = LayerName(layer);
  const TunableInfo* info = FindTunable(layer, key);
  if (info == nullptr) {
    std::vector<absl::string_view> keys;
    for (const TunableInfo& t : AllTunables()) {
      if (t.layer == layer) keys.push_back(t.key);
    }
    return absl::InvalidArgumentError(absl::StrCat("layer '", lname, "' has no tunable '", key,
                                                   "' (it has: ", absl::StrJoin(keys, ", "), ")"));
  }
  for (absl::string_view s : seen) {
    if (s == key) {
      return absl::InvalidArgumentError(
          absl::StrCat("tunable '", lname, ":", key, "' is given twice"));
    }
  }
  seen.push_back(key);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tunable '", lname, ":", key, "' value '", value, "' is not a whole number"));
  }
  if (v < info->min || v > info->max) {
    return absl::InvalidArgumentError(absl::StrCat("tunable '", lname, ":", key, "' = ", v,
                                                   " is out of range [", info->min, ", ", info->max,
                                                   "]"));
  }
  spec.Tunable(layer) = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

}  // namespace

absl::string_view LayerName(Layer l) { return Row(static_cast<int>(l)).facts.name; }

const std::vector<LayerInfo>& AllLayers() {
  static const std::vector<LayerInfo> kLayers = [] {
    std::vector<LayerInfo> v;
    for (const CatalogEntry& e : LayerCatalog()) {
      v.push_back({static_cast<Layer>(e.index), e.facts.name, e.facts.help});
    }
    return v;
  }();
  return kLayers;
}

const std::vector<TunableInfo>& AllTunables() {
  static const std::vector<TunableInfo> kTunables = [] {
    std::vector<TunableInfo> v;
    for (const CatalogEntry& e : LayerCatalog()) {
      if (!e.facts.has_tunable) continue;
      const TunableFacts& t = e.facts.tunable;
      v.push_back({static_cast<Layer>(e.index), t.key, t.default_value, t.min, t.max, t.help});
    }
    return v;
  }();
  return kTunables;
}

const std::vector<ModifierInfo>& AllModifiers() {
  static const std::vector<ModifierInfo> kModifiers = {
      {"prefetch", "prefetch-for-write of every object handed out (2010 prefetchw)"},
  };
  return kModifiers;
}

uint32_t& StrategySpec::Tunable(Layer l) {
  return this->*Row(static_cast<int>(l)).facts.tunable.field;
}

std::string StrategySpec::ToString() const {
  std::string out;
  if (layers == 0) out = "slab";
  StrategySpec defaults;
  for (int i = 0; i < kNumLayers; ++i) {
    Layer l = static_cast<Layer>(i);
    if (!Has(l)) continue;
    if (!out.empty()) out += "+";
    absl::StrAppend(&out, LayerName(l));
    const uint32_t v = Tunable(l);
    if (v != defaults.Tunable(l)) {
      for (const TunableInfo& t : AllTunables()) {
        if (t.layer == l) absl::StrAppend(&out, ":", t.key, "=", v);
      }
    }
  }
  if (prefetch) out += ",prefetch";
  return out;
}

absl::StatusOr<StrategySpec> StrategySpec::Parse(absl::string_view text) {
  StrategySpec spec;
  if (text.empty()) return absl::InvalidArgumentError("strategy spec is empty (try 'magazine')");
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n') {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy spec '", text, "' contains whitespace"));
    }
  }
  std::vector<absl::string_view> tokens = absl::StrSplit(text, ',');
  std::vector<absl::string_view> layer_tokens = absl::StrSplit(tokens[0], '+');
  int last_index = -1;
  Layer last_layer = Layer::kLcache;
  std::vector<absl::string_view> seen_keys;
  if (tokens[0] == "slab") {
    layer_tokens.clear();
  } else if (tokens[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy spec '", text, "' has no stack before ','"));
  }
  for (absl::string_view lt : layer_tokens) {
    if (lt.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy spec '", text, "' has an empty layer"));
    }
    absl::Status s = ParseLayer(lt, spec, last_index, last_layer);
    if (!s.ok()) return s;
    seen_keys.clear();
    if (size_t colon = lt.find(':'); colon != absl::string_view::npos) {
      absl::string_view kv = lt.substr(colon + 1);
      if (kv.find('=') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer '", LayerName(last_layer), "': '", kv, "' is not key=value"));
      }
      s = ParseTunable(kv, last_layer, spec, seen_keys);
      if (!s.ok()) return s;
    }
  }
  bool in_modifiers = false;
  for (size_t i = 1; i < tokens.size(); ++i) {
    absl::string_view t = tokens[i];
    if (t.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy spec '", text, "' has an empty item after ','"));
    }
    if (t.find('=') != absl::string_view::npos) {
      if (in_modifiers || last_index < 0 ||
          layer_tokens.back().find(':') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("tunable '", t, "' must follow a layer's ':' (e.g. magazine:size=64)"));
      }
      absl::Status s = ParseTunable(t, last_layer, spec, seen_keys);
      if (!s.ok()) return s;
      continue;
    }
    in_modifiers = true;
    if (t == "prefetch") {
      if (spec.prefetch) {
        return absl::InvalidArgumentError("modifier 'prefetch' appears twice");
      }
      spec.prefetch = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown modifier '", t, "' (known: prefetch)"));
    }
  }
  return spec;
}

}  // namespace skbnf::pool
