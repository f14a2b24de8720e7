// SPDX-License-Identifier: BSD-3-Clause
// A skbnf pool seen from a DPDK secondary process (dpdk-proc-info, dpdk-pdump, any
// --proc-type=secondary application that loads the plugin).
//
// A mempool lives in shared memory, but a skbnf pool's state (the Pool: store, layers, depots)
// is in the primary's heap: mp->pool_data is an address only the primary can read. So in a
// secondary the ops' get_count (what rte_mempool_avail_count, rte_mempool_dump and
// dpdk-proc-info --show-mempool print) asks the primary over EAL's IPC (rte_mp_request_sync) for
// the pool's counts; the primary answers with the `kPoolCountAction` action skbnfd registers
// (server/telemetry/multi_process.cc). A secondary cannot get or put objects of a skbnf pool
// (nothing here makes that possible; nothing a DPDK tool does needs it: dpdk-dumpcap's copies go
// to its own ring_mp_mc pool).
//
// Ops indices. A mempool carries its ops as an index into each process's own ops table, filled
// in registration order. The indices of DPDK's own ops must therefore be the same in skbnfd and in
// the tools: skbnfd registers the skbnf ops after EAL loaded its driver directory (at its first
// pool, CreatePktmbufPool), so they come last, and a secondary that loads the plugin after that
// directory (`-d <driver dir> -d libskbnf_mempool.so`) has the same table.
#ifndef SKBNF_DATAPLANE_DPDK_MEMPOOL_SECONDARY_H_
#define SKBNF_DATAPLANE_DPDK_MEMPOOL_SECONDARY_H_

#include <cstdint>

struct rte_mempool;

namespace skbnf::dpdk {

// EAL IPC action: request param = the pool's name; reply param = "<populated> <available>".
inline constexpr char kPoolCountAction[] = "skbnf_pool_count";

// In a secondary: the available count the primary reports for `mp`; 0 (with a message on
// stderr) when the primary does not answer within a second.
uint64_t SecondaryAvailable(const rte_mempool* mp);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_MEMPOOL_SECONDARY_H_
