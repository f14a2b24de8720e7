// SPDX-License-Identifier: BSD-3-Clause
// LayerFacts: what the rest of the system knows about a layer, written once, in the layer's
// own file (issue 30: the most an lcache may hold was written in three places with two
// formulas, the stack order and the grammar text in three).
//
// A layer declares `static constexpr LayerFacts kFacts` (its name, the line `strategy list`
// prints, its one tunable with default and range) and `static uint64_t MaxHeld(const
// StrategySpec&, const HoldEnv&)`, the most it can hold on one core. The catalog
// (LayerList::Catalog, layer.h) turns a list into a table of these, top of the stack first; from
// that table follow the spec's grammar (strategy_spec.cc: names, keys, ranges, the order text), the
// held-objects bound (MaxHeld: the control plane's pool-share check and preflight's sizing) and the
// ListStrategies answer (LayerCatalog()).
//
// Plain data (no DPDK, no template): the control plane and the daemon read it without the
// pool's headers.
#ifndef SKBNF_DATAPLANE_POOL_LAYER_FACTS_H_
#define SKBNF_DATAPLANE_POOL_LAYER_FACTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dataplane/pool/strategy_spec.h"

namespace skbnf::pool {

// A layer's one tunable (`key=value` after its name in the spec).
struct TunableFacts {
  absl::string_view key;
  uint32_t default_value = 0;
  uint32_t min = 0;
  uint32_t max = 0;
  absl::string_view help;
  // Its value in a spec: StrategySpec::Tunable(kIndex) (the layer's slot).
};

// What bounds a layer's holding on one core besides the spec: the RX ring size of each RX
// port the core refills (recycle keeps up to one ring per port).
struct HoldEnv {
  std::vector<uint32_t> rx_ring_sizes;
};

struct LayerFacts {
  absl::string_view name;  // the spec's word for it
  absl::string_view help;  // one line: the seed and its mechanism
  bool has_tunable = false;
  TunableFacts tunable;
};

// One row of the catalog: a layer's facts, its public identity and place, and its bound.
struct CatalogEntry {
  LayerFacts facts;
  int index = -1;    // kIndex: its bit in a spec's mask and its slot in the per-layer counters,
                     // gauges and audit (< kMaxLayers; the Layer enumerator for a production
                     // layer), or kUnlisted (-1): a layer no spec names
  size_t order = 0;  // its place in the stack, top (0) first
  bool (*in_stack)(const StrategySpec&) = nullptr;
  uint64_t (*max_held)(const StrategySpec&, const HoldEnv&) = nullptr;
};

// The production catalog: DefaultLayers' entries (default_layers.h), top of the stack first.
// What `strategy list` and the spec's grammar read; the table the control plane switches to for
// the layers' names, help, tunables with their ranges and the stack order.
const std::vector<CatalogEntry>& LayerCatalog();

// The stack order as the spec writes it: "lcache+recycle+headpool+magazine".
std::string StackOrderText(const std::vector<CatalogEntry>& catalog = LayerCatalog());

// The most the layers of `spec` can hold on one core: per catalog row (by_order, the rows of
// layers not in the stack 0) and in total. The one held-objects definition: the pool-share
// check (server/core/pool_share.cc) and preflight's sizing (server/daemon/startup_checks.cc)
// both call it, over the catalogue the spec was parsed under (StrategySpec::Catalog()).
struct HeldBound {
  std::vector<uint64_t> by_order;
  uint64_t total = 0;
};
HeldBound MaxHeld(const StrategySpec& spec, const HoldEnv& env);
HeldBound MaxHeld(const StrategySpec& spec, const HoldEnv& env,
                  const std::vector<CatalogEntry>& catalog);

// The most DPDK's own lcore cache of `size` holds between calls: its flush threshold, the
// formula of the lcache layer that follows it (Lcache::FlushThreshold).
uint64_t LcoreCacheMaxHeld(uint32_t size);

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_LAYER_FACTS_H_
