// SPDX-License-Identifier: BSD-3-Clause
// CoreSlot: the part of a core's slot every pool has (the burst entry points, the counters, the
// swap/reclaim protocol), one cache-line-aligned slot per core.
//
// Everything in a slot is written only by its own core (the worker), except while that worker
// is parked (paused) or not yet running: then the control thread acts on its behalf. Gauges
// and counters are relaxed atomics so that the exporter may read them at any time; on x86 a
// relaxed load/store is a plain mov, and the layers load each gauge once per burst into a
// register and store it once at the end.
//
// The layers' own per-core state is not here: LayerSlot (layer.h) adds one State per layer of
// the pool's layer list after this part.
#ifndef SKBNF_DATAPLANE_POOL_CORE_SLOT_H_
#define SKBNF_DATAPLANE_POOL_CORE_SLOT_H_

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "dataplane/pool/counters.h"
#include "dataplane/pool/dcheck.h"
#include "dataplane/pool/slab_store.h"
#include "dataplane/pool/spinlock.h"
#include "dataplane/pool/strategy_spec.h"
#include "dataplane/pool/track.h"

namespace skbnf::pool {

inline constexpr int kMaxCores = 128;             // RTE_MAX_LCORE of Debian's DPDK 22.11
inline constexpr int kMaxPorts = 32;              // RTE_MAX_ETHPORTS of Debian's DPDK 22.11
inline constexpr int kNoCore = -1;                // a thread that is not a registered worker
inline constexpr unsigned kLcacheMaxBurst = 512;  // RTE_MEMPOOL_CACHE_MAX_SIZE

// The host's recycle check, called once per burst of frees: for each object, the RX port it
// may be recycled to, or -1 when it must not be recycled (shared, cloned, chained, too small).
using RecycleClassifyFn = void (*)(void* ctx, void* const* objs, unsigned n, int16_t* ports);

class Gauge {
 public:
  uint32_t get() const { return v_.load(std::memory_order_relaxed); }
  void set(uint32_t v) { v_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> v_{0};
};

struct CoreSlot;
class Generation;

// What every layer may reach besides its own slot.
struct Shared {
  SlabStore* store = nullptr;
  RecycleClassifyFn classify = nullptr;
  void* classify_ctx = nullptr;
  // The `track` modifier (track.h): the stamp word's offset from an object's handle (0: the
  // host reserved none), and whether the current generation tracks (for the "other" slots,
  // whose get is not the generation's chain).
  uint32_t stamp_offset = 0;
  std::atomic<bool> tracking{false};
};

// Where a layer's Flush sends its objects (the store, counted as the core's store frees).
using FlushSink = absl::FunctionRef<void(void* const* objs, uint32_t n)>;

using GetFn = bool (*)(Shared& sh, CoreSlot& s, void** objs, unsigned n);
using PutFn = void (*)(Shared& sh, CoreSlot& s, void* const* objs, unsigned n);

struct alignas(64) CoreSlot {
  // ---- read on every burst
  GetFn get = nullptr;
  PutFn put = nullptr;
  int32_t rx_port = -1;  // RX port being refilled (recycle); set by the worker
  // Single-object fast path (Pool::Handle::GetOne/PutOne): 0 = none, else 1 + the position in
  // the pool's layer list of the top layer, whose hit is taken inline without the indirect call
  // (drivers such as net_null free one mbuf per call).
  uint8_t fast = 0;
  bool fast_prefetch = false;
  // The kind the inline *get* hits may take: `fast`, or 0 while the generation tracks (track.h:
  // then every get takes the chain, whose compiled Get stamps; the frees keep their inline hit).
  // A separate byte, so that with `track` off the get paths run exactly the instructions they
  // ran before it existed (issue 32 item 2: off costs 0 instructions per packet).
  uint8_t fast_get = 0;
  // The counters of the layer `fast` names (kNoSingleHits when none): its fast_alloc_hits and
  // fast_free_hits are the only single-object hits that move (Pool::BracketOut).
  const LayerCounters* fast_counters = &kNoSingleHits;
  std::atomic<bool> registered{false};  // written by control, read by anyone (relaxed: a mov)
  bool foreign = false;                 // an owner with no quiescent point (see in_op below)
  uint32_t stamp_offset = 0;            // Shared::stamp_offset, for StampOut
  uint16_t stamp_site = 0;              // track.h SiteBase: this slot's kind and core

