// SPDX-License-Identifier: BSD-3-Clause
// Engine: creation (configuration checks, then ports, workers, pool, l3 tables in that order),
// Start and Stop. Each part's set-up lives in its own file (see engine.h).
#include "dataplane/dpdk/engine.h"

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

absl::Status Engine::Impl::Init() {
  if (config.burst == 0 || config.burst > kMaxBurst) {
    return absl::InvalidArgumentError(
        absl::StrCat("burst ", config.burst, " is out of range; write 1..", kMaxBurst));
  }
  ops = config.pool_ops;  // config.strategy: a parsed spec (engine.h), nothing to check here
  if (config.mbuf_cache > RTE_MEMPOOL_CACHE_MAX_SIZE) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mbuf cache ", config.mbuf_cache, " is too big; write 0..", RTE_MEMPOOL_CACHE_MAX_SIZE));
  }
  if (config.native_twin && (ops != PoolOps::kSkbnf || config.rx_queues != 1)) {
    return absl::InvalidArgumentError(
        "native twin queues compare the skbnf pool with DPDK's: they need pool_ops skbnf and "
        "rx_queues 1 (each polled queue 0 gets its twin queue 1)");
  }
  if (absl::Status st = SetUpPerf(); !st.ok()) return st;
  if (absl::Status st = SelectPorts(); !st.ok()) return st;
  if (absl::Status st = SetUpWorkers(); !st.ok()) return st;
  if (absl::Status st = SetUpPool(); !st.ok()) return st;
  if (absl::Status st = SetUpPorts(); !st.ok()) return st;
  if (absl::Status st = SetUpL3(); !st.ok()) return st;
  return absl::OkStatus();
}

Engine::Impl::~Impl() {
  // Engine::~Engine does not destroy an Impl whose workers still run (wedged): here every
  // launched worker has returned from its loop.
  if (!stopped) (void)ClosePorts();
  if (lpm != nullptr) rte_lpm_free(lpm);
  if (rcu != nullptr) rte_free(rcu);
  if (mp != nullptr) rte_mempool_free(mp);
  if (twin_mp != nullptr) rte_mempool_free(twin_mp);
}

// ---------------------------------------------------------------------------------------------
// Engine.

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
// A worker that never left its loop still reads this Impl, its ports, pool and tables: when Stop
// found one (or nobody called Stop) and it is still in its loop after the bound, all of it is
// leaked rather than freed under it. The process is about to exit in that case (skbnfd exits
// 1; EalCleanup leaves EAL's memory mapped while an lcore runs, eal.cc).
namespace {
// The Impls left to wedged workers: reachable, so that LeakSanitizer does not report what is
// kept on purpose.
std::vector<Engine::Impl*>* g_left_to_wedged_workers = new std::vector<Engine::Impl*>();
}  // namespace

Engine::~Engine() {
  Impl& e = *impl_;
  if (e.started && !e.stopped) {
    e.stop.store(true);
    const std::chrono::milliseconds bound =
        e.wedged ? std::chrono::milliseconds(100) : e.config.stop_timeout;
    if (absl::Status st = e.WaitWorkersStopped(bound); !st.ok()) {
      g_left_to_wedged_workers->push_back(impl_.release());
      return;
    }
  }
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  if (absl::Status st = impl->Init(); !st.ok()) return st;
  std::unique_ptr<Engine> engine(new Engine(std::move(impl)));
  for (const RouteSpec& rs : config.routes) {
    auto r = engine->ResolveRoute(rs);
    if (!r.ok()) return r.status();
    if (absl::StatusOr<uint32_t> id = engine->AddRoute(*r); !id.ok()) return id.status();
  }
  return engine;
}

const EngineConfig& Engine::config() const { return impl_->config; }
pool::Pool* Engine::pool() const { return impl_->pool; }
bool Engine::running() const { return impl_->started && !impl_->stopped; }

