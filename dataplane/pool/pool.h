// SPDX-License-Identifier: BSD-3-Clause
// Pool: the buffer core as the host sees it — BasicPool<Layers>, a PoolCore (pool_core.h: the
// store, the generations and the swap/reclaim protocol) with per-core layers from a
// compile-time list (layer.h) and the packet path inline.
//
// The layer list is a template parameter so that a test can build a pool with a layer of its
// own (tests/unit/toy_layer.h); production uses `Pool`, over DefaultLayers. Everything that
// depends on the list is a fold over it, expanded here by the compiler:
//   packet path     Get/Put: the single-object hit of the top layer inline (a chain of
//                   compares in kSingleHitRank order), else one indirect call per burst into
//                   the generation's compiled chain (layer.h, Chain)
//   control side    configure, flush, detach, reserve and the gauges, called by PoolCore through
//                   virtual functions at quiescent points, in reclaim and by readers: never
//                   per packet
// The packet path has no virtual call, no lock, no allocation.
#ifndef SKBNF_DATAPLANE_POOL_POOL_H_
#define SKBNF_DATAPLANE_POOL_POOL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "dataplane/pool/core_slot.h"
#include "dataplane/pool/dcheck.h"
#include "dataplane/pool/default_layers.h"
#include "dataplane/pool/layer.h"
#include "dataplane/pool/pool_core.h"

namespace skbnf::pool {

// Who holds a handle on a slot (BasicPool::Handle).
enum class Owner : uint8_t { kWorker, kForeign, kHostCache };

// The host's recycle check through Shared, for one object: what the pool's own Put uses for
// a single-object hit of a recycling layer. Out of line, so that Put stays frameless.
struct SharedRecycleCheck {
  const Shared* sh;
  [[gnu::noinline]] int operator()(const void* obj) const {
    void* o = const_cast<void*>(obj);
    int16_t port;
    sh->classify(sh->classify_ctx, &o, 1, &port);
    return port;
  }
};

template <class List>
class BasicPool final : public PoolCore {
 public:
  using Layers = List;
  using Slot = LayerSlot<List>;

  static absl::StatusOr<std::unique_ptr<BasicPool>> Create(const PoolConfig& config,
                                                           const StrategySpec& initial) {
    if (absl::Status st = CheckModifiers(config, initial); !st.ok()) return st;
    auto store = MakeStore(config);
    if (!store.ok()) return store.status();
    std::unique_ptr<BasicPool> pool(
        new BasicPool(config, std::move(*store), std::make_unique<Slot[]>(kMaxCores)));
    pool->Start(initial);
    return pool;
  }
  ~BasicPool() override { Shutdown(); }

  // Positions in List of the layers with a single-object hit, in the order they are tested
  // (kSingleHitRank). A handle's hit kind (Handle::Hit) is a position in this array.
  static constexpr auto kHits = List::SingleHitOrder();
  static constexpr size_t kHitKinds = kHits.size();
  template <size_t K>
  using HitLayer = typename List::template At<kHits[K]>;
  // Whether hit K's single-object free reads the host's recycle check (a host without one
  // cannot take it), and whether it has a burst hit (GetBurst).
  template <size_t K>
  static constexpr bool kHitReadsPort = SingleHitReadsPort<HitLayer<K>>;
  template <size_t K>
  static constexpr bool kHitHasBurst = HasBurstHit<HitLayer<K>>;
  // The hit kind of layer L (its position in kHits), or -1 when it has no single-object hit.
  template <class L>
  static constexpr int kHitOf = [] {
    for (size_t k = 0; k < kHits.size(); ++k) {
      if (kHits[k] == List::template IndexOf<L>()) return static_cast<int>(k);
    }
    return -1;
  }();

  // A host that frees one object per call (DPDK's net_null, PMDs' TX completion without fast
  // free) hands a recycling layer's single-object hit the object's RX port through `port_of`
  // (the host's recycle check inlined: the RX port, or -1), so that the hit stays call-free and
  // its caller needs no stack frame. Hosts without an inline check pass NoRecycleCheck: a
  // recycling top layer then takes Put.
  struct NoRecycleCheck {
    int operator()(const void*) const { return -1; }
  };

