// SPDX-License-Identifier: BSD-3-Clause
#include "tests/control/fake_backend.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/pool_ops.h"
#include "common/wait_until.h"
#include "dataplane/dpdk/drop_reasons.h"

namespace skbnf::control::testing {
namespace {

constexpr unsigned kBurst = 32;
constexpr uint32_t kFrameBytes = 64;
constexpr uint16_t kRingSize = 512;

void TagClassify(void*, void* const* objs, unsigned n, int16_t* ports) {
  for (unsigned i = 0; i < n; ++i) std::memcpy(&ports[i], objs[i], sizeof(int16_t));
}

// The TSC's rate, measured once against steady_clock over 20 ms (the pool stamps with the TSC;
// the engine has DPDK's rte_get_tsc_hz).
uint64_t TscHz() {
  static const uint64_t hz = [] {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = __builtin_ia32_rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t c1 = __builtin_ia32_rdtsc();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<uint64_t>(static_cast<double>(c1 - c0) / s);
  }();
  return hz;
}

void Bump(std::atomic<uint64_t>& c, uint64_t d) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeBackend>> FakeBackend::Create(const FakeOptions& o) {
  if (o.workers < 1 || o.workers > 16 || o.ports < 1 || o.ports > 16) {
    return absl::InvalidArgumentError("fake: 1..16 workers and 1..16 ports");
  }
  if (!o.drop_reasons.empty() &&
      o.drop_reasons.size() != static_cast<size_t>(dpdk::kNumDropReasons)) {
    return absl::InvalidArgumentError("fake: drop_reasons names every dpdk::DropReason");
  }
  absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(o.initial_spec);
  if (!spec.ok()) return spec.status();
  std::unique_ptr<FakeBackend> b(new FakeBackend(o));
  pool::PoolConfig c;
  c.name = "fake";
  c.store.elt_size = 256;
  c.store.objs_per_slab = 64;
  c.classify = &TagClassify;
  c.stamp_offset = 8;  // the track modifier's word: bytes 8..15 (the tag is bytes 0..1)
  absl::StatusOr<std::unique_ptr<pool::Pool>> p = pool::Pool::Create(c, *spec);
  if (!p.ok()) return p.status();
  b->pool_ = std::move(*p);
  size_t bytes = (b->pool_->MemSize(o.objects) + 4095) & ~size_t{4095};
  b->memory_ = std::unique_ptr<void, void (*)(void*)>(std::aligned_alloc(4096, bytes), &std::free);
  absl::StatusOr<uint32_t> placed =
      b->pool_->Populate(b->memory_.get(), bytes, o.objects, [](void* obj) {
        int16_t none = -1;
        std::memcpy(obj, &none, sizeof(none));
      });
  if (!placed.ok()) return placed.status();
  // Worker w polls ports w, w+workers, ... (every port has exactly one RX core) and transmits
  // on the port "next to" each: p ^ 1 when it exists.
  for (int w = 0; w < o.workers; ++w) {
    auto wk = std::make_unique<Worker>();
    wk->core = w;
    wk->ports = std::make_unique<Worker::Port[]>(static_cast<size_t>(o.ports));
    std::vector<pool::RxPort> rx;
    for (int port = w; port < o.ports; port += o.workers) {
      wk->rx_ports.push_back(port);
      wk->tx_ports.push_back((port ^ 1) < o.ports ? (port ^ 1) : port);
      rx.push_back({port, kRingSize});
    }
    absl::Status s = b->pool_->RegisterWorker(w, rx);
    if (!s.ok()) return s;
    b->workers_.push_back(std::move(wk));
  }
  for (auto& wk : b->workers_) {
    Worker* raw = wk.get();
    wk->thread = std::thread([b = b.get(), raw] { b->Run(*raw); });
  }
  return b;
}

FakeBackend::~FakeBackend() {
  stop_.store(true);
  for (auto& w : workers_) {
    if (w->paused.load()) (void)pool_->ResumeWorker(w->core);
  }
  for (auto& w : workers_) w->thread.join();
}

void FakeBackend::Run(Worker& w) {
  std::vector<void*> tx_ring;  // transmitted, not yet completed: in flight
  tx_ring.reserve(kBurst);
  uint64_t poll = 0, seq = 0;
  size_t next_port = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (w.core == options_.stuck_core) {  // test hook: never quiescent, never done
      Bump(w.polls, 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (!pool_->Quiesce(w.core)) {  // parked
      w.parked.store(true, std::memory_order_release);
      Bump(w.parked_loops, 1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (w.parked.load(std::memory_order_relaxed)) w.parked.store(false, std::memory_order_release);
    // TX completion of the previous poll's burst.
    if (!tx_ring.empty()) {
      pool_->Put(w.core, tx_ring.data(), static_cast<unsigned>(tx_ring.size()));
      tx_ring.clear();
      w.in_flight.store(0, std::memory_order_relaxed);
    }
    Bump(w.polls, 1);
    int rx_port = w.rx_ports.empty() ? -1 : w.rx_ports[next_port];
    int tx_port = w.tx_ports.empty() ? -1 : w.tx_ports[next_port];
    if (!w.rx_ports.empty()) next_port = (next_port + 1) % w.rx_ports.size();
    if (rx_port >= 0 && poll++ % 4 != 3) {
      const auto busy_start = std::chrono::steady_clock::now();
      void* objs[kBurst];
      pool_->SetRxPort(w.core, rx_port);
      if (pool_->Get(w.core, objs, kBurst)) {
        Bump(w.busy_polls, 1);
        Worker::Port& in = w.ports[rx_port];
        Bump(in.rx_packets, kBurst);
        Bump(in.rx_bytes, kBurst * kFrameBytes);
        void* drop[kBurst];
        unsigned ndrop = 0;
        for (unsigned i = 0; i < kBurst; ++i) {
          int16_t tag = static_cast<int16_t>(rx_port);
          std::memcpy(objs[i], &tag, sizeof(tag));
          if (++seq % 16 == 0)
            drop[ndrop++] = objs[i];
          else
            tx_ring.push_back(objs[i]);
        }
        Bump(in.drops, ndrop);
        if (ndrop > 0) pool_->Put(w.core, drop, ndrop);
        Worker::Port& out = w.ports[tx_port];
        Bump(out.tx_packets, tx_ring.size());
        Bump(out.tx_bytes, tx_ring.size() * kFrameBytes);
        w.in_flight.store(tx_ring.size(), std::memory_order_relaxed);
        Bump(w.busy_cycles,
             static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - busy_start)
                                       .count()));
        Bump(w.busy_packets, kBurst);
      } else {
        Bump(w.ports[rx_port].rx_nombuf, kBurst);
      }
      pool_->SetRxPort(w.core, -1);
    }
    if (options_.poll_pause_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(options_.poll_pause_us));
    }
  }
  if (!tx_ring.empty()) pool_->Put(w.core, tx_ring.data(), static_cast<unsigned>(tx_ring.size()));
  w.in_flight.store(0);
}

Info FakeBackend::GetInfo() const {
  Info info;
  info.eal_args = {"skbnf_fake_daemon", "--no-huge", "--vdev=net_null0", "--vdev=net_null1"};
  info.lcores.push_back({0, LcoreInfo::Role::kMain, -1, 0, {}, {}});
  for (const auto& w : workers_) {
    info.lcores.push_back({static_cast<uint32_t>(w->core + 1), LcoreInfo::Role::kWorker, w->core, 0,
                           w->rx_ports, w->tx_ports});
  }
  info.pool.name = "fake";
  info.pool.native = options_.native;
  info.pool.ops_name = options_.native ? "ring_mp_mc" : "skbnf";
  info.pool.populated = pool_->populated();
  info.pool.element_size = pool_->config().store.elt_size;
  info.pool.objects_per_slab = options_.native ? 0 : pool_->config().store.objs_per_slab;
  info.pool.colour = pool_->config().store.colour;
  info.pool.debug = pool_->debug();
  info.pool.quiesce_timeout = pool_->config().quiesce_timeout;
  info.pool.native_cache_size = options_.native ? 256 : 0;
  info.mode = options_.mode;
  info.started = started_;
  info.backend = "fake";
  return info;
}

bool FakeBackend::LinkUp() const {
  if (!options_.link_up) return false;
  struct stat st;
  return options_.link_down_file.empty() || ::stat(options_.link_down_file.c_str(), &st) != 0;
}

std::vector<PortInfo> FakeBackend::ListPorts() const {
  std::vector<PortInfo> out;
  for (int p = 0; p < options_.ports; ++p) {
    PortInfo pi;
    pi.id = p;
    pi.name = absl::StrCat("net_null", p);
    pi.driver = "net_null";
    pi.device = absl::StrCat("net_null", p, ",size=64");
    pi.mac = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(p + 1)};
    pi.started = p != options_.not_started_port;
    pi.has_link = true;
    pi.link_up = LinkUp();
    pi.link_speed_mbps = pi.link_up ? 10000 : 0;
    pi.rx_queues = 1;
    pi.tx_queues = static_cast<uint16_t>(options_.workers);
    pi.rx_ring_size = kRingSize;
    pi.tx_ring_size = kRingSize;
    pi.peer = (p ^ 1) < options_.ports ? (p ^ 1) : p;
    out.push_back(pi);
  }
  return out;
}

pool::StrategySpec FakeBackend::GetStrategy() const { return pool_->strategy(); }
uint64_t FakeBackend::GetEpoch() const { return pool_->epoch(); }

StatsSnapshot FakeBackend::GetStats() const {
  StatsSnapshot s;
  s.taken = std::chrono::steady_clock::now();
  for (const auto& w : workers_) {
    CoreStats c;
    c.core = w->core;
    c.paused = w->paused.load(std::memory_order_relaxed);
    std::vector<int> ports = w->rx_ports;
    for (int t : w->tx_ports) {
      if (std::find(ports.begin(), ports.end(), t) == ports.end()) ports.push_back(t);
    }
    std::sort(ports.begin(), ports.end());
    for (int p : ports) {
      const Worker::Port& wp = w->ports[p];
      PortCounters pc;
      pc.port = p;
      pc.rx_packets = wp.rx_packets.load(std::memory_order_relaxed);
      pc.rx_bytes = wp.rx_bytes.load(std::memory_order_relaxed);
      pc.tx_packets = wp.tx_packets.load(std::memory_order_relaxed);
      pc.tx_bytes = wp.tx_bytes.load(std::memory_order_relaxed);
      pc.rx_nombuf = wp.rx_nombuf.load(std::memory_order_relaxed);
      // The engine's reasons, all listed, by the engine's names (FakeOptions::drop_reasons):
      // the simulated drops are no_route in l3 and tx_full otherwise.
      const size_t dropped_as = static_cast<size_t>(
          options_.mode == ForwardingMode::kL3 ? dpdk::kDropNoRoute : dpdk::kDropTxFull);
      for (size_t r = 0; r < options_.drop_reasons.size(); ++r) {
        pc.drops.emplace_back(options_.drop_reasons[r],
                              r == dropped_as ? wp.drops.load(std::memory_order_relaxed) : 0);
      }
      c.ports.push_back(std::move(pc));
    }
    c.polls = w->polls.load(std::memory_order_relaxed);
    c.busy_polls = w->busy_polls.load(std::memory_order_relaxed);
    c.parked_loops = w->parked_loops.load(std::memory_order_relaxed);
    c.busy_cycles = w->busy_cycles.load(std::memory_order_relaxed);
    c.busy_packets = w->busy_packets.load(std::memory_order_relaxed);
    c.tsc_hz = 1000000000;  // busy_cycles are nanoseconds
    c.pool = pool_->CoreStats(w->core);
    c.layer_objects = pool_->CoreGauges(w->core);
    for (int i = 0; i < pool::kNumLayers; ++i) s.pool.in_layers[i] += c.layer_objects.objects[i];
    s.cores.push_back(std::move(c));
  }
  FillPoolFigures(*pool_, s);
  return s;
}

RouteTable FakeBackend::ListRoutes() const {
  std::lock_guard<std::mutex> l(routes_mu_);
  RouteTable t;
  for (const auto& [key, id] : routes_) t.routes.push_back({{key.first, key.second}, id});
  for (const auto& [id, nh] : next_hops_) {
    if (nh.routes > 0) t.next_hops.push_back(nh);
  }
  return t;
}

Health FakeBackend::GetHealth() const {
  Health h;
  h.ports = ListPorts();
  for (const auto& w : workers_) {
    h.workers.push_back({w->core, static_cast<uint32_t>(w->core + 1), !stop_.load()});
  }
  return h;
}

absl::Status FakeBackend::ValidateStrategy(const pool::StrategySpec&) const {
  return options_.native ? dpdk::NativePoolSwapRefusal(GetInfo().pool.ops_name) : absl::OkStatus();
}

pool::SwapReport FakeBackend::SwapStrategy(const pool::StrategySpec& spec,
                                           std::chrono::microseconds timeout) {
  if (absl::Status s = ValidateStrategy(spec); !s.ok()) return RefusedSwap(*this, spec, s);
  return timeout.count() > 0 ? pool_->Swap(spec, timeout) : pool_->Swap(spec);
}

// The route rules (l3 only, a prefix routed once, only a routed prefix deleted) are Mutations'
// (Change::AddRoute/DeleteRoute), for this backend and the engine alike; a call that breaks them
// here is a caller's bug, not a user's error.
absl::StatusOr<uint32_t> FakeBackend::AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  std::lock_guard<std::mutex> l(routes_mu_);
  auto key = std::make_pair(prefix.addr, prefix.len);
  // A routed prefix: Change::ReplaceRoute, the next hop replaced in place (as the engine's).
  if (auto old = routes_.find(key); old != routes_.end()) {
    --next_hops_[old->second].routes;
    routes_.erase(old);
  }
  uint32_t id = 0;
  for (auto& [nid, e] : next_hops_) {
    if (e.next_hop == nh) id = nid;
  }
  if (id == 0) {
    id = next_hop_id_++;
    next_hops_[id] = {id, nh, 0};
  }
  next_hops_[id].routes++;
  routes_[key] = id;
  return id;
}

