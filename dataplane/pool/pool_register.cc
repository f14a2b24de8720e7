// SPDX-License-Identifier: BSD-3-Clause
// Registration: workers (with their RX ports) and foreign owners join and leave the pool.

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"

namespace skbnf::pool {

absl::Status PoolCore::RegisterWorker(int core, const std::vector<RxPort>& rx_ports) {
  MutexLock lock(&control_mu_);
  uint32_t rings[kMaxPorts] = {};
  for (const RxPort& p : rx_ports) {
    if (p.port < 0 || p.port >= kMaxPorts) {
      return absl::InvalidArgumentError(
          absl::StrCat("rx port ", p.port, " is out of range [0, ", kMaxPorts - 1, "]"));
    }
    if (p.ring_size == 0) {
      return absl::InvalidArgumentError(absl::StrCat("rx port ", p.port, " has ring_size 0"));
    }
    if (rings[p.port] != 0) {
      return absl::InvalidArgumentError(absl::StrCat("rx port ", p.port, " is listed twice"));
    }
    rings[p.port] = p.ring_size;
  }
  return RegisterLocked(core, rings, /*foreign=*/false);
}

absl::Status PoolCore::RegisterForeignCore(int core) {
  MutexLock lock(&control_mu_);
  const uint32_t no_rings[kMaxPorts] = {};
  return RegisterLocked(core, no_rings, /*foreign=*/true);
}

absl::Status PoolCore::RegisterLocked(int core, const uint32_t (&rings)[kMaxPorts], bool foreign) {
  if (core < 0 || core >= kMaxCores) {
    return absl::InvalidArgumentError(
        absl::StrCat("core ", core, " is out of range [0, ", kMaxCores - 1, "]"));
  }
  CoreSlot& s = Slot(core);
  if (Owned(s)) {
    return absl::AlreadyExistsError(absl::StrCat("core ", core, " is already a worker"));
  }
  std::copy(std::begin(rings), std::end(rings), s.rx_ring_size);
  // The layers' buffers for the default tunables, allocated here on the control thread: a
  // worker's first swap into `headpool`, `lcache` or `recycle` then allocates nothing (the
  // first allocation on a worker thread creates its malloc arena: measured 0.6 ms of
  // acknowledgement, with the worker not forwarding, at the first lcache -> recycle swap).
  // A swap to a larger tunable than these still grows the buffer on the worker, once.
  ReserveLayers(s, foreign);
  const Generation* g = current_.load(std::memory_order_seq_cst);
  s.hazard.store(g, std::memory_order_seq_cst);
  Configure(s, g);
  RunAdoptHook(s, g->spec);  // the host sizes its cache for the spec (nothing to flush yet)
  s.foreign = foreign;
  s.stamp_site = SiteBase(foreign ? SiteKind::kApplication : SiteKind::kWorker, core);
  if (foreign && strong_enter_) s.steal.store(kStrongBit, std::memory_order_seq_cst);
  pause_requested_[core] = false;
  s.parked.store(false);
  s.local_word = WordFor(s, g->epoch);
  s.word.store(s.local_word, std::memory_order_release);
  s.acked_epoch.store(g->epoch, std::memory_order_release);
  s.rx_port = -1;
  s.registered.store(true, std::memory_order_release);  // last: reclaimers look from here on
  if (!foreign) {
    // A spare depot for the default magazine size, made now (after populate: sized for every
    // object) so that the first swap into a magazine strategy makes none on the swap's path
    // (measured: 1.3-1.6 ms of a first lcache+magazine -> recycle+magazine swap was this
    // allocation; later swaps reuse the retired generation's depot). Its memory: one magazine
    // of pointers per magazine_size objects, about 280 KiB for 32,768 mbufs.
    KeepSpareDepot(TakeDepot(StrategySpec().Tunable(Layer::kMagazine)));
  }
  return absl::OkStatus();
}

void PoolCore::ResetSlot(CoreSlot& s) {
  s.get = &OtherGet;
  s.put = &OtherPut;
  ConfigureLayers(s, StrategySpec{}, nullptr, /*inline_ok=*/false);  // `slab`: all hold nothing
  s.fast_prefetch = false;
  s.fast_get = 0;
  s.stamp_site = SiteBase(SiteKind::kOther, s.core);
  s.rx_port = -1;
  std::fill(std::begin(s.rx_ring_size), std::end(s.rx_ring_size), 0u);
  s.gen = nullptr;
}

absl::Status PoolCore::UnregisterWorker(int core) {
  MutexLock lock(&control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(Slot(core))) {
    return absl::NotFoundError(absl::StrCat("core ", core, " is not a worker"));
  }
  CoreSlot& s = Slot(core);
  // Keep reclaimers off a foreign slot while it is emptied and reset.
  while (s.foreign && (s.steal.fetch_or(kStealBit, std::memory_order_seq_cst) & kStealBit) != 0) {
    CpuRelax();
  }
  RunAdoptHook(s, StrategySpec{});  // the core runs no layers from now on: `slab`
  FlushAndDetach(s);
  ResetSlot(s);
  s.registered.store(false, std::memory_order_release);
  s.hazard.store(nullptr, std::memory_order_seq_cst);
  pause_requested_[core] = false;
  s.parked.store(false);
  s.word.store(0);
  s.local_word = 0;
  if (s.foreign) {
    s.foreign = false;
    s.steal.store(0, std::memory_order_release);  // also drops kStrongBit
  }
  RetireGenerations();
  bool any = false;
  for (int c = 0; c < kMaxCores; ++c) any = any || Owned(Slot(c));
  if (!any) DrainGenerationDepots();
  return absl::OkStatus();
}

bool PoolCore::HasForeignOwner() const {
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(Slot(c)) && Slot(c).foreign) return true;
  }
  return false;
}

}  // namespace skbnf::pool