  CoreCounters counters;

  // ---- control protocol (see pool_core.h)
  // epoch << 2 | reclaim << 1 | pause. Control sets epoch and pause (keeping the reclaim bit),
  // reclaimers set the reclaim bit, the worker clears it when it serves the request.
  alignas(64) std::atomic<uint64_t> word{0};
  uint64_t local_word = 0;                              // last word this core acted on
  const Generation* gen = nullptr;                      // generation whose stack this core runs
  std::atomic<const Generation*> hazard{nullptr};       // generation in use
  std::atomic<const Generation*> hazard_next{nullptr};  // generation being adopted
  std::atomic<uint64_t> acked_epoch{0};
  std::atomic<bool> parked{false};
  // Reclaim (pool_core.h, "No stranded objects"). A foreign owner marks each of its operations
  // with plain stores to in_op; a reclaimer raises steal, issues membarrier(2) and takes the
  // slot's objects once in_op is 0. (Here, not in the first line: skbnfd's workers never
  // touch them.)
  std::atomic<uint8_t> in_op{0};
  std::atomic<uint8_t> steal{0};
  // Reclaim requests (word bit 1) this worker has served at its quiescent point (compared
  // for change only: wrapping is harmless).
  std::atomic<uint32_t> reclaims_served{0};
  uint32_t rx_ring_size[kMaxPorts] = {};  // RX ports of this core (0 = not one)
  // Last adoption, for the swap report.
  std::atomic<uint64_t> last_flushed{0};
  int core = kNoCore;  // this slot's core (kNoCore: the "other threads" slot)
};

// Whether PopInto may use AVX2 for a burst of 32: the CPU has it (read once at load time,
// pool_core.cc). Not const so that a test can take the SSE2 path on an AVX2 machine too.
[[gnu::visibility("hidden")]] extern bool g_pop_avx2;

// A burst of 32 with AVX2: four objects per instruction, reversed as they are loaded (vpermq
// takes an unaligned memory operand), and stored: 0.5 instructions per object. Inline
// assembly, not intrinsics, because the packet path is built for DPDK's baseline (corei7, no
// AVX): the assembler accepts the instructions, and g_pop_avx2 decides at run time.
inline void PopInto32Avx2(void** out, void* const* top) {
  struct Burst {
    void* p[32];
  };
  const Burst* src = reinterpret_cast<const Burst*>(top - 32);  // (for the compiler)
  Burst* dst = reinterpret_cast<Burst*>(out);
  // Four objects below `top` reversed (vpermq 0x1b: 3,2,1,0) into the next four of `out`.
  asm("vpermq $0x1b, -32(%[t]), %%ymm0\n\t"
      "vpermq $0x1b, -64(%[t]), %%ymm1\n\t"
      "vpermq $0x1b, -96(%[t]), %%ymm2\n\t"
      "vpermq $0x1b, -128(%[t]), %%ymm3\n\t"
      "vmovdqu %%ymm0, 0(%[d])\n\t"
      "vmovdqu %%ymm1, 32(%[d])\n\t"
      "vmovdqu %%ymm2, 64(%[d])\n\t"
      "vmovdqu %%ymm3, 96(%[d])\n\t"
      "vpermq $0x1b, -160(%[t]), %%ymm0\n\t"
      "vpermq $0x1b, -192(%[t]), %%ymm1\n\t"
      "vpermq $0x1b, -224(%[t]), %%ymm2\n\t"
      "vpermq $0x1b, -256(%[t]), %%ymm3\n\t"
      "vmovdqu %%ymm0, 128(%[d])\n\t"
      "vmovdqu %%ymm1, 160(%[d])\n\t"
      "vmovdqu %%ymm2, 192(%[d])\n\t"
      "vmovdqu %%ymm3, 224(%[d])\n\t"
      "vzeroupper"  // no AVX-to-SSE transition penalty in the SSE code that follows
      : "=m"(*dst)
      : [t] "r"(top), [d] "r"(out), "m"(*src)
      : "xmm0", "xmm1", "xmm2", "xmm3");
}

// Copies n objects off the top of a LIFO stack (`top` points one past the last object) into
// `out`, the most recently pushed first: what every layer's get does. On x86-64, two objects
// per SSE2 load, swapped with one shuffle and stored: 1.5 instructions per object in a burst
// of 32 instead of 3.3 for the unrolled pointer walk (which stays for the odd object and for
// other architectures); a burst of 32 with AVX2 where the CPU has it (PopInto32Avx2: 0.5 per
// object). `out` and the stack never overlap.
inline void PopInto(void** out, void* const* top, unsigned n) {
#if defined(__SSE2__)
  static_assert(sizeof(void*) == 8);
  const auto pair = [](void* const* src) {  // src[0], src[1] -> {src[1], src[0]}
    return _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), 0x4e);
  };
  const auto put = [](void** dst, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
  };
  if (__builtin_expect(n == 32, 1)) {  // DPDK's usual burst: straight-line, no loop control
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !SKBNF_TSAN_BUILD && \
    !defined(__SANITIZE_ADDRESS__)
    // (The sanitizers do not see inside inline assembly: the intrinsics under them.)
    if (__builtin_expect(g_pop_avx2, 1)) return PopInto32Avx2(out, top);
#endif
    top -= 32;
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) put(out + 2 * k, pair(top + 30 - 2 * k));
    return;
  }
  for (; n >= 16; n -= 16, out += 16) {
    top -= 16;
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) put(out + 2 * k, pair(top + 14 - 2 * k));
  }
  for (; n >= 2; n -= 2, out += 2) {
    top -= 2;
    put(out, pair(top));
  }
  if (n != 0) *out = top[-1];