  // ---- packet path: a thread's handle on one core's slot
  // The only way objects enter or leave the pool. Who holds the handle decides, at compile
  // time, how each call is marked and counted:
  //   kWorker     a registered worker (quiescent points: Quiesce), or any thread on a slot
  //               nobody owns (For(kNoCore), a core that is not registered: the "other
  //               threads" slot, counted atomically)
  //   kForeign    a foreign owner (RegisterForeignCore): each call is marked so that a
  //               reclaimer can take the slot's objects whenever the owner is outside one
  //   kHostCache  the host's own cache on a core playing the lcache layer
  //               (PoolConfig::host_lcache), refilling from and flushing into the layers below
  //               it (its own thread, or control for a parked worker): the layers count as
  //               always, the core's allocs/frees do not (the cache has handed nothing to the
  //               host yet: CountHostLcache counts that when the host knows)
  // Four calls: Get/Put, the full path (a burst or one object); GetOne/PutOne/GetBurst, the
  // top layer's hit inline (no indirect call, no stack frame: true when served, counted as the
  // full path counts it; false with nothing done, then take Get/Put). A host that knows its
  // slot's hit kind (Hit(), e.g. remembered per thread) may take that kind's hit without the
  // compares of the kind: PutOneOf<K>/GetOneOf<K>/GetBurstOf<K>.
  // A handle is two pointers. One that Owns() its slot may be kept across calls (the plugin's
  // and skbnfd's per-thread caches, dataplane/dpdk): the slot's address holds for the pool's
  // life, and only its owner (or control while it is parked or unregistered) changes what
  // runs on it, at quiescent points; so the inline hits read the slot's kind on every call and
  // decline whenever it does not name a hit (after an unregistration, with the debug switch or
  // a hosted lcache: kind 0). A foreign owner's kind is fixed while it is registered (Swap and
  // PauseWorker refuse, and nothing unregisters it before the pool is destroyed).
  template <Owner O>
  class Handle {
   public:
    Handle() = default;
    // Whether the slot is a registered owner of O's kind (kWorker: a worker; kForeign: a
    // foreign owner).
    bool Owns() const {
      return s_ != nullptr && Owned(*s_) && s_->foreign == (O == Owner::kForeign);
    }
    // Exactly n objects or none. A failed Get hands out nothing; objects it pulled up from a
    // lower layer may stay in the upper one (still in the pool, still reachable). A Get that
    // cannot be served reclaims stranded objects before it fails (pool_core.h).
    bool Get(void** objs, unsigned n) const {
      Slot& s = *s_;
      if constexpr (O == Owner::kHostCache) {
        return __builtin_expect(s.get(pool_->shared_, s, objs, n), 1) ||
               pool_->GetAfterReclaim(s, objs, n, /*count_allocs=*/false);
      } else if constexpr (O == Owner::kForeign) {
        Enter(s);
        const bool ok = pool_->TryGet(s, objs, n);
        Exit(s);
        return __builtin_expect(ok, 1) || pool_->GetAfterReclaim(s, objs, n);
      } else {
        return __builtin_expect(pool_->TryGet(s, objs, n), 1) || pool_->GetAfterReclaim(s, objs, n);
      }
    }
    void Put(void* const* objs, unsigned n) const {
      Slot& s = *s_;
      if constexpr (O == Owner::kHostCache) {
        if (n != 0) s.put(pool_->shared_, s, objs, n);
      } else if constexpr (O == Owner::kForeign) {
        Enter(s);
        pool_->PutTo(s, objs, n);
        Exit(s);
      } else {
        pool_->PutTo(s, objs, n);
      }
    }
    // The top layer's single-object hit (one compare per hit kind, in kSingleHitRank order).
    // A foreign owner's never waits: while a reclaimer is at work it backs off (false) and the
    // caller takes the full path, whose Enter waits.
    bool GetOne(void** obj) const {
      Slot& s = *s_;
      static_assert(O != Owner::kHostCache, "a host's cache refills with Get");
      if constexpr (O == Owner::kForeign) {
        if (s.fast_get == 0 || !TryEnter(s)) return false;
        const bool ok = BasicPool::GetOne(s, obj);
        Exit(s);
        return ok;
      } else {
        return s.fast_get != 0 && BasicPool::GetOne(s, obj);
      }
    }
    template <class PortOf = NoRecycleCheck>
    bool PutOne(void* obj, const PortOf& port_of = PortOf()) const {
      static_assert(O == Owner::kWorker, "a foreign owner frees one object with PutOneOf<K>");
      Slot& s = *s_;
      return PutOneAt<0, /*kLastUntested=*/false>(s, s.fast, obj, port_of);
    }
    // A burst wholly from the top layer's own state when it has a burst hit (the head pool's
    // hot list, the loaded magazine): what Get does then (the layer's hit, the core's allocs,
    // the prefetch modifier), without the chain's indirect call. A tracking slot's too
    // (track.h), without the stamps: the caller stamps when Tracking() (StampBurst(slot(),
    // ...)); skbnfd's OpDequeue does it out of line behind the per-thread compare it makes
    // after every burst hit anyway, so that the hit costs nothing more with `track` off.
    bool GetBurst(void** objs, unsigned n) const {
      static_assert(O == Owner::kWorker, "a foreign owner takes a burst hit with GetBurstOf<K>");
      Slot& s = *s_;
      if (!BurstGetAt<0>(s, objs, n)) return false;
      CountBurstHit(s, objs, n);
      return true;
    }
    // Whether the slot's generation tracks (its single-object get hits decline: fast_get 0).
    bool Tracking() const { return s_->fast_get != s_->fast; }
    // A tracking slot's inline single-object get hit (GetOne declines then): the same hit an
    // untracked slot takes inline, counted the same way, without the stamp: the host's slow
    // path (skbnfd's DequeueSlow) calls StampOut(slot(), ...) next, in tail position, so that
    // the inline path pays nothing for `track` when it is off. false (nothing done): take the
    // full path.
    bool TakeTrackedOne(void** obj) const {
      static_assert(O == Owner::kWorker, "a worker's (the plugin's owners take the full path)");
      Slot& s = *s_;
      if (s.fast == 0 || s.fast_get != 0) return false;
      if (!GetOneAt<0, /*kTracked=*/true>(s, obj)) return false;
      if (s.fast_prefetch) __builtin_prefetch(*obj, 1, 3);
      return true;
    }
    const CoreSlot& slot() const { return *s_; }
    // The slot's hit kind at this moment (a position in kHits), or -1: none. A tracking slot
    // has its kind for frees (PutOneOf) only: a host that takes gets of a kind without reading
    // the slot (GetOneOf, GetBurstOf: the plugin) asks GetHit, which is -1 then.
    int GetHit() const { return s_->fast_get != s_->fast ? -1 : Hit(); }
    int Hit() const {
      for (size_t k = 0; k < kHits.size(); ++k) {
        if (s_->fast == kHits[k] + 1) return static_cast<int>(k);
      }
      return -1;
    }
    // Hit K's single-object pair and burst, on a slot whose kind the caller knows to be K
    // without reading it: a foreign owner's (fixed), or a worker's that the host remembers per
    // thread and forgets in the adopt hook (PoolConfig::adopt_hook), which runs before every
    // change of a registered worker's kind (Adopt, a parked worker's swap done on its behalf,
    // UnregisterWorker) and after RegisterWorker's. The same hits, counted the same way, as
    // GetOne/PutOne/GetBurst's on that kind. A foreign owner's free of a layer whose reclaimer
    // steals around it (UnmarkedPutOne: layer.h) takes no marks at all, reclaimer or not.
    template <size_t K>
    bool PutOneOf(void* obj) const {
      using L = HitLayer<K>;
      static_assert(!SingleHitReadsPort<L>, "a hit that needs no recycle check");
      Slot& s = *s_;
      if constexpr (O == Owner::kForeign && !UnmarkedPutOne<L>) {
        if (!TryEnter(s)) return false;
        const bool ok = L::PutOne(s, obj, NoRecycleCheck());
        Exit(s);
        return ok;
      } else {
        SKBNF_DCHECK(s.fast == kHits[K] + 1, "the caller's kind is the slot's");
        return L::PutOne(s, obj, NoRecycleCheck());
      }
    }
    template <size_t K>
    bool GetOneOf(void** obj) const {
      Slot& s = *s_;
      SKBNF_DCHECK(s.fast == kHits[K] + 1, "the caller's kind is the slot's");
      if constexpr (O == Owner::kForeign) {
        if (!TryEnter(s)) return false;
        const bool ok = TakeOne<K>(s, obj);
        Exit(s);
        return ok;
      } else {
        return TakeOne<K>(s, obj);
      }
    }
    template <size_t K>
    bool GetBurstOf(void** objs, unsigned n) const {
      using L = HitLayer<K>;
      static_assert(HasBurstHit<L>, "a layer with a burst hit (GetBurst)");
      Slot& s = *s_;
      SKBNF_DCHECK(s.fast == kHits[K] + 1, "the caller's kind is the slot's");
      if constexpr (O == Owner::kForeign) {
        if (!TryEnter(s)) return false;
        const bool hit = L::GetBurst(s, objs, n);
        if (__builtin_expect(hit, 1)) CountBurstHit(s, objs, n);
        Exit(s);
        return hit;
      } else {
        if (!L::GetBurst(s, objs, n)) return false;
        CountBurstHit(s, objs, n);
        return true;
      }
    }
    // The hosted lcache layer's counters on this core, where the host counts its cache's
    // refills, flushes and transfers (alloc_misses, free_misses, bulk) as they happen.
    LayerCounters& HostedCounters() const requires(O == Owner::kHostCache) {
      return s_->counters.layer[static_cast<int>(kHostedLayer)];
    }

