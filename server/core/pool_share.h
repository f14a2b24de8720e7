// SPDX-License-Identifier: BSD-3-Clause
// PoolShare: how much of the pool a strategy's per-core layers may hold, checked before a swap.
//
// Why: every per-core layer keeps objects only its own core can allocate from. A strategy whose
// layers may hold most of the pool (`headpool:hot_list_len=65536` on an 8,192-mbuf pool) starves
// the other cores and the RX rings: the pool is full, yet allocation fails. The tunables' static
// ranges (strategy_spec.h) cannot know the pool, so the control plane checks them against the
// pool actually in use.
//
// The rule: the most every worker's layers can hold together must not exceed half of the
// populated pool (kMaxHeldShare), so at least half of it stays reachable by any core. What a
// layer holds at most on one core is the layer's own MaxHeld (its file in dataplane/pool; the
// one definition, pool::MaxHeld over pool::LayerCatalog(), which preflight's sizing uses too),
// given the RX ring size of each RX port the worker polls.
//
// A pool whose size is unknown (populated 0) is not checked. The error is INVALID_ARGUMENT
// naming the tunable that holds most, the total, the bound and the pool size.
#ifndef SKBNF_SERVER_CORE_POOL_SHARE_H_
#define SKBNF_SERVER_CORE_POOL_SHARE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/backend.h"

namespace skbnf::control {

// Numerator / denominator of the share of the pool all per-core layers may hold together.
inline constexpr uint64_t kMaxHeldShareNum = 1;
inline constexpr uint64_t kMaxHeldShareDen = 2;

// What a strategy can hold on one worker core, by layer (a layer's kIndex, from the catalogue
// the spec was parsed under).
struct CoreHolding {
  int core = -1;
  uint64_t by_layer[pool::kMaxLayers] = {};
  uint64_t total() const;
};

// The most each worker (from `info`) can hold under `spec`; recycle uses the RX ring sizes of the
// worker's RX ports from `ports`.
std::vector<CoreHolding> MaxHoldings(const pool::StrategySpec& spec, const Info& info,
                                     const std::vector<PortInfo>& ports);

// OK, or InvalidArgument "<layer>:<key>=<value>: ..." (a layer without a tunable: "<layer>: ...")
// when the workers' layers together could hold more than kMaxHeldShare of info.pool.populated.
absl::Status CheckPoolShare(const pool::StrategySpec& spec, const Info& info,
                            const std::vector<PortInfo>& ports);

// Whether `backend` may run `spec`: its own check first (Backend::ValidateStrategy:
// FAILED_PRECONDITION on DPDK's native mempool, INVALID_ARGUMENT for what it cannot build),
// then the pool-share bound above (INVALID_ARGUMENT). The one pair every strategy change asks
// (Mutations' swap, config reload, the tuner's candidates); SetStrategy asks the two apart only
// to name its request field for the second. A mutation-side call: hold the mutation lock (a
// Change).
absl::Status CheckStrategy(const Backend& backend, const pool::StrategySpec& spec);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_POOL_SHARE_H_
