// SPDX-License-Identifier: BSD-3-Clause
// The engine's mbuf mempool: the skbnf ops driver over the buffer core (strategies swap while
// workers forward) or DPDK's native ring_mp_mc with its lcore cache (the baseline), sized from
// the rings; what it is (MempoolInfo) and the strategy swap.
//
// Layout controls (issue 23 item 2: does the --no-huge advantage come from the layout?). Where
// DPDK puts its mbufs depends on the page size: a pool that needs IOVA-contiguous objects may
// not let one cross a page (DPDK 22.11 lib/mempool/rte_mempool_ops_default.c,
// rte_mempool_op_populate_helper / check_obj_bounds; the page size from
// rte_mempool_get_page_size in lib/mempool/rte_mempool.c), so on --no-huge's 4 KiB pages each
// 2,368-byte element starts a page of its own, while skbnf's store packs them. Two knobs put
// each pool in the other's layout, so the four combinations can be measured on one memory:
//
//   EngineConfig     skbnfd flag                    effect
//   no_iova_contig   --pool-flags=no_iova_contig    ring_mp_mc made with
//                                                   RTE_MEMPOOL_F_NO_IOVA_CONTIG: page size 0
//                                                   for the populate, objects one element apart
//   store_stride     --store-stride=N               skbnf's store places objects N bytes
//                                                   apart (4096: one mbuf per 4 KiB page)
//
// Both are benchmark and diagnostic knobs, not production settings. no_iova_contig in
// particular: rte_mempool_populate_default then hands the objects RTE_BAD_IOVA as their IO
// address (lib/mempool/rte_mempool.c, "if (need_iova_contig_obj) iova = mz->iova; else iova =
// RTE_BAD_IOVA"), so rte_pktmbuf_init's buf_iova is no DMA address, and a buffer may cross a
// page, so it is not IOVA-contiguous either. Virtual PMDs (net_null, net_ring, net_pcap, ...)
// never DMA into mbufs; a real NIC would. The engine therefore refuses the flag unless every
// port is on the vdev bus. The native pool is always made step by step as
// rte_pktmbuf_pool_create_by_ops makes it (lib/mbuf/rte_mbuf.c: rte_mempool_create_empty,
// rte_mempool_set_ops_byname, rte_pktmbuf_pool_init, rte_mempool_populate_default,
// rte_mempool_obj_iter(rte_pktmbuf_init)), because that function takes no mempool flags; with
// no flag the result is the same pool.
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/pool_sizing.h"
#include "dataplane/dpdk/skbnf_mempool.h"

