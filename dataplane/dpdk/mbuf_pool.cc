// SPDX-License-Identifier: BSD-3-Clause
// The engine's mbuf mempool: the skbnf ops driver over the buffer core (strategies swap while
// workers forward) or DPDK's native ring_mp_mc with its lcore cache (the baseline), sized from
// the rings; what it is (MempoolInfo) and the strategy swap.
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/skbnf_mempool.h"

namespace skbnf::dpdk {

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
                          absl::StrCat("cannot create the mbuf pool (", n,
                                       " mbufs, ops skbnf): ", created.status().message(),
                                       "; give EAL more memory (-m) or write a smaller --mbufs"));
    }
    mp = *created;
  } else {
    mp = rte_pktmbuf_pool_create_by_ops(mp_name.c_str(), n, config.mbuf_cache, 0,
                                        RTE_MBUF_DEFAULT_BUF_SIZE,
                                        static_cast<int>(rte_socket_id()), "ring_mp_mc");
    if (mp == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot create the mbuf pool (", n, " mbufs, ops ring_mp_mc): ", rte_strerror(rte_errno),
          "; give EAL more memory (-m) or write a smaller --mbufs"));
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

MempoolInfo Engine::mempool_info() const {
  const Impl& e = *impl_;
  MempoolInfo m;
  m.name = e.mp->name;
  m.ops_name = e.config.pool_ops;
  m.populated = e.mp->populated_size;
  m.element_size = e.mp->elt_size;
  // skbnf pools: DPDK's lcore caches are the lcache layer, sized per worker by the strategy
  // (mp->cache_size only switches them on); native pools: the lcore cache asked for.
  m.cache_size = e.pool != nullptr ? 0 : e.mp->cache_size;
  m.socket_id = e.mp->socket_id;
  return m;
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
  pool::MutexLock lock(&impl_->control_mu);
  if (impl_->stopped) return absl::FailedPreconditionError("engine stopped");
  return timeout.count() > 0 ? impl_->pool->Swap(*spec, timeout) : impl_->pool->Swap(*spec);
}

}  // namespace skbnf::dpdk
