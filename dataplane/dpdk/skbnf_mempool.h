// SPDX-License-Identifier: BSD-3-Clause
// The `skbnf` mempool ops driver: DPDK's mempool ops table mapped onto skbnf::pool::Pool.
//
//   DPDK op          skbnf
//   ---------------  -------------------------------------------------------------------
//   alloc            Pool::Create: elt size = header + elt + trailer, handle = elt start +
//                    header size (the object pointer DPDK hands out); options from the
//                    mempool's own pool_config (CreatePktmbufPool) or, in a foreign
//                    application, from the environment (SKBNF_STRATEGY, ...)
//   calc_mem_size    the slab store's MemSize plus room to align the first slab
//   populate         Pool::Populate: slabs (optionally coloured); each object is announced to
//                    DPDK's per-object callback (mempool_add_elem) as
//                    rte_mempool_op_populate_helper does, and is then in the store
//   enqueue/dequeue  the calling thread's pool handle (Pool::Handle: Get/Put, one/burst), on
//                    core rte_lcore_id() (non-EAL threads: kNoCore): skbnfd's workers' and
//                    the plugin's foreign owners' (see "Two hosts")
//   get_count        store + per-core layers + depots
//   free             destroys the Pool (the memory is DPDK's)
//
// DPDK's lcore cache plays the `lcache` layer (skbnfd). DPDK's lcore cache never hides our
// layers: the plugin's pools have whatever the application asked for (testpmd --mbcache=0:
// none), and skbnfd's have none until a worker's strategy asks for `lcache`. Then (not with the
// debug switch) the ops switch DPDK's per-lcore caches on (mp->cache_size 1, the caches their
// own, all disabled: size 0, a put goes straight to the ops, a get is copied through the
// empty array), and a worker whose spec has `lcache:size=N` (N <= 512, no prefetch:
// Pool::HostsLcache) gets its lcore's cache resized to N (flush threshold 1.5 x N, as
// rte_mempool_create sets it) by the pool's adopt hook, which also flushes it into the layers
// below at every swap, pause, reclaim and unregistration. So the PMDs' inline rte_mempool_get/put
// serve the lcache layer with DPDK's own code (the algorithm the pool's own lcache layer copies
// step for step), and the single-object path of net_null's TX costs what it costs with DPDK's
// native pool. Counting stays exact: the ops count what the cache takes from and gives to the
// layers below (HostLcacheTally; refills, flushes and requests that bypass it), and the worker
// brackets each PMD call (and its own frees) with the cache's length: a region's balance len0 -
// len1 + taken - given is what the cache handed out (> 0) or took back (< 0), counted as the core's
// allocs or frees and the lcache layer's hits (CacheRegions, forward.cc). A PMD call that both
// allocates and frees is counted by its balance: exact for the vdevs and for NIC PMDs' normal paths
// (RX only allocates, TX only frees). The plugin keeps the pool's own lcache layer: nobody there
// brackets the PMD calls, and another lcore could not reclaim what DPDK's cache holds.
//
// Slab geometry. A slab is at most 64 KiB (or one page, if the pool needs IOVA-contiguous
// objects on pages smaller than that) and starts on a multiple of its size, so no object
// crosses a page boundary on 2 MiB / 1 GiB hugepages; objects per slab = 64 KiB / elt size (with
// a store stride, MempoolOptions::store_stride: 64 KiB / stride).
//
// Two hosts, one driver per build: the common ops (skbnf_mempool.cc) and the build's slot
// cache (mempool_driver.h: slot_cache_skbnfd.cc or slot_cache_plugin.cc).
//   skbnfd   links skbnf_mempool_ops and creates its pool with CreatePktmbufPool; the engine
//            registers its workers (Pool::RegisterWorker with their RX ports) and calls
//            Pool::Quiesce at the top of each poll loop, so strategies can be swapped while
//            traffic flows, and a failing Get reclaims from other workers through their
//            quiescent points (pool.h, "No stranded objects"). Each worker thread caches its
//            worker handle (Pool::For<kWorker>; slot_cache_skbnfd.cc): a call compares `mp` and
//            goes straight to the top layer's hit, whatever strategy the slot runs now.
//   plugin   libskbnf_mempool.so, loaded by any DPDK 22.11 application with `-d` and chosen
//            with `--mbuf-pool-ops-name=skbnf`. Nobody registers workers there, so every EAL
//            lcore is registered as a foreign owner when the pool is made: it has no
//            quiescent point, so the strategy is fixed for the pool's life, and each of its
//            operations is marked so that another lcore whose Get fails can take what this
//            lcore's layers hold (membarrier(2); pool_core.h), except the head pool's
//            single-object free, around which a reclaimer steals (headpool.h). Each thread
//            caches its foreign handle of the last pool it used (per hit kind), so a
//            single-object call compares `mp` and goes straight to the layer; threads that
//            are not EAL lcores are not cached and take the full path (slot_cache_plugin.cc).
//            Environment:
//              SKBNF_STRATEGY=<spec>  (default `magazine`; a bad spec is reported on stderr
//                                     and the pool creation fails)
//              SKBNF_COLOUR=1         slab colouring
//              SKBNF_DEBUG=1          the pool's double/foreign-free checks
//              SKBNF_STORE_STRIDE=N   the store's objects N bytes apart (layout experiments;
//                                     a bad value fails the pool creation, reported)
//
// Recycle: mbuf pools get a recycle check (refcnt 1, direct, one segment, buffer not smaller
// than the pool's data room) that returns the mbuf's RX port (`m->port`); see recycle.h.
//
// This header has no DPDK includes: the engine's users (the gRPC front) need none.
#ifndef SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_
#define SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataplane/pool/pool.h"

