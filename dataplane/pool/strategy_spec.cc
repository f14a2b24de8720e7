// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/strategy_spec.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace skbnf::pool {
namespace {

constexpr std::array<absl::string_view, kNumLayers> kLayerNames = {"lcache", "recycle", "headpool",
                                                                  "magazine"};

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
  for (int i = 0; i < kNumLayers; ++i) {
    if (kLayerNames[i] == name) index = i;
  }
  if (index < 0) {
    if (name == "slab") {
      return absl::InvalidArgumentError(
          "'slab' names the empty stack and cannot be combined with layers");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown layer '", name, "' (known: ", absl::StrJoin(kLayerNames, ", "), ", or slab)"));
  }
  Layer layer = static_cast<Layer>(index);
  if (spec.Has(layer)) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' appears twice"));
  }
  if (index < last_index) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer '", name, "' must come before '", kLayerNames[last_index],
                     "' (order: lcache+recycle+headpool+magazine)"));
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
    return absl::InvalidArgumentError(absl::StrCat("tunable '", lname, ":", key, "' value '",
                                                   value, "' is not a whole number"));
  }
  if (v < info->min || v > info->max) {
    return absl::InvalidArgumentError(absl::StrCat("tunable '", lname, ":", key, "' = ", v,
                                                   " is out of range [", info->min, ", ",
                                                   info->max, "]"));
  }
  spec.Tunable(layer) = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

}  // namespace

absl::string_view LayerName(Layer l) { return kLayerNames[static_cast<int>(l)]; }

const std::vector<LayerInfo>& AllLayers() {
  static const std::vector<LayerInfo> kLayers = {
      {Layer::kLcache, "lcache",
       "DPDK-style per-lcore cache: bulk refill to size+n on empty, flush whole cache past "
       "1.5x size"},
      {Layer::kRecycle, "recycle",
       "2008 skb recycling: per (core, RX port) LIFO of TX-completed buffers, drained by that "
       "port's RX refill"},
      {Layer::kHeadPool, "headpool",
       "2003 skb_head_pool: per-core LIFO hot list, one object at a time to the layer below"},
      {Layer::kMagazine, "magazine",
       "Bonwick & Adams 2001: loaded+previous magazines per core, whole-magazine exchange "
       "with a locked depot"},
  };
  return kLayers;
}

const std::vector<TunableInfo>& AllTunables() {
  static const std::vector<TunableInfo> kTunables = {
      {Layer::kLcache, "size", 256, 1, 1024, "objects kept per lcore before a flush"},
      {Layer::kRecycle, "limit", 0, 0, 65536,
       "recycle list bound per (core, RX port); 0 = that port's RX ring size"},
      {Layer::kHeadPool, "hot_list_len", 128, 1, 65536, "bound of the per-core hot list"},
      {Layer::kMagazine, "size", 32, 1, 1024, "rounds per magazine"},
  };
  return kTunables;
}

const std::vector<ModifierInfo>& AllModifiers() {
  static const std::vector<ModifierInfo> kModifiers = {
      {"prefetch", "prefetch-for-write of every object handed out (2010 prefetchw)"},
  };
  return kModifiers;
}

uint32_t& StrategySpec::Tunable(Layer l) {
  switch (l) {
    case Layer::kLcache:
      return lcache_size;
    case Layer::kRecycle:
      return recycle_limit;
    case Layer::kHeadPool:
      return hot_list_len;
    case Layer::kMagazine:
      break;
  }
  return magazine_size;
}

std::string StrategySpec::ToString() const {
  std::string out;
  if (layers == 0) out = "slab";
  StrategySpec defaults;
  for (int i = 0; i < kNumLayers; ++i) {
    Layer l = static_cast<Layer>(i);
    if (!Has(l)) continue;
    if (!out.empty()) out += "+";
    absl::StrAppend(&out, kLayerNames[i]);
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
      return absl::InvalidArgumentError(absl::StrCat("strategy spec '", text, "' has an empty layer"));
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
      return absl::InvalidArgumentError(absl::StrCat("strategy spec '", text, "' has an empty item after ','"));
    }
    if (t.find('=') != absl::string_view::npos) {
      if (in_modifiers || last_index < 0 || layer_tokens.back().find(':') == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tunable '", t, "' must follow a layer's ':' (e.g. magazine:size=64)"));
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
