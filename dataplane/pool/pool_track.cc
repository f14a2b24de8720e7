// SPDX-License-Identifier: BSD-3-Clause
// The track modifier: stamps on the way out and the census of what is in flight (track.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"
#include "dataplane/pool/spinlock.h"

namespace skbnf::pool {
namespace {

std::atomic<uint64_t>& StampWord(const void* handle, uint32_t offset) {
  // The host reserved the word for the pool (PoolConfig::stamp_offset). Relaxed atomics on
  // both sides: on x86-64 a plain mov, and a census may read while a core stamps.
  return *reinterpret_cast<std::atomic<uint64_t>*>(
      const_cast<char*>(static_cast<const char*>(handle)) + offset);
}

}  // namespace

void StampOut(const CoreSlot& s, void* const* objs, unsigned n) {
  const uint64_t v =
      (SpinLock::Ticks() & ~kStampSiteBits) | SiteWithPort(s.stamp_site, s.rx_port);
  const uint32_t off = s.stamp_offset;
#pragma GCC unroll 4
  for (unsigned i = 0; i < n; ++i) StampWord(objs[i], off).store(v, std::memory_order_relaxed);
}

bool Modified(const CoreSlot& s, void* const* objs, unsigned n) {
  if (s.fast_mods & kModPrefetch) {
    for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
  }
  if (s.fast_mods & kModTrack) StampOut(s, objs, n);
  return true;
}

absl::Status PoolCore::CheckModifiers(const PoolConfig& config, const StrategySpec& spec) {
  if (spec.track && config.stamp_offset == 0) {
    return absl::FailedPreconditionError(
        "modifier 'track' needs a word in each object to stamp, and this pool's host reserves "
        "none (skbnf pools of packet mbufs have one: the mbuf dynamic field "
        "skbnf_dynfield_pool_stamp)");
  }
  if (spec.track && config.stamp_offset % alignof(uint64_t) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("stamp_offset ", config.stamp_offset, " is not 8-byte aligned"));
  }
  return absl::OkStatus();
}

void PoolCore::ClearStamps() {
  const uint32_t off = config_.stamp_offset;
  if (off == 0) return;
  store_->ForEachObject([&](uint64_t, void* handle) {
    StampWord(handle, off).store(0, std::memory_order_relaxed);
  });
}

absl::StatusOr<InFlightCensus> PoolCore::Census(std::chrono::microseconds wait) {
  MutexLock lock(&control_mu_);
  if (!current_.load(std::memory_order_acquire)->spec.track) {
    return absl::FailedPreconditionError(
        "tracking is off: the strategy has no 'track' modifier (add ',track' to it)");
  }
  InFlightCensus out;
  out.flushed = EmptyLayers(*other_, wait, &out.unanswered_cores);
  const std::vector<bool> free = store_->FreeMap();
  out.now_tsc = SpinLock::Ticks();
  out.populated = store_->populated();
  const uint32_t off = config_.stamp_offset;
  store_->ForEachObject([&](uint64_t index, void* handle) {
    if (free[index]) return;
    ++out.in_flight;
    const uint64_t stamp = StampWord(handle, off).load(std::memory_order_relaxed);
    if (stamp == 0) {
      ++out.untracked;
    } else {
      out.tracked.push_back(TrackedObject{handle, stamp});
    }
  });
  return out;
}

}  // namespace skbnf::pool
