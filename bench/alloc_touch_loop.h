// SPDX-License-Identifier: BSD-3-Clause
// The timed loop of alloc_touch_bench (experiment 6 of issue 10), shared by the allocators it
// compares. It lives in a header of its own, with no DPDK include, so the rte_mempool adapter
// (alloc_touch_dpdk.cc, the only file that sees DPDK headers) instantiates the same loop with
// rte_mempool_get_bulk/put_bulk inlined: no allocator pays an extra call the others do not.
//
// What one iteration does, per burst of n objects (n = 1, or 32 = one RX burst), as a PMD and a
// run-to-completion worker do:
//   alloc n  -> write each object's first cache line (RX: the PMD resets the mbuf header and
//               the NIC/host writes the packet) -> append to a FIFO of `inflight` objects
//               (the RX ring plus what waits for TX completion)
//   take the n oldest objects from the FIFO -> read each one's first cache line (TX
//               completion looks at the mbuf) -> free n.
// So every object spends `inflight` allocations between its alloc and its free, and what the
// allocator hands out next decides whether the write hits a warm line: a LIFO cache gives the
// just-freed (cache-hot) objects back, a FIFO store gives cold ones. The objects are never
// left untouched: today's pool_bench (alloc then free at once, no access) measures only the
// pointer shuffling.
#ifndef SKBNF_BENCH_ALLOC_TOUCH_LOOP_H_
#define SKBNF_BENCH_ALLOC_TOUCH_LOOP_H_

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace skbnf::bench {

inline constexpr unsigned kMaxBurst = 64;

struct LoopResult {
  double ns_per_object = 0;
  uint64_t objects = 0;
};

// Allocator concept: bool Get(void** objs, unsigned n); void Put(void* const* objs, unsigned n).
// Runs for `ms` milliseconds (or exactly `bursts` bursts when bursts > 0: callgrind counts).
template <typename A>
__attribute__((noinline)) LoopResult RunLoop(A& a, unsigned n, unsigned inflight, double ms,
                                             uint64_t bursts) {
  unsigned cap = 1;
  while (cap < inflight + kMaxBurst) cap <<= 1;
  std::vector<void*> fifo(cap);
  const unsigned mask = cap - 1;
  unsigned head = 0, tail = 0;  // [head, tail) in flight
  uint64_t sink = 0;
  uint64_t stamp = 1;
  auto touch_write = [&](void* o) {
    auto* w = static_cast<volatile uint64_t*>(o);
    for (int i = 0; i < 8; ++i) w[i] = stamp + i;
  };
  auto touch_read = [&](void* o) {
    auto* w = static_cast<volatile uint64_t*>(o);
    for (int i = 0; i < 8; ++i) sink += w[i];
  };
  void* objs[kMaxBurst];
  // Fill the FIFO to its steady state.
  while (tail - head < inflight) {
    if (!a.Get(objs, n)) std::abort();
    for (unsigned i = 0; i < n; ++i) {
      touch_write(objs[i]);
      fifo[tail++ & mask] = objs[i];
    }
  }
  auto one = [&]() {
    if (!a.Get(objs, n)) std::abort();
    ++stamp;
    for (unsigned i = 0; i < n; ++i) {
      touch_write(objs[i]);
      fifo[tail++ & mask] = objs[i];
    }
    for (unsigned i = 0; i < n; ++i) {
      objs[i] = fifo[head++ & mask];
      touch_read(objs[i]);
    }
    a.Put(objs, n);
  };
  uint64_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto t1 = t0;
  if (bursts > 0) {
    for (; done < bursts; ++done) one();
    t1 = std::chrono::steady_clock::now();
  } else {
    const auto limit = std::chrono::duration<double, std::milli>(ms);
    for (;;) {
      for (int k = 0; k < 256; ++k) one();
      done += 256;
      t1 = std::chrono::steady_clock::now();
      if (t1 - t0 >= limit) break;
    }
  }
  // Give everything back.
  while (head != tail) {
    unsigned k = 0;
    while (k < n && head != tail) objs[k++] = fifo[head++ & mask];
    a.Put(objs, k);
  }
  if (sink == 42) std::abort();  // keeps the reads
  LoopResult r;
  r.objects = done * n;
  r.ns_per_object =
      std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(r.objects);
  return r;
}

}  // namespace skbnf::bench

#endif  // SKBNF_BENCH_ALLOC_TOUCH_LOOP_H_
