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
//   enqueue/dequeue  Pool::Put/Get with core = rte_lcore_id() (non-EAL threads: kNoCore); in
//                    a foreign application ForeignPut/ForeignGet (see "Two hosts")
//   get_count        store + per-core layers + depots
//   free             destroys the Pool (the memory is DPDK's)
//
// Pools are created with DPDK's lcore cache at 0, so DPDK's cache does not hide our layers
// (`lcache:size=N` is DPDK's cache algorithm as one of our layers, when wanted).
//
// Slab geometry. A slab is at most 64 KiB (or one page, if the pool needs IOVA-contiguous
// objects on pages smaller than that) and starts on a multiple of its size, so no object
// crosses a page boundary on 2 MiB / 1 GiB hugepages; objects per slab = 64 KiB / elt size.
//
// Two hosts, one source:
//   skbnfd   links this file and creates its pool with CreatePktmbufPool; the engine
//            registers its workers (Pool::RegisterWorker with their RX ports) and calls
//            Pool::Quiesce at the top of each poll loop, so strategies can be swapped while
//            traffic flows, and a failing Get reclaims from other workers through their
//            quiescent points (pool.h, "No stranded objects").
//   plugin   libskbnf_mempool.so, loaded by any DPDK 22.11 application with `-d` and chosen
//            with `--mbuf-pool-ops-name=skbnf`. Nobody registers workers there, so an EAL
//            lcore registers itself as a foreign owner on its first enqueue/dequeue: it has
//            no quiescent point, so the strategy is fixed for the pool's life, and each of
//            its operations is marked so that another lcore whose Get fails can take what
//            this lcore's layers hold (membarrier(2); pool.h). Environment:
//              SKBNF_STRATEGY=<spec>  (default `magazine`; a bad spec is reported on stderr
//                                     and the pool creation fails)
//              SKBNF_COLOUR=1         slab colouring
//              SKBNF_DEBUG=1          the pool's double/foreign-free checks
//
// Recycle: mbuf pools get a recycle check (refcnt 1, direct, one segment, buffer not smaller
// than the pool's data room) that returns the mbuf's RX port (`m->port`); see recycle.h.
//
// This header has no DPDK includes: the engine's users (the gRPC front) need none.
#ifndef SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_
#define SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_

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
  std::string strategy = "magazine";
  bool colour = false;
  bool debug = false;
};

// rte_pktmbuf_pool_create_by_ops for the skbnf ops, with `options` as the pool's pool_config.
// `data_room` as rte_pktmbuf_pool_create's (e.g. RTE_MBUF_DEFAULT_BUF_SIZE). DPDK's lcore
// cache is 0 (our layers are the cache). Errors name the cause: a bad strategy (with what to
// write instead), DPDK's rte_errno, or memory.
absl::StatusOr<rte_mempool*> CreatePktmbufPool(const std::string& name, uint32_t n,
                                               uint16_t data_room, int socket,
                                               const MempoolOptions& options);

// The Pool behind a mempool that uses the skbnf ops, or nullptr.
pool::Pool* PoolOf(const rte_mempool* mp);

// Mempool-level view for hosts.
struct MempoolCounts {
  uint64_t populated = 0;
  uint64_t available = 0;  // store + layers + depots
};
MempoolCounts CountsOf(const rte_mempool* mp);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_
