// SPDX-License-Identifier: BSD-3-Clause
// Internal to the pool's .cc files: the slot word's bits and the helpers the protocol's
// files share (pool_core.h describes the protocol).
#ifndef SKBNF_DATAPLANE_POOL_POOL_PROTOCOL_H_
#define SKBNF_DATAPLANE_POOL_POOL_PROTOCOL_H_

#include <chrono>
#include <cstdint>

#include "dataplane/pool/core_slot.h"

namespace skbnf::pool {

using Clock = std::chrono::steady_clock;

// Slot word bits (core_slot.h): epoch << 2 | reclaim << 1 | pause.
inline constexpr uint64_t kPauseBit = 1;
inline constexpr uint64_t kReclaimBit = 2;
inline constexpr int kEpochShift = 2;
// local_word of a parked worker: never a published word (the epoch never reaches 2^62).
inline constexpr uint64_t kParkedWord = ~uint64_t{0};

inline void CpuRelax() { __builtin_ia32_pause(); }

inline uint64_t NsSince(Clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// membarrier(2) MEMBARRIER_CMD_PRIVATE_EXPEDITED, registered once per process
// (pool_reclaim.cc).
bool MembarrierAvailable();

// Threads that are not workers: straight to the store, counters shared (atomic RMW)
// (pool_core.cc).
bool OtherGet(Shared& sh, CoreSlot& s, void** objs, unsigned n);
void OtherPut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n);

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_POOL_PROTOCOL_H_
