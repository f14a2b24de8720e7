// SPDX-License-Identifier: BSD-3-Clause
// The rte_mempool side of alloc_touch_bench: DPDK's native pool (ring_mp_mc with its lcore
// cache), the reference of experiment 6. No DPDK header here; the implementation is the only
// file of the benchmark compiled with DPDK's include paths and flags.
#ifndef SKBNF_BENCH_ALLOC_TOUCH_DPDK_H_
#define SKBNF_BENCH_ALLOC_TOUCH_DPDK_H_

#include <cstdint>
#include <string>

#include "bench/alloc_touch_loop.h"

namespace skbnf::bench {

// Initialises EAL (one lcore, no PCI, the given file prefix) and creates a mempool of `objects`
// elements of `elt_size` bytes with a `cache`-object lcore cache. Memory: 2 MiB hugepages
// (`--in-memory`, as every benchmark by default), or `--no-huge` when `no_huge`: there DPDK
// places one element per 4 KiB page (an object may not cross a page), a different layout, so
// bench/run labels such results. Returns an error message, or "" on success.
std::string DpdkInit(const std::string& file_prefix, bool no_huge, unsigned objects,
                     unsigned elt_size, unsigned cache);
// RunLoop over that mempool, from lcore 0 (the calling thread, which EAL pinned).
LoopResult DpdkRunLoop(unsigned n, unsigned inflight, double ms, uint64_t bursts);
void DpdkFini();

}  // namespace skbnf::bench

#endif  // SKBNF_BENCH_ALLOC_TOUCH_DPDK_H_
