// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/engine_backend.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace skbnf::control {

EngineBackend::EngineBackend(dpdk::Engine& engine, std::vector<std::string> eal_args,
                             unsigned main_lcore)
    : engine_(engine), eal_args_(std::move(eal_args)), main_lcore_(main_lcore) {
  for (const PortInfo& p : engine_.Ports()) peers_[p.id] = p.peer;
}

int EngineBackend::PeerOf(int port) const {
  auto it = peers_.find(port);
  return it == peers_.end() ? -1 : it->second;
}

Info EngineBackend::GetInfo() const {
  Info info;
  info.eal_args = eal_args_;
  info.lcores.push_back(
      {main_lcore_, LcoreInfo::Role::kMain, -1, engine_.LcoreSocket(main_lcore_), {}, {}});
  const dpdk::EngineSnapshot snap = engine_.Snapshot();
  for (const dpdk::WorkerSnapshot& w : snap.workers) {
    LcoreInfo l{w.lcore,
                LcoreInfo::Role::kWorker,
                static_cast<int>(w.lcore),
                engine_.LcoreSocket(w.lcore),
                {},
                {}};
    for (const auto& [port, queue] : w.rx) {
      if (std::find(l.rx_ports.begin(), l.rx_ports.end(), port) == l.rx_ports.end()) {
        l.rx_ports.push_back(port);
      }
      int peer = PeerOf(port);
      if (peer >= 0 && std::find(l.tx_ports.begin(), l.tx_ports.end(), peer) == l.tx_ports.end()) {
        l.tx_ports.push_back(peer);
      }
    }
    info.lcores.push_back(std::move(l));
  }
  const dpdk::EngineConfig& c = engine_.config();
  const dpdk::MempoolInfo mp = engine_.mempool_info();
  pool::Pool* p = engine_.pool();
  info.pool.native = p == nullptr;
  info.pool.ops_name = dpdk::PoolOpsName(mp.ops);
  info.pool.name = mp.name;
  info.pool.populated = mp.populated;
  info.pool.element_size = mp.element_size;
  if (p != nullptr) {
    info.pool.objects_per_slab = p->config().store.objs_per_slab;
    info.pool.colour = p->config().store.colour;
    info.pool.debug = p->debug();
    info.pool.quiesce_timeout = p->config().quiesce_timeout;
  } else {
    info.pool.native_cache_size = mp.cache_size;
  }
  info.mode = c.mode;
  info.started = started_;
  info.backend = "dpdk";
  return info;
}

std::vector<PortInfo> EngineBackend::ListPorts() const {
  absl::MutexLock l(&ports_mu_);
  return engine_.Ports();
}

pool::StrategySpec EngineBackend::GetStrategy() const {
  pool::Pool* p = engine_.pool();
  return p != nullptr ? p->strategy() : pool::StrategySpec{};
}

uint64_t EngineBackend::GetEpoch() const {
  pool::Pool* p = engine_.pool();
  return p != nullptr ? p->epoch() : 0;
}

StatsSnapshot EngineBackend::GetStats() const {
  const dpdk::EngineSnapshot snap = engine_.Snapshot();
  StatsSnapshot s;
  s.taken = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(snap.monotonic_ns));
  for (const dpdk::WorkerSnapshot& w : snap.workers) {
    CoreStats c;
    c.core = static_cast<int>(w.lcore);
    c.paused = w.paused;
    c.polls = w.polls;
    c.busy_polls = w.busy_polls;
    c.parked_loops = w.parked_loops;
    c.busy_cycles = w.busy_cycles;
    c.busy_packets = w.busy_packets;
    c.tsc_hz = snap.tsc_hz;
    std::vector<int> rx_ports, list;
    for (const auto& [port, queue] : w.rx) rx_ports.push_back(port);
    std::sort(rx_ports.begin(), rx_ports.end());
    rx_ports.erase(std::unique(rx_ports.begin(), rx_ports.end()), rx_ports.end());
    list = rx_ports;
    for (int port : rx_ports) list.push_back(PeerOf(port));
    for (int p = 0; p < dpdk::kMaxPorts; ++p) {
      if (w.ports[p].rx_packets + w.ports[p].tx_packets > 0) list.push_back(p);
    }
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (int p : list) {
      if (p < 0 || p >= dpdk::kMaxPorts) continue;
      PortCounters pc;
      pc.port = p;
      pc.rx_packets = w.ports[p].rx_packets;
      pc.rx_bytes = w.ports[p].rx_bytes;
      pc.tx_packets = w.ports[p].tx_packets;
      pc.tx_bytes = w.ports[p].tx_bytes;
      for (int r = 0; r < dpdk::kNumDropReasons; ++r) {
        pc.drops.emplace_back(dpdk::DropReasonName(r), w.ports[p].drops[r]);
      }
      if (w.has_pool && rx_ports.size() == 1 && rx_ports[0] == p) pc.rx_nombuf = w.rx_nombuf;
      c.ports.push_back(std::move(pc));
    }
    if (w.has_pool) {
      c.pool = w.pool;
      c.layer_objects = w.gauges;
    }
    for (int i = 0; i < pool::kMaxLayers; ++i) s.pool.in_layers[i] += c.layer_objects.objects[i];
    s.cores.push_back(std::move(c));
  }
  if (pool::Pool* p = engine_.pool(); p != nullptr) {
    FillPoolFigures(*p, s);
  } else {
    s.pool.populated = engine_.mempool_info().populated;
  }
  s.perf = engine_.Perf();
  if (dpdk::BufferPlaces b = engine_.Places(); b.has) s.places = std::move(b);
  return s;
}

