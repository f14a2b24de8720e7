// SPDX-License-Identifier: BSD-3-Clause
#include "server/telemetry/telemetry_commands.h"

#include <rte_mempool.h>
#include <rte_telemetry.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "server/core/build_info.h"
#include "server/telemetry/multi_process.h"

namespace skbnf::telemetry {
namespace {

using control::Backend;

// The Backend the commands serve (none: they answer null). Never destroyed: DPDK's telemetry
// threads may call a command until the process exits.
struct Served {
  absl::Mutex mu;
  const Backend* backend ABSL_GUARDED_BY(mu) = nullptr;
  bool registered ABSL_GUARDED_BY(mu) = false;
};
Served& GetServed() {
  static Served* s = new Served();
  return *s;
}

// One dict container (rte_tel_data_add_dict_container frees it with its parent: keep = 0).
struct Dict {
  rte_tel_data* d;
  explicit Dict(rte_tel_data* into) : d(into) { rte_tel_data_start_dict(d); }
  Dict() : d(rte_tel_data_alloc()) {
    if (d != nullptr) rte_tel_data_start_dict(d);
  }
  void U64(const char* name, uint64_t v) const { rte_tel_data_add_dict_u64(d, name, v); }
  void Int(const char* name, int v) const { rte_tel_data_add_dict_int(d, name, v); }
  // A signed count (DPDK 22.11's telemetry has int, not int64: clamped, never wrapped).
  void I64(const char* name, int64_t v) const {
    Int(name, static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)));
  }
  void Str(const char* name, const std::string& v) const {
    rte_tel_data_add_dict_string(d, name, v.c_str());
  }
  // Moves `child` into this dict under `name` (a child that could not be allocated is left out).
  void Add(const std::string& name, Dict& child) const {
    if (child.d == nullptr) return;
    if (rte_tel_data_add_dict_container(d, name.c_str(), child.d, 0) != 0) {
      rte_tel_data_free(child.d);
    }
    child.d = nullptr;
  }
};

// Runs `fill` with the attached Backend under the reader lock, or answers null (-ENODEV).
template <typename Fill>
int WithBackend(Fill fill) {
  Served& s = GetServed();
  absl::ReaderMutexLock l(&s.mu);
  if (s.backend == nullptr) return -ENODEV;
  return fill(*s.backend);
}

uint64_t PortDrops(const control::PortCounters& p) {
  uint64_t n = 0;
  for (const auto& [reason, count] : p.drops) n += count;
  return n;
}

void AddPoolFacts(const Dict& d, const control::PoolInfo& p) {
  Dict pool;
  pool.Str("name", p.name);
  pool.Str("ops", p.ops_name);
  pool.Int("native", p.native ? 1 : 0);
  pool.U64("populated", p.populated);
  pool.U64("element_size", p.element_size);
  pool.U64("objects_per_slab", p.objects_per_slab);
  pool.Int("colour", p.colour ? 1 : 0);
  pool.Int("debug", p.debug ? 1 : 0);
  pool.U64("native_cache_size", p.native_cache_size);
  d.Add("pool", pool);
}

