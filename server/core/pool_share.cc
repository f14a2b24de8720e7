// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/pool_share.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/layer_facts.h"

namespace skbnf::control {
namespace {

uint32_t RxRingSize(const std::vector<PortInfo>& ports, int port) {
  for (const PortInfo& p : ports) {
    if (p.id == port) return p.rx_ring_size;
  }
  return 0;
}

// "<layer>:<key>=<value>", what a user lowers; a layer without a tunable: its name.
std::string TunableText(const pool::CatalogEntry& e, const pool::StrategySpec& spec) {
  if (!e.facts.has_tunable) return std::string(e.facts.name);
  const uint32_t value = spec.Tunable(e.index);
  return absl::StrCat(e.facts.name, ":", e.facts.tunable.key, "=", value);
}

}  // namespace

uint64_t CoreHolding::total() const {
  uint64_t sum = 0;
  for (uint64_t v : by_layer) sum += v;
  return sum;
}

std::vector<CoreHolding> MaxHoldings(const pool::StrategySpec& spec, const Info& info,
                                     const std::vector<PortInfo>& ports) {
  std::vector<CoreHolding> out;
  for (const LcoreInfo& l : info.lcores) {
    if (l.role != LcoreInfo::Role::kWorker) continue;
    pool::HoldEnv env;
    for (int p : l.rx_ports) env.rx_ring_sizes.push_back(RxRingSize(ports, p));
    const pool::HeldBound b = pool::MaxHeld(spec, env);
    CoreHolding h;
    h.core = l.core;
    for (const pool::CatalogEntry& e : spec.Catalog()) {
      if (e.index >= 0) h.by_layer[e.index] = b.by_order[e.order];
    }
    out.push_back(h);
  }
  return out;
}

absl::Status CheckPoolShare(const pool::StrategySpec& spec, const Info& info,
                            const std::vector<PortInfo>& ports) {
  const uint64_t populated = info.pool.populated;
  if (populated == 0) return absl::OkStatus();
  const uint64_t bound = populated * kMaxHeldShareNum / kMaxHeldShareDen;
  std::vector<CoreHolding> holdings = MaxHoldings(spec, info, ports);
  uint64_t total = 0;
  uint64_t by_layer[pool::kMaxLayers] = {};
  for (const CoreHolding& h : holdings) {
    total += h.total();
    for (int i = 0; i < pool::kMaxLayers; ++i) by_layer[i] += h.by_layer[i];
  }
  if (total <= bound) return absl::OkStatus();
  const pool::CatalogEntry* worst = nullptr;
  for (const pool::CatalogEntry& e : spec.Catalog()) {
    if (e.index < 0) continue;
    if (worst == nullptr || by_layer[e.index] > by_layer[worst->index]) worst = &e;
  }
  const absl::string_view name = worst->facts.name;
  const bool ring = worst->index == static_cast<int>(pool::Layer::kRecycle) &&
                    spec.Tunable(pool::Layer::kRecycle) == 0;  // recycle's 0: the port's ring
  return absl::InvalidArgumentError(absl::StrCat(
      TunableText(*worst, spec), ring ? " (the RX ring size)" : "", ": the per-core layers of ",
      holdings.size(), " worker", holdings.size() == 1 ? "" : "s", " could hold ", total,
      " objects (", name, " alone ", by_layer[worst->index], "), more than the bound of ", bound,
      ", half of the pool's ", populated,
      " objects (the other half must stay reachable by every core); ",
      worst->facts.has_tunable ? absl::StrCat("lower ", name, ":", worst->facts.tunable.key)
                               : absl::StrCat("take ", name, " out of the strategy"),
      " or give the pool more objects"));
}

absl::Status CheckStrategy(const Backend& backend, const pool::StrategySpec& spec) {
  if (absl::Status s = backend.ValidateStrategy(spec); !s.ok()) return s;
  return CheckPoolShare(spec, backend.GetInfo(), backend.ListPorts());
}

}  // namespace skbnf::control
