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
    auto store = MakeStore(config);
    if (!store.ok()) return store.status();
    std::unique_ptr<BasicPool> pool(
        new BasicPool(config, std::move(*store), std::make_unique<Slot[]>(kMaxCores)));
    pool->Start(initial);
    return pool;
  }
  ~BasicPool() override { Shutdown(); }

  // ---- packet path
  // Takes exactly n objects or none. A failed Get hands out nothing; objects it pulled up from
  // a lower layer may stay in the upper one (still in the pool, still reachable).
  // A Get that cannot be served reclaims stranded objects before it fails (pool_core.h).
  bool Get(int core, void** objs, unsigned n) {
    Slot& s = SlotFor(core);
    return __builtin_expect(TryGet(s, objs, n), 1) || GetAfterReclaim(s, objs, n);
  }
  void Put(int core, void* const* objs, unsigned n) { PutTo(SlotFor(core), objs, n); }
  // host_lcache: the host's cache on `core` (its own thread, or control for a parked worker)
  // refilling from / flushing into the layers below it. The layers count as always; the core's
  // allocs/frees do not (the cache has not handed anything to the host yet): CountHostLcache
  // counts those when the host knows what its cache handed out and took back.
  bool HostGet(int core, void** objs, unsigned n) {
    Slot& s = SlotFor(core);
    return __builtin_expect(s.get(shared_, s, objs, n), 1) ||
           GetAfterReclaim(s, objs, n, /*count_allocs=*/false);
  }
  void HostPut(int core, void* const* objs, unsigned n) {
    Slot& s = SlotFor(core);
    if (n != 0) s.put(shared_, s, objs, n);
  }
  // The host's count for its cache on `core` (its own thread): `gets` objects handed to it and
  // `puts` taken back, of which `get_misses` came from a refill (the part of a request the
  // cache did not hold) or straight from below, and `put_bypass` went straight below. The
  // cache's refills, flushes and transfers (alloc_misses, free_misses, bulk) the host counts
  // itself in HostLcacheCounters as they happen.
  void CountHostLcache(int core, uint64_t gets, uint64_t puts, uint64_t get_misses,
                       uint64_t put_bypass) {
    CoreCounters& c = slots_[core].counters;
    LayerCounters& l = c.layer[static_cast<int>(kHostedLayer)];
    c.allocs.Add(gets);
    c.frees.Add(puts);
    l.alloc_hits.Add(gets - (get_misses < gets ? get_misses : gets));
    l.free_hits.Add(puts - (put_bypass < puts ? put_bypass : puts));
  }
  LayerCounters& HostLcacheCounters(int core) {
    return slots_[core].counters.layer[static_cast<int>(kHostedLayer)];
  }
  // The same for a foreign owner (RegisterForeignCore): each call is marked so that a
  // reclaimer can take the slot's objects whenever the owner is outside one.
  bool ForeignGet(int core, void** objs, unsigned n) {
    return ForeignGetOn(SlotFor(core), objs, n);
  }
  // The same on a slot from ForeignFastSlot.
  bool ForeignGetOn(CoreSlot& base, void** objs, unsigned n) {
    Slot& s = static_cast<Slot&>(base);
    Enter(s);
    const bool ok = TryGet(s, objs, n);
    Exit(s);
    return __builtin_expect(ok, 1) || GetAfterReclaim(s, objs, n);
  }
  void ForeignPut(int core, void* const* objs, unsigned n) {
    Slot& s = SlotFor(core);
    Enter(s);
    PutTo(s, objs, n);
    Exit(s);
  }
  // The single-object hit of the top layer, inline and without the chain's indirect call, for
  // hosts that free one object per call (DPDK's net_null, PMDs' TX completion without fast
  // free): true when it was served (counted as Put/Get count it); false when nothing happened
  // and the caller must take Put/Get (or the Foreign pair). The slot's `fast` is 0 for
  // threads that are not owners, with the debug switch, and when the top layer has no such hit.
  // A recycling layer's free needs the object's RX port: `port_of(obj)` is the host's recycle
  // check inlined (what Shared::classify does for one object: the RX port, or -1), so that this
  // stays call-free and its caller needs no stack frame. Hosts without an inline check pass
  // NoRecycleCheck: recycle then takes Put.
  struct NoRecycleCheck {
    int operator()(const void*) const { return -1; }
  };
  template <class PortOf = NoRecycleCheck>
  bool PutOneFast(int core, void* obj, const PortOf& port_of = PortOf()) {
    Slot& s = SlotFor(core);
    return PutOneAt<0, /*kLastUntested=*/false>(s, s.fast, obj, port_of);
  }
  bool GetOneFast(int core, void** obj) {
    Slot& s = SlotFor(core);
    return s.fast != 0 && GetOne(s, obj);
  }
  // The fast-path kind (CoreSlot::fast) of layer L's single-object hit.
  template <class L>
  static constexpr int kSingleHit = 1 + static_cast<int>(List::template IndexOf<L>());
  // The foreign single-object pair, on a slot from ForeignFastSlot (the plugin's per-thread
  // cache) whose kind is kSingleHit<L>. It never waits: when a reclaimer is at work it backs
  // off and the caller takes the full path, whose Enter waits. So it makes no call and needs
  // no stack frame either. The free of a layer whose reclaimer steals around it
  // (UnmarkedPutOne: the head pool) takes no marks at all, reclaimer or not.
  template <class L>
  static bool ForeignPutOne(CoreSlot& base, void* obj) {
    Slot& s = static_cast<Slot&>(base);
    if constexpr (UnmarkedPutOne<L>) {
      return L::PutOne(s, obj, NoRecycleCheck());
    } else {
      if (!TryEnter(s)) return false;
      const bool ok = L::PutOne(s, obj, NoRecycleCheck());
      Exit(s);
      return ok;
    }
  }
  static bool ForeignGetOneOn(CoreSlot& base, void** obj) {
    Slot& s = static_cast<Slot&>(base);
    if (!TryEnter(s)) return false;
    const bool ok = GetOne(s, obj);
    Exit(s);
    return ok;
  }
  // A burst from layer L's own state on a foreign owner, inline (the plugin, on a cached slot
  // whose kind is kSingleHit<L>; L HasBurstHit, layer.h): exactly what ForeignGetOn does when
  // that state holds the whole request, without the chain's indirect call. false, with nothing
  // done, when it does not or while a reclaimer is at work: then take ForeignGetOn.
  template <class L>
  static bool ForeignBurstGet(CoreSlot& base, void** objs, unsigned n) {
    static_assert(HasBurstHit<L>, "a layer with a burst hit (GetBurst)");
    Slot& s = static_cast<Slot&>(base);
    if (!TryEnter(s)) return false;
    const bool hit = L::GetBurst(s, objs, n);
    if (__builtin_expect(hit, 1)) {
      s.counters.allocs.Add(n);
      if (__builtin_expect(s.fast_prefetch, 0)) {
        for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
      }
    }
    Exit(s);
    return hit;
  }
  // For a host that caches its thread's slot (the plugin, per thread): `core`'s slot if it is
  // a registered foreign owner whose top layer has a single-object hit, with that hit's kind
  // (kSingleHit<L>); nullptr otherwise. A foreign owner's strategy is fixed while it is
  // registered (Swap and PauseWorker refuse, and nothing unregisters it before the pool is
  // destroyed), so the answer holds for the pool's lifetime.
  CoreSlot* ForeignFastSlot(int core, int* kind) {
    if (static_cast<unsigned>(core) >= kMaxCores) return nullptr;
    Slot& s = slots_[core];
    if (!Owned(s) || !s.foreign || s.fast == 0) return nullptr;
    *kind = s.fast;
    return &s;
  }
  // ---- a host that caches its worker's slot (skbnfd's ops, per thread; skbnf_mempool.cc)
  // Finding the caller's slot from its core id (the bound, the other-threads slot, the
  // multiply) is a third of a single-object free; a host whose threads keep their slot can
  // skip it. `core`'s slot while `core` is a registered worker (not a foreign owner), else
  // nullptr. The address holds for the pool's life, and only the worker itself (or control,
  // while it is parked or unregistered) changes what runs on the slot, at quiescent points: so
  // the calls below read the slot's fast-path kind on every call (WorkerRememberedPutOne: see
  // there), and decline (false, nothing done) whenever it does not name the hit they serve:
  // after an unregistration (ResetSlot: kind 0), with the debug switch or a hosted lcache
  // (kind 0), or when another layer is on top. They are the same hits as PutOneFast/GetOneFast and
  // the top layer's burst hit (hot list, loaded magazine), counted the same way; the caller must be
  // the slot's worker.
  CoreSlot* WorkerSlot(int core) {
    if (static_cast<unsigned>(core) >= kMaxCores) return nullptr;
    Slot& s = slots_[core];
    return Owned(s) && !s.foreign ? &s : nullptr;
  }
  template <class PortOf = NoRecycleCheck>
  static bool WorkerPutOne(CoreSlot& base, void* obj, const PortOf& port_of = PortOf()) {
    Slot& s = static_cast<Slot&>(base);
    return PutOneAt<0, /*kLastUntested=*/false>(s, s.fast, obj, port_of);
  }
  static bool WorkerGetOne(CoreSlot& base, void** obj) {
    Slot& s = static_cast<Slot&>(base);
    return s.fast != 0 && GetOne(s, obj);
  }
  // Whether the slot's single-object hit is layer L's (its kind at this moment).
  template <class L>
  static bool WorkerHitIs(const CoreSlot& base) {
    return static_cast<const Slot&>(base).fast == kSingleHit<L>;
  }
  // Layer L's single-object free (one whose hit reads no recycle check), on a worker slot
  // whose kind the caller knows to be kSingleHit<L> without reading it: a host that remembers
  // WorkerHitIs<L>'s answer per thread and forgets it in the adopt hook
  // (PoolConfig::adopt_hook), which runs before every change of a registered worker's kind
  // (Adopt, a parked worker's swap done on its behalf, UnregisterWorker) and after
  // RegisterWorker's (skbnf_mempool.cc). The same hit, counted the same way, as WorkerPutOne's
  // on that kind; without the compares of the kind.
  template <class L>
  static bool WorkerRememberedPutOne(CoreSlot& base, void* obj) {
    static_assert(HasSingleHit<L> && !SingleHitReadsPort<L>,
                  "layers whose hit needs no recycle check");
    Slot& s = static_cast<Slot&>(base);
    SKBNF_DCHECK(s.fast == kSingleHit<L>, "the caller's remembered kind is the slot's");
    return L::PutOne(s, obj, NoRecycleCheck());
  }
  // A burst wholly from the top layer's own state when it has a burst hit (GetBurst: the head
  // pool's hot list, the loaded magazine): what Get does then (the layer's hit, the core's
  // allocs, the prefetch modifier), without the chain's indirect call. One compare per layer
  // with a burst hit, in kSingleHitRank order.
  static bool WorkerBurstGet(CoreSlot& base, void** objs, unsigned n) {
    Slot& s = static_cast<Slot&>(base);
    if (!BurstGetAt<0>(s, objs, n)) return false;
    s.counters.allocs.Add(n);
    if (__builtin_expect(s.fast_prefetch, 0)) {
      for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
    }
    return true;
  }
  // The RX port the worker is about to refill (recycle). -1: none.
  void SetRxPort(int core, int port) { slots_[core].rx_port = port; }

  // Top of a worker's poll loop. Returns false while the worker is paused (skip the
  // iteration; do not touch the pool on this core).
  bool Quiesce(int core) {
    Slot& s = slots_[core];
    uint64_t w = s.word.load(std::memory_order_acquire);
    if (__builtin_expect(w == s.local_word, 1)) return true;
    return QuiesceSlow(s, w);
  }

 private:
  // Positions in List of the layers with a single-object hit, in the order they are tested.
  static constexpr auto kHits = List::SingleHitOrder();

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
  // The layers' answer, without reclaim: the inline single-object hit, or the chain.
  bool TryGet(Slot& s, void** objs, unsigned n) {
    if (n == 1 && s.fast != 0 && GetOne(s, objs)) return true;
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
  template <size_t K>
  static bool GetOneAt(Slot& s, void** obj) {
    if constexpr (K == kHits.size()) {
      return false;
    } else {
      using L = typename List::template At<kHits[K]>;
      if constexpr (K + 1 == kHits.size()) {
        return L::GetOne(s, obj);
      } else {
        if (s.fast == kHits[K] + 1) return L::GetOne(s, obj);
        return GetOneAt<K + 1>(s, obj);
      }
    }
  }
  // The burst hit of the layer s.fast names, when it has one (WorkerBurstGet).
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
    g.get = ChainTables<List>::kGet[(mask << 1) | (chain.prefetch ? 1u : 0u)];
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
    if (!inline_ok || mask == 0) return;
    const size_t top = static_cast<size_t>(__builtin_ctz(mask));
    List::ForEach([&]<class L, size_t I>() {
      if constexpr (HasSingleHit<L>) {
        if (I == top && SingleHitReady<L>(StateOf<L>(s))) s.fast = static_cast<uint8_t>(I + 1);
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