absl::Status FakeBackend::DeleteRoute(const Ipv4Prefix& prefix) {
  std::lock_guard<std::mutex> l(routes_mu_);
  auto it = routes_.find(std::make_pair(prefix.addr, prefix.len));
  if (it == routes_.end()) return absl::InternalError("fake: DeleteRoute of a prefix not routed");
  // The next hop keeps its id when its last route goes, and the fake never gives that id to
  // another next hop; the engine frees and reuses it after a grace period (dataplane/dpdk/
  // routes.cc). Both stay within the contract (control_api_test): an id in use is never
  // another's. ListRoutes lists hops in use only.
  --next_hops_[it->second].routes;
  routes_.erase(it);
  return absl::OkStatus();
}

// Idempotence is Mutations' (Change::PauseWorker/ResumeWorker): it calls these only to change
// the state, which it reads from CoreStats::paused.
absl::Status FakeBackend::PauseWorker(int core) {
  Worker& w = *workers_.at(static_cast<size_t>(core));
  absl::Status s = PauseAndWait(core);
  if (s.ok()) w.paused.store(true);
  return s;
}

absl::Status FakeBackend::ResumeWorker(int core) {
  Worker& w = *workers_.at(static_cast<size_t>(core));
  absl::Status s = ResumeAndWait(core);
  if (s.ok()) w.paused.store(false);
  return s;
}