   private:
    friend class BasicPool;
    friend struct HandleTestPeer;  // tests/unit/test_peers.h: the slot's protocol words
    Handle(BasicPool* pool, Slot* s) : pool_(pool), s_(s) {}
    template <size_t K>
    static bool TakeOne(Slot& s, void** obj) {
      if (!HitLayer<K>::GetOne(s, obj)) return false;
      if (s.fast_prefetch) __builtin_prefetch(*obj, 1, 3);
      return true;
    }
    static void CountBurstHit(Slot& s, void** objs, unsigned n) {
      s.counters.allocs.Add(n);
      if (__builtin_expect(s.fast_prefetch, 0)) {
        for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
      }
    }
    BasicPool* pool_ = nullptr;
    Slot* s_ = nullptr;
  };
  // `core`'s slot (kNoCore or out of range: the "other threads" slot) as O sees it.
  template <Owner O>
  Handle<O> For(int core) {
    return Handle<O>(this, &SlotFor(core));
  }
  // The full path by core id, for hosts that keep no handle: a foreign owner's slot takes the
  // marks, any other the worker's path.
  bool Get(int core, void** objs, unsigned n) {
    Slot& s = SlotFor(core);
    if (__builtin_expect(s.foreign, 0)) return Handle<Owner::kForeign>(this, &s).Get(objs, n);
    return Handle<Owner::kWorker>(this, &s).Get(objs, n);
  }
  void Put(int core, void* const* objs, unsigned n) {
    Slot& s = SlotFor(core);
    if (__builtin_expect(s.foreign, 0)) return Handle<Owner::kForeign>(this, &s).Put(objs, n);
    Handle<Owner::kWorker>(this, &s).Put(objs, n);
  }
  // The host's count for its cache on `core` (its own thread): `gets` objects handed to it and
  // `puts` taken back, of which `get_misses` came from a refill (the part of a request the
  // cache did not hold) or straight from below, and `put_bypass` went straight below. The
  // cache's refills, flushes and transfers (alloc_misses, free_misses, bulk) the host counts
  // itself in Handle<kHostCache>::HostedCounters as they happen.
  void CountHostLcache(int core, uint64_t gets, uint64_t puts, uint64_t get_misses,
                       uint64_t put_bypass) {
    CoreCounters& c = slots_[core].counters;
    LayerCounters& l = c.layer[static_cast<int>(kHostedLayer)];
    c.allocs.Add(gets);
    c.frees.Add(puts);
    l.alloc_hits.Add(gets - (get_misses < gets ? get_misses : gets));
    l.free_hits.Add(puts - (put_bypass < puts ? put_bypass : puts));
  }
  // The RX port the worker is about to refill (recycle). -1: none.
  void SetRxPort(int core, int port) { slots_[core].rx_port = port; }
  // Objects handed out on `core` (kNoCore: the "other threads" slot) minus objects returned on
  // it, so far, wrapping (CoreAllocs - CoreFrees): what the host's place accounting adds up
  // (dataplane/dpdk/forward.cc, "Where every buffer is"; BracketOut, below, is its per-call
  // reading).
  uint64_t HandedOut(int core) const {
    const CoreCounters& c = SlotFor(core).counters;
    return CoreAllocs(c) - CoreFrees(c);
  }
  // HandedOut for a worker's brackets around one PMD call (forward.cc): five loads, valid only
  // for the difference of two readings of one slot with no swap between them (a worker's own,
  // inside one iteration): only the single-object hits of the layer the slot's `fast` names
  // move, so the others are left out.
  static uint64_t BracketOut(const CoreSlot& s) {
    const LayerCounters& f = *s.fast_counters;
    return s.counters.allocs.Get() - s.counters.frees.Get() + f.fast_alloc_hits.Get() -
           f.fast_free_hits.Get();
  }
  const CoreSlot& SlotOf(int core) const { return SlotFor(core); }

