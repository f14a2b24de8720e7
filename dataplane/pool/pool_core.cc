// SPDX-License-Identifier: BSD-3-Clause
// Construction, populate and the readers.

#include "dataplane/pool/pool_core.h"

#include <thread>
#include <utility>

#include "dataplane/pool/pool_protocol.h"

namespace skbnf::pool {

bool g_pop_avx2 = [] {
  __builtin_cpu_init();  // (a static initialiser may run before libgcc's)
  return __builtin_cpu_supports("avx2") != 0;
}();

bool OtherGet(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
  s.counters.store_locks.AtomicAdd(1);
  if (!sh.store->Get(objs, n)) return false;
  s.counters.store_allocs.AtomicAdd(n);
  if (sh.tracking.load(std::memory_order_relaxed)) StampOut(s, objs, n);
  return true;
}
void OtherPut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
  if (n == 0) return;
  s.counters.store_locks.AtomicAdd(1);
  sh.store->Put(objs, n);
  s.counters.store_frees.AtomicAdd(n);
}

absl::StatusOr<std::unique_ptr<SlabStore>> PoolCore::MakeStore(const PoolConfig& config) {
  if (config.host_lcache && config.adopt_hook == nullptr) {
    return absl::InvalidArgumentError("host_lcache needs an adopt_hook to flush the host's cache");
  }
  auto store = SlabStore::Create(config.store);
  if (!store.ok()) return store.status();
  if (config.quiesce_timeout.count() <= 0) {
    return absl::InvalidArgumentError("quiesce_timeout must be > 0");
  }
  return store;
}

PoolCore::PoolCore(const PoolConfig& config, std::unique_ptr<SlabStore> store,
                   CoreSlot* const* slots, CoreSlot* other)
    : config_(config),
      debug_(config.debug),
      strong_enter_(!config.asymmetric_fence || !MembarrierAvailable()),
      store_(std::move(store)),
      other_(other) {
  shared_.store = store_.get();
  shared_.classify = config.classify;
  shared_.classify_ctx = config.classify_ctx;
  for (int c = 0; c < kMaxCores; ++c) slot_[c] = slots[c];
}

void PoolCore::Start(const StrategySpec& initial) {
  for (int c = 0; c < kMaxCores; ++c) {
    slot_[c]->core = c;
    slot_[c]->get = &OtherGet;
    slot_[c]->put = &OtherPut;
    slot_[c]->stamp_site = SiteBase(SiteKind::kOther, c);
    slot_[c]->stamp_offset = config_.stamp_offset;
  }
  other_->get = &OtherGet;
  other_->put = &OtherPut;
  other_->stamp_site = SiteBase(SiteKind::kOther, 0);
  other_->stamp_offset = config_.stamp_offset;
  shared_.stamp_offset = config_.stamp_offset;
  auto g = MakeGeneration(initial, 1);
  shared_.tracking.store(initial.track, std::memory_order_relaxed);
  current_.store(g.get(), std::memory_order_seq_cst);
  epoch_.store(1);
  {
    // Start runs before any other thread sees the pool; the lock is for the analysis's sake.
    MutexLock info(&info_mu_);
    current_spec_ = initial;
  }
  generations_.push_back(std::move(g));
}

PoolCore::~PoolCore() = default;

void PoolCore::Shutdown() {
  // Give every depot's objects back so the store's view is complete; memory is the host's.
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(Slot(c))) FlushAndDetach(Slot(c));
  }
  for (auto& g : generations_) {
    if (g->depot) g->depot->DrainTo(*store_);
  }
}

absl::StatusOr<uint32_t> PoolCore::Populate(void* base, size_t len, uint32_t max_objs,
                                            absl::FunctionRef<void(void*)> on_object) {
  MutexLock lock(&control_mu_);
  const uint32_t stamp = config_.stamp_offset;
  auto placed = store_->Populate(base, len, max_objs, [&](void* handle) {
    if (stamp != 0) *reinterpret_cast<uint64_t*>(static_cast<char*>(handle) + stamp) = 0;
    on_object(handle);
  });
  if (!placed.ok()) return placed;
  if (debug_) {
    uint64_t need = store_->index_space();
    std::unique_ptr<std::atomic<uint8_t>[]> grown(new std::atomic<uint8_t>[need]);
    for (uint64_t i = 0; i < need; ++i) {
      grown[i].store(i < obj_state_size_ ? obj_state_[i].load() : 0, std::memory_order_relaxed);
    }
    obj_state_ = std::move(grown);
    obj_state_size_ = need;
  }
  for (auto& g : generations_) {
    if (g->depot) g->depot->Reserve(MagazinesNeeded(g->depot->magazine_size()));
  }
  return placed;
}

bool PoolCore::HoldDepotForTest(std::chrono::milliseconds d) {
  MutexLock lock(&gen_mu_);  // the generation stays while its depot is held
  const Generation* cur = current_.load(std::memory_order_acquire);
  for (const auto& g : generations_) {
    if (g.get() != cur || !g->depot) continue;
    SpinLock& l = g->depot->lock_for_test();
    l.lock();
    std::this_thread::sleep_for(d);
    l.unlock();
    return true;
  }
  return false;
}

uint64_t PoolCore::in_depots() const {
  MutexLock lock(&gen_mu_);
  uint64_t n = 0;
  for (const auto& g : generations_) {
    if (g->depot) n += g->depot->objects();
  }
  return n;
}

CoreCountersSnapshot PoolCore::CoreStats(int core) const {
  if (core < 0 || core >= kMaxCores) return Snapshot(other_->counters);
  return Snapshot(Slot(core).counters);
}

bool PoolCore::IsPaused(int core) const {
  return core >= 0 && core < kMaxCores && Slot(core).parked.load(std::memory_order_acquire);
}

StrategySpec PoolCore::strategy() const {
  MutexLock info(&info_mu_);
  return current_spec_;
}

uint64_t PoolCore::epoch() const { return epoch_.load(std::memory_order_acquire); }

std::vector<int> PoolCore::workers() const {
  std::vector<int> out;
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(Slot(c))) out.push_back(c);
  }
  return out;
}

}  // namespace skbnf::pool
