// SPDX-License-Identifier: BSD-3-Clause
// HeapTrim: gives the heap's free pages back to the kernel every --heap-trim-every (default
// 10 s; 0: never), with glibc's malloc_trim(0), from skbnfd's main loop.
//
// Why: under hours of control churn (route adds/deletes, swaps, reloads, WatchStats streams
// opened and closed: bench/churn.sh) skbnfd's live heap stays flat (heaptrack,
// bench/results/churn/arenas) but its anonymous RSS crept ~8 kB a minute: pages freed inside
// the arenas stay resident, and glibc returns only the top of the main arena on its own
// (M_TRIM_THRESHOLD). malloc_trim(0) walks every arena and madvise(MADV_DONTNEED)s each free
// page-sized run (glibc >= 2.8, malloc/malloc.c mtrim), so RSS follows the live heap. It takes
// each arena's lock while it walks it: only control threads allocate (nothing on the packet
// path touches the heap: DPDK memory only), and a walk of skbnfd's few MB takes well under a
// millisecond. Every 10 s rather than every minute: the churn re-fills freed pages within seconds
// (bench/heap_arenas.sh at ten times the hour's rates: ~250 kB back at each trim, re-used within
// 20 s), so a longer period mostly measures when RSS was sampled. What it measured:
// bench/results/churn/idle (the hour of churn, with; ../idle-untrimmed without): the trim gives
// pages back after bursts, but the hour's slow creep stayed (+8.3 kB a minute with, +7.6
// without): that creep is not free arena pages. About a third of it was abseil's lock-order
// graph (server/daemon/mutex_checks.h); the rest, pages of the gRPC threads' arena that hold
// live chunks, is still being looked for (bench/results/churn/graphcycles-off/README.md).
#ifndef SKBNF_SERVER_DAEMON_HEAP_TRIM_H_
#define SKBNF_SERVER_DAEMON_HEAP_TRIM_H_

#include <chrono>
#include <cstdint>

#include "absl/status/status.h"

namespace skbnf::control {

// --heap-trim-every is 0 or more (a negative one stops start-up saying what to write).
absl::Status CheckHeapTrimFlag();

class HeapTrim {
 public:
  HeapTrim();  // reads --heap-trim-every
  // Trims when the period has passed since the last trim (the main loop calls it every tick).
  void Tick();
  uint64_t trims() const { return trims_; }

 private:
  const std::chrono::steady_clock::duration every_;
  std::chrono::steady_clock::time_point next_;
  uint64_t trims_ = 0;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_HEAP_TRIM_H_
