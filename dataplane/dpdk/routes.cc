// SPDX-License-Identifier: BSD-3-Clause
// The l3 tables: routes in rte_lpm (with RCU QSBR reclamation: workers report quiescence every
// loop), next hops in a table of L3Hop (l3_packet.h: the 12 Ethernet address bytes and the port,
// written once per distinct next hop before its id is published, read by workers without a
// lock; ids reference-counted and reused after a grace period, see "Next-hop ids"), and the default route 0.0.0.0/0 as one atomic next-hop id (rte_lpm has no depth 0): the
// worker's lookup returns it when the LPM finds no prefix.
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include <chrono>
#include <thread>

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
  {
    pool::MutexLock lock(&route_mu);
    hop_refs.assign(kMaxNextHops, 0);
  }
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

// ---------------------------------------------------------------------------------------------
// Next-hop ids. An id is the LPM's next-hop value and the index of its L3Hop in `hops`. It is
// shared by every route with the same (port, MAC) and counted: the routes (the default route
// included) that use it. When the last of them is unpublished (rte_lpm_delete, rte_lpm_add
// replacing it in place, default_hop changed), the id is retired with a token of the engine's
// RCU QSBR variable (rte_rcu_qsbr_start, DPDK 22.11 lib/rcu/rte_rcu_qsbr.h: "start the grace
// period"), the one rte_lpm already uses for its tbl8 groups: each worker reports quiescence at
// the top of every loop pass (forward.cc), and a lookup's id is used only within that pass. So
// once rte_rcu_qsbr_check says every online worker has passed a quiescent point since the
// token, no worker can still hold the id or read its old hops entry, and the id is given to a
// new next hop (its entry written before the id is published). Workers that are offline (not
// started, stopped) do not hold it up; a parked worker still reports (it goes round its loop).
// Which id a new next hop gets: the oldest retired one whose grace period is over, else one
// never used, else (every id live or retired) the oldest retired one once its grace period
// ends, waited for at most kHopGraceWait; then ResourceExhausted. So an id a client read
// (AddRoute's answer, ListRoutes) names that next hop while a route uses it, and may name
// another next hop after its last route went.
namespace {
constexpr std::chrono::milliseconds kHopGraceWait{1000};
}  // namespace

absl::StatusOr<uint32_t> Engine::Impl::RefHop(uint16_t port, const MacAddr& mac) {
  const uint64_t key = PackHop(port, mac);
  if (auto it = hop_ids.find(key); it != hop_ids.end()) {
    ++hop_refs[it->second];
    return it->second;
  }
  uint32_t id;
  if (OldestRetiredHopIsFree()) {
    id = retired_hops.front().id;
    retired_hops.pop_front();
  } else if (next_fresh_hop < kMaxNextHops) {
    id = next_fresh_hop++;
  } else if (!retired_hops.empty()) {
    const auto deadline = std::chrono::steady_clock::now() + kHopGraceWait;
    while (!OldestRetiredHopIsFree()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "next-hop table full: ", hop_ids.size(), " next hops in use and ",
            retired_hops.size(), " freed ones waiting for every worker to pass its quiescent "
            "point (not within ", kHopGraceWait.count(), " ms: is a worker stuck?)"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    id = retired_hops.front().id;
    retired_hops.pop_front();
  } else {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", kMaxNextHops - 1, " distinct next hops in use"));
  }
  // Written before the id is published (rte_lpm_add or default_hop): a worker that reads the
  // id from the LPM then reads this entry complete.
  hops[id] = MakeL3Hop(port, mac, ports[port].mac);
  std::atomic_thread_fence(std::memory_order_release);
  hop_ids.emplace(key, id);
  hop_refs[id] = 1;
  return id;
}

bool Engine::Impl::OldestRetiredHopIsFree() const {
  return !retired_hops.empty() && rte_rcu_qsbr_check(rcu, retired_hops.front().token, false) == 1;
}

void Engine::Impl::UnrefHop(uint32_t id, uint16_t port, const MacAddr& mac) {
  if (--hop_refs[id] != 0) return;
  hop_ids.erase(PackHop(port, mac));
  retired_hops.push_back({id, rte_rcu_qsbr_start(rcu)});
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
  if ((PackHop(r.port, r.dst_mac) >> 16) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("route ", r.ToString(), ": next-hop MAC is zero"));
  }
  pool::MutexLock lock(&e.route_mu);
  absl::StatusOr<uint32_t> id = e.RefHop(r.port, r.dst_mac);
  if (!id.ok()) return id.status();
  r.next_hop_id = *id;
  if (r.prefix.len == 0) {
    e.default_hop.store(*id, std::memory_order_release);
  } else if (int rc = rte_lpm_add(e.lpm, r.prefix.addr, r.prefix.len, *id); rc != 0) {
    e.UnrefHop(*id, r.port, r.dst_mac);
    return absl::ResourceExhaustedError(
        absl::StrCat("rte_lpm_add ", r.ToString(), ": ", rte_strerror(-rc)));
  }
  // An existing route for the prefix was replaced in place (rte_lpm_add, default_hop): its
  // next hop loses a reference.
  auto [it, added] = e.routes.try_emplace({r.prefix.addr, r.prefix.len}, r);
  if (!added) {
    const Route replaced = it->second;
    it->second = r;
    e.UnrefHop(replaced.next_hop_id, replaced.port, replaced.dst_mac);
  }
  return *id;
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
  const Route gone = it->second;
  e.routes.erase(it);
  e.UnrefHop(gone.next_hop_id, gone.port, gone.dst_mac);  // unpublished above
  return absl::OkStatus();
}

size_t Engine::NextHops() const {
  pool::MutexLock lock(&impl_->route_mu);
  return impl_->hop_ids.size();
}

std::vector<Route> Engine::Routes() const {
  pool::MutexLock lock(&impl_->route_mu);
  std::vector<Route> out;
  out.reserve(impl_->routes.size());
  for (const auto& [k, r] : impl_->routes) out.push_back(r);
  return out;
}

}  // namespace skbnf::dpdk
