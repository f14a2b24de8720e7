// SPDX-License-Identifier: BSD-3-Clause
// The engine's mbuf mempool, for tests that allocate from it or read its layout. The engine's
// API does not hand out its rte_mempool (no production caller needs it); a test finds it by the
// name MempoolInfo reports, as any DPDK code in the process could.
#ifndef SKBNF_TESTS_INTEGRATION_ENGINE_MEMPOOL_H_
#define SKBNF_TESTS_INTEGRATION_ENGINE_MEMPOOL_H_

#include <rte_mempool.h>

#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

inline rte_mempool* MempoolOf(const Engine& e) {
  return rte_mempool_lookup(e.mempool_info().name.c_str());
}

}  // namespace skbnf::dpdk

#endif  // SKBNF_TESTS_INTEGRATION_ENGINE_MEMPOOL_H_
