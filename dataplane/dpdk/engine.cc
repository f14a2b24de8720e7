// Engine: set-up and control. The packet path is forward.cc; shared state engine_state.h.
#include "dataplane/dpdk/engine.h"

#include <arpa/inet.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_spinlock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/skbnf_mempool.h"

namespace skbnf::dpdk {

// ---------------------------------------------------------------------------------------------
// Small parsers and names.

absl::StatusOr<Mode> ParseMode(absl::string_view text) {
  if (text == "io") return Mode::kIo;
  if (text == "mac") return Mode::kMac;
  if (text == "l3") return Mode::kL3;
  return absl::InvalidArgumentError(absl::StrCat("unknown mode '", text, "'; write io, mac or l3"));
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kIo:
      return "io";
    case Mode::kMac:
      return "mac";
    case Mode::kL3:
      return "l3";
  }
  return "?";
}

const char* DropReasonName(int reason) {
  static const char* const kNames[kNumDropReasons] = {"not_ipv4", "bad_header", "ttl_expired",
                                                      "no_route", "tx_full"};
  return reason >= 0 && reason < kNumDropReasons ? kNames[reason] : "?";
}

absl::StatusOr<MacAddr> ParseMac(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  MacAddr mac{};
  bool ok = parts.size() == 6;
  for (size_t i = 0; ok && i < 6; ++i) {
    uint32_t v = 0;
    ok = parts[i].size() >= 1 && parts[i].size() <= 2 && absl::SimpleHexAtoi(parts[i], &v) &&
         v <= 0xff;
    mac[i] = static_cast<uint8_t>(v);
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad MAC address '", text, "'; write six hex bytes, e.g. 02:00:00:00:00:01"));
  }
  return mac;
}

std::string MacToString(const MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

absl::Status ParsePrefix(absl::string_view text, uint32_t* prefix, uint8_t* depth) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  uint32_t d = 0;
  in_addr a{};
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &d) || d < 1 || d > 32 ||
      inet_pton(AF_INET, std::string(parts[0]).c_str(), &a) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad prefix '", text, "'; write a.b.c.d/len with len 1..32"));
  }
  const uint32_t p = ntohl(a.s_addr);
  const uint32_t mask = d == 32 ? ~0u : ~(~0u >> d);
  if ((p & ~mask) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefix '", text, "' has host bits set; write it masked to /", d));
  }
  *prefix = p;
  *depth = static_cast<uint8_t>(d);
  return absl::OkStatus();
}

std::string Route::ToString() const {
  return absl::StrFormat("%d.%d.%d.%d/%d port %d mac %s", prefix >> 24, (prefix >> 16) & 0xff,
                         (prefix >> 8) & 0xff, prefix & 0xff, depth, port,
                         MacToString(next_hop_mac));
}

// ---------------------------------------------------------------------------------------------
// Set-up.

