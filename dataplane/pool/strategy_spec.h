// SPDX-License-Identifier: BSD-3-Clause
// StrategySpec: the one string that names a buffer-allocation strategy.
//
// A strategy is a stack of zero or more per-core layers over the slab store, plus modifiers
// and tunables. Layers are listed top (closest to the packet path) to bottom:
//
//   lcache+recycle+headpool+magazine, then the slab store (1998 slab + colouring: always
//   present, named only as `slab`, the empty stack)
//
// Each layer's name, help line, tunable (key, default, range) and bound on held objects are
// its own file's kFacts and MaxHeld (lcache.h, recycle.h, headpool.h, magazine.h), gathered in
// stack order by the catalog (layer_facts.h, LayerCatalog(), over DefaultLayers); this file's
// parser, printer and tables (AllLayers, AllTunables) read that catalog.
//
//   modifier   seed
//   prefetch   2010 Junchang Wang prefetchw on allocation
//
// Grammar (whitespace is not allowed):
//   spec     := stack ( ',' modifier )*
//   stack    := 'slab' | layer ( '+' layer )*
//   layer    := name [ ':' key '=' value ( ',' key '=' value )* ]
// A comma-separated token containing '=' is a further tunable of the last layer; a token
// without '=' is a modifier. Layers must appear in the stack order above, each once.
//
// Printing is canonical: tunables equal to their default are omitted, so
// Print(Parse(s)) is the canonical form of s and Parse(Print(spec)) == spec for every spec.
#ifndef SKBNF_DATAPLANE_POOL_STRATEGY_SPEC_H_
#define SKBNF_DATAPLANE_POOL_STRATEGY_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::pool {

enum class Layer : uint8_t { kLcache = 0, kRecycle = 1, kHeadPool = 2, kMagazine = 3 };
inline constexpr int kNumLayers = 4;

// Bit for a layer in a layer mask (top of the stack = lowest bit).
constexpr unsigned LayerBit(Layer l) { return 1u << static_cast<unsigned>(l); }

absl::string_view LayerName(Layer l);

// Description of one tunable, for help text and the ListStrategies API.
struct TunableInfo {
  Layer layer;
  absl::string_view key;
  uint32_t default_value;
  uint32_t min;
  uint32_t max;
  absl::string_view help;
};
const std::vector<TunableInfo>& AllTunables();

struct ModifierInfo {
  absl::string_view name;
  absl::string_view help;
};
const std::vector<ModifierInfo>& AllModifiers();

struct LayerInfo {
  Layer layer;
  absl::string_view name;
  absl::string_view help;
};
const std::vector<LayerInfo>& AllLayers();

struct StrategySpec {
  // Layers present, as a mask of LayerBit().
  unsigned layers = 0;
  // Tunables (meaningful only when the layer is present).
  uint32_t lcache_size = 256;
  uint32_t recycle_limit = 0;  // 0: the port's RX ring size
  uint32_t hot_list_len = 128;
  uint32_t magazine_size = 32;
  // Modifiers.
  bool prefetch = false;

  bool Has(Layer l) const { return (layers & LayerBit(l)) != 0; }
  // The one tunable of layer `l` (lcache_size, recycle_limit, hot_list_len, magazine_size).
  uint32_t& Tunable(Layer l);
  uint32_t Tunable(Layer l) const { return const_cast<StrategySpec*>(this)->Tunable(l); }
  // Canonical text form.
  std::string ToString() const;
  // Parses `text`; on error the message names the offending part.
  static absl::StatusOr<StrategySpec> Parse(absl::string_view text);

  friend bool operator==(const StrategySpec&, const StrategySpec&) = default;
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_STRATEGY_SPEC_H_
