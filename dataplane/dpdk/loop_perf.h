// SPDX-License-Identifier: BSD-3-Clause
// LoopPerf: a worker's own recorder of its packet latency samples and its poll-loop iterations
// (forward.cc's loop owns one; common/worker_perf.h has the layouts, the causes and why).
//
// What it costs the packet path, per unsampled RX burst: a decrement and a branch (the sampling
// countdown); per TX burst: a load and a branch (Worker::latency_burst); per iteration: the two
// histogram adds, the slow-threshold compare, the settings-generation compare, and the two cause
// witnesses (Pool::epoch after the quiescent point, Pool::reclaims). A sampled burst: one TSC read
// and one store per mbuf at RX, one TSC read and per sent mbuf one load and a histogram add at TX
// (SendSampled). Nothing here takes a lock, allocates or makes a system call, except a slow
// iteration's log line (at most one a second per worker, as OVS's pmd thread logs its suspicious
// iterations itself, rate-limited: lib/dpif-netdev-perf.c).
#ifndef SKBNF_DATAPLANE_DPDK_LOOP_PERF_H_
#define SKBNF_DATAPLANE_DPDK_LOOP_PERF_H_

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "absl/strings/str_join.h"
#include "common/worker_perf.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

// The RX stamp of a sampled mbuf (the engine's dynamic field).
inline uint64_t* RxStamp(rte_mbuf* m, int offset) {
  return RTE_MBUF_DYNFIELD(m, offset, uint64_t*);
}

class LoopPerf {
 public:
  // Bits beside SlowCause's: the iteration held a PauseWorker park (neither counted nor logged).
  static constexpr uint32_t kPaused = 1u << 31;

  LoopPerf(Engine::Impl& e, Worker& w)
      : e_(e),
        w_(w),
        p_(*w.perf),
        pool_(e.pool),
        acked_(e.pool != nullptr ? &e.pool->SlotOf(static_cast<int>(w.lcore)).acked_epoch
                                 : nullptr),
        hz_(rte_get_tsc_hz()),
        offset_(e.rx_tsc_offset) {
    Reload();
  }

  // Once per iteration: a settings change takes effect here.
  void MaybeReload() {
    if (__builtin_expect(e_.perf_gen.load(std::memory_order_relaxed) != gen_, 0)) Reload();
  }

  // After an RX burst that returned n > 0 packets: whether it is a sample (then stamped, and
  // Worker::latency_burst set until EndBurst).
  bool BeginBurst(rte_mbuf** pkts, uint16_t n) {
    if (__builtin_expect(--countdown_ != 0, 1)) return false;
    Stamp(pkts, n);
    return true;
  }
  void EndBurst() { w_.latency_burst = false; }

  // An iteration boundary at TSC `now`: closes the open iteration (it received `packets`) and
  // opens the next one.
  void Close(uint64_t now, uint64_t packets) {
    const uint64_t epoch = epoch_seen_;
    const uint64_t reclaims = pool_ != nullptr ? pool_->reclaims() : 0;
    if (__builtin_expect(start_ != 0 && (flags_ & kPaused) == 0, 1)) {
      const uint64_t d = now - start_;
      p_.iter_cycles[IterCycleBin(d)].Add(1);
      p_.iter_cycles_sum.Add(d);
      p_.iter_packets[IterPacketBin(packets)].Add(1);
      if (__builtin_expect(d > slow_cycles_, 0)) {
        Slow(d, packets,
             flags_ | (epoch != epoch_ ? kSlowSwap : 0) |
                 (reclaims != reclaims_ ? kSlowReclaim : 0) | DepotWaitSince(start_));
      }
    }
    epoch_ = epoch;
    reclaims_ = reclaims;
    flags_ = 0;
    start_ = now;
  }
  // Right after the quiescent point (where a swap is adopted): the epoch this core has adopted
  // (its slot's acked_epoch, written by this worker at its quiescent point), the witness of a
  // swap in the iteration that holds the adoption. Not the pool's epoch: the control thread
  // stores that before it publishes each core's word, so an iteration could see the new epoch
  // one pass before its core adopted it, and the slow iteration of the adoption then lost its
  // `swap` cause (integration.latency_skbnfd, about one run in five).
  void AfterQuiesce() {
    if (acked_ != nullptr) epoch_seen_ = acked_->load(std::memory_order_relaxed);
  }
  // Something that took time in the open iteration.
  void Hook() { flags_ |= kSlowTestHook; }
  void TxReclaim() { flags_ |= kSlowTxReclaim; }
  void Parked(bool for_audit) { flags_ |= for_audit ? kSlowAuditPark : kPaused; }