int Info(const char*, const char*, rte_tel_data* out) {
  return WithBackend([&](const Backend& b) {
    const control::Info info = b.GetInfo();
    const control::BuildInfo& build = control::GetBuildInfo();
    const Dict d(out);
    d.Str("version", build.version);
    d.Str("git_commit", build.git_commit);
    d.Str("backend", info.backend);
    d.Str("mode", dpdk::ForwardingModeName(info.mode));
    d.U64("uptime_seconds",
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::steady_clock::now() - info.started)
                                    .count()));
    AddPoolFacts(d, info.pool);
    rte_tel_data* workers = rte_tel_data_alloc();
    if (workers != nullptr) {
      rte_tel_data_start_array(workers, RTE_TEL_INT_VAL);
      for (const control::LcoreInfo& l : info.lcores) {
        if (l.role == control::LcoreInfo::Role::kMain)
          d.Int("main_lcore", static_cast<int>(l.lcore_id));
        if (l.role == control::LcoreInfo::Role::kWorker) {
          rte_tel_data_add_array_int(workers, static_cast<int>(l.lcore_id));
        }
      }
      rte_tel_data_add_dict_container(out, "worker_lcores", workers, 0);
    }
    d.U64("ports", b.ListPorts().size());
    // This process's mempool ops table by index: a secondary must have the same indices
    // (README.md, "Mempool ops indices").
    if (rte_tel_data* ops = rte_tel_data_alloc(); ops != nullptr) {
      rte_tel_data_start_array(ops, RTE_TEL_STRING_VAL);
      for (uint32_t i = 0; i < rte_mempool_ops_table.num_ops; ++i) {
        rte_tel_data_add_array_string(ops, rte_mempool_ops_table.ops[i].name);
      }
      rte_tel_data_add_dict_container(out, "mempool_ops", ops, 0);
    }
    const MultiProcessState& mp = CurrentMultiProcess();
    d.Int("multi_process", mp.attachable ? 1 : 0);
    d.Int("capture", mp.pdump ? 1 : 0);
    if (!mp.attachable) d.Str("multi_process_note", mp.note);
    return 0;
  });
}

int Strategy(const char*, const char*, rte_tel_data* out) {
  return WithBackend([&](const Backend& b) {
    const control::PoolInfo pool = b.GetInfo().pool;
    const control::StatsSnapshot s = b.GetStats();
    const Dict d(out);
    d.Str("strategy", control::StrategyText(b, pool));
    d.U64("epoch", b.GetEpoch());
    d.Int("swappable", pool.native ? 0 : 1);
    d.U64("swaps_ok", s.swaps_ok);
    d.U64("swaps_failed", s.swaps_failed);
    return 0;
  });
}

// One worker's figures; `detail`: per port, drops by reason, per layer.
void AddCore(const Dict& d, const control::CoreStats& c, bool detail) {
  uint64_t rx = 0, tx = 0, drops = 0;
  Dict ports;
  for (const control::PortCounters& p : c.ports) {
    rx += p.rx_packets;
    tx += p.tx_packets;
    drops += PortDrops(p);
    if (!detail) continue;
    Dict port;
    port.U64("rx_packets", p.rx_packets);
    port.U64("rx_bytes", p.rx_bytes);
    port.U64("tx_packets", p.tx_packets);
    port.U64("tx_bytes", p.tx_bytes);
    if (p.rx_nombuf.has_value()) port.U64("rx_nombuf", *p.rx_nombuf);
    Dict by_reason;
    for (const auto& [reason, count] : p.drops) by_reason.U64(reason.c_str(), count);
    port.Add("drops", by_reason);
    ports.Add(absl::StrCat(p.port), port);
  }
  d.Int("paused", c.paused ? 1 : 0);
  d.U64("polls", c.polls);
  d.U64("busy_polls", c.busy_polls);
  d.U64("busy_cycles", c.busy_cycles);
  d.U64("busy_packets", c.busy_packets);
  d.U64("rx_packets", rx);
  d.U64("tx_packets", tx);
  d.U64("drops", drops);
  d.U64("pool_allocs", c.pool.allocs);
  d.U64("pool_frees", c.pool.frees);
  d.U64("alloc_failures", c.pool.alloc_failures);
  if (!detail) {
    rte_tel_data_free(ports.d);
    return;
  }
  d.U64("tsc_hz", c.tsc_hz);
  d.U64("parked_loops", c.parked_loops);
  d.U64("store_allocs", c.pool.store_allocs);
  d.U64("store_frees", c.pool.store_frees);
  d.U64("store_locks", c.pool.store_locks);
  d.U64("depot_locks", c.pool.depot_locks);
  d.U64("depot_waits", c.pool.depot_waits);
  d.U64("depot_wait_ticks", c.pool.depot_wait_ticks);
  d.Add("ports", ports);
  Dict layers;
  for (int i = 0; i < pool::kNumLayers; ++i) {
    const pool::LayerCountersSnapshot& l = c.pool.layer[i];
    Dict layer;
    layer.U64("objects", c.layer_objects.objects[i]);
    layer.U64("alloc_hits", l.alloc_hits);
    layer.U64("alloc_misses", l.alloc_misses);
    layer.U64("free_hits", l.free_hits);
    layer.U64("free_misses", l.free_misses);
    layer.U64("bulk", l.bulk);
    layers.Add(std::string(pool::LayerName(static_cast<pool::Layer>(i))), layer);
  }
  d.Add("layers", layers);
}

