// SPDX-License-Identifier: BSD-3-Clause
// A layer: one per-core allocation mechanism (a seed), behind one compile-time interface.
//
// Why compile time. A layer sits on the per-packet path, where the rules are no virtual call,
// no lock, no allocation. So a layer is a struct of static functions and a `State`, and the
// pool is a template over a list of them (LayerList): the chain that serves a burst, the
// single-object hit, configure, flush, gauges and the audit are folds over that list, expanded
// by the compiler into the code a hand-written pool would have. Adding a layer is one file and
// one entry in the list (see README.md, "Adding a layer"); nothing else in the pool knows it.
//
// The interface (L is the layer, S the pool's LayerSlot, Below the chain under L):
//
//   struct State;                      per-core state, one per slot, written only by its core
//                                      (or by control while the core is parked/unregistered)
//   static constexpr int kIndex;       its place in the public vocabulary (Layer: counters,
//                                      gauges, metric labels, the spec's mask), < kMaxLayers and
//                                      one per layer of a list, or kUnlisted for a layer no spec
//                                      can name
//   static constexpr LayerFacts kFacts;                its name, help line and tunable with its
//                                      default and range (layer_facts.h: the spec's grammar and
//                                      `strategy list` read them from the catalog); its value in
//                                      a spec is spec.Tunable(kIndex), which it reads itself
//   static uint64_t MaxHeld(const StrategySpec&, const HoldEnv&)
//                                      the most it can hold on one core under that spec: the one
//                                      definition the pool-share check and preflight sizing use
//   static bool InStack(const StrategySpec&)           is it in this strategy's chain?
//   static void Configure(State&, const LayerEnv&, bool on)
//                                      adopt a generation's tunables (on) or hold nothing (off);
//                                      runs at a quiescent point, after Flush: State is empty
//   static uint64_t Flush(State&, CoreCounters&, FlushSink to_below)
//                                      every object it holds to `to_below` (the store), counted
//                                      as one bulk transfer; returns how many
//   static uint32_t Objects(const State&)              gauge: objects it holds (any thread)
//   template <class Below, class S> static bool Get(Shared&, S&, void** objs, unsigned n)
//   template <class Below, class S> static void Put(Shared&, S&, void* const* objs, unsigned n)
//                                      the burst; what it cannot serve or keep goes to
//                                      Below::Get/Put. Get is all or nothing.
// Optional:
//   static void Reserve(State&, const LayerEnv&)       buffers for the default tunables, made
//                                      at registration on the control thread (not on a worker)
//   static void Detach(State&)         give back what it borrowed from a generation (the
//                                      magazines of a depot); runs after Flush
//   the single-object hit (all three, see Pool::Handle::GetOne/PutOne):
//   static constexpr int kSingleHitRank;    order of the inline tests, lowest first: the fast
//                                      path is a chain of compares, one instruction each per
//                                      packet, so the most common top layer goes first
//   static bool GetOne(S&, void** obj) / template <class PortOf> static bool PutOne(S&, void*,
//                                      const PortOf&)   what Get/Put do for n = 1 when they hit,
//                                      counted in fast_alloc_hits/fast_free_hits; false with
//                                      nothing done otherwise. PortOf is the host's recycle
//                                      check for one object (layers that do not recycle ignore it)
//   static bool SingleHitReady(const State&, const Shared&)   (default: true)
//   static constexpr bool kSingleHitReadsPort = true;  PutOne reads its PortOf (recycle): a host
//                                      without the recycle check cannot take its hit
//   template <class S> static bool GetBurst(S&, void** objs, unsigned n)
//                                      the burst hit: what Get does when the layer's own state
//                                      holds all n (counted as its hits), false with nothing
//                                      done otherwise; lets a host that caches its slot skip
//                                      the chain's indirect call (Pool::Handle::GetBurst)
//   static uint64_t Steal(State&, CoreCounters&, FlushSink to_below)
//                                      a layer with a single-object hit whose PutOne a foreign
//                                      owner may run without the operation marks
//                                      (UnmarkedPutOne; pool_core.h, "No stranded objects"):
//                                      Flush as a reclaimer does it while the owner may be
//                                      inside that PutOne, writing nothing PutOne writes and
//                                      taking what PutOne has published (the head pool's)
//
// Invariants every layer keeps: an object is in exactly one place (a layer, the store, a
// depot, or the host's hands); Objects() is exact whenever its core is quiescent; a failed Get
// leaves everything in the pool (possibly in a different layer); a layer never allocates
// memory in Get/Put.
#ifndef SKBNF_DATAPLANE_POOL_LAYER_H_
#define SKBNF_DATAPLANE_POOL_LAYER_H_

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dataplane/pool/core_slot.h"
#include "dataplane/pool/dcheck.h"
#include "dataplane/pool/layer_facts.h"

