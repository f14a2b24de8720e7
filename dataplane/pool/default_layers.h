// SPDX-License-Identifier: BSD-3-Clause
// DefaultLayers: the production stack, the one list entry per layer (README.md, "Adding a
// layer"). Its order is the spec's stack order (top first), and a listed layer's public index
// (kIndex, the Layer enumerator of strategy_spec.h) is its place in it: checked below, so the
// enum, the list and the catalog (LayerCatalog) cannot drift apart.
#ifndef SKBNF_DATAPLANE_POOL_DEFAULT_LAYERS_H_
#define SKBNF_DATAPLANE_POOL_DEFAULT_LAYERS_H_

#include <cstddef>

#include "dataplane/pool/headpool.h"
#include "dataplane/pool/layer.h"
#include "dataplane/pool/lcache.h"
#include "dataplane/pool/magazine.h"
#include "dataplane/pool/recycle.h"

namespace skbnf::pool {

using DefaultLayers = LayerList<Lcache, Recycle, HeadPool, MagazineLayer>;

static_assert(DefaultLayers::kSize == kNumLayers, "every Layer enumerator has its layer");
static_assert(DefaultLayers::kIndexIsPlace, "a production layer's kIndex is its place in the list");

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_DEFAULT_LAYERS_H_
