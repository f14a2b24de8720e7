#include "server/engine_backend.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/net_text.h"

namespace skbnf::control {
namespace {

std::array<uint8_t, 6> MacOf(const std::string& text) {
  absl::StatusOr<std::array<uint8_t, 6>> m = ParseMac(text);
  return m.ok() ? *m : std::array<uint8_t, 6>{};
}

}  // namespace

EngineBackend::EngineBackend(dpdk::Engine& engine, std::vector<std::string> eal_args,
                             unsigned main_lcore)
    : engine_(engine), eal_args_(std::move(eal_args)), main_lcore_(main_lcore) {
  for (const dpdk::PortInfo& p : engine_.Ports()) peers_[p.id] = p.peer;
}

int EngineBackend::PeerOf(int port) const {
  auto it = peers_.find(port);
  return it == peers_.end() ? -1 : it->second;
}

std::vector<dpdk::PortInfo> EngineBackend::Ports() const {
  std::lock_guard<std::mutex> l(ports_mu_);
  return engine_.Ports();
}

Info EngineBackend::GetInfo() const {
  Info info;
  info.eal_args = eal_args_;
  info.lcores.push_back({main_lcore_, LcoreInfo::Role::kMain, -1, 0, {}, {}});
  const dpdk::EngineSnapshot snap = engine_.Snapshot();
  for (const dpdk::WorkerSnapshot& w : snap.workers) {
    LcoreInfo l{w.lcore, LcoreInfo::Role::kWorker, static_cast<int>(w.lcore), 0, {}, {}};
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
  pool::Pool* p = engine_.pool();
  info.pool.native = p == nullptr;
  info.pool.ops_name = c.pool_ops;
  info.pool.name = "skbnf_mbufs";
  if (p != nullptr) {
    info.pool.populated = p->populated();
    info.pool.element_size = p->config().store.elt_size;
    info.pool.objects_per_slab = p->config().store.objs_per_slab;
    info.pool.colour = p->config().store.colour;
    info.pool.debug = p->debug();
    info.pool.quiesce_timeout = p->config().quiesce_timeout;
  } else {
    info.pool.populated = c.mbufs;
    info.pool.native_cache_size = c.mbuf_cache;
  }
  switch (c.mode) {
    case dpdk::Mode::kIo:
      info.mode = ForwardingMode::kIo;
      break;
    case dpdk::Mode::kMac:
      info.mode = ForwardingMode::kMac;
      break;
    case dpdk::Mode::kL3:
      info.mode = ForwardingMode::kL3;
      break;
  }
  info.started = started_;
  info.backend = "dpdk";
  return info;
}

std::vector<PortInfo> EngineBackend::GetPorts() const {
  std::vector<PortInfo> out;
  for (const dpdk::PortInfo& p : Ports()) {
    PortInfo pi;
    pi.id = p.id;
    pi.name = p.name;
    pi.driver = p.driver;
    pi.device = p.name;
    pi.mac = MacOf(p.mac);
    pi.link_up = p.link_up;
    pi.link_speed_mbps = p.link_speed_mbps;
    pi.rx_queues = p.rx_queues;
    pi.tx_queues = p.tx_queues;
    pi.rx_ring_size = p.rx_ring;
    pi.tx_ring_size = p.tx_ring;
    out.push_back(std::move(pi));
  }
  return out;
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
    c.lcore = w.lcore;
    c.paused = w.paused;
    c.polls = w.polls;
    c.busy_polls = w.busy_polls;
    std::vector<int> list;
    for (const auto& [port, queue] : w.rx) list.push_back(port);
    for (const auto& [port, queue] : w.rx) list.push_back(PeerOf(port));
    for (int p = 0; p < dpdk::kMaxPorts; ++p) {
      if (w.ports[p].rx_pkts + w.ports[p].tx_pkts > 0) list.push_back(p);
    }
    const int first_rx = w.rx.empty() ? -1 : w.rx.front().first;
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (int p : list) {
      if (p < 0 || p >= dpdk::kMaxPorts) continue;
      PortCounters pc;
      pc.port = p;
      pc.rx_packets = w.ports[p].rx_pkts;
      pc.rx_bytes = w.ports[p].rx_bytes;
      pc.tx_packets = w.ports[p].tx_pkts;
      pc.tx_bytes = w.ports[p].tx_bytes;
      for (int r = 0; r < dpdk::kNumDropReasons; ++r) {
        pc.drops.emplace_back(dpdk::DropReasonName(r), p == first_rx ? w.drops[r] : 0);
      }
      pc.rx_nombuf = p == first_rx ? w.rx_nombuf : 0;
      c.ports.push_back(std::move(pc));
    }
    if (w.has_pool) {
      c.pool = w.pool;
      c.layer_objects = w.gauges;
    }
    for (int i = 0; i < pool::kNumLayers; ++i) s.pool.in_layers[i] += c.layer_objects.objects[i];
    s.cores.push_back(std::move(c));
  }
  if (pool::Pool* p = engine_.pool(); p != nullptr) FillPoolFigures(*p, s);
  return s;
}

RouteTable EngineBackend::GetRoutes() const {
  std::vector<dpdk::Route> routes = engine_.Routes();
  std::sort(routes.begin(), routes.end(), [](const dpdk::Route& a, const dpdk::Route& b) {
    return std::tie(a.prefix, a.depth) < std::tie(b.prefix, b.depth);
  });
  RouteTable t;
  std::map<std::pair<int, std::array<uint8_t, 6>>, uint32_t> ids;
  for (const dpdk::Route& r : routes) {
    auto key = std::make_pair(static_cast<int>(r.port), r.next_hop_mac);
    auto [it, fresh] = ids.emplace(key, static_cast<uint32_t>(ids.size() + 1));
    if (fresh) t.next_hops.push_back({it->second, {key.first, key.second}, 0});
    t.next_hops[it->second - 1].routes++;
    t.routes.push_back({{r.prefix, r.depth}, it->second});
  }
  return t;
}

Health EngineBackend::GetHealth() const {
  Health h;
  h.workers_running = engine_.running();
  h.ports_up = true;
  for (const dpdk::PortInfo& p : Ports()) {
    if (!p.link_up) {
      h.ports_up = false;
      absl::StrAppend(&h.detail, h.detail.empty() ? "" : "; ", "port ", p.id, " (", p.name,
                      ") link down");
    }
  }
  if (!h.workers_running)
    absl::StrAppend(&h.detail, h.detail.empty() ? "" : "; ", "engine stopped");
  return h;
}

absl::Status EngineBackend::ValidateStrategy(const pool::StrategySpec&) const {
  if (!engine_.swappable()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "skbnfd runs on DPDK's native mempool (", engine_.config().pool_ops,
        " + lcore cache): strategies cannot be swapped; restart with --pool-ops=skbnf"));
  }
  return absl::OkStatus();
}