absl::Status Engine::Start() {
  pool::MutexLock lock(&impl_->control_mu);
  Impl& e = *impl_;
  if (e.started) return absl::FailedPreconditionError("engine already started");
  for (uint16_t id : e.port_ids) {
    if (absl::Status st = e.CheckStartable(id); !st.ok()) return st;
  }
  for (uint16_t id : e.port_ids) {
    const uint64_t out0 = e.OtherOut();  // most PMDs fill their RX rings here
    const int started = rte_eth_dev_start(id);
    e.Book(id, out0);
    if (started != 0) {
      return absl::InternalError(
          absl::StrCat("port ", id, " (", e.ports[id].name, "): start: ", rte_strerror(-started)));
    }
    e.ports[id].started.store(true);
    // -ENOTSUP is not an error: the PMD has no promiscuous mode to turn on (DPDK 22.11
    // lib/ethdev/rte_ethdev.h, rte_eth_promiscuous_enable: "(-ENOTSUP) if support for
    // promiscuous_enable() does not exist for the device"). net_virtio_user answers it when its
    // device has no control queue (no `cq=1`: virtio_user_dev.c then clears
    // VIRTIO_NET_F_CTRL_RX, and virtio_dev_promiscuous_enable says "host does not support rx
    // control"): the vhost backend delivers every frame of the port anyway. Any other error
    // (-EIO: device removed; an ioctl's errno from net_af_xdp, net_af_packet, net_tap) is one
    // the port could not be set up with: start-up stops naming the port.
    if (int rc = rte_eth_promiscuous_enable(id); rc != 0 && rc != -ENOTSUP) {
      return absl::InternalError(absl::StrCat("port ", id, " (", e.ports[id].name,
                                              "): rte_eth_promiscuous_enable: ", rte_strerror(-rc)));
    }
  }
  // The production loop has no hook; a test's hooks get the loop that calls them.
  lcore_function_t* const main = e.worker_hooks != nullptr ? &HookedWorkerMain : &WorkerMain;
  for (auto& w : e.workers) {
    if (int rc = rte_eal_remote_launch(main, w.get(), w->lcore); rc != 0) {
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
  pool::MutexLock lock(&impl_->control_mu);
  Impl& e = *impl_;
  if (!e.started) return absl::FailedPreconditionError("engine not started");
  if (e.stopped) return absl::OkStatus();
  e.stop.store(true, std::memory_order_relaxed);
  // Bounded: a worker that does not come round its loop is named, and nothing it may still use
  // is closed or freed under it.
  if (absl::Status st = e.WaitWorkersStopped(e.config.stop_timeout); !st.ok()) {
    e.wedged = true;
    e.final_audit = AuditReport{};
    e.final_audit.message = absl::StrCat("not taken: ", st.message());
    return st;
  }
  e.wedged = false;
  for (auto& w : e.workers) {
    if (w->launched.load()) rte_eal_wait_lcore(w->lcore);  // returned already: its result
  }
  if (e.pool != nullptr) {
    // NOT_FOUND (the only error) means the worker never registered: nothing to unregister.
    for (auto& w : e.workers) (void)e.pool->UnregisterWorker(static_cast<int>(w->lcore));
  }
  // Drain: stopping and closing the ports releases every mbuf their queues hold, except what
  // net_ring's rings hold (they outlive the port): those are taken back first.
  // net_af_xdp leaves what its sockets' rings hold when it closes (af_xdp_rings.cc): read from
  // the rings before the close, freed after it.
  const uint64_t from_rings = e.DrainRingPorts();
  XskTakeBack from_xsk = e.TakeBackFromXdpRings();
  const std::vector<std::string> close_errors = e.ClosePorts();
  from_xsk.Free();
  e.held_by_pmd_at_stop = from_xsk.in_kernel;
  e.stopped = true;
  e.final_audit = e.AuditNow(true);
  if (from_rings > 0) {
    absl::StrAppend(&e.final_audit.message, "; ", from_rings,
                    " mbufs taken back from net_ring rings at stop");
  }
  if (from_xsk.sockets > 0) absl::StrAppend(&e.final_audit.message, "; ", from_xsk.ToString());
  if (!close_errors.empty()) {
    const std::string all = absl::StrJoin(close_errors, "; ");
    absl::StrAppend(&e.final_audit.message, "; ", all);
    return absl::InternalError(absl::StrCat("closing the ports: ", all));
  }
  return absl::OkStatus();
}

}  // namespace skbnf::dpdk
