// SPDX-License-Identifier: BSD-3-Clause
// AllocateAll: the no-stranding check of issue 22, run on a worker's own lcore. A worker hook
// (dataplane/dpdk/worker_hooks.h): the engine's production loop knows nothing of it; a test
// installs it before Engine::Start and the workers then run the hooked loop.
//
// Run(lcore, want, give_up): the worker on `lcore`, after its next quiescent point, allocates
// mbufs one at a time (rte_mempool_get from its own lcore: its layers, the depot, the store,
// then the reclaim of other cores' layers) until it holds `want`; a refusal is retried, as a
// PMD retries its RX refill at its next poll, until `give_up` of its own TSC has passed. Then
// one more Get, which must be refused (nothing beyond `want` was free), and everything is
// freed. The time is the worker's own TSC from the first Get to the one that completed `want`
// (not the caller's wait), so a test can hold it to a bound; `want` is the pool's size minus
// what the PMDs' rings hold, counted independently (PortInfo::rx_ring_mbufs/tx_ring_mbufs). Not
// with an `lcache` strategy (the lcore cache's counting is per poll region).
#ifndef SKBNF_TESTS_INTEGRATION_ALLOCATE_ALL_H_
#define SKBNF_TESTS_INTEGRATION_ALLOCATE_ALL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/worker_hooks.h"

namespace skbnf::dpdk {

class AllocateAll final : public WorkerHooks {
 public:
  struct Result {
    uint64_t count = 0;       // mbufs held at the end (== want unless it gave up)
    bool extra = false;       // the Get after `want` succeeded: more was free than said
    uint64_t tsc_cycles = 0;  // first Get to the one completing `want` (or giving up)
    uint64_t tsc_hz = 0;
    uint64_t refusals = 0;       // Gets refused (and retried) on the way
    uint64_t first_refusal = 0;  // mbufs held at the first refusal
  };

  // Before engine.Start(); the engine owns the hook, the pointer is valid while it lives.
  static absl::StatusOr<AllocateAll*> Install(Engine& engine);

  // FailedPrecondition off a running worker; DeadlineExceeded when the worker does not answer
  // within `timeout` (plus `give_up`). One caller at a time.
  absl::StatusOr<Result> Run(unsigned lcore, uint64_t want, std::chrono::milliseconds give_up,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

  bool BeforeQuiescent(const WorkerView&) override { return false; }
  bool BeforePoll(const WorkerView& w) override;

 private:
  explicit AllocateAll(Engine& engine) : engine_(engine) {}

  Engine& engine_;
  // The caller sizes objs_ and sets lcore_, want_ and the deadline, then armed_ (release); the
  // worker on lcore_ allocates, writes result_ and clears armed_ (release).
  std::atomic<bool> armed_{false};
  std::atomic<unsigned> lcore_{0};  // read by every worker each pass
  std::vector<void*> objs_;
  uint64_t want_ = 0, give_up_cycles_ = 0;
  Result result_;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_TESTS_INTEGRATION_ALLOCATE_ALL_H_
