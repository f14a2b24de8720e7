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
// parser, printer and tables (AllLayers, AllTunables) read that catalog. A spec keeps each
// layer's tunable value in that layer's slot (`tunable[kIndex]`), so this file names no tunable.
//
//   modifier   seed
//   prefetch   2010 Junchang Wang prefetchw on allocation
//   track      when and where each in-flight object left the pool (DPDK's per-mbuf history
//              and VPP's bufmon, at run time: issue 32)
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
// Room for layers past the production ones (a test's: tests/unit/toy_layer.h takes index
// kNumLayers). Per-layer counters, gauges and audit figures are arrays of this size, indexed by
// a layer's kIndex; the production layers keep their Layer enumerator (skbnf.v1's Layer is
// kIndex + 1, so the wire does not change).
inline constexpr int kMaxLayers = 8;

// Bit for a layer in a layer mask (by public index; the production layers: top of the stack =
// lowest bit).
constexpr unsigned LayerBit(int index) { return 1u << static_cast<unsigned>(index); }
constexpr unsigned LayerBit(Layer l) { return LayerBit(static_cast<int>(l)); }

struct CatalogEntry;  // layer_facts.h

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

// The production layers' tunable defaults by kIndex (their kFacts, through LayerCatalog()); 0 in
// the slots no production layer takes.
const std::array<uint32_t, kMaxLayers>& DefaultTunables();

struct StrategySpec {
  // Layers present, as a mask of LayerBit(kIndex).
  unsigned layers = 0;
  // Tunables, by the layer's kIndex (meaningful only when the layer is present): slot i is the
  // value of the one tunable of the layer with kIndex i (its key, default and range are that
  // layer's kFacts.tunable, layer_facts.h). Each layer reads its own slot, in its own file; a
  // default spec holds the production layers' defaults (DefaultTunables()), and Parse under a
  // catalogue sets every row's default first, so a new layer with a tunable needs no edit here.
  std::array<uint32_t, kMaxLayers> tunable = DefaultTunables();
  // Modifiers.
  bool prefetch = false;
  // Stamp each object handed out with when and where it left the pool (track.h): the census
  // then gives the ages of in-flight objects and who took them.
  bool track = false;
  // The catalogue the spec was parsed under (layer_facts.h): the layers its mask can name, with
  // their names and held-objects bounds. nullptr: the production one (LayerCatalog()). What
  // follows the spec (printing, pool::MaxHeld: the pool-share check and preflight's sizing)
  // reads it, so a list of layers other than the production one (a test's) needs no edit there.
  const std::vector<CatalogEntry>* catalog = nullptr;

  bool Has(Layer l) const { return (layers & LayerBit(l)) != 0; }
  bool Has(int index) const { return (layers & LayerBit(index)) != 0; }
  const std::vector<CatalogEntry>& Catalog() const;
  // The value of the one tunable of the layer with kIndex `index` (or Layer `l`).
  uint32_t& Tunable(int index) { return tunable[static_cast<size_t>(index)]; }
  uint32_t Tunable(int index) const { return tunable[static_cast<size_t>(index)]; }
  uint32_t& Tunable(Layer l) { return Tunable(static_cast<int>(l)); }
  uint32_t Tunable(Layer l) const { return Tunable(static_cast<int>(l)); }
  // Canonical text form.
  std::string ToString() const;
  // Parses `text` under the production catalogue; on error the message names the offending part.
  static absl::StatusOr<StrategySpec> Parse(absl::string_view text);
  // Parses `text` under `catalog` (a LayerList's Catalog(): its names, tunables and order).
  static absl::StatusOr<StrategySpec> Parse(absl::string_view text,
                                            const std::vector<CatalogEntry>& catalog);

  friend bool operator==(const StrategySpec&, const StrategySpec&) = default;
};

// The modifiers as the chain's compiled Get variants are indexed (layer.h ChainTables).
inline constexpr uint8_t kModPrefetch = 1;
inline constexpr uint8_t kModTrack = 2;
inline constexpr unsigned ModsOf(const StrategySpec& spec) {
  return (spec.prefetch ? kModPrefetch : 0u) | (spec.track ? kModTrack : 0u);
}

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_STRATEGY_SPEC_H_