pool::SwapReport EngineBackend::SwapStrategy(const pool::StrategySpec& spec,
                                             std::chrono::microseconds timeout) {
  absl::StatusOr<pool::SwapReport> r = engine_.SwapStrategy(spec.ToString(), timeout);
  if (r.ok()) return *r;
  pool::SwapReport failed;
  failed.status = r.status();
  failed.old_spec = GetStrategy().ToString();
  failed.new_spec = spec.ToString();
  failed.epoch = GetEpoch();
  return failed;
}

absl::StatusOr<uint32_t> EngineBackend::AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  for (const dpdk::Route& r : engine_.Routes()) {
    if (r.prefix == prefix.addr && r.depth == prefix.len) {
      return absl::AlreadyExistsError(
          absl::StrCat("prefix: ", FormatIpv4Prefix(prefix), " is already routed"));
    }
  }
  dpdk::Route r;
  r.prefix = prefix.addr;
  r.depth = prefix.len;
  r.port = static_cast<uint16_t>(nh.port);
  r.next_hop_mac = nh.dst_mac;
  if (absl::Status s = engine_.AddRoute(r); !s.ok()) return s;
  for (const RouteTable::Route& rt : GetRoutes().routes) {
    if (rt.prefix == prefix) return rt.next_hop_id;
  }
  return absl::InternalError("route added but not listed");
}

absl::Status EngineBackend::DeleteRoute(const Ipv4Prefix& prefix) {
  return engine_.DelRoute(prefix.addr, prefix.len);
}

bool EngineBackend::IsPaused(int core) const {
  for (const dpdk::WorkerSnapshot& w : engine_.Snapshot().workers) {
    if (static_cast<int>(w.lcore) == core) return w.paused;
  }
  return false;
}

absl::Status EngineBackend::PauseWorker(int core, bool* was_paused) {
  *was_paused = IsPaused(core);
  if (*was_paused) return absl::OkStatus();
  return PauseAndWait(static_cast<unsigned>(core));
}

absl::Status EngineBackend::ResumeWorker(int core, bool* was_paused) {
  *was_paused = IsPaused(core);
  if (!*was_paused) return absl::OkStatus();
  return ResumeAndWait(static_cast<unsigned>(core));
}

// Pause and resume are complete only when the worker itself says so (the engine's per-worker
// `parked` flag, WorkerSnapshot::paused, written by the worker at its quiescent point).
// Engine::PauseWorker on the skbnf pool returns when Pool's own `parked` flag is set, and that
// flag stays set after a resume until the next epoch change: a second pause at the same epoch
// would return before the worker parked (buffer-core bug, reported with issue 4).
absl::Status EngineBackend::WaitParked(unsigned lcore, bool parked) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (IsPaused(static_cast<int>(lcore)) != parked) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "lcore ", lcore, parked ? " did not park" : " did not leave its parked state"));
    }
    std::this_thread::yield();
  }
  return absl::OkStatus();
}

absl::Status EngineBackend::PauseAndWait(unsigned lcore) {
  absl::Status s = engine_.PauseWorker(lcore);
  return s.ok() ? WaitParked(lcore, true) : s;
}

absl::Status EngineBackend::ResumeAndWait(unsigned lcore) {
  absl::Status s = engine_.ResumeWorker(lcore);
  return s.ok() ? WaitParked(lcore, false) : s;
}

absl::StatusOr<pool::AuditReport> EngineBackend::Audit() {
  // A quiescent point: park every running worker (each flushes its per-core layers and stops
  // touching the pool and its queues), audit, let them run again.
  std::vector<unsigned> parked;
  absl::Status status;
  for (const dpdk::WorkerSnapshot& w : engine_.Snapshot().workers) {
    if (w.paused) continue;
    status = PauseAndWait(w.lcore);
    if (!status.ok()) break;
    parked.push_back(w.lcore);
  }
  dpdk::AuditResult a;
  if (status.ok()) a = engine_.Audit();
  for (unsigned lcore : parked) (void)ResumeAndWait(lcore);
  if (!status.ok()) return absl::UnavailableError(absl::StrCat("audit: ", status.message()));
  pool::AuditReport r;
  if (a.has_pool) {
    r = a.pool;
    // Running: mbufs in PMD rings and in flight are what the pool does not hold (the engine
    // cannot count them); after Stop the engine's figure is exact.
    if (!a.exact) r.in_flight = a.populated - std::min(a.populated, a.available);
  } else {
    r.populated = a.populated;
    r.in_store = a.available;
    r.in_flight = a.populated - std::min(a.populated, a.available);
  }
  r.ok = a.ok;
  r.message = a.message;
  return r;
}

}  // namespace skbnf::control