 private:
  __attribute__((noinline, cold)) void Reload() {
    gen_ = e_.perf_gen.load(std::memory_order_acquire);
    const uint32_t every = e_.sample_every.load(std::memory_order_relaxed);
    every_ = every != 0 ? every : UINT64_MAX;  // off: the countdown never reaches 0
    countdown_ = every_;
    slow_cycles_ = e_.slow_cycles.load(std::memory_order_relaxed);
  }

  __attribute__((noinline)) void Stamp(rte_mbuf** pkts, uint16_t n) {
    countdown_ = every_;
    const uint64_t now = rte_rdtsc();
    for (uint16_t i = 0; i < n; ++i) *RxStamp(pkts[i], offset_) = now;
    w_.latency_burst = true;
  }

  // kSlowDepotWait when this core's last depot lock wait ended after `start` (read only for a
  // slow iteration: the pool stamps the wait, common/worker_perf.h).
  __attribute__((noinline, cold)) uint32_t DepotWaitSince(uint64_t start) const {
    if (pool_ == nullptr) return 0;
    return pool_->LastDepotWaitEnd(static_cast<int>(w_.lcore)) >= start ? kSlowDepotWait : 0;
  }

  __attribute__((noinline, cold)) void Slow(uint64_t cycles, uint64_t packets, uint32_t causes) {
    p_.slow_iterations.Add(1);
    const uint64_t h = p_.slow_head.load(std::memory_order_relaxed);
    SlowEntry& s = p_.slow[h % kSlowRing];
    s.tsc.store(start_, std::memory_order_relaxed);
    s.cycles.store(cycles, std::memory_order_relaxed);
    s.packets.store(packets, std::memory_order_relaxed);
    s.causes.store(causes, std::memory_order_relaxed);
    p_.slow_head.store(h + 1, std::memory_order_release);
    // One line a second for each kind: with a named cause (swap, reclaim, ...) and without
    // (forwarding, idle: a PMD call, a preempted thread), so that a busy host's preemptions
    // never hide the stall of a swap or an audit.
    const int kind = causes != 0 ? 1 : 0;
    if (start_ - last_log_[kind] < hz_ && last_log_[kind] != 0) {
      ++suppressed_[kind];
      return;
    }
    last_log_[kind] = start_;
    const std::string why = absl::StrJoin(SlowCauseNames(causes, packets), ",");
    std::fprintf(stderr,
                 "skbnfd: worker lcore %u: slow iteration: %.1f us (threshold %.0f us), %" PRIu64
                 " packets, cause %s (%" PRIu64 " more of its kind since the last line)\n",
                 w_.lcore, static_cast<double>(cycles) * 1e6 / static_cast<double>(hz_),
                 static_cast<double>(slow_cycles_) * 1e6 / static_cast<double>(hz_), packets,
                 why.c_str(), suppressed_[kind]);
    suppressed_[kind] = 0;
  }

  Engine::Impl& e_;
  Worker& w_;
  WorkerPerfCounters& p_;
  pool::Pool* const pool_;
  const std::atomic<uint64_t>* const acked_;  // this core's CoreSlot::acked_epoch (skbnf pool)
  const uint64_t hz_;
  const int offset_;
  uint32_t gen_ = 0;
  uint64_t every_ = UINT64_MAX, countdown_ = UINT64_MAX, slow_cycles_ = UINT64_MAX;
  uint64_t start_ = 0, epoch_ = 0, epoch_seen_ = 0, reclaims_ = 0;
  uint32_t flags_ = 0;
  uint64_t last_log_[2] = {}, suppressed_[2] = {};
};

// Send's sampled form (forward.cc): the RX stamps are read before rte_eth_tx_burst (the PMD may
// free a sent mbuf inside it), one TSC read for the burst; each sent packet is a sample of its RX
// port's histogram.
struct LatencyRecord {
  uint64_t cycles[kMaxBurst];
  uint16_t n = 0;
  void Read(rte_mbuf* const* pkts, uint16_t count, int offset) {
    const uint64_t now = rte_rdtsc();
    n = count;
    for (uint16_t i = 0; i < count; ++i) cycles[i] = now - *RxStamp(pkts[i], offset);
  }
  void Commit(LatencyCounters& h, uint16_t sent) const {
    uint64_t sum = 0, mx = h.max_cycles.load(std::memory_order_relaxed);
    const uint64_t old = mx;
    for (uint16_t i = 0; i < sent; ++i) {
      h.bucket[LatencyBucketOf(cycles[i])].Add(1);
      sum += cycles[i];
      if (cycles[i] > mx) mx = cycles[i];
    }
    h.sum_cycles.Add(sum);
    if (mx != old) h.max_cycles.store(mx, std::memory_order_relaxed);
  }
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_LOOP_PERF_H_
