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

// A listed layer's row in the production catalog (its index is its place: default_layers.h).
const CatalogEntry& Row(int index) { return LayerCatalog()[static_cast<size_t>(index)]; }

using Catalog = std::vector<CatalogEntry>;

std::string KnownLayers(const Catalog& catalog) {
  std::vector<absl::string_view> names;
  for (const CatalogEntry& e : catalog) names.push_back(e.facts.name);
  return absl::StrJoin(names, ", ");
}

// The row of the layer named `name`, or nullptr.
const CatalogEntry* FindLayer(const Catalog& catalog, absl::string_view name) {
  for (const CatalogEntry& e : catalog) {
    if (e.facts.name == name && e.index >= 0) return &e;
  }
  return nullptr;
}

absl::Status ParseLayer(absl::string_view token, const Catalog& catalog, StrategySpec& spec,
                        const CatalogEntry*& last) {
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
  const CatalogEntry* row = FindLayer(catalog, name);
  if (row == nullptr) {
    if (name == "slab") {
      return absl::InvalidArgumentError(
          "'slab' names the empty stack and cannot be combined with layers");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown layer '", name, "' (known: ", KnownLayers(catalog), ", or slab)"));
  }
  if (spec.Has(row->index)) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' appears twice"));
  }
  if (last != nullptr && row->order < last->order) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' must come before '",
                                                   last->facts.name,
                                                   "' (order: ", StackOrderText(catalog), ")"));
  }
  last = row;
  spec.layers |= LayerBit(row->index);
  return absl::OkStatus();
}

absl::Status ParseTunable(absl::string_view kv, const CatalogEntry& row, StrategySpec& spec,
                          std::vector<absl::string_view>& seen) {
  size_t eq = kv.find('=');
  absl::string_view key = kv.substr(0, eq);
  absl::string_view value = kv.substr(eq + 1);
  absl::string_view lname = row.facts.name;
  const TunableFacts& info = row.facts.tunable;
  if (!row.facts.has_tunable || info.key != key) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer '", lname, "' has no tunable '", key,
        "' (it has: ", row.facts.has_tunable ? info.key : absl::string_view("none"), ")"));
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
  if (v < info.min || v > info.max) {
    return absl::InvalidArgumentError(absl::StrCat("tunable '", lname, ":", key, "' = ", v,
                                                   " is out of range [", info.min, ", ", info.max,
                                                   "]"));
  }
  spec.Tunable(row.index) = static_cast<uint32_t>(v);
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
      {"track", "stamp every object handed out with when and where (core, RX port refill, "
                "application lcore), for the ages of in-flight objects (track.h)"},
  };
  return kModifiers;
}

const std::array<uint32_t, kMaxLayers>& DefaultTunables() {
  static const std::array<uint32_t, kMaxLayers> kDefaults = [] {
    std::array<uint32_t, kMaxLayers> d{};
    for (const CatalogEntry& e : LayerCatalog()) {
      if (e.index >= 0 && e.facts.has_tunable) {
        d[static_cast<size_t>(e.index)] = e.facts.tunable.default_value;
      }
    }
    return d;
  }();
  return kDefaults;
}

const std::vector<CatalogEntry>& StrategySpec::Catalog() const {
  return catalog != nullptr ? *catalog : LayerCatalog();
}

std::string StrategySpec::ToString() const {
  std::string out;
  if (layers == 0) out = "slab";
  for (const CatalogEntry& e : Catalog()) {
    if (e.index < 0 || !Has(e.index)) continue;
    if (!out.empty()) out += "+";
    absl::StrAppend(&out, e.facts.name);
    if (!e.facts.has_tunable) continue;
    const uint32_t v = Tunable(e.index);
    if (v != e.facts.tunable.default_value) {
      absl::StrAppend(&out, ":", e.facts.tunable.key, "=", v);
    }
  }
  if (prefetch) out += ",prefetch";
  if (track) out += ",track";
  return out;
}

absl::StatusOr<StrategySpec> StrategySpec::Parse(absl::string_view text) {
  return Parse(text, LayerCatalog());
}

absl::StatusOr<StrategySpec> StrategySpec::Parse(absl::string_view text,
                                                 const std::vector<CatalogEntry>& catalog) {
  StrategySpec spec;
  if (&catalog != &LayerCatalog()) {
    spec.catalog = &catalog;
    for (const CatalogEntry& e : catalog) {  // every row's default, from its kFacts
      if (e.index < 0 || !e.facts.has_tunable) continue;
      spec.Tunable(e.index) = e.facts.tunable.default_value;
    }
  }
  if (text.empty()) return absl::InvalidArgumentError("strategy spec is empty (try 'magazine')");
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n') {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy spec '", text, "' contains whitespace"));
    }
  }
  std::vector<absl::string_view> tokens = absl::StrSplit(text, ',');
  std::vector<absl::string_view> layer_tokens = absl::StrSplit(tokens[0], '+');
  const CatalogEntry* last = nullptr;
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
    absl::Status s = ParseLayer(lt, catalog, spec, last);
    if (!s.ok()) return s;
    seen_keys.clear();
    if (size_t colon = lt.find(':'); colon != absl::string_view::npos) {
      absl::string_view kv = lt.substr(colon + 1);
      if (kv.find('=') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer '", last->facts.name, "': '", kv, "' is not key=value"));
      }
      s = ParseTunable(kv, *last, spec, seen_keys);
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
      if (in_modifiers || last == nullptr ||
          layer_tokens.back().find(':') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("tunable '", t, "' must follow a layer's ':' (e.g. magazine:size=64)"));
      }
      absl::Status s = ParseTunable(t, *last, spec, seen_keys);
      if (!s.ok()) return s;
      continue;
    }
    in_modifiers = true;
    bool* flag = t == "prefetch" ? &spec.prefetch : t == "track" ? &spec.track : nullptr;
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown modifier '", t, "' (known: prefetch, track)"));
    }
    if (*flag) return absl::InvalidArgumentError(absl::StrCat("modifier '", t, "' appears twice"));
    *flag = true;
  }
  return spec;
}

}  // namespace skbnf::pool