absl::StatusOr<uint16_t> Engine::Impl::ResolvePort(absl::string_view name) const {
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(std::string(name).c_str(), &id) == 0) return id;
  uint32_t n = 0;
  if (absl::SimpleAtoi(name, &n) && n < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(n)) {
    return static_cast<uint16_t>(n);
  }
  std::string known;
  uint16_t pid;
  RTE_ETH_FOREACH_DEV(pid) {
    char buf[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(pid, buf) == 0) {
      absl::StrAppend(&known, known.empty() ? "" : ", ", pid, "=", buf);
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no port '", name, "' (ports: ", known.empty() ? "none" : known, ")"));
}

absl::Status Engine::Impl::Init() {
  if (config.burst == 0 || config.burst > kMaxBurst) {
    return absl::InvalidArgumentError(
        absl::StrCat("burst ", config.burst, " is out of range; write 1..", kMaxBurst));
  }
  if (config.pool_ops != "skbnf" && config.pool_ops != "ring_mp_mc") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown pool ops '", config.pool_ops, "'; write skbnf or ring_mp_mc"));
  }
  if (config.pool_ops == "skbnf") {
    auto spec = pool::StrategySpec::Parse(config.strategy);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy '", config.strategy, "': ", spec.status().message()));
    }
  }
  if (config.mbuf_cache > RTE_MEMPOOL_CACHE_MAX_SIZE) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mbuf cache ", config.mbuf_cache, " is too big; write 0..", RTE_MEMPOOL_CACHE_MAX_SIZE));
  }
  // Ports.
  std::vector<std::pair<uint16_t, std::string>> peers;
  if (config.ports.empty()) {
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid) { port_ids.push_back(pid); }
    for (size_t i = 0; i < port_ids.size(); ++i) {
      peers.emplace_back(port_ids[i], "");
    }
  } else {
    for (const PortSpec& ps : config.ports) {
      auto id = ResolvePort(ps.name);
      if (!id.ok()) return id.status();
      if (std::find(port_ids.begin(), port_ids.end(), *id) != port_ids.end()) {
        return absl::InvalidArgumentError(absl::StrCat("port '", ps.name, "' is listed twice"));
      }
      port_ids.push_back(*id);
      peers.emplace_back(*id, ps.peer);
    }
  }
  if (port_ids.empty()) {
    return absl::FailedPreconditionError(
        "no ports: give EAL a device, e.g. after `--`: --vdev=net_null0 --vdev=net_null1, or a "
        "PCI address with -a");
  }
  for (uint16_t id : port_ids) {
    if (id >= kMaxPorts) {
      return absl::InvalidArgumentError(absl::StrCat("port id ", id, " >= ", kMaxPorts));
    }
    ports[id].active = true;
    ports[id].id = id;
  }
  // Pairing: explicit peers, else 0<->1, 2<->3, ... in config order; an odd last port
  // forwards to itself.
  for (size_t i = 0; i < peers.size(); ++i) {
    PortState& ps = ports[peers[i].first];
    if (!peers[i].second.empty()) {
      auto peer = ResolvePort(peers[i].second);
      if (!peer.ok()) return peer.status();
      if (*peer >= kMaxPorts || !ports[*peer].active) {
        return absl::InvalidArgumentError(absl::StrCat("peer '", peers[i].second, "' of port ",
                                                       ps.id, " is not one of the engine's ports"));
      }
      ps.peer = *peer;
    } else {
      const size_t j = (i % 2 == 0) ? (i + 1 < peers.size() ? i + 1 : i) : i - 1;
      ps.peer = port_ids[j];
    }
  }
  for (size_t i = 0; i < config.ports.size(); ++i) {
    PortState& ps = ports[port_ids[i]];
    if (!config.ports[i].dst_mac.empty()) {
      auto mac = ParseMac(config.ports[i].dst_mac);
      if (!mac.ok()) return mac.status();
      std::copy(mac->begin(), mac->end(), ps.dst_mac.addr_bytes);
    }
  }
  for (uint16_t id : port_ids) {
    PortState& ps = ports[id];
    if (config.ports.empty() || std::all_of(ps.dst_mac.addr_bytes, ps.dst_mac.addr_bytes + 6,
                                            [](uint8_t b) { return b == 0; })) {
      ps.dst_mac = rte_ether_addr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(id)}};
    }
  }
  if (absl::Status st = SetUpWorkers(); !st.ok()) return st;
  if (absl::Status st = SetUpPool(); !st.ok()) return st;
  if (absl::Status st = SetUpPorts(); !st.ok()) return st;
  if (absl::Status st = SetUpL3(); !st.ok()) return st;
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpWorkers() {
  std::vector<unsigned> lcores;
  if (config.workers.empty()) {
    unsigned lc;
    RTE_LCORE_FOREACH_WORKER(lc) { lcores.push_back(lc); }
    if (lcores.empty()) {
      return absl::FailedPreconditionError(
          "no worker lcores: give EAL at least two, e.g. -l 0,1 (the first is the main lcore, "
          "which runs control)");
    }
    for (unsigned i = 0; i < lcores.size(); ++i) {
      auto w = std::make_unique<Worker>();
      w->lcore = lcores[i];
      w->index = i;
      workers.push_back(std::move(w));
    }
    // RX queues round-robin over the workers.
    size_t k = 0;
    for (uint16_t q = 0; q < config.rx_queues; ++q) {
      for (uint16_t id : port_ids) {
        workers[k++ % workers.size()]->rx.push_back({id, q});
      }
    }
  } else {
    for (const WorkerSpec& ws : config.workers) {
      if (ws.lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(ws.lcore) ||
          ws.lcore == rte_get_main_lcore()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "worker lcore ", ws.lcore,
            " is not an enabled non-main EAL lcore; give EAL -l with it (main lcore is ",
            rte_get_main_lcore(), ")"));
      }
      auto w = std::make_unique<Worker>();
      w->lcore = ws.lcore;
      w->index = static_cast<unsigned>(workers.size());
      for (const auto& [name, q] : ws.rx) {
        auto id = ResolvePort(name);
        if (!id.ok()) return id.status();
        if (*id >= kMaxPorts || !ports[*id].active) {
          return absl::InvalidArgumentError(
              absl::StrCat("worker ", ws.lcore, ": port '", name, "' is not an engine port"));
        }
        if (q >= config.rx_queues) {
          return absl::InvalidArgumentError(
              absl::StrCat("worker ", ws.lcore, ": queue ", q, " >= rx_queues ", config.rx_queues));
        }
        w->rx.push_back({*id, q});
      }
      workers.push_back(std::move(w));
    }
  }
  for (auto& w : workers) w->engine = this;
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpPool() {
  uint64_t need = 0;
  for (size_t i = 0; i < port_ids.size(); ++i) {
    need += uint64_t{config.rx_ring} * config.rx_queues +
            uint64_t{config.tx_ring} * std::max<size_t>(1, workers.size());
  }
  need += workers.size() * (uint64_t{config.burst} * 4 + 2048);
  uint32_t n = config.mbufs != 0 ? config.mbufs
                                 : static_cast<uint32_t>(std::max<uint64_t>(8192, need + 8192));
  static std::atomic<int> seq{0};
  mp_name = absl::StrCat("skbnf_mbuf_", seq.fetch_add(1));
  if (config.pool_ops == "skbnf") {
    MempoolOptions o;
    o.strategy = config.strategy;
    o.colour = config.colour;
    o.debug = config.pool_debug;
    auto created = CreatePktmbufPool(mp_name, n, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     static_cast<int>(rte_socket_id()), o);
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat("cannot create the mbuf pool (", n, " mbufs, ops skbnf): ",
                                       created.status().message(),
                                       "; give EAL more memory (-m) or write a smaller --mbufs"));
    }
    mp = *created;
  } else {
    mp = rte_pktmbuf_pool_create_by_ops(mp_name.c_str(), n, config.mbuf_cache, 0,
                                        RTE_MBUF_DEFAULT_BUF_SIZE,
                                        static_cast<int>(rte_socket_id()), "ring_mp_mc");
    if (mp == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot create the mbuf pool (", n, " mbufs, ops ring_mp_mc): ",
          rte_strerror(rte_errno), "; give EAL more memory (-m) or write a smaller --mbufs"));
    }
  }
  pool = PoolOf(mp);
  if (pool != nullptr) {
    for (auto& w : workers) {
      std::vector<pool::RxPort> rx;
      for (const RxQueue& q : w->rx) {
        auto it = std::find_if(rx.begin(), rx.end(),
                               [&](const pool::RxPort& r) { return r.port == q.port; });
        if (it == rx.end()) {
          rx.push_back({q.port, config.rx_ring});
        } else {
          it->ring_size += config.rx_ring;
        }
      }
      if (absl::Status st = pool->RegisterWorker(static_cast<int>(w->lcore), rx); !st.ok()) {
        return st;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpPorts() {
  const uint16_t nworkers = static_cast<uint16_t>(workers.size());
  for (uint16_t id : port_ids) {
    PortState& ps = ports[id];
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(id, &info); rc != 0) {
      return absl::InternalError(absl::StrCat("port ", id, ": dev_info: ", rte_strerror(-rc)));
    }
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id, name);
    ps.name = name;
    ps.driver = info.driver_name != nullptr ? info.driver_name : "";
    ps.nb_rxq = 0;
    for (const auto& w : workers) {
      for (const RxQueue& q : w->rx) {
        if (q.port == id) ps.nb_rxq = std::max<uint16_t>(ps.nb_rxq, q.queue + 1);
      }
    }
    if (ps.nb_rxq > info.max_rx_queues) {
      return absl::InvalidArgumentError(absl::StrCat("port ", id, " (", ps.name, ") has ",
                                                     info.max_rx_queues, " RX queue(s); ",
                                                     ps.nb_rxq, " asked"));
    }
    // TX: one queue per worker, or one shared queue when the PMD has fewer.
    bool needs_tx = config.mode == Mode::kL3;
    for (const auto& w : workers) {
      for (const RxQueue& q : w->rx) needs_tx |= ports[q.port].peer == id;
    }
    if (info.max_tx_queues == 0 || !needs_tx) {
      if (needs_tx && config.mode != Mode::kL3) {
        return absl::InvalidArgumentError(
            absl::StrCat("port ", id, " (", ps.name, ") cannot transmit but is a peer"));
      }
      ps.nb_txq = 0;
    } else if (info.max_tx_queues >= nworkers) {
      ps.nb_txq = nworkers;
    } else {
      ps.nb_txq = 1;
      ps.tx_shared = nworkers > 1;
    }
    rte_eth_conf conf{};
    if (ps.nb_rxq > 1 && info.flow_type_rss_offloads != 0) {
      // Several RX queues: spread flows over them by RSS (IP and L4 hashes the NIC has).
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_hf =
          (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    }
    if (int rc = rte_eth_dev_configure(id, ps.nb_rxq, ps.nb_txq, &conf); rc != 0) {
      return absl::InternalError(
          absl::StrCat("port ", id, " (", ps.name, "): configure: ", rte_strerror(-rc)));
    }
    uint16_t nrx = config.rx_ring, ntx = config.tx_ring;
    if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx); rc != 0) {
      return absl::InternalError(absl::StrCat("port ", id, ": ring sizes: ", rte_strerror(-rc)));
    }
    ps.rx_ring = nrx;
    ps.tx_ring = ntx;
    const int socket = rte_eth_dev_socket_id(id) < 0 ? 0 : rte_eth_dev_socket_id(id);
    for (uint16_t q = 0; q < ps.nb_rxq; ++q) {
      if (int rc = rte_eth_rx_queue_setup(id, q, nrx, socket, nullptr, mp); rc != 0) {
        return absl::InternalError(
            absl::StrCat("port ", id, " (", ps.name, "): RX queue ", q, ": ", rte_strerror(-rc)));
      }
    }
    for (uint16_t q = 0; q < ps.nb_txq; ++q) {
      if (int rc = rte_eth_tx_queue_setup(id, q, ntx, socket, nullptr); rc != 0) {
        return absl::InternalError(
            absl::StrCat("port ", id, " (", ps.name, "): TX queue ", q, ": ", rte_strerror(-rc)));
      }
    }
    rte_eth_macaddr_get(id, &ps.mac);
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpL3() {
  hops.reset(new std::atomic<uint64_t>[kMaxNextHops]);
  for (uint32_t i = 0; i < kMaxNextHops; ++i) hops[i].store(0, std::memory_order_relaxed);
  if (config.mode != Mode::kL3) return absl::OkStatus();
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

void Engine::Impl::ClosePorts() {
  for (uint16_t id : port_ids) {
    rte_eth_dev_stop(id);
    rte_eth_dev_close(id);
  }
}

Engine::Impl::~Impl() {
  if (started && !stopped) {
    stop.store(true);
    rte_eal_mp_wait_lcore();
  }
  if (!stopped) ClosePorts();
  if (lpm != nullptr) rte_lpm_free(lpm);
  if (rcu != nullptr) rte_free(rcu);
  if (mp != nullptr) rte_mempool_free(mp);
}

// ---------------------------------------------------------------------------------------------
// Engine.

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  if (absl::Status st = impl->Init(); !st.ok()) return st;
  std::unique_ptr<Engine> engine(new Engine(std::move(impl)));
  for (const RouteSpec& rs : config.routes) {
    auto r = engine->ResolveRoute(rs);
    if (!r.ok()) return r.status();
    if (absl::Status st = engine->AddRoute(*r); !st.ok()) return st;
  }
  return engine;
}

const EngineConfig& Engine::config() const { return impl_->config; }
pool::Pool* Engine::pool() const { return impl_->pool; }
rte_mempool* Engine::mempool() const { return impl_->mp; }
bool Engine::running() const { return impl_->started && !impl_->stopped; }
const AuditResult& Engine::final_audit() const { return impl_->final_audit; }

absl::Status Engine::Start() {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  Impl& e = *impl_;
  if (e.started) return absl::FailedPreconditionError("engine already started");
  for (uint16_t id : e.port_ids) {
    if (int rc = rte_eth_dev_start(id); rc != 0) {
      return absl::InternalError(
          absl::StrCat("port ", id, " (", e.ports[id].name, "): start: ", rte_strerror(-rc)));
    }
    rte_eth_promiscuous_enable(id);
  }
  for (auto& w : e.workers) {
    if (int rc = rte_eal_remote_launch(&WorkerMain, w.get(), w->lcore); rc != 0) {
      e.stop.store(true);
      rte_eal_mp_wait_lcore();
      return absl::InternalError(
          absl::StrCat("cannot launch worker on lcore ", w->lcore, ": ", rte_strerror(-rc)));
    }
    w->launched.store(true);
  }
  e.started = true;
  return absl::OkStatus();
}

absl::Status Engine::Stop() {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  Impl& e = *impl_;
  if (!e.started) return absl::FailedPreconditionError("engine not started");
  if (e.stopped) return absl::OkStatus();
  e.stop.store(true, std::memory_order_relaxed);
  for (auto& w : e.workers) rte_eal_wait_lcore(w->lcore);
  if (e.pool != nullptr) {
    for (auto& w : e.workers) (void)e.pool->UnregisterWorker(static_cast<int>(w->lcore));
  }
  // Drain: stopping and closing the ports releases every mbuf their queues hold.
  e.ClosePorts();
  e.stopped = true;
  e.final_audit = e.AuditNow(true);
  return absl::OkStatus();
}

AuditResult Engine::Impl::AuditNow(bool exact) {
  AuditResult r;
  r.exact = exact;
  if (pool != nullptr) {
    r.has_pool = true;
    r.pool = pool->Audit(0);
    r.populated = r.pool.populated;
    uint64_t layers = 0;
    for (uint64_t v : r.pool.in_layers) layers += v;
    r.available = r.pool.in_store + layers + r.pool.in_depots;
    if (exact) {
      r.ok = r.pool.ok && r.pool.double_frees == 0 && r.pool.foreign_frees == 0;
      r.message = absl::StrCat("exact: ", r.pool.message);
    } else {
      // While running, mbufs in PMD rings and in workers' hands are in flight and cannot be
      // counted from here: only what would be wrong at any moment is checked.
      r.ok = r.available <= r.populated && r.pool.double_frees == 0 && r.pool.foreign_frees == 0;
      r.message = absl::StrCat("running (approximate; exact after stop): populated ", r.populated,
                               ", available ", r.available, " (store ", r.pool.in_store,
                               " + layers ", r.available - r.pool.in_store - r.pool.in_depots,
                               " + depots ", r.pool.in_depots, "), in flight ",
                               r.populated - std::min(r.populated, r.available));
    }
    if (r.pool.double_frees + r.pool.foreign_frees > 0) {
      absl::StrAppend(&r.message, "; double frees ", r.pool.double_frees, ", foreign frees ",
                      r.pool.foreign_frees);
    }
  } else {
    r.populated = mp->populated_size;
    r.available = rte_mempool_avail_count(mp);
    r.ok = !exact || r.available == r.populated;
    r.message = absl::StrCat(exact ? "exact" : "running", ": ring_mp_mc available ", r.available,
                             exact ? (r.ok ? " == " : " != ") : " of ", "populated ", r.populated);
  }
  return r;
}

AuditResult Engine::Audit() {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  if (impl_->stopped) return impl_->final_audit;
  return impl_->AuditNow(false);
}

std::vector<unsigned> Engine::WorkerLcores() const {
  std::vector<unsigned> out;
  for (const auto& w : impl_->workers) out.push_back(w->lcore);
  return out;
}

std::vector<PortInfo> Engine::Ports() const {
  std::vector<PortInfo> out;
  for (uint16_t id : impl_->port_ids) {
    const PortState& ps = impl_->ports[id];
    PortInfo p;
    p.id = id;
    p.name = ps.name;
    p.driver = ps.driver;
    char buf[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(buf, sizeof(buf), &ps.mac);
    p.mac = buf;
    p.peer = ps.peer;
    p.rx_queues = ps.nb_rxq;
    p.tx_queues = ps.nb_txq;
    p.rx_ring = ps.rx_ring;
    p.tx_ring = ps.tx_ring;
    p.tx_shared = ps.tx_shared;
    if (!impl_->stopped) {
      rte_eth_link link{};
      if (rte_eth_link_get_nowait(id, &link) == 0) {
        p.link_up = link.link_status == RTE_ETH_LINK_UP;
        p.link_speed_mbps = link.link_speed;
      }
      rte_eth_stats st{};
      if (rte_eth_stats_get(id, &st) == 0) {
        p.ipackets = st.ipackets;
        p.opackets = st.opackets;
        p.ibytes = st.ibytes;
        p.obytes = st.obytes;
        p.imissed = st.imissed;
        p.ierrors = st.ierrors;
        p.oerrors = st.oerrors;
        p.rx_nombuf = st.rx_nombuf;
      }
    }
    out.push_back(p);
  }
  return out;
}

EngineSnapshot Engine::Snapshot() const {
  const Impl& e = *impl_;
  EngineSnapshot s;
  s.monotonic_ns = NowNs();
  s.pool_ops = e.config.pool_ops;
  s.strategy = strategy();
  s.epoch = e.pool != nullptr ? e.pool->epoch() : 0;
  for (const auto& w : e.workers) {
    WorkerSnapshot ws;
    ws.lcore = w->lcore;
    ws.paused = w->parked.load(std::memory_order_acquire);
    for (const RxQueue& q : w->rx) ws.rx.emplace_back(q.port, q.queue);
    for (int p = 0; p < kMaxPorts; ++p) {
      PortCounters& pc = ws.ports[p];
      pc.rx_pkts = w->c.ports[p].rx_pkts.Get();
      pc.rx_bytes = w->c.ports[p].rx_bytes.Get();
      pc.tx_pkts = w->c.ports[p].tx_pkts.Get();
      pc.tx_bytes = w->c.ports[p].tx_bytes.Get();
      ws.rx_pkts += pc.rx_pkts;
      ws.tx_pkts += pc.tx_pkts;
    }
    for (int r = 0; r < kNumDropReasons; ++r) {
      ws.drops[r] = w->c.drops[r].Get();
      ws.dropped += ws.drops[r];
    }
    ws.polls = w->c.polls.Get();
    ws.busy_polls = w->c.busy_polls.Get();
    if (e.pool != nullptr) {
      ws.has_pool = true;
      ws.pool = e.pool->CoreStats(static_cast<int>(w->lcore));
      ws.gauges = e.pool->CoreGauges(static_cast<int>(w->lcore));
      ws.rx_nombuf = ws.pool.alloc_failures;
    }
    s.workers.push_back(std::move(ws));
  }
  return s;
}

std::string Engine::strategy() const {
  if (impl_->pool != nullptr) return impl_->pool->strategy().ToString();
  return absl::StrCat("ring_mp_mc cache=", impl_->config.mbuf_cache);
}

bool Engine::swappable() const { return impl_->pool != nullptr; }

absl::StatusOr<pool::SwapReport> Engine::SwapStrategy(absl::string_view spec_text,
                                                      std::chrono::microseconds timeout) {
  if (impl_->pool == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "strategy swaps need the skbnf mempool; this engine runs on DPDK's native ring_mp_mc "
        "mempool (--pool-ops=ring_mp_mc, lcore cache ",
        impl_->config.mbuf_cache, "), whose allocator cannot be changed while it runs"));
  }
  auto spec = pool::StrategySpec::Parse(spec_text);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy '", spec_text, "': ", spec.status().message()));
  }
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  if (impl_->stopped) return absl::FailedPreconditionError("engine stopped");
  return timeout.count() > 0 ? impl_->pool->Swap(*spec, timeout) : impl_->pool->Swap(*spec);
}