namespace skbnf::pool {

class Depot;

inline constexpr int kUnlisted = -1;  // kIndex of a layer the spec does not name

// What Configure/Reserve may read besides the layer's own state.
struct LayerEnv {
  const StrategySpec& spec;
  const Shared& shared;
  Depot* depot;                               // the generation's depot (magazine), or nullptr
  const uint32_t (&rx_ring_size)[kMaxPorts];  // RX ports of this core (0 = not one)
  bool foreign;                               // a foreign owner (no RX ports to recycle to)
};

// Grows a layer's buffer (never shrinks). Zero-filled, so that the pages are faulted in by the
// thread that allocates (registration: control) rather than by a worker on its packet path.
inline void EnsureBuf(std::unique_ptr<void*[]>& buf, uint32_t& cap, uint32_t need) {
  if (cap >= need) return;
  buf.reset(new void*[need]());
  cap = need;
}

template <class L>
concept HasSingleHit = requires {
  L::kSingleHitRank;
};

// A layer whose single-object free reads the host's recycle check (kSingleHitReadsPort).
template <class L>
concept SingleHitReadsPort = HasSingleHit<L> && requires {
  requires L::kSingleHitReadsPort;
};

// A layer with a burst hit (GetBurst).
template <class L>
concept HasBurstHit = HasSingleHit<L> && requires(CoreSlot& s, void** objs) {
  { L::GetBurst(s, objs, 1u) } -> std::same_as<bool>;
};

namespace layer_check {
// What the concept below calls Get/Put with: a chain below and a slot that hold nothing. Only
// declarations are looked at (unevaluated), never a body.
struct ProbeBelow {
  template <class S>
  static bool Get(Shared&, S&, void**, unsigned);
  template <class S>
  static void Put(Shared&, S&, void* const*, unsigned);
};
template <class L>
struct ProbeSlot : CoreSlot {
  std::tuple<typename L::State> layers;
};
}  // namespace layer_check

// The interface at the top of this file, checked where a layer enters a LayerList: a type that
// lacks a member or spells its signature differently is refused there, by name.
template <class L>
concept PoolLayer = requires(typename L::State& st, const typename L::State& cst,
                             const LayerEnv& env, CoreCounters& c, FlushSink to_below,
                             const StrategySpec& spec, const HoldEnv& hold, Shared& sh,
                             layer_check::ProbeSlot<L>& slot, void** objs, void* const* cobjs) {
  requires std::is_default_constructible_v<typename L::State>;
  { L::kIndex } -> std::convertible_to<int>;
  { L::kFacts } -> std::convertible_to<LayerFacts>;
  { L::InStack(spec) } -> std::same_as<bool>;
  { L::Configure(st, env, true) } -> std::same_as<void>;
  { L::Flush(st, c, to_below) } -> std::same_as<uint64_t>;
  { L::Objects(cst) } -> std::same_as<uint32_t>;
  { L::MaxHeld(spec, hold) } -> std::same_as<uint64_t>;
  { L::template Get<layer_check::ProbeBelow>(sh, slot, objs, 1u) } -> std::same_as<bool>;
  { L::template Put<layer_check::ProbeBelow>(sh, slot, cobjs, 1u) } -> std::same_as<void>;
};

// A layer whose single-object free needs no operation marks on a foreign owner: a reclaimer
// takes its objects with Steal, around a PutOne in progress.
template <class L>
concept UnmarkedPutOne = HasSingleHit<L> &&
    requires(typename L::State& st, CoreCounters& c, FlushSink f) {
  { L::Steal(st, c, f) } -> std::same_as<uint64_t>;
};

template <PoolLayer... L>
struct LayerList {
  static constexpr size_t kSize = sizeof...(L);
  using States = std::tuple<typename L::State...>;
  template <size_t I>
  using At = std::tuple_element_t<I, std::tuple<L...>>;
  // Bit of layer I in a chain mask (top of the stack = lowest bit).
  static constexpr unsigned Bit(size_t i) { return 1u << i; }
  template <class X>
  static constexpr size_t IndexOf() {
    size_t i = 0, found = kSize;
    ((std::is_same_v<X, L> ? (found = i, ++i) : ++i), ...);
    return found;
  }
  // The chain mask of a strategy: the layers InStack says it runs.
  static unsigned Mask(const StrategySpec& spec) {
    unsigned m = 0, i = 0;
    ((m |= L::InStack(spec) ? Bit(i) : 0u, ++i), ...);
    return m;
  }
  // Calls f.template operator()<Layer, Index>() for every layer, top first.
  template <class F>
  static void ForEach(F&& f) {
    ForEachImpl(f, std::index_sequence_for<L...>());
  }
  // Whether every layer's kIndex is its place in the list (the production list's rule).
  static constexpr bool kIndexIsPlace = [] {
    bool ok = true;
    int i = 0;
    ((ok = ok && L::kIndex == i, ++i), ...);
    return ok;
  }();
  // Whether every kIndex fits the per-layer arrays (kMaxLayers) and no two layers share one.
  static constexpr bool kIndicesFit = [] {
    const std::array<int, kSize> idx{L::kIndex...};
    for (size_t a = 0; a < kSize; ++a) {
      if (idx[a] >= kMaxLayers) return false;
      for (size_t b = 0; b < a; ++b) {
        if (idx[a] >= 0 && idx[a] == idx[b]) return false;
      }
    }
    return true;
  }();
  static_assert(kIndicesFit, "a layer's kIndex must be below kMaxLayers and its own in the list");
  // The list's rows for the catalog (layer_facts.h), top first: what parsing, the held-objects
  // bound and `strategy list` read. (LayerCatalog() is DefaultLayers'.)
  static const std::vector<CatalogEntry>& Catalog() {
    static const std::vector<CatalogEntry> kRows = {
        CatalogEntry{L::kFacts, L::kIndex, IndexOf<L>(), &L::InStack, &L::MaxHeld}...};
    return kRows;
  }
  // Positions of the layers with a single-object hit, in kSingleHitRank order.
  static constexpr auto SingleHitOrder() {
    constexpr size_t n = (0 + ... + (HasSingleHit<L> ? 1 : 0));
    std::array<size_t, n> pos{};
    std::array<int, n> rank{};
    size_t k = 0, i = 0;
    ((HasSingleHit<L> ? (pos[k] = i, rank[k] = RankOf<L>(), ++k, ++i) : ++i), ...);
    for (size_t a = 1; a < n; ++a) {  // insertion sort by rank (a handful of layers)
      for (size_t b = a; b > 0 && rank[b] < rank[b - 1]; --b) {
        std::swap(rank[b], rank[b - 1]);
        std::swap(pos[b], pos[b - 1]);
      }
    }
    return pos;
  }