struct rte_mempool;

namespace skbnf::dpdk {

inline constexpr char kSkbnfOpsName[] = "skbnf";

// Per-pool options, passed to the ops through the mempool's pool_config (what DPDK gives a
// handler for that: rte_mempool_set_ops_byname's third argument). No process-wide state.
struct MempoolOptions {
  // skbnfd's pools: the spec as parsed where its text arrived (EngineConfig::strategy). The
  // plugin's (no options: a foreign application's pool) parse SKBNF_STRATEGY instead.
  pool::StrategySpec strategy{.layers = pool::LayerBit(pool::Layer::kMagazine)};
  bool colour = false;
  bool debug = false;
  // The slab store's objects this many bytes apart (0: packed; pool::SlabStoreConfig::stride,
  // a layout experiment: skbnfd --store-stride).
  uint32_t store_stride = 0;
};

// rte_pktmbuf_pool_create_by_ops for the skbnf ops, with `options` as the pool's pool_config.
// `data_room` as rte_pktmbuf_pool_create's (e.g. RTE_MBUF_DEFAULT_BUF_SIZE). DPDK's lcore
// caches are the lcache layer's, sized by the strategy (see above). Errors name the cause: a bad
// strategy (with what to write instead), DPDK's rte_errno, or memory.
absl::StatusOr<rte_mempool*> CreatePktmbufPool(const std::string& name, uint32_t n,
                                               uint16_t data_room, int socket,
                                               const MempoolOptions& options);

// The Pool behind a mempool that uses the skbnf ops, or nullptr.
pool::Pool* PoolOf(const rte_mempool* mp);

// skbnfd's lcore caches (see "DPDK's lcore cache plays the lcache layer" above): what the ops
// moved between `core`'s cache and the layers below, cumulative, written by the core's own
// thread (or by control for a parked worker, in the adopt hook).
struct HostLcacheTally {
  // Objects taken from the layers below (refills, bypassed gets) minus objects given to them
  // (flushes, bypassed puts): one number, so that a worker's region mark reads two words.
  uint64_t below_net = 0;
  uint64_t get_misses = 0;          // of the requests: the part a refill served, and bypasses
  uint64_t put_bypass = 0;          // puts that went straight below (n > flush threshold)
  std::atomic<uint32_t> active{0};  // the cache plays the lcache layer (size > 0)
  std::atomic<uint64_t> gauge{0};   // objects in the cache, as the worker last saw it
};
struct HostLcache {
  const volatile uint32_t* len = nullptr;  // the cache's length (DPDK's rte_mempool_cache)
  HostLcacheTally* tally = nullptr;
};
// `core`'s cache, or {nullptr, nullptr} when the pool has none (native ops, plugin, debug).
HostLcache HostLcacheOf(const rte_mempool* mp, int core);

// Mempool-level view for hosts.
struct MempoolCounts {
  uint64_t populated = 0;
  uint64_t available = 0;  // store + layers + depots
};
MempoolCounts CountsOf(const rte_mempool* mp);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_
