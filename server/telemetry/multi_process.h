// SPDX-License-Identifier: BSD-3-Clause
// Multi-process: whether DPDK's secondary-process tools (dpdk-dumpcap, dpdk-pdump,
// dpdk-proc-info) can attach to skbnfd, and packet capture for them.
//
// The switch is DPDK's own: a primary shares its memory and configuration with secondaries
// unless EAL runs with --no-shconf or --in-memory (then EAL disables its IPC:
// lib/eal/common/eal_common_proc.c rte_mp_action_register, ENOTSUP), and a secondary can map a
// primary's memory only from hugepage files (a --no-huge primary writes no hugepage_info:
// secondaries stop at "Cannot get hugepage information"). So skbnfd is attachable when its EAL
// arguments have none of --no-shconf, --in-memory, --no-huge, and then (only then) it calls
// rte_pdump_init (lib/pdump/rte_pdump.h), as dpdk-testpmd does, so that dpdk-dumpcap can ask it to
// copy a port's packets. Capture costs nothing until a dumpcap asks: rte_pdump_init registers an
// IPC action and a small memzone; the RX/TX callbacks are added to the port's queues only while
// a capture runs (ethdev's callback check in rte_eth_rx_burst/tx_burst is there either way).
// Not attachable: no IPC action, no memzone; `note` says how to enable it (start-up prints it,
// /skbnf/info has it).
//
// Stopping a capture. DPDK 22.11's pdump, asked to disable, removes its RX/TX callbacks and
// answers; dumpcap then frees the ring and mempool the callbacks copy into, while a worker may
// still be inside one: the primary died of SIGSEGV in rte_pcapng_copy at the end of nearly every
// capture here (fixed upstream in DPDK 25.11 only: 34536d08b0 "pdump: fix races in callbacks",
// a use count the disable waits on). skbnfd closes the window for its own workers: multi_process.cc
// defines rte_eth_remove_rx_callback and rte_eth_remove_tx_callback, which librte_pdump's calls
// bind to (an executable's definition comes first in the dynamic linker's search), calls
// ethdev's (dlsym RTLD_NEXT) and then waits, at most 1 s, until every worker went round its poll
// loop twice (WaitForEveryWorkerLoop), before pdump answers the secondary.
#ifndef SKBNF_SERVER_TELEMETRY_MULTI_PROCESS_H_
#define SKBNF_SERVER_TELEMETRY_MULTI_PROCESS_H_

#include <string>

namespace skbnf::telemetry {

struct MultiProcessState {
  bool attachable = false;  // secondaries can attach (shared config, IPC, hugepages)
  bool pdump = false;       // rte_pdump_init succeeded: dpdk-dumpcap / dpdk-pdump can capture
  std::string note;         // why not attachable (or why capture failed) and what to write
};

// After rte_eal_init, in the primary, once. Decides, initialises pdump when attachable.
const MultiProcessState& EnableMultiProcess();
// What EnableMultiProcess decided (all false before it ran).
const MultiProcessState& CurrentMultiProcess();
// Before rte_eal_cleanup: rte_pdump_uninit when it was initialised.
void DisableMultiProcess();

}  // namespace skbnf::telemetry

#endif  // SKBNF_SERVER_TELEMETRY_MULTI_PROCESS_H_
