// SPDX-License-Identifier: BSD-3-Clause
#include "tests/integration/allocate_all.h"

#include <rte_cycles.h>
#include <rte_mempool.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {

absl::StatusOr<AllocateAll*> AllocateAll::Install(Engine& engine) {
  std::unique_ptr<AllocateAll> hooks(new AllocateAll(engine));
  AllocateAll* const raw = hooks.get();
  if (absl::Status st = engine.SetWorkerHooks(std::move(hooks)); !st.ok()) return st;
  return raw;
}

absl::StatusOr<AllocateAll::Result> AllocateAll::Run(unsigned lcore, uint64_t want,
                                                     std::chrono::milliseconds give_up,
                                                     std::chrono::milliseconds timeout) {
  const std::vector<unsigned> workers = engine_.WorkerLcores();
  if (!engine_.running() || std::find(workers.begin(), workers.end(), lcore) == workers.end()) {
    return absl::FailedPreconditionError(absl::StrCat("no running worker on lcore ", lcore));
  }
  // Room for every mbuf and one more: the refusal always comes from the pool, not from here.
  objs_.assign(engine_.mempool_info().populated + 1, nullptr);
  lcore_.store(lcore, std::memory_order_relaxed);
  want_ = want;
  give_up_cycles_ = static_cast<uint64_t>(give_up.count()) * rte_get_tsc_hz() / 1000;
  armed_.store(true, std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + timeout + give_up;
  while (armed_.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) {
      // The worker may still run it later; it frees what it took either way.
      return absl::DeadlineExceededError(absl::StrCat(
          "worker ", lcore, " did not run the allocation within ", timeout.count(), " ms"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  Result r = result_;
  r.tsc_hz = rte_get_tsc_hz();
  return r;
}

// On the worker: one mbuf at a time; a refusal is retried until `want_` are held or the
// deadline passes; then one more Get, which must be refused. Everything is freed after.
bool AllocateAll::BeforePoll(const WorkerView& w) {
  if (!armed_.load(std::memory_order_acquire)) return false;
  if (w.lcore != lcore_.load(std::memory_order_relaxed)) return false;
  const uint64_t want = std::min<uint64_t>(want_, objs_.size() - 1);
  const uint64_t t0 = rte_rdtsc();
  const uint64_t give_up = t0 + give_up_cycles_;
  uint64_t n = 0, refusals = 0, first_refusal = 0;
  uint64_t t = t0;
  while (n < want) {
    if (rte_mempool_get(w.mp, &objs_[n]) == 0) {
      ++n;
      continue;
    }
    if (refusals++ == 0) first_refusal = n;
    t = rte_rdtsc();
    if (t > give_up) break;
  }
  if (n == want) t = rte_rdtsc();
  if (refusals == 0) first_refusal = n;
  const bool extra = rte_mempool_get(w.mp, &objs_[n]) == 0;  // must be refused
  if (extra) ++n;
  if (n > 0) rte_mempool_put_bulk(w.mp, objs_.data(), static_cast<unsigned>(n));
  result_.count = extra ? n - 1 : n;
  result_.extra = extra;
  result_.tsc_cycles = t - t0;
  result_.refusals = refusals;
  result_.first_refusal = first_refusal;
  armed_.store(false, std::memory_order_release);
  return true;
}

}  // namespace skbnf::dpdk