#else
  void* const* const end = top - n;
#pragma GCC unroll 4
  while (top != end) *out++ = *--top;
#endif
}

// An object's stamp word: the host reserved it for the pool (PoolConfig::stamp_offset). Relaxed
// atomics on both sides: on x86-64 a plain mov, and a census may read while a core stamps.
inline std::atomic<uint64_t>& StampWord(const void* obj, uint32_t offset) {
  return *reinterpret_cast<std::atomic<uint64_t>*>(
      const_cast<char*>(static_cast<const char*>(obj)) + offset);
}

// The track modifier (track.h): stamps the n objects `s` hands out with the TSC and the slot's
// site (its kind and core, and the RX port it is refilling). StampBurst is the inline body, for
// a host that stamps after its own inline burst hit (skbnfd's OpDequeue, out of line behind a
// per-thread compare it makes anyway); StampOut the out-of-line copy the chain's tracking Get
// and the other threads' store path call (pool_track.cc).
inline void StampBurst(const CoreSlot& s, void* const* objs, unsigned n) {
  // The site with the port: RX ports are below kMaxPorts (Pool::SetRxPort's callers poll DPDK
  // ports), so port + 1 fits SiteWithPort's six bits without its mask (-1, none: 0).
  static_assert(kMaxPorts + 1 <= 0x3f, "an RX port + 1 fits the stamp's six port bits");
  SKBNF_DCHECK(s.rx_port >= -1 && s.rx_port < kMaxPorts, "an RX port the stamp can carry");
  const uint64_t v = (SpinLock::Ticks() & ~kStampSiteBits) | s.stamp_site |
                     (static_cast<uint32_t>(s.rx_port + 1) << kStampPortShift);
  const uint32_t off = s.stamp_offset;
  const auto stamp = [v, off](void* obj) {
    StampWord(obj, off).store(v, std::memory_order_relaxed);
  };
  // A load of the object's pointer and a store into the object each, the floor for a stamp
  // per object; a burst of 32 (DPDK's usual) with no loop control.
  if (__builtin_expect(n == 32, 1)) {
#pragma GCC unroll 32
    for (unsigned k = 0; k < 32; ++k) stamp(objs[k]);
    return;
  }
  for (unsigned k = 0; k < n; ++k) stamp(objs[k]);
}
[[gnu::noinline]] void StampOut(const CoreSlot& s, void* const* objs, unsigned n);

// The store at the bottom of every chain.
inline bool StoreGet(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
  s.counters.store_locks.Add(1);
  if (!sh.store->Get(objs, n)) return false;
  s.counters.store_allocs.Add(n);
  return true;
}
inline void StorePut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
  if (n == 0) return;
  s.counters.store_locks.Add(1);
  sh.store->Put(objs, n);
  s.counters.store_frees.Add(n);
}

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_CORE_SLOT_H_