absl::Status EngineBackend::SetLatencySettings(const dpdk::LatencySettings& settings) {
  return engine_.SetLatencySettings(settings);
}

RouteTable EngineBackend::ListRoutes() const {
  std::vector<dpdk::Route> routes = engine_.Routes();
  std::sort(routes.begin(), routes.end(),
            [](const dpdk::Route& a, const dpdk::Route& b) { return a.prefix < b.prefix; });
  RouteTable t;
  // The ids are the engine's (dpdk::Route::next_hop_id): one Routes() answer is consistent.
  std::map<uint32_t, RouteTable::NextHopEntry> hops;
  for (const dpdk::Route& r : routes) {
    RouteTable::NextHopEntry& h = hops[r.next_hop_id];
    h.id = r.next_hop_id;
    h.next_hop = {static_cast<int>(r.port), r.dst_mac};
    h.routes++;
    t.routes.push_back({r.prefix, r.next_hop_id});
  }
  for (auto& [id, h] : hops) t.next_hops.push_back(h);
  return t;
}

Health EngineBackend::GetHealth() const {
  Health h;
  h.ports = ListPorts();
  const bool engine_running = engine_.running();
  for (const dpdk::WorkerSnapshot& w : engine_.Snapshot().workers) {
    h.workers.push_back({static_cast<int>(w.lcore), w.lcore, engine_running && w.running});
  }
  return h;
}

absl::Status EngineBackend::ValidateStrategy(const pool::StrategySpec&) const {
  return engine_.CheckSwappable();
}

pool::SwapReport EngineBackend::SwapStrategy(const pool::StrategySpec& spec,
                                             std::chrono::microseconds timeout) {
  absl::StatusOr<pool::SwapReport> r = engine_.SwapStrategy(spec, timeout);
  if (r.ok()) return *r;
  return RefusedSwap(*this, spec, r.status());
}

// Mutations (Change::AddRoute) refused an already routed prefix before this is called, except
// for Change::ReplaceRoute: the engine's AddRoute replaces a routed prefix's next hop in place.
absl::StatusOr<uint32_t> EngineBackend::AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  dpdk::Route r;
  r.prefix = prefix;
  r.port = static_cast<uint16_t>(nh.port);
  r.dst_mac = nh.dst_mac;
  return engine_.AddRoute(r);  // the engine's next-hop id
}

absl::Status EngineBackend::DeleteRoute(const Ipv4Prefix& prefix) {
  return engine_.DeleteRoute(prefix);
}

absl::Status EngineBackend::PauseWorker(int core) {
  return engine_.PauseWorker(static_cast<unsigned>(core));
}

absl::Status EngineBackend::ResumeWorker(int core) {
  return engine_.ResumeWorker(static_cast<unsigned>(core));
}

absl::StatusOr<pool::InFlightCensus> EngineBackend::CensusInFlight(
    std::chrono::microseconds wait) const {
  return engine_.CensusInFlight(wait);
}

absl::StatusOr<AuditResult> EngineBackend::Audit() {
  const dpdk::AuditReport a = engine_.Audit();
  if (!a.ok && !a.checked) return absl::UnavailableError(a.message);
  AuditResult r;
  if (a.places.has) r.places = a.places;
  if (a.has_pool) {
    static_cast<pool::AuditReport&>(r) = a.pool;
  } else {
    r.populated = a.populated;
    r.in_store = a.available;
  }
  r.in_flight = a.in_flight;
  r.ok = a.ok;
  r.message = a.message;
  return r;
}

}  // namespace skbnf::control