absl::Status Engine::PauseWorker(unsigned lcore, std::chrono::microseconds timeout) {
  if (timeout.count() <= 0) timeout = std::chrono::milliseconds(200);
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  Impl& e = *impl_;
  for (auto& w : e.workers) {
    if (w->lcore != lcore) continue;
    if (!e.started || e.stopped) return absl::FailedPreconditionError("engine not running");
    if (e.pool != nullptr) return e.pool->PauseWorker(static_cast<int>(lcore), timeout);
    w->pause_requested.store(true, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!w->parked.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > deadline) {
        w->pause_requested.store(false);
        return absl::DeadlineExceededError(absl::StrCat(
            "worker ", lcore, " did not reach its quiescent point in ", timeout.count(), " us"));
      }
      std::this_thread::yield();
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("lcore ", lcore, " is not a worker"));
}

absl::Status Engine::ResumeWorker(unsigned lcore) {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  Impl& e = *impl_;
  for (auto& w : e.workers) {
    if (w->lcore != lcore) continue;
    if (e.pool != nullptr) return e.pool->ResumeWorker(static_cast<int>(lcore));
    w->pause_requested.store(false, std::memory_order_release);
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("lcore ", lcore, " is not a worker"));
}

absl::StatusOr<Route> Engine::ResolveRoute(const RouteSpec& spec) const {
  Route r;
  if (absl::Status st = ParsePrefix(spec.prefix, &r.prefix, &r.depth); !st.ok()) return st;
  auto port = impl_->ResolvePort(spec.port);
  if (!port.ok()) return port.status();
  r.port = *port;
  auto mac = ParseMac(spec.mac);
  if (!mac.ok()) return mac.status();
  r.next_hop_mac = *mac;
  return r;
}

