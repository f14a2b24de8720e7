// The `skbnf` mempool ops driver: DPDK's mempool ops table mapped onto skbnf::pool::Pool.
//
//   DPDK op          skbnf
//   ---------------  -------------------------------------------------------------------
//   alloc            Pool::Create: elt size = header + elt + trailer, handle = elt start +
//                    header size (the object pointer DPDK hands out), strategy from the host
//                    (SetMempoolOptions) or, in a foreign application, SKBNF_STRATEGY
//   calc_mem_size    the slab store's MemSize plus room to align the first slab
//   populate         Pool::Populate: slabs (optionally coloured); each object is announced to
//                    DPDK's per-object callback (mempool_add_elem) as
//                    rte_mempool_op_populate_helper does, and is then in the store
//   enqueue/dequeue  Pool::Put/Get with core = rte_lcore_id() (non-EAL threads: kNoCore)
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
//   skbnfd   links this file; the engine registers its workers (Pool::RegisterWorker with
//            their RX ports) and calls Pool::Quiesce at the top of each poll loop, so
//            strategies can be swapped while traffic flows.
//   plugin   libskbnf_mempool.so, loaded by any DPDK 22.11 application with `-d` and chosen
//            with `--mbuf-pool-ops-name=skbnf`. Nobody registers workers there, so an EAL
//            lcore registers itself on its first enqueue/dequeue; there is no quiescent
//            point, so the strategy is fixed for the pool's life. Environment:
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
#include "dataplane/pool/pool.h"

struct rte_mempool;

namespace skbnf::dpdk {

inline constexpr char kSkbnfOpsName[] = "skbnf";

struct MempoolOptions {
  std::string strategy = "magazine";
  bool colour = false;
  bool debug = false;
  // An EAL lcore that is not a registered worker registers itself on first use (plugin).
  bool auto_register = false;
};

// Options for skbnf pools created from now on in this process. Until a host calls this, the
// options come from the environment (see above) with auto_register on.
void SetMempoolOptions(const MempoolOptions& options);

// The Pool behind a mempool that uses the skbnf ops, or nullptr.
pool::Pool* PoolOf(const rte_mempool* mp);

// Why the last skbnf pool creation in this process failed (OK if none did).
absl::Status LastMempoolError();

// Mempool-level view for hosts.
struct MempoolCounts {
  uint64_t populated = 0;
  uint64_t available = 0;  // store + layers + depots
};
MempoolCounts CountsOf(const rte_mempool* mp);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_SKBNF_MEMPOOL_H_