 private:
  template <class X>
  static constexpr int RankOf() {
    if constexpr (HasSingleHit<X>) {
      return X::kSingleHitRank;
    } else {
      return 0;
    }
  }
  template <class F, size_t... I>
  static void ForEachImpl(F& f, std::index_sequence<I...>) {
    (f.template operator()<L, I>(), ...);
  }
};

// The per-core slot of a pool over `List`: the protocol part (CoreSlot) and one State per
// layer. Layers reach their own state with StateOf<L>(s).
template <class List>
struct LayerSlot : CoreSlot {
  typename List::States layers;
};

template <class L, class S>
inline typename L::State& StateOf(S& s) {
  return std::get<typename L::State>(s.layers);
}
template <class L, class S>
inline const typename L::State& StateOf(const S& s) {
  return std::get<typename L::State>(s.layers);
}

// The chain of mask M over List: Chain<List, M>::Get/Put call the top layer of M, which calls
// Chain<List, M without it> for what it cannot serve; the empty mask is the store. The only
// indirect call is the one per burst into the slot's `get`/`put` (TopGet/TopPut below).
template <class List, unsigned M>
struct Chain {
  using Slot = LayerSlot<List>;
  static constexpr size_t kTop = static_cast<size_t>(__builtin_ctz(M | (1u << 31)));
  using Below = Chain<List, (M & (M - 1))>;

