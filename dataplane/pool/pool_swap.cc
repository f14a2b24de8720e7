// SPDX-License-Identifier: BSD-3-Clause
// Hot swap: generations, publication and acknowledgement, roll back, retirement; pause and
// resume; a worker's quiescent point (pool_core.h, "Hot swap").

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"

namespace skbnf::pool {

std::unique_ptr<Generation> PoolCore::MakeGeneration(const StrategySpec& spec, uint64_t epoch) {
  auto g = std::make_unique<Generation>();
  g->epoch = epoch;
  g->spec = spec;
  CompileChain(ChainSpec(spec), *g);
  if (spec.Has(Layer::kMagazine)) g->depot = TakeDepot(spec.Tunable(Layer::kMagazine));
  return g;
}

std::unique_ptr<Depot> PoolCore::TakeDepot(uint32_t magazine_size) {
  const uint32_t needed = MagazinesNeeded(magazine_size);
  std::unique_ptr<Depot> d;
  {
    MutexLock l(&spare_mu_);
    if (spare_depot_ != nullptr && spare_depot_->magazine_size() == magazine_size) {
      d = std::move(spare_depot_);
    }
  }
  if (d == nullptr) return std::make_unique<Depot>(magazine_size, needed);
  d->Reserve(needed);
  return d;
}

void PoolCore::KeepSpareDepot(std::unique_ptr<Depot> d) {
  MutexLock l(&spare_mu_);
  spare_depot_ = std::move(d);
}

uint32_t PoolCore::MagazinesNeeded(uint32_t magazine_size) const {
  // Enough for every object to sit in a full magazine, plus loaded + previous per core: then
  // a free never finds the depot without an empty magazine.
  uint32_t workers = 0;
  for (int c = 0; c < kMaxCores; ++c) workers += Owned(Slot(c)) ? 1 : 0;
  uint64_t n = store_->populated() / magazine_size + 2ull * (workers + 1) + 2;
  return static_cast<uint32_t>(std::min<uint64_t>(n, 1u << 22));
}

uint64_t PoolCore::WordFor(const CoreSlot& s, uint64_t epoch) const {
  return (epoch << kEpochShift) | (pause_requested_[s.core] ? kPauseBit : 0);
}

void PoolCore::PublishWord(CoreSlot& s, uint64_t epoch) {
  const uint64_t w = WordFor(s, epoch);
  uint64_t old = s.word.load(std::memory_order_relaxed);
  while (!s.word.compare_exchange_weak(old, w | (old & kReclaimBit), std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
  }
}

uint64_t PoolCore::FlushSlot(CoreSlot& s) {
  return FlushLayers(s, [&](void* const* objs, uint32_t k) { StorePut(shared_, s, objs, k); });
}

uint64_t PoolCore::FlushAndDetach(CoreSlot& s) {
  const uint64_t n = FlushSlot(s);
  DetachLayers(s);
  return n;
}

void PoolCore::Configure(CoreSlot& s, const Generation* g) {
  s.get = g->get;
  s.put = g->put;
  // With host_lcache the host's own cache plays the lcache layer in front of the pool: the
  // chain leaves it out. The debug switch checks every object: no inline path then
  // (Handle::PutOne needs no test). A hosted lcache calls the pool only to refill and flush
  // (its kHostCache handle's Get/Put), which the inline path, counting allocs and frees, must not serve.
  const bool hosted = HostsLcache(g->spec);
  ConfigureLayers(s, ChainSpec(g->spec), g->depot.get(), !debug_ && !hosted);
  s.fast_prefetch = g->spec.prefetch;
  s.fast_get = g->spec.track ? 0 : s.fast;
  s.gen = g;
}

void PoolCore::RunAdoptHook(CoreSlot& s, const StrategySpec& next) {
  if (config_.adopt_hook != nullptr) {
    config_.adopt_hook(config_.adopt_ctx, s.core, next);
  }
}

void PoolCore::Adopt(CoreSlot& s) {
  // Take the new generation under a second hazard while the one this core ran stays protected
  // by the first: the host hook, the flush and the magazines' return all use the old one.
  // Order matters: hazard = g is stored before hazard_next is cleared, and RetireGenerations
  // reads hazard_next before hazard, so it sees g in one of them whatever the interleaving.
  const Generation* g;
  do {
    g = current_.load(std::memory_order_seq_cst);
    s.hazard_next.store(g, std::memory_order_seq_cst);
  } while (current_.load(std::memory_order_seq_cst) != g);
  const PoolTestHooks& hooks = config_.test_hooks;
  if (hooks.adopt_validated != nullptr) hooks.adopt_validated(hooks.ctx, s.core, g->epoch);
  RunAdoptHook(s, g->spec);
  const uint64_t flushed = FlushAndDetach(s);
  s.hazard.store(g, std::memory_order_seq_cst);
  s.hazard_next.store(nullptr, std::memory_order_seq_cst);
  if (hooks.adopt_published != nullptr) hooks.adopt_published(hooks.ctx, s.core, g->epoch);
  Configure(s, g);
  s.last_flushed.store(flushed, std::memory_order_relaxed);
}

bool PoolCore::QuiesceSlow(CoreSlot& s, uint64_t w) {
  if ((w & kReclaimBit) != 0) {
    // Clear first: a request raised after this is seen at the next Quiesce.
    s.word.fetch_and(~kReclaimBit, std::memory_order_acq_rel);
    w &= ~kReclaimBit;
    ServeReclaim(s);
  }
  if ((w & kPauseBit) != 0) {
    if (!s.parked.load(std::memory_order_relaxed)) {
      RunAdoptHook(s, s.gen->spec);
      s.last_flushed.store(FlushSlot(s), std::memory_order_relaxed);
      s.parked.store(true, std::memory_order_release);
    }
    // No real word equals this, so the resume word (even at the same epoch) takes the slow
    // path and unparks, and every call while paused comes back here.
    s.local_word = kParkedWord;
    return false;
  }
  if (s.parked.load(std::memory_order_relaxed)) s.parked.store(false, std::memory_order_release);
  if (current_.load(std::memory_order_acquire) != s.gen) Adopt(s);
  s.local_word = w;
  s.acked_epoch.store(s.gen->epoch, std::memory_order_release);
  return true;
}

// Under gen_mu_ only: reclaimers call it without control_mu_, control with it (control_mu_
// before gen_mu_ everywhere).
uint64_t PoolCore::DrainGenerationDepots() {
  MutexLock lock(&gen_mu_);
  uint64_t n = 0;
  for (auto& g : generations_) {
    if (g->depot) n += g->depot->DrainTo(*store_);
  }
  return n;
}

bool PoolCore::PublishAndWait(std::unique_ptr<Generation> gen, std::chrono::microseconds timeout,
                              SwapReport& report, const std::vector<int>& skip) {
  const Generation* g = gen.get();
  {
    MutexLock gl(&gen_mu_);
    generations_.push_back(std::move(gen));
  }
  shared_.tracking.store(g->spec.track, std::memory_order_relaxed);
  current_.store(g, std::memory_order_seq_cst);
  epoch_.store(g->epoch, std::memory_order_release);
  {
    MutexLock info(&info_mu_);
    current_spec_ = g->spec;
  }
  const auto t0 = Clock::now();
  std::vector<int> pending;
  for (int c = 0; c < kMaxCores; ++c) {
    CoreSlot& s = Slot(c);
    if (!Owned(s)) continue;
    PublishWord(s, g->epoch);
    if (std::find(skip.begin(), skip.end(), c) == skip.end()) pending.push_back(c);
  }
  const auto deadline = t0 + timeout;
  std::vector<int> still;
  for (;;) {
    still.clear();
    for (int c : pending) {
      CoreSlot& s = Slot(c);
      CoreSwapResult r;
      r.core = c;
      if (pause_requested_[c] && s.parked.load(std::memory_order_acquire)) {
        // Parked: the worker only reads its word until resumed; act for it.
        RunAdoptHook(s, g->spec);
        FlushAndDetach(s);
        s.hazard.store(g, std::memory_order_seq_cst);
        Configure(s, g);
        s.acked_epoch.store(g->epoch, std::memory_order_release);
        r.on_behalf = true;
      } else if (s.acked_epoch.load(std::memory_order_acquire) < g->epoch) {
        still.push_back(c);
        continue;
      } else {
        r.objects_flushed = s.last_flushed.load(std::memory_order_relaxed);
      }
      r.acknowledged = true;
      r.quiesce_ns = NsSince(t0);
      report.cores.push_back(r);
    }
    pending.swap(still);
    if (pending.empty()) return true;
    if (Clock::now() >= deadline) break;
    std::this_thread::yield();
  }
  for (int c : pending) {
    report.failed_cores.push_back(c);
    CoreSwapResult r;
    r.core = c;
    r.quiesce_ns = NsSince(t0);
    report.cores.push_back(r);
  }
  return false;
}

uint64_t PoolCore::RetireGenerations() {
  uint64_t drained = 0;
  const Generation* cur = current_.load(std::memory_order_seq_cst);
  const PoolTestHooks& hooks = config_.test_hooks;
  for (auto it = generations_.begin(); it != generations_.end();) {
    const Generation* g = it->get();
    bool held = g == cur;
    for (int c = 0; c < kMaxCores && !held; ++c) {
      // hazard_next first: Adopt stores hazard before it clears hazard_next (see Adopt).
      held = Slot(c).hazard_next.load(std::memory_order_seq_cst) == g;
      if (hooks.retire_between_reads != nullptr) hooks.retire_between_reads(hooks.ctx, c, g->epoch);
      held = held || Slot(c).hazard.load(std::memory_order_seq_cst) == g;
    }
    if (held) {
      ++it;
      continue;
    }
    std::unique_ptr<Generation> dead;
    {
      MutexLock gl(&gen_mu_);
      dead = std::move(*it);
      it = generations_.erase(it);
    }
    if (dead->depot) {
      drained += dead->depot->DrainTo(*store_);
      // Kept for the next generation with this magazine size (a swap back and forth then
      // allocates no magazines): drained, and no core holds one of its magazines (the
      // hazards above), so every magazine is in its empty list.
      if (dead->depot->AllEmpty()) KeepSpareDepot(std::move(dead->depot));
    }
  }
  return drained;
}

SwapReport PoolCore::Swap(const StrategySpec& spec) { return Swap(spec, config_.quiesce_timeout); }

SwapReport PoolCore::Swap(const StrategySpec& spec, std::chrono::microseconds timeout) {
  MutexLock lock(&control_mu_);
  const auto t0 = Clock::now();
  SwapReport report;
  const Generation* old = current_.load(std::memory_order_seq_cst);
  const StrategySpec old_spec = old->spec;
  report.old_spec = old_spec.ToString();
  report.new_spec = spec.ToString();
  report.epoch = old->epoch;
  if (HasForeignOwner()) {
    report.status = absl::FailedPreconditionError(
        "the pool has cores without a quiescent point (a foreign application's lcores): its "
        "strategy is fixed for the pool's life");
    return report;
  }
  if (absl::Status st = CheckModifiers(config_, spec); !st.ok()) {
    report.status = std::move(st);
    return report;
  }
  // Tracking starts: no core stamps now, so every stamp left from an earlier tracking period
  // is cleared (the objects in flight meanwhile count as untracked).
  if (spec.track && !old_spec.track) ClearStamps();
  const uint64_t epoch = old->epoch + 1;
  if (PublishAndWait(MakeGeneration(spec, epoch), timeout, report, {})) {
    swaps_ok_.fetch_add(1, std::memory_order_relaxed);
  } else {
    swaps_failed_.fetch_add(1, std::memory_order_relaxed);
    report.rolled_back = true;
    SwapReport rollback;
    PublishAndWait(MakeGeneration(old_spec, epoch + 1), timeout, rollback, report.failed_cores);
    for (int c : rollback.failed_cores) {
      if (std::find(report.failed_cores.begin(), report.failed_cores.end(), c) ==
          report.failed_cores.end()) {
        report.failed_cores.push_back(c);
      }
    }
    report.status = absl::DeadlineExceededError(
        absl::StrCat("core(s) ", absl::StrJoin(report.failed_cores, ","),
                     " did not acknowledge epoch ", epoch, " within ", timeout.count(),
                     " us; rolled back to '", report.old_spec, "' (epoch ", epoch + 1, ")"));
  }
  report.depot_drained = RetireGenerations();
  report.epoch = current_.load()->epoch;
  report.total_ns = NsSince(t0);
  return report;
}

absl::Status PoolCore::PauseWorker(int core) { return PauseWorker(core, config_.quiesce_timeout); }

absl::Status PoolCore::PauseWorker(int core, std::chrono::microseconds timeout) {
  MutexLock lock(&control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(Slot(core))) {
    return absl::InvalidArgumentError(absl::StrCat("core ", core, " is not a worker"));
  }
  CoreSlot& s = Slot(core);
  if (s.foreign) {
    return absl::FailedPreconditionError(
        absl::StrCat("core ", core, " has no quiescent point (foreign lcore): it cannot park"));
  }
  if (pause_requested_[core]) return absl::OkStatus();
  pause_requested_[core] = true;
  PublishWord(s, current_.load()->epoch);
  const auto deadline = Clock::now() + timeout;
  while (!s.parked.load(std::memory_order_acquire)) {
    if (Clock::now() >= deadline) {
      pause_requested_[core] = false;
      PublishWord(s, current_.load()->epoch);
      return absl::DeadlineExceededError(absl::StrCat(
          "core ", core, " did not reach its quiescent point within ", timeout.count(), " us"));
    }
    std::this_thread::yield();
  }
  return absl::OkStatus();
}

absl::Status PoolCore::ResumeWorker(int core) {
  return ResumeWorker(core, config_.quiesce_timeout);
}

absl::Status PoolCore::ResumeWorker(int core, std::chrono::microseconds timeout) {
  MutexLock lock(&control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(Slot(core))) {
    return absl::InvalidArgumentError(absl::StrCat("core ", core, " is not a worker"));
  }
  if (!pause_requested_[core]) return absl::OkStatus();
  pause_requested_[core] = false;
  CoreSlot& s = Slot(core);
  PublishWord(s, current_.load()->epoch);
  // Symmetric with PauseWorker: done when the worker itself has left its parked state.
  const auto deadline = Clock::now() + timeout;
  while (s.parked.load(std::memory_order_acquire)) {
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "core ", core, " was told to resume but did not reach its quiescent point within ",
          timeout.count(), " us; it resumes when it does"));
    }
    std::this_thread::yield();
  }
  return absl::OkStatus();
}

}  // namespace skbnf::pool
