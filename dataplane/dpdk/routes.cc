// SPDX-License-Identifier: BSD-3-Clause
// The l3 tables: routes in rte_lpm (with RCU QSBR reclamation: workers report quiescence every
// loop), next hops in a table of L3Hop (l3_packet.h: the 12 Ethernet address bytes and the port,
// written once per distinct next hop before its id is published, read by workers without a
// lock), and the default route 0.0.0.0/0 as one atomic next-hop id (rte_lpm has no depth 0): the
// worker's lookup returns it when the LPM finds no prefix.
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

std::string Route::ToString() const {
  return absl::StrCat(net::FormatIpv4Prefix(prefix), " port ", port, " mac ",
                      net::FormatMac(dst_mac));
}

absl::Status Engine::Impl::SetUpL3() {
  if (config.mode != ForwardingMode::kL3) return absl::OkStatus();
  hops.reset(new L3Hop[kMaxNextHops]);
  for (uint32_t i = 0; i < kMaxNextHops; ++i) hops[i] = L3Hop{{}, kL3NoPort};
  rte_lpm_config lc{};
  lc.max_rules = config.lpm_max_rules;
  lc.number_tbl8s = config.lpm_tbl8s;
  lpm =
      rte_lpm_create(absl::StrCat(mp_name, "_lpm").c_str(), static_cast<int>(rte_socket_id()), &lc);
  if (lpm == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("rte_lpm_create: ", rte_strerror(rte_errno)));
  }
  const size_t sz = rte_rcu_qsbr_get_memsize(static_cast<uint32_t>(workers.size()));
  rcu = static_cast<rte_rcu_qsbr*>(rte_zmalloc("skbnf_rcu", sz, RTE_CACHE_LINE_SIZE));
  if (rcu == nullptr || rte_rcu_qsbr_init(rcu, static_cast<uint32_t>(workers.size())) != 0) {
    return absl::ResourceExhaustedError("RCU QSBR variable");
  }
  for (const auto& w : workers) rte_rcu_qsbr_thread_register(rcu, w->index);
  rte_lpm_rcu_config rc{};
  rc.v = rcu;
  rc.mode = RTE_LPM_QSBR_MODE_SYNC;
  if (rte_lpm_rcu_qsbr_add(lpm, &rc) != 0) {
    return absl::InternalError(absl::StrCat("rte_lpm_rcu_qsbr_add: ", rte_strerror(rte_errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Route> Engine::ResolveRoute(const RouteSpec& spec) const {
  Route r;
  auto prefix = net::ParseIpv4Prefix(spec.prefix);
  if (!prefix.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("route prefix: ", prefix.status().message()));
  }
  r.prefix = *prefix;
  auto port = impl_->ResolvePort(spec.port);
  if (!port.ok()) return port.status();
  r.port = *port;
  auto mac = net::ParseMac(spec.mac);
  if (!mac.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("route next-hop MAC: ", mac.status().message()));
  }
  r.dst_mac = *mac;
  return r;
}

absl::StatusOr<uint32_t> Engine::AddRoute(const Route& route) {
  Route r = route;
  Impl& e = *impl_;
  if (e.lpm == nullptr) {
    return absl::FailedPreconditionError("routes need --mode=l3");
  }
  if (r.prefix.len > 32) {
    return absl::InvalidArgumentError(absl::StrCat("route length ", r.prefix.len, " not in 0..32"));
  }
  if ((r.prefix.addr & ~r.prefix.Mask()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(r.ToString(), ": host bits set"));
  }
  if (r.port >= kMaxPorts || !e.ports[r.port].active || e.ports[r.port].nb_txq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("route ", r.ToString(), ": port ", r.port, " is not a TX port of the engine"));
  }
  const uint64_t hop = PackHop(r.port, r.dst_mac);
  if ((hop >> 16) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("route ", r.ToString(), ": next-hop MAC is zero"));
  }
  pool::MutexLock lock(&e.route_mu);
  uint32_t id;
  auto it = e.hop_ids.find(hop);
  if (it != e.hop_ids.end()) {
    id = it->second;
  } else {
    if (e.hop_ids.size() + 1 >= kMaxNextHops) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", kMaxNextHops - 1, " distinct next hops"));
    }
    id = static_cast<uint32_t>(e.hop_ids.size()) + 1;
    // Written before the id is published below (rte_lpm_add or default_hop): a worker that
    // reads the id from the LPM then reads this entry complete.
    e.hops[id] = MakeL3Hop(r.port, r.dst_mac, e.ports[r.port].mac);
    std::atomic_thread_fence(std::memory_order_release);
    e.hop_ids.emplace(hop, id);
  }
  r.next_hop_id = id;
  if (r.prefix.len == 0) {
    e.default_hop.store(id, std::memory_order_release);
    e.routes[{r.prefix.addr, r.prefix.len}] = r;
    return id;
  }
  if (int rc = rte_lpm_add(e.lpm, r.prefix.addr, r.prefix.len, id); rc != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rte_lpm_add ", r.ToString(), ": ", rte_strerror(-rc)));
  }
  e.routes[{r.prefix.addr, r.prefix.len}] = r;
  return id;
}

absl::Status Engine::DeleteRoute(const Ipv4Prefix& prefix) {
  Impl& e = *impl_;
  if (e.lpm == nullptr) return absl::FailedPreconditionError("routes need --mode=l3");
  pool::MutexLock lock(&e.route_mu);
  auto it = e.routes.find({prefix.addr, prefix.len});
  if (it == e.routes.end()) {
    return absl::NotFoundError(absl::StrCat("no route ", net::FormatIpv4Prefix(prefix)));
  }
  if (prefix.len == 0) {
    e.default_hop.store(0, std::memory_order_release);
  } else if (int rc = rte_lpm_delete(e.lpm, prefix.addr, prefix.len); rc != 0) {
    return absl::InternalError(absl::StrCat("rte_lpm_delete: ", rte_strerror(-rc)));
  }
  e.routes.erase(it);
  return absl::OkStatus();
}

std::vector<Route> Engine::Routes() const {
  pool::MutexLock lock(&impl_->route_mu);
  std::vector<Route> out;
  out.reserve(impl_->routes.size());
  for (const auto& [k, r] : impl_->routes) out.push_back(r);
  return out;
}

}  // namespace skbnf::dpdk