// Pause and resume are complete only when the worker itself says so (its own `parked` flag,
// written at its quiescent point, like the DPDK engine's). Pool::PauseWorker alone is not
// enough: its `parked` flag stays set after Pool::ResumeWorker until the next epoch change, so a
// second pause at the same epoch returns before the worker has parked (see the report of
// issue 4: buffer-core bug).
absl::Status FakeBackend::WaitParked(int core, bool parked) {
  Worker& w = *workers_.at(static_cast<size_t>(core));
  if (!WaitUntil(pool_->config().quiesce_timeout,
                 [&] { return w.parked.load(std::memory_order_acquire) == parked; })) {
    return absl::DeadlineExceededError(
        absl::StrCat("core ", core, parked ? " did not park" : " did not leave its parked state",
                     " within ", pool_->config().quiesce_timeout.count(), " us"));
  }
  return absl::OkStatus();
}

absl::Status FakeBackend::PauseAndWait(int core) {
  absl::Status s = pool_->PauseWorker(core);
  return s.ok() ? WaitParked(core, true) : s;
}

absl::Status FakeBackend::ResumeAndWait(int core) {
  absl::Status s = pool_->ResumeWorker(core);
  return s.ok() ? WaitParked(core, false) : s;
}

absl::StatusOr<pool::InFlightCensus> FakeBackend::CensusInFlight(
    std::chrono::microseconds wait) const {
  if (options_.native) return absl::FailedPreconditionError("the native pool keeps no stamps");
  absl::StatusOr<pool::InFlightCensus> c = pool_->Census(wait);
  if (c.ok()) c->tsc_hz = TscHz();
  return c;
}

absl::StatusOr<AuditResult> FakeBackend::Audit() {
  // Quiescent point: park every running worker (its layers flushed), audit, resume them.
  std::vector<int> parked;
  absl::Status status;
  for (auto& w : workers_) {
    if (w->paused.load()) continue;
    status = PauseAndWait(w->core);
    if (!status.ok()) break;
    parked.push_back(w->core);
  }
  pool::AuditReport r;
  if (status.ok()) {
    uint64_t in_flight = 0;
    for (auto& w : workers_) in_flight += w->in_flight.load();
    r = pool_->Audit(in_flight);
  }
  for (int c : parked) (void)ResumeAndWait(c);
  if (!status.ok()) return absl::UnavailableError(absl::StrCat("audit: ", status.message()));
  return r;
}

}  // namespace skbnf::control::testing