  static bool Get(Shared& sh, Slot& s, void** objs, unsigned n) {
    if constexpr (M == 0) {
      return StoreGet(sh, s, objs, n);
    } else {
      return List::template At<kTop>::template Get<Below>(sh, s, objs, n);
    }
  }
  static void Put(Shared& sh, Slot& s, void* const* objs, unsigned n) {
#ifndef NDEBUG
    for (unsigned i = 0; i < n; ++i) {
      SKBNF_DCHECK(objs[i] != nullptr, "a Put hands down real objects only");
    }
#endif
    if constexpr (M == 0) {
      StorePut(sh, s, objs, n);
    } else {
      List::template At<kTop>::template Put<Below>(sh, s, objs, n);
    }
  }
};

// Top of the stack: the modifiers. prefetch (2010 prefetchw) touches each object handed out for
// writing, so the host's first store into it does not stall; track stamps it (track.h).
template <class List, unsigned M, unsigned Mods>
bool TopGet(Shared& sh, CoreSlot& base, void** objs, unsigned n) {
  auto& s = static_cast<LayerSlot<List>&>(base);
  if (!Chain<List, M>::Get(sh, s, objs, n)) return false;
#ifndef NDEBUG
  for (unsigned i = 0; i < n; ++i) {
    SKBNF_DCHECK(objs[i] != nullptr, "a Get that succeeds fills every slot of the burst");
  }
#endif
  if constexpr ((Mods & kModPrefetch) != 0) {
    for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
  }
  if constexpr ((Mods & kModTrack) != 0) StampOut(s, objs, n);
  return true;
}

template <class List, unsigned M>
void TopPut(Shared& sh, CoreSlot& base, void* const* objs, unsigned n) {
  Chain<List, M>::Put(sh, static_cast<LayerSlot<List>&>(base), objs, n);
}

// One Get per (mask, modifiers) and one Put per mask: index (mask << 2 | ModsOf) and mask.
template <class List>
struct ChainTables {
  static constexpr unsigned kMasks = 1u << List::kSize;
  template <size_t... I>
  static constexpr std::array<GetFn, sizeof...(I)> MakeGet(std::index_sequence<I...>) {
    return {&TopGet<List, static_cast<unsigned>(I >> 2), static_cast<unsigned>(I & 3)>...};
  }
  template <size_t... I>
  static constexpr std::array<PutFn, sizeof...(I)> MakePut(std::index_sequence<I...>) {
    return {&TopPut<List, static_cast<unsigned>(I)>...};
  }
  static constexpr auto kGet = MakeGet(std::make_index_sequence<kMasks * 4>());
  static constexpr auto kPut = MakePut(std::make_index_sequence<kMasks>());
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_LAYER_H_
