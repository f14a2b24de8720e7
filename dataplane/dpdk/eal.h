// SPDX-License-Identifier: BSD-3-Clause
// EAL for a host of the engine: what skbnfd's main needs from DPDK's environment abstraction
// layer (initialise, main lcore, clean up), without a DPDK header, so the composition root in
// server/ is compiled without DPDK's cflags. Tests and benchmarks call rte_eal_init themselves.
#ifndef SKBNF_DATAPLANE_DPDK_EAL_H_
#define SKBNF_DATAPLANE_DPDK_EAL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace skbnf::dpdk {

// rte_eal_init with `args` (args[0] is the program name). Also arranges that EAL's runtime
// directory (one per --file-prefix) is removed at exit when it is empty, as EAL leaves it,
// and ignores SIGPIPE (PMD control sockets to a dead peer: see eal.cc).
// The error names rte_errno and says where EAL arguments go.
absl::Status EalInit(const std::vector<std::string>& args);
unsigned EalMainLcore();
void EalCleanup();

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_EAL_H_