  // Top of a worker's poll loop. Returns false while the worker is paused (skip the
  // iteration; do not touch the pool on this core).
  bool Quiesce(int core) {
    Slot& s = slots_[core];
    uint64_t w = s.word.load(std::memory_order_acquire);
    if (__builtin_expect(w == s.local_word, 1)) return true;
    return QuiesceSlow(s, w);
  }

 private:
  // (PoolCore keeps pointers to the slots, and initialises them in Start.)
  BasicPool(const PoolConfig& config, std::unique_ptr<SlabStore> store,
            std::unique_ptr<Slot[]> slots)
      : PoolCore(config, std::move(store), SlotPointers(slots.get()).data(), &other_),
        storage_(std::move(slots)),
        slots_(storage_.get()) {}
  static std::array<CoreSlot*, kMaxCores> SlotPointers(Slot* slots) {
    std::array<CoreSlot*, kMaxCores> out;
    for (int c = 0; c < kMaxCores; ++c) out[c] = &slots[c];
    return out;
  }

  Slot& SlotFor(int core) {
    return static_cast<unsigned>(core) < kMaxCores ? slots_[core] : other_;
  }
  const Slot& SlotFor(int core) const {
    return static_cast<unsigned>(core) < kMaxCores ? slots_[core] : other_;
  }
  // The layers' answer, without reclaim: the inline single-object hit, or the chain.
  bool TryGet(Slot& s, void** objs, unsigned n) {
    if (n == 1 && s.fast_get != 0 && GetOne(s, objs)) return true;
    if (__builtin_expect(!s.get(shared_, s, objs, n), 0)) return false;
    CountAllocs(s, objs, n);
    return true;
  }
  void PutTo(Slot& s, void* const* objs, unsigned n) {
    if (__builtin_expect(debug_, 0)) return DebugPut(s, objs, n);
    if (n == 1 && s.fast != 0 &&
        PutOneAt<0, /*kLastUntested=*/true>(s, s.fast, objs[0], SharedRecycleCheck{&shared_})) {
      return;
    }
    if (Owned(s))
      s.counters.frees.Add(n);
    else
      s.counters.frees.AtomicAdd(n);
    s.put(shared_, s, objs, n);
  }
  // The single-object hit of the layer s.fast names (s.fast != 0), exactly what that layer's
  // burst code does for n = 1 when it hits. false: take the full path. One compare per layer
  // with a hit, in kSingleHitRank order; the last needs none (s.fast != 0 names one).
  static bool GetOne(Slot& s, void** obj) {
    if (!GetOneAt<0>(s, obj)) return false;
    if (s.fast_prefetch) __builtin_prefetch(*obj, 1, 3);
    return true;  // (the hit counts as one of the core's allocs too: see fast_alloc_hits)
  }
  // kTracked: a tracking slot's (Handle::TakeTrackedOne), which reads `fast` (fast_get is 0).
  template <size_t K, bool kTracked = false>
  static bool GetOneAt(Slot& s, void** obj) {
    if constexpr (K == kHits.size()) {
      return false;
    } else {
      using L = typename List::template At<kHits[K]>;
      if constexpr (K + 1 == kHits.size()) {
        return L::GetOne(s, obj);
      } else {
        if ((kTracked ? s.fast : s.fast_get) == kHits[K] + 1) return L::GetOne(s, obj);
        return GetOneAt<K + 1, kTracked>(s, obj);
      }
    }
  }
  // The burst hit of the layer s.fast names, when it has one (Handle::GetBurst; a tracking
  // slot's too: its caller stamps).
  template <size_t K>
  static bool BurstGetAt(Slot& s, void** objs, unsigned n) {
    if constexpr (K == kHits.size()) {
      return false;
    } else {
      using L = typename List::template At<kHits[K]>;
      if constexpr (HasBurstHit<L>) {
        if (s.fast == kHits[K] + 1) return L::GetBurst(s, objs, n);
      }
      return BurstGetAt<K + 1>(s, objs, n);
    }
  }
  // The same for a free (one of the core's frees too: see fast_free_hits). kLastUntested: the
  // caller knows k != 0, so the last layer needs no compare.
  template <size_t K, bool kLastUntested, class PortOf>
  static bool PutOneAt(Slot& s, uint8_t k, void* obj, const PortOf& port_of) {
    if constexpr (K == kHits.size()) {
      return false;
    } else {
      using L = typename List::template At<kHits[K]>;
      if constexpr (kLastUntested && K + 1 == kHits.size()) {
        return L::PutOne(s, obj, port_of);
      } else {
        if (k == kHits[K] + 1) return L::PutOne(s, obj, port_of);
        return PutOneAt<K + 1, kLastUntested>(s, k, obj, port_of);
      }
    }
  }

