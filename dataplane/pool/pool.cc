#include "dataplane/pool/pool.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/pool/stack.h"

namespace skbnf::pool {
namespace {

using Clock = std::chrono::steady_clock;

// Slot word bits (core_slot.h): epoch << 2 | reclaim << 1 | pause.
constexpr uint64_t kPauseBit = 1;
constexpr uint64_t kReclaimBit = 2;
constexpr int kEpochShift = 2;
// local_word of a parked worker: never a published word (the epoch never reaches 2^62).
constexpr uint64_t kParkedWord = ~uint64_t{0};

// membarrier(2) MEMBARRIER_CMD_PRIVATE_EXPEDITED, registered once per process.
bool MembarrierAvailable() {
  static const bool ok =
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}

inline void CpuRelax() { __builtin_ia32_pause(); }

uint64_t NsSince(Clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// Threads that are not workers: straight to the store, counters shared (atomic RMW).
bool OtherGet(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
  s.counters.store_locks.AtomicAdd(1);
  if (!sh.store->Get(objs, n)) return false;
  s.counters.store_allocs.AtomicAdd(n);
  return true;
}
void OtherPut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
  if (n == 0) return;
  s.counters.store_locks.AtomicAdd(1);
  sh.store->Put(objs, n);
  s.counters.store_frees.AtomicAdd(n);
}

constexpr unsigned kMasks = 1u << kNumLayers;

template <size_t... I>
constexpr std::array<GetFn, sizeof...(I)> MakeGetTable(std::index_sequence<I...>) {
  return {&TopGet<static_cast<unsigned>(I >> 1), (I & 1) != 0>...};
}
template <size_t... I>
constexpr std::array<PutFn, sizeof...(I)> MakePutTable(std::index_sequence<I...>) {
  return {&TopPut<static_cast<unsigned>(I)>...};
}
constexpr auto kGetTable = MakeGetTable(std::make_index_sequence<kMasks * 2>());
constexpr auto kPutTable = MakePutTable(std::make_index_sequence<kMasks>());

// Zero-filled, so that the pages are faulted in by the thread that allocates (registration:
// control) rather than by a worker on its packet path at its first swap into the layer.
void EnsureBuf(std::unique_ptr<void*[]>& buf, uint32_t& cap, uint32_t need) {
  if (cap >= need) return;
  buf.reset(new void*[need]());
  cap = need;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Pool>> Pool::Create(const PoolConfig& config,
                                                   const StrategySpec& initial) {
  if (config.host_lcache && config.adopt_hook == nullptr) {
    return absl::InvalidArgumentError("host_lcache needs an adopt_hook to flush the host's cache");
  }
  auto store = SlabStore::Create(config.store);
  if (!store.ok()) return store.status();
  if (config.quiesce_timeout.count() <= 0) {
    return absl::InvalidArgumentError("quiesce_timeout must be > 0");
  }
  std::unique_ptr<Pool> pool(new Pool(config, std::move(*store)));
  auto g = pool->MakeGeneration(initial, 1);
  pool->current_.store(g.get(), std::memory_order_seq_cst);
  pool->epoch_.store(1);
  pool->current_spec_ = initial;
  pool->generations_.push_back(std::move(g));
  return pool;
}

Pool::Pool(const PoolConfig& config, std::unique_ptr<SlabStore> store)
    : config_(config),
      debug_(config.debug),
      strong_enter_(!config.asymmetric_fence || !MembarrierAvailable()),
      store_(std::move(store)) {
  shared_.store = store_.get();
  shared_.classify = config.classify;
  shared_.classify_ctx = config.classify_ctx;
  slots_storage_.reset(new CoreSlot[kMaxCores]);
  slots_ = slots_storage_.get();
  for (int c = 0; c < kMaxCores; ++c) {
    slots_[c].get = &OtherGet;
    slots_[c].put = &OtherPut;
  }
  other_.get = &OtherGet;
  other_.put = &OtherPut;
}

Pool::~Pool() {
  // Give every depot's objects back so the store's view is complete; memory is the host's.
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(slots_[c])) {
      FlushSlot(slots_[c]);
      ReleaseMagazines(slots_[c]);
    }
  }
  for (auto& g : generations_) {
    if (g->depot) g->depot->DrainTo(*store_);
  }
}

absl::StatusOr<uint32_t> Pool::Populate(void* base, size_t len, uint32_t max_objs,
                                        absl::FunctionRef<void(void*)> on_object) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto placed = store_->Populate(base, len, max_objs, on_object);
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

std::unique_ptr<Generation> Pool::MakeGeneration(const StrategySpec& spec, uint64_t epoch) {
  auto g = std::make_unique<Generation>();
  g->epoch = epoch;
  g->spec = spec;
  // With host_lcache the host's own cache plays the lcache layer in front of the pool.
  const unsigned mask = HostsLcache(spec) ? spec.layers & ~LayerBit(Layer::kLcache) : spec.layers;
  g->get = kGetTable[(mask << 1) | (spec.prefetch ? 1 : 0)];
  g->put = kPutTable[mask];
  if (spec.Has(Layer::kMagazine)) g->depot = TakeDepot(spec.magazine_size);
  return g;
}

std::unique_ptr<Depot> Pool::TakeDepot(uint32_t magazine_size) {
  const uint32_t needed = MagazinesNeeded(magazine_size);
  std::unique_ptr<Depot> d;
  {
    std::lock_guard<std::mutex> l(spare_mu_);
    if (spare_depot_ != nullptr && spare_depot_->magazine_size() == magazine_size) {
      d = std::move(spare_depot_);
    }
  }
  if (d == nullptr) return std::make_unique<Depot>(magazine_size, needed);
  d->Reserve(needed);
  return d;
}

void Pool::KeepSpareDepot(std::unique_ptr<Depot> d) {
  std::lock_guard<std::mutex> l(spare_mu_);
  spare_depot_ = std::move(d);
}

uint32_t Pool::MagazinesNeeded(uint32_t magazine_size) const {
  // Enough for every object to sit in a full magazine, plus loaded + previous per core: then
  // a free never finds the depot without an empty magazine.
  uint32_t workers = 0;
  for (int c = 0; c < kMaxCores; ++c) workers += Owned(slots_[c]) ? 1 : 0;
  uint64_t n = store_->populated() / magazine_size + 2ull * (workers + 1) + 2;
  return static_cast<uint32_t>(std::min<uint64_t>(n, 1u << 22));
}

uint64_t Pool::WordFor(const CoreSlot& s, uint64_t epoch) const {
  return (epoch << kEpochShift) | (pause_requested_[CoreOfSlot(s)] ? kPauseBit : 0);
}

void Pool::PublishWord(CoreSlot& s, uint64_t epoch) {
  const uint64_t w = WordFor(s, epoch);
  uint64_t old = s.word.load(std::memory_order_relaxed);
  while (!s.word.compare_exchange_weak(old, w | (old & kReclaimBit), std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
  }
}

uint64_t Pool::FlushSlot(CoreSlot& s) {
  uint64_t n = 0;
  auto flush = [&](void* const* objs, uint32_t k) {
    StorePut(shared_, s, objs, k);
    n += k;
  };
  if (uint32_t len = s.lc_len.get(); len > 0) {
    flush(s.lc, len);
    s.lc_len.set(0);
    s.counters.layer[Lcache::kIndex].bulk.Add(1);
  }
  for (int p = 0; p < kMaxPorts; ++p) {
    RecycleList& l = s.recycle[p];
    if (uint32_t k = l.count.get(); k > 0) {
      flush(l.objs, k);
      l.count.set(0);
      s.counters.layer[Recycle::kIndex].bulk.Add(1);
    }
  }
  s.recycle_total.set(0);
  if (uint32_t k = s.hot_count.get(); k > 0) {
    flush(s.hot, k);
    s.hot_count.set(0);
    s.counters.layer[HeadPool::kIndex].bulk.Add(1);
  }
  for (Magazine* m : {s.loaded, s.previous}) {
    if (m != nullptr && m->rounds > 0) {
      flush(m->objs, m->rounds);
      m->rounds = 0;
      s.counters.layer[MagazineLayer::kIndex].bulk.Add(1);
    }
  }
  s.mag_objects.set(0);
  return n;
}

void Pool::ReleaseMagazines(CoreSlot& s) {
  // Callers flush first; a magazine must never go back to the depot with rounds in it.
  for (Magazine* m : {s.loaded, s.previous}) {
    if (m != nullptr && m->rounds > 0) {
      StorePut(shared_, s, m->objs, m->rounds);
      m->rounds = 0;
    }
  }
  if (s.depot != nullptr) {
    if (s.loaded != nullptr) s.depot->ReturnEmpty(s.loaded);
    if (s.previous != nullptr) s.depot->ReturnEmpty(s.previous);
  }
  s.loaded = s.previous = nullptr;
  s.depot = nullptr;
}

void Pool::Configure(CoreSlot& s, const Generation* g) {
  const StrategySpec& spec = g->spec;
  s.get = g->get;
  s.put = g->put;
  s.hot_count.set(0);
  if (spec.Has(Layer::kHeadPool)) {
    EnsureBuf(s.hot_buf, s.hot_buf_cap, spec.hot_list_len);
    s.hot = s.hot_buf.get();
    s.hot_list_len = spec.hot_list_len;
  } else {
    s.hot_list_len = 0;
  }
  if (spec.Has(Layer::kMagazine)) {
    s.depot = g->depot.get();
    s.loaded = s.depot->TakeEmpty();
    s.previous = s.depot->TakeEmpty();
  }
  s.lc_len.set(0);
  if (spec.Has(Layer::kLcache)) {
    EnsureBuf(s.lc_buf, s.lc_buf_cap, Lcache::Capacity(spec.lcache_size));
    s.lc = s.lc_buf.get();
    s.lc_size = spec.lcache_size;
    s.lc_flush = spec.lcache_size * 3 / 2;
  } else {
    s.lc_size = s.lc_flush = 0;
  }
  s.recycle_ports = 0;
  for (int p = 0; p < kMaxPorts; ++p) {
    RecycleList& l = s.recycle[p];
    l.count.set(0);
    l.limit = 0;
    if (spec.Has(Layer::kRecycle) && s.rx_ring_size[p] > 0) {
      ++s.recycle_ports;
      l.limit = spec.recycle_limit != 0 ? spec.recycle_limit : s.rx_ring_size[p];
      EnsureBuf(s.recycle_buf[p], s.recycle_buf_cap[p], l.limit);
      l.objs = s.recycle_buf[p].get();
    }
  }
  s.recycle_total.set(0);
  // The top layer actually in the chain decides the inline single-object path.
  const bool hosted = HostsLcache(spec);
  const unsigned mask = hosted ? spec.layers & ~LayerBit(Layer::kLcache) : spec.layers;
  // The debug switch checks every object: no inline path then (PutOneFast needs no test). A
  // hosted lcache calls the pool only to refill and flush (HostGet/HostPut), which the inline
  // path, counting allocs and frees, must not serve.
  s.fast = FastPath::kNone;
  if (debug_ || hosted) {
  } else if ((mask & LayerBit(Layer::kRecycle)) != 0 && (mask & LayerBit(Layer::kLcache)) == 0) {
    if (shared_.classify != nullptr && s.recycle_ports > 0) s.fast = FastPath::kRecycle;
  } else if ((mask & LayerBit(Layer::kLcache)) == 0) {
    if (mask & LayerBit(Layer::kHeadPool)) {
      s.fast = FastPath::kHeadPool;
    } else if (mask & LayerBit(Layer::kMagazine)) {
      s.fast = FastPath::kMagazine;
    }
  }
  s.fast_prefetch = spec.prefetch;
  s.gen = g;
}

void Pool::RunAdoptHook(CoreSlot& s, const StrategySpec& next) {
  if (config_.adopt_hook != nullptr) {
    config_.adopt_hook(config_.adopt_ctx, static_cast<int>(&s - slots_), next);
  }
}

void Pool::Adopt(CoreSlot& s) {
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
  if (hooks.adopt_validated != nullptr) hooks.adopt_validated(hooks.ctx, CoreOfSlot(s), g->epoch);
  RunAdoptHook(s, g->spec);
  const uint64_t flushed = FlushSlot(s);
  ReleaseMagazines(s);
  s.hazard.store(g, std::memory_order_seq_cst);
  s.hazard_next.store(nullptr, std::memory_order_seq_cst);
  if (hooks.adopt_published != nullptr) hooks.adopt_published(hooks.ctx, CoreOfSlot(s), g->epoch);
  Configure(s, g);
  s.last_flushed.store(flushed, std::memory_order_relaxed);
}

void Pool::ServeReclaim(CoreSlot& s) {
  if (!s.parked.load(std::memory_order_relaxed)) {  // a parked core flushed when it parked
    RunAdoptHook(s, s.gen->spec);
    FlushSlot(s);
  }
  s.reclaims_served.fetch_add(1, std::memory_order_acq_rel);
}

bool Pool::PutOneRecycle(const Shared& sh, CoreSlot& s, void* obj) {
  int16_t port;
  sh.classify(sh.classify_ctx, &obj, 1, &port);
  if (port < 0 || port >= kMaxPorts) return false;
  return PutOneRecycleTo(s, port, obj);
}

bool Pool::QuiesceSlow(CoreSlot& s, uint64_t w) {
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

absl::Status Pool::RegisterWorker(int core, const std::vector<RxPort>& rx_ports) {
  std::lock_guard<std::mutex> lock(control_mu_);
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

absl::Status Pool::RegisterForeignCore(int core) {
  std::lock_guard<std::mutex> lock(control_mu_);
  const uint32_t no_rings[kMaxPorts] = {};
  return RegisterLocked(core, no_rings, /*foreign=*/true);
}

absl::Status Pool::RegisterLocked(int core, const uint32_t (&rings)[kMaxPorts], bool foreign) {
  if (core < 0 || core >= kMaxCores) {
    return absl::InvalidArgumentError(
        absl::StrCat("core ", core, " is out of range [0, ", kMaxCores - 1, "]"));
  }
  CoreSlot& s = slots_[core];
  if (Owned(s)) {
    return absl::AlreadyExistsError(absl::StrCat("core ", core, " is already a worker"));
  }
  std::copy(std::begin(rings), std::end(rings), s.rx_ring_size);
  // The layers' buffers for the default tunables, allocated here on the control thread: a
  // worker's first swap into `headpool`, `lcache` or `recycle` then allocates nothing (the
  // first allocation on a worker thread creates its malloc arena: measured 0.6 ms of
  // acknowledgement, with the worker not forwarding, at the first lcache -> recycle swap).
  // A swap to a larger tunable than these still grows the buffer on the worker, once.
  const StrategySpec defaults;
  EnsureBuf(s.hot_buf, s.hot_buf_cap, defaults.hot_list_len);
  EnsureBuf(s.lc_buf, s.lc_buf_cap, Lcache::Capacity(defaults.lcache_size));
  for (int p = 0; p < kMaxPorts; ++p) {
    if (rings[p] > 0 && !foreign) EnsureBuf(s.recycle_buf[p], s.recycle_buf_cap[p], rings[p]);
  }
  const Generation* g = current_.load(std::memory_order_seq_cst);
  s.hazard.store(g, std::memory_order_seq_cst);
  Configure(s, g);
  RunAdoptHook(s, g->spec);  // the host sizes its cache for the spec (nothing to flush yet)
  s.foreign = foreign;
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
    KeepSpareDepot(TakeDepot(StrategySpec().magazine_size));
  }
  return absl::OkStatus();
}

void Pool::ResetSlot(CoreSlot& s) {
  s.get = &OtherGet;
  s.put = &OtherPut;
  s.fast = FastPath::kNone;
  s.fast_prefetch = false;
  s.rx_port = -1;
  s.hot_list_len = 0;
  s.hot_count.set(0);
  s.lc_size = s.lc_flush = 0;
  s.lc_len.set(0);
  s.recycle_ports = 0;
  for (RecycleList& l : s.recycle) {
    l.limit = 0;
    l.count.set(0);
  }
  s.recycle_total.set(0);
  std::fill(std::begin(s.rx_ring_size), std::end(s.rx_ring_size), 0u);
  s.gen = nullptr;
}

absl::Status Pool::UnregisterWorker(int core) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(slots_[core])) {
    return absl::NotFoundError(absl::StrCat("core ", core, " is not a worker"));
  }
  CoreSlot& s = slots_[core];
  // Keep reclaimers off a foreign slot while it is emptied and reset.
  while (s.foreign && (s.steal.fetch_or(kStealBit, std::memory_order_seq_cst) & kStealBit) != 0) {
    CpuRelax();
  }
  RunAdoptHook(s, StrategySpec{});  // the core runs no layers from now on: `slab`
  FlushSlot(s);
  ReleaseMagazines(s);
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
  for (int c = 0; c < kMaxCores; ++c) any = any || Owned(slots_[c]);
  if (!any) DrainGenerationDepots();
  return absl::OkStatus();
}

uint64_t Pool::DrainDepots() {
  std::lock_guard<std::mutex> lock(control_mu_);
  return DrainGenerationDepots();
}

// Under gen_mu_ only: reclaimers call it without control_mu_, control with it (control_mu_
// before gen_mu_ everywhere).

uint64_t Pool::DrainGenerationDepots() {
  std::lock_guard<std::mutex> lock(gen_mu_);
  uint64_t n = 0;
  for (auto& g : generations_) {
    if (g->depot) n += g->depot->DrainTo(*store_);
  }
  return n;
}

bool Pool::PublishAndWait(std::unique_ptr<Generation> gen, std::chrono::microseconds timeout,
                          SwapReport& report, const std::vector<int>& skip) {
  const Generation* g = gen.get();
  {
    std::lock_guard<std::mutex> gl(gen_mu_);
    generations_.push_back(std::move(gen));
  }
  current_.store(g, std::memory_order_seq_cst);
  epoch_.store(g->epoch, std::memory_order_release);
  {
    std::lock_guard<std::mutex> info(info_mu_);
    current_spec_ = g->spec;
  }
  const auto t0 = Clock::now();
  std::vector<int> pending;
  for (int c = 0; c < kMaxCores; ++c) {
    CoreSlot& s = slots_[c];
    if (!Owned(s)) continue;
    PublishWord(s, g->epoch);
    if (std::find(skip.begin(), skip.end(), c) == skip.end()) pending.push_back(c);
  }
  const auto deadline = t0 + timeout;
  std::vector<int> still;
  for (;;) {
    still.clear();
    for (int c : pending) {
      CoreSlot& s = slots_[c];
      CoreSwapResult r;
      r.core = c;
      if (pause_requested_[c] && s.parked.load(std::memory_order_acquire)) {
        // Parked: the worker only reads its word until resumed; act for it.
        RunAdoptHook(s, g->spec);
        FlushSlot(s);
        ReleaseMagazines(s);
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

uint64_t Pool::RetireGenerations() {
  uint64_t drained = 0;
  const Generation* cur = current_.load(std::memory_order_seq_cst);
  const PoolTestHooks& hooks = config_.test_hooks;
  for (auto it = generations_.begin(); it != generations_.end();) {
    const Generation* g = it->get();
    bool held = g == cur;
    for (int c = 0; c < kMaxCores && !held; ++c) {
      // hazard_next first: Adopt stores hazard before it clears hazard_next (see Adopt).
      held = slots_[c].hazard_next.load(std::memory_order_seq_cst) == g;
      if (hooks.retire_between_reads != nullptr) hooks.retire_between_reads(hooks.ctx, c, g->epoch);
      held = held || slots_[c].hazard.load(std::memory_order_seq_cst) == g;
    }
    if (held) {
      ++it;
      continue;
    }
    std::unique_ptr<Generation> dead;
    {
      std::lock_guard<std::mutex> gl(gen_mu_);
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

SwapReport Pool::Swap(const StrategySpec& spec) { return Swap(spec, config_.quiesce_timeout); }

SwapReport Pool::Swap(const StrategySpec& spec, std::chrono::microseconds timeout) {
  std::lock_guard<std::mutex> lock(control_mu_);
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

absl::Status Pool::PauseWorker(int core) { return PauseWorker(core, config_.quiesce_timeout); }

absl::Status Pool::PauseWorker(int core, std::chrono::microseconds timeout) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(slots_[core])) {
    return absl::InvalidArgumentError(absl::StrCat("core ", core, " is not a worker"));
  }
  CoreSlot& s = slots_[core];
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

absl::Status Pool::ResumeWorker(int core) { return ResumeWorker(core, config_.quiesce_timeout); }

absl::Status Pool::ResumeWorker(int core, std::chrono::microseconds timeout) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (core < 0 || core >= kMaxCores || !Owned(slots_[core])) {
    return absl::InvalidArgumentError(absl::StrCat("core ", core, " is not a worker"));
  }
  if (!pause_requested_[core]) return absl::OkStatus();
  pause_requested_[core] = false;
  CoreSlot& s = slots_[core];
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

bool Pool::IsParked(int core) const {
  return core >= 0 && core < kMaxCores && slots_[core].parked.load(std::memory_order_acquire);
}

uint64_t Pool::in_depots() const {
  std::lock_guard<std::mutex> lock(gen_mu_);
  uint64_t n = 0;
  for (const auto& g : generations_) {
    if (g->depot) n += g->depot->objects();
  }
  return n;
}

LayerGauges Pool::CoreGauges(int core) const {
  LayerGauges out;
  if (core < 0 || core >= kMaxCores) return out;
  const CoreSlot& s = slots_[core];
  out.objects[static_cast<int>(Layer::kLcache)] = s.lc_len.get();
  out.objects[static_cast<int>(Layer::kRecycle)] = s.recycle_total.get();
  out.objects[static_cast<int>(Layer::kHeadPool)] = s.hot_count.get();
  out.objects[static_cast<int>(Layer::kMagazine)] = s.mag_objects.get();
  return out;
}

CoreCountersSnapshot Pool::CoreStats(int core) const {
  if (core < 0 || core >= kMaxCores) return Snapshot(other_.counters);
  return Snapshot(slots_[core].counters);
}

StrategySpec Pool::strategy() const {
  std::lock_guard<std::mutex> info(info_mu_);
  return current_spec_;
}

uint64_t Pool::epoch() const { return epoch_.load(std::memory_order_acquire); }

std::vector<int> Pool::workers() const {
  std::vector<int> out;
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(slots_[c])) out.push_back(c);
  }
  return out;
}

std::vector<uint64_t> Pool::LiveEpochs() const {
  std::lock_guard<std::mutex> lock(gen_mu_);
  std::vector<uint64_t> out;
  for (const auto& g : generations_) out.push_back(g->epoch);
  return out;
}

bool Pool::HasForeignOwner() const {
  for (int c = 0; c < kMaxCores; ++c) {
    if (Owned(slots_[c]) && slots_[c].foreign) return true;
  }
  return false;
}

AuditReport Pool::Audit(uint64_t in_flight) {
  std::lock_guard<std::mutex> lock(control_mu_);
  AuditReport r;
  r.populated = store_->populated();
  r.in_store = store_->free_count();
  r.in_flight = in_flight;
  uint64_t allocs = 0, frees = 0;
  for (int c = 0; c <= kMaxCores; ++c) {
    const CoreSlot& s = c < kMaxCores ? slots_[c] : other_;
    allocs += CoreAllocs(s.counters);
    frees += CoreFrees(s.counters);
    if (c == kMaxCores || !Owned(s)) continue;
    LayerGauges g = CoreGauges(c);
    for (int l = 0; l < kNumLayers; ++l) r.in_layers[l] += g.objects[l];
  }
  for (const auto& g : generations_) {
    if (g->depot) r.in_depots += g->depot->objects();
  }
  r.handed_out = allocs - frees;
  r.double_frees = double_frees();
  r.foreign_frees = foreign_frees();
  uint64_t layers = 0;
  for (uint64_t v : r.in_layers) layers += v;
  const uint64_t accounted = r.in_store + layers + r.in_depots + r.in_flight;
  r.ok = accounted == r.populated;
  r.message = absl::StrCat(r.ok ? "ok" : "MISMATCH", ": populated ", r.populated, " ",
                           r.ok ? "==" : "!=", " store ", r.in_store, " + layers ", layers,
                           " + depots ", r.in_depots, " + in flight ", r.in_flight,
                           " (= ", accounted, "); handed out by counters ", r.handed_out);
  return r;
}

void Pool::EnterSlow(CoreSlot& s) {
  do {
    s.in_op.store(0, std::memory_order_release);
    while ((s.steal.load(std::memory_order_acquire) & kStealBit) != 0) CpuRelax();
    s.in_op.exchange(1, std::memory_order_seq_cst);  // a full barrier (xchg)
  } while ((s.steal.load(std::memory_order_seq_cst) & kStealBit) != 0);
}

void Pool::Reclaim(CoreSlot& self) {
  reclaims_.fetch_add(1, std::memory_order_relaxed);
  const bool owner = &self != &other_ && Owned(self);
  uint64_t moved = 0;
  // 1. Our own layers (the caller is their owner, between operations) and the depots.
  if (owner) {
    if (self.foreign) Enter(self);
    moved += FlushSlot(self);
    if (self.foreign) Exit(self);
  }
  moved += DrainGenerationDepots();
  // 2. Ask quiescent-point workers; 3. rob foreign owners.
  uint32_t served0[kMaxCores];
  int asked[kMaxCores];
  int n_asked = 0;
  CoreSlot* robbed[kMaxCores];
  int n_robbed = 0;
  for (int c = 0; c < kMaxCores; ++c) {
    CoreSlot& v = slots_[c];
    if (&v == &self || !v.registered.load(std::memory_order_acquire)) continue;
    if (v.foreign) {
      uint8_t old = v.steal.load(std::memory_order_relaxed);
      if ((old & kStealBit) == 0 &&
          v.steal.compare_exchange_strong(old, old | kStealBit, std::memory_order_seq_cst)) {
        robbed[n_robbed++] = &v;
      }  // else another reclaimer is emptying it
      continue;
    }
    if (v.parked.load(std::memory_order_acquire)) continue;  // flushed when it parked
    served0[c] = v.reclaims_served.load(std::memory_order_acquire);
    v.word.fetch_or(kReclaimBit, std::memory_order_acq_rel);
    asked[n_asked++] = c;
  }
  if (n_robbed > 0) {
    // Owners store in_op then load steal; we stored steal (a seq_cst RMW) and load in_op.
    // With plain-store owners the barrier that orders their side is this membarrier; with
    // full-fence owners (strong_enter_) both sides are seq_cst already.
    if (!strong_enter_) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    for (int i = 0; i < n_robbed; ++i) {
      CoreSlot& v = *robbed[i];
      while (v.in_op.load(std::memory_order_seq_cst) != 0) CpuRelax();
      moved += FlushSlot(v);
      v.steal.fetch_and(static_cast<uint8_t>(~kStealBit), std::memory_order_release);
    }
  }
  const auto deadline = Clock::now() + config_.reclaim_wait;
  while (n_asked > 0) {
    int still = 0;
    for (int i = 0; i < n_asked; ++i) {
      const CoreSlot& v = slots_[asked[i]];
      const bool done = v.reclaims_served.load(std::memory_order_acquire) != served0[asked[i]] ||
                        v.parked.load(std::memory_order_acquire) ||
                        !v.registered.load(std::memory_order_acquire);
      if (!done) asked[still++] = asked[i];
    }
    n_asked = still;
    // Serve requests addressed to us meanwhile: two workers failing at once must not wait for
    // each other. Our layers are consistent here (the failed Get gave back what it took).
    if (owner && !self.foreign && (self.word.load(std::memory_order_acquire) & kReclaimBit) != 0) {
      self.word.fetch_and(~kReclaimBit, std::memory_order_acq_rel);
      moved += FlushSlot(self);
      self.reclaims_served.fetch_add(1, std::memory_order_acq_rel);
    }
    if (n_asked == 0) break;
    if (Clock::now() >= deadline) {
      reclaim_timeouts_.fetch_add(n_asked, std::memory_order_relaxed);
      break;
    }
    CpuRelax();
  }
  reclaimed_.fetch_add(moved, std::memory_order_relaxed);
}

bool Pool::GetAfterReclaim(CoreSlot& s, void** objs, unsigned n, bool count_allocs) {
  Reclaim(s);
  if (s.foreign) Enter(s);
  const bool ok = s.get(shared_, s, objs, n);
  if (ok) {
    if (count_allocs) CountAllocs(s, objs, n);
  } else {
    FailedGet(s);
  }
  if (s.foreign) Exit(s);
  return ok;
}

void Pool::FailedGet(CoreSlot& s) {
  if (Owned(s)) {
    s.counters.alloc_failures.Add(1);
  } else {
    s.counters.alloc_failures.AtomicAdd(1);
  }
}

void Pool::MarkHandedOut(void* const* objs, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    int64_t idx = store_->IndexOf(objs[i]);
    if (idx >= 0 && static_cast<uint64_t>(idx) < obj_state_size_) {
      obj_state_[idx].store(1, std::memory_order_relaxed);
    }
  }
}

void Pool::DebugPut(CoreSlot& s, void* const* objs, unsigned n) {
  void* keep[64];
  for (unsigned off = 0; off < n; off += 64) {
    const unsigned k = std::min(64u, n - off);
    unsigned m = 0;
    for (unsigned j = 0; j < k; ++j) {
      void* o = objs[off + j];
      int64_t idx = store_->IndexOf(o);
      if (idx < 0 || static_cast<uint64_t>(idx) >= obj_state_size_) {
        foreign_frees_.fetch_add(1, std::memory_order_relaxed);
      } else if (obj_state_[idx].exchange(0, std::memory_order_acq_rel) != 1) {
        double_frees_.fetch_add(1, std::memory_order_relaxed);
      } else {
        keep[m++] = o;
      }
    }
    if (m == 0) continue;
    if (Owned(s))
      s.counters.frees.Add(m);
    else
      s.counters.frees.AtomicAdd(m);
    s.put(shared_, s, keep, m);
  }
}

}  // namespace skbnf::pool