// /skbnf/stats: totals and a short line per worker; /skbnf/stats,CORE: that worker in detail.
// A core that is no worker (or not a number) is -EINVAL: DPDK answers null.
int Stats(const char*, const char* params, rte_tel_data* out) {
  int want = -1;
  if (params != nullptr && params[0] != '\0' && (!absl::SimpleAtoi(params, &want) || want < 0)) {
    return -EINVAL;
  }
  return WithBackend([&](const Backend& b) {
    const control::StatsSnapshot s = b.GetStats();
    if (want >= 0) {
      for (const control::CoreStats& c : s.cores) {
        if (c.core != want) continue;
        const Dict d(out);
        d.Int("core", c.core);
        AddCore(d, c, /*detail=*/true);
        return 0;
      }
      return -EINVAL;
    }
    const Dict d(out);
    uint64_t rx = 0, tx = 0, drops = 0, failures = 0;
    Dict cores;
    for (const control::CoreStats& c : s.cores) {
      for (const control::PortCounters& p : c.ports) {
        rx += p.rx_packets;
        tx += p.tx_packets;
        drops += PortDrops(p);
      }
      failures += c.pool.alloc_failures;
      Dict core;
      AddCore(core, c, /*detail=*/false);
      cores.Add(absl::StrCat(c.core), core);
    }
    d.U64("rx_packets", rx);
    d.U64("tx_packets", tx);
    d.U64("drops", drops);
    d.U64("alloc_failures", failures);
    d.U64("other_threads_allocs", s.other.allocs);
    d.U64("other_threads_frees", s.other.frees);
    d.U64("swaps_ok", s.swaps_ok);
    d.U64("swaps_failed", s.swaps_failed);
    d.Add("cores", cores);
    return 0;
  });
}

// What DPDK itself says of the pool (the ops' get_count plus DPDK's lcore caches): the figure
// dpdk-proc-info and rte_mempool_dump print. -1 when the pool is not found.
int64_t DpdkAvailCount(const std::string& name) {
  const rte_mempool* mp = rte_mempool_lookup(name.c_str());
  return mp == nullptr ? -1 : static_cast<int64_t>(rte_mempool_avail_count(mp));
}

