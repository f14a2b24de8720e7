// SPDX-License-Identifier: BSD-3-Clause
// The production catalog and what is computed from a catalog (layer_facts.h).
#include "absl/strings/str_join.h"
#include "dataplane/pool/default_layers.h"
#include "dataplane/pool/layer_facts.h"

namespace skbnf::pool {

const std::vector<CatalogEntry>& LayerCatalog() { return DefaultLayers::Catalog(); }

std::string StackOrderText(const std::vector<CatalogEntry>& catalog) {
  return absl::StrJoin(catalog, "+", [](std::string* out, const CatalogEntry& e) {
    out->append(e.facts.name.data(), e.facts.name.size());
  });
}

HeldBound MaxHeld(const StrategySpec& spec, const HoldEnv& env) {
  return MaxHeld(spec, env, spec.Catalog());
}

HeldBound MaxHeld(const StrategySpec& spec, const HoldEnv& env,
                  const std::vector<CatalogEntry>& catalog) {
  HeldBound b;
  b.by_order.assign(catalog.size(), 0);
  for (const CatalogEntry& e : catalog) {
    if (!e.in_stack(spec)) continue;
    b.by_order[e.order] = e.max_held(spec, env);
    b.total += b.by_order[e.order];
  }
  return b;
}

uint64_t LcoreCacheMaxHeld(uint32_t size) { return Lcache::FlushThreshold(size); }

}  // namespace skbnf::pool