namespace skbnf::dpdk {
namespace {

// One mbuf's element as DPDK lays it out in our pools (object header + rte_mbuf + the default
// data room, no private area): what a store stride must at least be.
uint32_t MbufElementBytes() {
  rte_mempool_objsz sz;
  return rte_mempool_calc_obj_size(sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 0, &sz);
}

// ring_mp_mc with `flags`, as rte_pktmbuf_pool_create_by_ops does it (see the top).
absl::StatusOr<rte_mempool*> CreateNativePool(const std::string& name, uint32_t n, uint32_t cache,
                                              int socket, unsigned flags) {
  rte_pktmbuf_pool_private priv = {};
  priv.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE;
  priv.mbuf_priv_size = 0;
  rte_mempool* mp =
      rte_mempool_create_empty(name.c_str(), n, sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, cache,
                               sizeof(rte_pktmbuf_pool_private), socket, flags);
  if (mp == nullptr) return absl::ResourceExhaustedError(rte_strerror(rte_errno));
  if (int rc = rte_mempool_set_ops_byname(mp, "ring_mp_mc", nullptr); rc != 0) {
    rte_mempool_free(mp);
    return absl::InternalError(absl::StrCat("mempool ops ring_mp_mc: ", rte_strerror(-rc)));
  }
  rte_pktmbuf_pool_init(mp, &priv);
  if (int rc = rte_mempool_populate_default(mp); rc < 0) {
    rte_mempool_free(mp);
    return absl::ResourceExhaustedError(rte_strerror(-rc));
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

}  // namespace

absl::Status Engine::Impl::CheckLayoutControls() const {
  if (config.no_iova_contig) {
    if (ops != PoolOps::kRingMpMc) {
      return absl::InvalidArgumentError(
          "pool flag no_iova_contig (--pool-flags) is a flag of DPDK's own mempool: write it "
          "with --pool-ops=ring_mp_mc; skbnf's store lays out its objects itself (for one mbuf "
          "per 4 KiB page write --store-stride=4096)");
    }
    for (uint16_t id : port_ids) {
      rte_eth_dev_info info{};
      const char* bus = "?";
      if (rte_eth_dev_info_get(id, &info) == 0 && info.device != nullptr &&
          rte_dev_bus(info.device) != nullptr) {
        bus = rte_bus_name(rte_dev_bus(info.device));
      }
      if (std::strcmp(bus, "vdev") != 0) {
        char name[RTE_ETH_NAME_MAX_LEN] = {};
        rte_eth_dev_get_name_by_port(id, name);
        return absl::InvalidArgumentError(absl::StrCat(
            "pool flag no_iova_contig (--pool-flags): port ", id, " (", name, ", bus ", bus,
            ") may DMA into mbufs, and DPDK gives a no_iova_contig pool's mbufs "
            "no IO address; it is a benchmark knob for virtual devices (vdevs) only: leave it "
            "out with this port"));
      }
    }
  }
  if (config.store_stride != 0) {
    if (ops != PoolOps::kSkbnf) {
      return absl::InvalidArgumentError(
          "store stride (--store-stride) lays out skbnf's slab store: write it with "
          "--pool-ops=skbnf; for DPDK's own pool packed write --pool-flags=no_iova_contig");
    }
    const uint32_t elt = MbufElementBytes();
    const uint32_t line = RTE_CACHE_LINE_SIZE, max = pool::SlabStoreConfig::kMaxStride;
    if (config.store_stride < elt || config.store_stride % line != 0 || config.store_stride > max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "store stride ", config.store_stride, " (--store-stride): an mbuf element is ", elt,
          " bytes; write 0 (packed) or a multiple of ", line, " from ",
          (elt + line - 1) / line * line, " to ", max, ", e.g. 4096 (one mbuf per 4 KiB page)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpPool() {
  if (absl::Status st = CheckLayoutControls(); !st.ok()) return st;
  // The default size counts each port's real need (pool_sizing.h: net_af_xdp's fill-ring
  // reserve instead of its ring), as the start-up check does: the ports' drivers are known
  // before their queues exist.
  uint64_t af_xdp_ports = 0;
  for (uint16_t id : port_ids) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(id, &info) == 0 && info.driver_name != nullptr &&
        std::string_view(info.driver_name) == "net_af_xdp") {
      ++af_xdp_ports;
    }
  }
  const PoolNeeds needs = PoolNeedsOf(config, port_ids.size(), workers.size(), af_xdp_ports);
  const uint64_t want = PoolMbufs(config, needs);
  if (want > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("a pool of ", want, " mbufs is too big"));
  }
  const uint32_t n = static_cast<uint32_t>(want);
  static std::atomic<int> seq{0};
  mp_name = absl::StrCat("skbnf_mbuf_", seq.fetch_add(1));
  if (ops == PoolOps::kSkbnf) {
    MempoolOptions o;
    o.strategy = config.strategy;
    o.colour = config.colour;
    o.debug = config.pool_debug;
    o.store_stride = config.store_stride;
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
    auto created =
        CreateNativePool(mp_name, n, config.mbuf_cache, static_cast<int>(rte_socket_id()),
                         config.no_iova_contig ? RTE_MEMPOOL_F_NO_IOVA_CONTIG : 0);
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat("cannot create the mbuf pool (", n,
                                       " mbufs, ops ring_mp_mc): ", created.status().message(),
                                       "; give EAL more memory (-m) or write a smaller --mbufs"));
    }
    mp = *created;
  }
  pool = PoolOf(mp);
  if (config.native_twin) {
    auto twin = CreateNativePool(absl::StrCat(mp_name, "_twin"), n, config.mbuf_cache,
                                 static_cast<int>(rte_socket_id()), 0);
    if (!twin.ok()) {
      return absl::Status(twin.status().code(),
                          absl::StrCat("cannot create the native twin pool (", n,
                                       " mbufs, ops ring_mp_mc): ", twin.status().message(),
                                       "; the twin doubles the pool's memory: give EAL more (-m)"));
    }
    twin_mp = *twin;
  }
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
  m.ops = e.ops;
  m.populated = e.mp->populated_size;
  m.element_size = e.mp->elt_size;
  // skbnf pools: DPDK's lcore caches are the lcache layer, sized per worker by the strategy
  // (mp->cache_size only switches them on); native pools: the lcore cache asked for.
  m.cache_size = e.pool != nullptr ? 0 : e.mp->cache_size;
  m.socket_id = e.mp->socket_id;
  return m;
}

std::string Engine::strategy() const {
  if (impl_->pool != nullptr && !native_twin_in_use()) return impl_->pool->strategy().ToString();
  return absl::StrCat("ring_mp_mc cache=", impl_->config.mbuf_cache);
}

absl::Status Engine::UseNativeTwin(bool native) {
  if (impl_->twin_mp == nullptr) {
    return absl::FailedPreconditionError("no native twin queues (start with --native-twin)");
  }
  pool::MutexLock lock(&impl_->control_mu);
  if (impl_->stopped) return absl::FailedPreconditionError("engine stopped");
  impl_->twin_in_use.store(native, std::memory_order_relaxed);
  return absl::OkStatus();
}

bool Engine::native_twin_in_use() const {
  return impl_->twin_in_use.load(std::memory_order_relaxed);
}

bool Engine::swappable() const { return impl_->pool != nullptr; }

absl::Status Engine::CheckSwappable() const {
  return impl_->pool != nullptr ? absl::OkStatus() : NativePoolSwapRefusal(PoolOpsName(impl_->ops));
}

absl::StatusOr<pool::SwapReport> Engine::SwapStrategy(const pool::StrategySpec& spec,
                                                      std::chrono::microseconds timeout) {
  if (absl::Status st = CheckSwappable(); !st.ok()) return st;
  pool::MutexLock lock(&impl_->control_mu);
  if (impl_->stopped) return absl::FailedPreconditionError("engine stopped");
  return timeout.count() > 0 ? impl_->pool->Swap(spec, timeout) : impl_->pool->Swap(spec);
}

}  // namespace skbnf::dpdk