int Buffers(const char*, const char*, rte_tel_data* out) {
  return WithBackend([&](const Backend& b) {
    const control::PoolInfo pool = b.GetInfo().pool;
    const control::StatsSnapshot s = b.GetStats();
    const Dict d(out);
    d.Str("pool", pool.name);
    d.U64("populated", s.pool.populated != 0 ? s.pool.populated : pool.populated);
    // Gauges read one after the other while the workers run (server/core/backend.h, PoolGauges):
    // exact only when the data plane is quiescent. The exact check is the audit (skbnfctl audit).
    d.Int("exact", 0);
    if (const int64_t avail = DpdkAvailCount(pool.name); avail >= 0) {
      d.U64("dpdk_avail_count", static_cast<uint64_t>(avail));
    }
    if (pool.native) {
      d.Str("note", "DPDK's native mempool: skbnf's places (store, layers, depots) do not exist");
      return 0;
    }
    d.U64("in_store", s.pool.in_store);
    Dict layers;
    uint64_t in_layers = 0;
    for (int i = 0; i < pool::kNumLayers; ++i) {
      layers.U64(std::string(pool::LayerName(static_cast<pool::Layer>(i))).c_str(),
                 s.pool.in_layers[i]);
      in_layers += s.pool.in_layers[i];
    }
    d.U64("in_layers", in_layers);
    d.Add("layers", layers);
    d.U64("in_depots", s.pool.in_depots);
    d.U64("in_flight", s.pool.in_flight);
    d.U64("available", s.pool.in_store + in_layers + s.pool.in_depots);
    Dict cores;
    for (const control::CoreStats& c : s.cores) {
      Dict core;
      for (int i = 0; i < pool::kNumLayers; ++i) {
        core.U64(std::string(pool::LayerName(static_cast<pool::Layer>(i))).c_str(),
                 c.layer_objects.objects[i]);
      }
      cores.Add(absl::StrCat(c.core), core);
    }
    d.Add("cores", cores);
    Dict rings;  // in flight, where the PMD tells (e.g. AF_XDP's ring indices)
    for (const control::PortInfo& p : b.ListPorts()) {
      if (!p.has_ring_mbufs) continue;
      Dict port;
      port.U64("rx", p.rx_ring_mbufs);
      port.U64("tx", p.tx_ring_mbufs);
      port.Str("source", p.ring_mbufs_source);
      rings.Add(absl::StrCat(p.id), port);
    }
    d.Add("port_rings", rings);
    // Where the in-flight objects are (common/buffer_places.h): each port's RX and TX rings
    // from the pool's counters, each worker's hands, other threads, and what none explains.
    if (s.places.has_value()) {
      Dict places;
      for (const dpdk::BufferPlaces::Port& p : s.places->ports) {
        Dict port;
        port.I64("rx_ring", p.rx_ring);
        port.I64("tx_ring", p.tx_ring);
        places.Add(absl::StrCat(p.id), port);
      }
      d.Add("ports", places);
      Dict hands;
      for (const dpdk::BufferPlaces::Core& c : s.places->cores) {
        hands.I64(absl::StrCat(c.lcore).c_str(), c.in_hands);
      }
      d.Add("in_hands", hands);
      d.I64("other_threads", s.places->other_threads);
      d.I64("unaccounted", control::UnaccountedObjects(s.pool, *s.places));
    }
    d.U64("reclaims", s.pool.reclaims);
    d.U64("reclaim_timeouts", s.pool.reclaim_timeouts);
    d.U64("reclaimed_objects", s.pool.reclaimed_objects);
    return 0;
  });
}

// /skbnf/latency: per worker, per RX port the latency percentiles since start; the iterations by
// packets and by duration (non-empty bins), the slow-iteration count and the last ones.
void AddWorkerPerf(const Dict& d, const dpdk::WorkerPerf& w, uint64_t hz) {
  Dict ports;
  for (const dpdk::PortLatency& p : w.ports) {
    Dict port;
    port.U64("samples", p.count);
    port.U64("p50_ns", dpdk::CyclesToNs(dpdk::LatencyQuantile(p.buckets, 0.50, p.max_cycles), hz));
    port.U64("p99_ns", dpdk::CyclesToNs(dpdk::LatencyQuantile(p.buckets, 0.99, p.max_cycles), hz));
    port.U64("p999_ns",
             dpdk::CyclesToNs(dpdk::LatencyQuantile(p.buckets, 0.999, p.max_cycles), hz));
    port.U64("max_ns", dpdk::CyclesToNs(p.max_cycles, hz));
    port.U64("mean_ns", p.count != 0 ? dpdk::CyclesToNs(p.sum_cycles / p.count, hz) : 0);
    ports.Add(absl::StrCat(p.port), port);
  }
  d.Add("ports", ports);
  d.U64("iterations", w.iterations);
  Dict by_packets;
  for (int b = 0; b < dpdk::kIterPacketBins; ++b) {
    if (w.iter_packets[b] == 0) continue;
    const uint64_t lo = dpdk::IterPacketBinLow(b), hi = dpdk::IterPacketBinHigh(b);
    const std::string name = lo == hi               ? absl::StrCat(lo)
                             : hi == UINT64_MAX     ? absl::StrCat(lo, "+")
                                                    : absl::StrCat(lo, "-", hi);
    by_packets.U64(name.c_str(), w.iter_packets[b]);
  }
  d.Add("by_packets", by_packets);
  Dict by_duration;  // "<N" ns: below 2^k cycles
  for (int k = 0; k < dpdk::kIterCycleBins; ++k) {
    if (w.iter_cycles[k] == 0) continue;
    const uint64_t hi = dpdk::IterCycleBinHigh(k);
    const std::string name =
        hi == UINT64_MAX ? std::string("more") : absl::StrCat("<", dpdk::CyclesToNs(hi, hz));
    by_duration.U64(name.c_str(), w.iter_cycles[k]);
  }
  d.Add("by_duration_ns", by_duration);
  d.U64("slow_iterations", w.slow_iterations);
  Dict slow;
  for (size_t i = 0; i < w.slow.size(); ++i) {
    const dpdk::SlowIteration& s = w.slow[i];
    Dict one;
    one.U64("monotonic_ns", s.monotonic_ns);
    one.U64("duration_ns", dpdk::CyclesToNs(s.cycles, hz));
    one.U64("packets", s.packets);
    one.Str("causes", absl::StrJoin(dpdk::SlowCauseNames(s.causes, s.packets), ","));
    slow.Add(absl::StrCat(i), one);
  }
  d.Add("slow", slow);
}

