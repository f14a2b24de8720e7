// SPDX-License-Identifier: BSD-3-Clause
// WorkerHooks: what a test puts into a worker's poll loop (forward.cc), and only a test.
//
// The poll loop is a template over its hooks, chosen at compile time: the production loop is
// instantiated with none (no field of the worker, no check per loop pass, nothing to predict),
// and a second instantiation calls a WorkerHooks object at two points of each pass. Engine::Start
// launches the second only when a WorkerHooks was given before it (Engine::SetWorkerHooks), so a
// process without one runs the very loop it would run if this file did not exist. The hooks
// themselves live with their tests: the quiesce stall of skbnfd's hidden --test-stall-* flags in
// server/daemon/test_hooks.cc, the no-stranding allocation of issue 22 in
// tests/integration/allocate_all.cc. tests/integration/production_worker_test.py fails when a
// test field reappears in the worker or a hook call outside the hooked instantiation.
//
// No DPDK header here: skbnfd's test hooks in server/ implement this interface.
#ifndef SKBNF_DATAPLANE_DPDK_WORKER_HOOKS_H_
#define SKBNF_DATAPLANE_DPDK_WORKER_HOOKS_H_

#include "dataplane/pool/pool.h"

struct rte_mempool;

namespace skbnf::dpdk {

// The worker a hook runs on (it runs on that worker's own lcore).
struct WorkerView {
  unsigned lcore = 0;
  unsigned index = 0;          // RCU thread id and TX queue
  rte_mempool* mp = nullptr;   // the mbuf mempool its RX queues refill from
  pool::Pool* pool = nullptr;  // the pool behind it (skbnf ops), or nullptr (ring_mp_mc)
};

class WorkerHooks {
 public:
  virtual ~WorkerHooks() = default;
  // Each loop pass, before the quiescent point (where strategy swaps and pauses take effect).
  // True when it took time: the poll's busy-cycle span then starts after it.
  virtual bool BeforeQuiescent(const WorkerView& w) = 0;
  // Each loop pass of a running (not parked) worker, after its quiescent point and before its
  // RX bursts. True as above.
  virtual bool BeforePoll(const WorkerView& w) = 0;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_WORKER_HOOKS_H_