absl::Status Engine::AddRoute(const Route& r) {
  Impl& e = *impl_;
  if (e.lpm == nullptr) {
    return absl::FailedPreconditionError("routes need --mode=l3");
  }
  if (r.depth < 1 || r.depth > 32) {
    return absl::InvalidArgumentError(absl::StrCat("route depth ", r.depth, " not in 1..32"));
  }
  const uint32_t mask = r.depth == 32 ? ~0u : ~(~0u >> r.depth);
  if ((r.prefix & ~mask) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(r.ToString(), ": host bits set"));
  }
  if (r.port >= kMaxPorts || !e.ports[r.port].active || e.ports[r.port].nb_txq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("route ", r.ToString(), ": port ", r.port, " is not a TX port of the engine"));
  }
  const uint64_t hop = PackHop(r.port, r.next_hop_mac);
  if ((hop >> 16) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("route ", r.ToString(), ": next-hop MAC is zero"));
  }
  std::lock_guard<std::mutex> lock(e.route_mu);
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
    e.hops[id].store(hop, std::memory_order_release);
    e.hop_ids.emplace(hop, id);
  }
  if (int rc = rte_lpm_add(e.lpm, r.prefix, r.depth, id); rc != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rte_lpm_add ", r.ToString(), ": ", rte_strerror(-rc)));
  }
  e.routes[{r.prefix, r.depth}] = r;
  return absl::OkStatus();
}

absl::Status Engine::DelRoute(uint32_t prefix, uint8_t depth) {
  Impl& e = *impl_;
  if (e.lpm == nullptr) return absl::FailedPreconditionError("routes need --mode=l3");
  std::lock_guard<std::mutex> lock(e.route_mu);
  auto it = e.routes.find({prefix, depth});
  if (it == e.routes.end()) {
    Route r;
    r.prefix = prefix;
    r.depth = depth;
    return absl::NotFoundError(
        absl::StrCat("no route ", r.ToString().substr(0, r.ToString().find(' '))));
  }
  if (int rc = rte_lpm_delete(e.lpm, prefix, depth); rc != 0) {
    return absl::InternalError(absl::StrCat("rte_lpm_delete: ", rte_strerror(-rc)));
  }
  e.routes.erase(it);
  return absl::OkStatus();
}

std::vector<Route> Engine::Routes() const {
  std::lock_guard<std::mutex> lock(impl_->route_mu);
  std::vector<Route> out;
  out.reserve(impl_->routes.size());
  for (const auto& [k, r] : impl_->routes) out.push_back(r);
  return out;
}

}  // namespace skbnf::dpdk