  // ---- the layer folds PoolCore calls (control side)
  void CompileChain(const StrategySpec& chain, Generation& g) const override {
    const unsigned mask = List::Mask(chain);
    g.get = ChainTables<List>::kGet[(mask << 2) | ModsOf(chain)];
    g.put = ChainTables<List>::kPut[mask];
  }
  void ConfigureLayers(CoreSlot& base, const StrategySpec& chain, Depot* depot,
                       bool inline_ok) override {
    Slot& s = static_cast<Slot&>(base);
    const unsigned mask = List::Mask(chain);
    const LayerEnv env{chain, shared_, depot, s.rx_ring_size, s.foreign};
    List::ForEach([&]<class L, size_t I>() {
      SKBNF_DCHECK(L::Objects(StateOf<L>(s)) == 0,
                   "a layer is configured at a quiescent point, after Flush: it holds nothing");
      L::Configure(StateOf<L>(s), env, (mask & List::Bit(I)) != 0);
    });
    // The top layer actually in the chain decides the inline single-object path.
    s.fast = 0;
    s.fast_counters = &kNoSingleHits;
    if (!inline_ok || mask == 0) return;
    const size_t top = static_cast<size_t>(__builtin_ctz(mask));
    List::ForEach([&]<class L, size_t I>() {
      if constexpr (HasSingleHit<L>) {
        if (I == top && SingleHitReady<L>(StateOf<L>(s))) {
          s.fast = static_cast<uint8_t>(I + 1);
          static_assert(L::kIndex >= 0, "a single-object hit is counted in layer[kIndex]");
          s.fast_counters = &s.counters.layer[L::kIndex];
        }
      }
    });
  }
  template <class L>
  bool SingleHitReady(const typename L::State& st) const {
    if constexpr (requires { L::SingleHitReady(st, shared_); }) {
      return L::SingleHitReady(st, shared_);
    } else {
      return true;
    }
  }
  uint64_t FlushLayers(CoreSlot& base, FlushSink to_below) override {
    Slot& s = static_cast<Slot&>(base);
    uint64_t n = 0;
    List::ForEach([&]<class L, size_t I>() {
      [[maybe_unused]] const uint32_t held = L::Objects(StateOf<L>(s));
      const uint64_t flushed = L::Flush(StateOf<L>(s), s.counters, to_below);
      SKBNF_DCHECK(flushed == held, "Flush hands down exactly what the layer's gauge said it held");
      SKBNF_DCHECK(L::Objects(StateOf<L>(s)) == 0, "a flushed layer holds nothing");
      n += flushed;
    });
    return n;
  }
  // A reclaimer robbing a foreign owner: a layer with Steal (layer.h) may meet the owner
  // inside its unmarked single-object free, so its gauge is not checked against what it gave.
  uint64_t StealLayers(CoreSlot& base, FlushSink to_below) override {
    Slot& s = static_cast<Slot&>(base);
    uint64_t n = 0;
    List::ForEach([&]<class L, size_t I>() {
      if constexpr (UnmarkedPutOne<L>) {
        n += L::Steal(StateOf<L>(s), s.counters, to_below);
      } else {
        [[maybe_unused]] const uint32_t held = L::Objects(StateOf<L>(s));
        const uint64_t flushed = L::Flush(StateOf<L>(s), s.counters, to_below);
        SKBNF_DCHECK(flushed == held, "Flush hands down exactly what the layer's gauge held");
        n += flushed;
      }
    });
    return n;
  }
  void DetachLayers(CoreSlot& base) override {
    Slot& s = static_cast<Slot&>(base);
    List::ForEach([&]<class L, size_t I>() {
      SKBNF_DCHECK(L::Objects(StateOf<L>(s)) == 0, "Detach runs after Flush: the layer is empty");
      if constexpr (requires { L::Detach(StateOf<L>(s)); }) L::Detach(StateOf<L>(s));
    });
  }
  void ReserveLayers(CoreSlot& base, bool foreign) override {
    Slot& s = static_cast<Slot&>(base);
    const StrategySpec defaults;
    const LayerEnv env{defaults, shared_, nullptr, s.rx_ring_size, foreign};
    List::ForEach([&]<class L, size_t I>() {
      if constexpr (requires { L::Reserve(StateOf<L>(s), env); }) L::Reserve(StateOf<L>(s), env);
    });
  }
  void LayerObjects(const CoreSlot& base, LayerGauges& out) const override {
    const Slot& s = static_cast<const Slot&>(base);
    List::ForEach([&]<class L, size_t I>() {
      const uint32_t k = L::Objects(StateOf<L>(s));
      if constexpr (L::kIndex >= 0) {
        out.objects[L::kIndex] += k;
      } else {
        out.unlisted += k;
      }
    });
  }

  std::unique_ptr<Slot[]> storage_;  // the kMaxCores workers' slots
  Slot* const slots_;
  // The "other threads" slot, a member (not storage_[kMaxCores]): SlotFor then reads slots_
  // only on the worker's branch, where the load folds into the address add (one instruction
  // per packet less than loading it ahead of the branch).
  Slot other_;
};

// The production pool.
using Pool = BasicPool<DefaultLayers>;

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_POOL_H_