int Latency(const char*, const char*, rte_tel_data* out) {
  return WithBackend([&](const Backend& b) {
    const control::StatsSnapshot s = b.GetStats();
    if (!s.perf.has_value()) return -ENOTSUP;  // a data plane that records none: null
    const Dict d(out);
    d.U64("tsc_hz", s.perf->tsc_hz);
    d.U64("sample_every", s.perf->settings.sample_every);
    d.U64("slow_iteration_us", s.perf->settings.slow_iteration_us);
    Dict cores;
    for (const dpdk::WorkerPerf& w : s.perf->workers) {
      Dict core;
      AddWorkerPerf(core, w, s.perf->tsc_hz);
      cores.Add(absl::StrCat(w.core), core);
    }
    d.Add("cores", cores);
    return 0;
  });
}

struct Command {
  const char* name;
  telemetry_cb fn;
  const char* help;
};
constexpr Command kCommands[] = {
    {"/skbnf/info", &Info, "skbnfd: version, mode, pool, lcores, multi-process. No parameters"},
    {"/skbnf/strategy", &Strategy,
     "skbnfd: the buffer strategy in use, epoch, swaps. No parameters"},
    {"/skbnf/stats", &Stats,
     "skbnfd: totals and per worker. Parameters: none, or a worker's core id for its detail"},
    {"/skbnf/buffers", &Buffers,
     "skbnfd: every pool object by place (store, layers, depots, in flight). No parameters"},
    {"/skbnf/latency", &Latency,
     "skbnfd: packet latency per worker and RX port, loop iterations, slow iterations. No "
     "parameters"},
};

}  // namespace

absl::StatusOr<std::unique_ptr<TelemetryCommands>> TelemetryCommands::Attach(
    const Backend& backend) {
  Served& s = GetServed();
  absl::MutexLock l(&s.mu);
  if (s.backend != nullptr) {
    return absl::FailedPreconditionError("telemetry commands already serve another backend");
  }
  if (!s.registered) {
    for (const Command& c : kCommands) {
      if (int rc = rte_telemetry_register_cmd(c.name, c.fn, c.help); rc != 0) {
        return absl::InternalError(
            absl::StrCat("DPDK telemetry refused the command ", c.name, " (", rc, ")"));
      }
    }
    s.registered = true;
  }
  s.backend = &backend;
  return std::unique_ptr<TelemetryCommands>(new TelemetryCommands());
}

bool WaitForEveryWorkerLoop(std::chrono::milliseconds bound) {
  Served& s = GetServed();
  absl::ReaderMutexLock l(&s.mu);
  if (s.backend == nullptr) return true;
  auto loops = [](const control::CoreStats& c) { return c.polls + c.parked_loops; };
  const control::StatsSnapshot before = s.backend->GetStats();
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const control::StatsSnapshot now = s.backend->GetStats();
    bool all = true;
    for (const control::CoreStats& b : before.cores) {
      for (const control::CoreStats& c : now.cores) {
        if (c.core == b.core && loops(c) < loops(b) + 2) all = false;
      }
    }
    if (all) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

TelemetryCommands::~TelemetryCommands() {
  Served& s = GetServed();
  absl::MutexLock l(&s.mu);  // waits for the callbacks in progress (reader locks)
  s.backend = nullptr;
}

}  // namespace skbnf::telemetry
