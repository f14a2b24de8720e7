// SPDX-License-Identifier: BSD-3-Clause
// Magazine layer (Bonwick & Adams 2001, section 3): per core, a loaded and a previous
// magazine. The previous magazine is always either full or empty.
//
//   alloc: loaded has rounds -> pop.  previous full -> swap, retry.
//          depot has a full magazine -> previous (empty) to depot, previous = loaded,
//          loaded = full, retry.  Otherwise allocate from the store directly.
//   free:  loaded has room -> push.  previous empty -> swap, retry.
//          depot has an empty magazine -> previous (full) to depot, previous = loaded,
//          loaded = empty, retry.  Otherwise free to the store directly.
//
// A burst is served with one copy per magazine, not one call per object.
//
// The loaded magazine's fill lives in the core's State while it is loaded (ld_rounds, with
// its array and capacity beside it), not in the magazine: a single-object hit (net_null's TX
// frees one mbuf per call, every packet) then reads and writes only this slot, and the
// gauge of the layer's objects is the sum of two of its words instead of a third counter to
// keep. The magazine's own `rounds` is brought up to date before any code that looks at
// magazines (the burst paths, Flush) and read back after it (Load); the previous magazine's
// fill stays in the magazine, mirrored in pv_rounds for the gauge.
#ifndef SKBNF_DATAPLANE_POOL_MAGAZINE_H_
#define SKBNF_DATAPLANE_POOL_MAGAZINE_H_

#include <algorithm>

#include "dataplane/pool/depot.h"
#include "dataplane/pool/layer.h"

namespace skbnf::pool {

// (Named MagazineLayer, not Magazine as the seed's word would have it: `Magazine` is the
// magazine itself, depot.h, which this layer and the depot pass around.)
struct MagazineLayer {
  static constexpr int kIndex = static_cast<int>(Layer::kMagazine);
  static constexpr int kSingleHitRank = 1;
  static constexpr LayerFacts kFacts{
      .name = "magazine",
      .help =
          "Bonwick & Adams 2001: loaded+previous magazines per core, whole-magazine exchange "
          "with a locked depot",
      .has_tunable = true,
      .tunable = {.key = "size",
                  .default_value = 32,
                  .min = 1,
                  .max = 1024,
                  .help = "rounds per magazine"}};
  // Its value in `spec`: its slot, by kIndex (StrategySpec::tunable).
  static uint32_t Size(const StrategySpec& spec) { return spec.Tunable(kIndex); }
  // Loaded + previous, both full. Full magazines in the depot are shared by every core, so
  // reachable: not counted.
  static uint64_t MaxHeld(const StrategySpec& spec, const HoldEnv&) {
    return uint64_t{Size(spec)} * 2;
  }

  struct State {
    Magazine* loaded = nullptr;
    Magazine* previous = nullptr;
    Depot* depot = nullptr;    // the generation's, which the magazines belong to
    void** ld_objs = nullptr;  // loaded->objs
    uint32_t ld_capacity = 0;  // loaded->capacity
    Gauge ld_rounds;           // the loaded magazine's rounds (its own field is stale)
    Gauge pv_rounds;           // previous->rounds
  };

  // The loaded magazine's fill back into it (before code that looks at magazines).
  static void Unload(State& st) {
    if (st.loaded != nullptr) st.loaded->rounds = st.ld_rounds.get();
  }
  // ld and pv become loaded and previous, their fill read into the State.
  static void Load(State& st, Magazine* ld, Magazine* pv) {
    st.loaded = ld;
    st.previous = pv;
    st.ld_objs = ld->objs;
    st.ld_capacity = ld->capacity;
    st.ld_rounds.set(ld->rounds);
    st.pv_rounds.set(pv->rounds);
  }

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kMagazine); }
  // Two empty magazines from the generation's depot (Detach gave the last ones back).
  static void Configure(State& st, const LayerEnv& env, bool on) {
    if (!on) return;
    st.depot = env.depot;
    Magazine* ld = st.depot->TakeEmpty();
    Magazine* pv = st.depot->TakeEmpty();
    Load(st, ld, pv);
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    Unload(st);
    uint64_t n = 0;
    for (Magazine* m : {st.loaded, st.previous}) {
      if (m != nullptr && m->rounds > 0) {
        to_below(m->objs, m->rounds);
        n += m->rounds;
        m->rounds = 0;
        c.layer[kIndex].bulk.Add(1);
      }
    }
    st.ld_rounds.set(0);
    st.pv_rounds.set(0);
    return n;
  }
  // Gives the (emptied) magazines back to the depot they came from: a magazine never goes
  // back with rounds in it (Flush ran first).
  static void Detach(State& st) {
    if (st.depot != nullptr) {
      if (st.loaded != nullptr) st.depot->ReturnEmpty(st.loaded);
      if (st.previous != nullptr) st.depot->ReturnEmpty(st.previous);
    }
    st.loaded = st.previous = nullptr;
    st.depot = nullptr;
    st.ld_objs = nullptr;
    st.ld_capacity = 0;
  }
  static uint32_t Objects(const State& st) { return st.ld_rounds.get() + st.pv_rounds.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<MagazineLayer>(s);
    Unload(st);
    Magazine* ld = st.loaded;
    Magazine* pv = st.previous;
    LayerCounters& c = s.counters.layer[kIndex];
    unsigned i = 0;
    while (i < n) {
      uint32_t r = ld->rounds;
      if (r > 0) {
        unsigned take = std::min<unsigned>(n - i, r);
        PopInto(objs + i, ld->objs + r, take);
        r -= take;
        ld->rounds = r;
        i += take;
        continue;
      }
      if (pv->rounds > 0) {
        std::swap(ld, pv);
        continue;
      }
      s.counters.depot_locks.Add(1);
      uint64_t waited;
      Magazine* full = st.depot->ExchangeEmptyForFull(pv, waited);
      CountDepotWait(s.counters, waited);
      if (full != nullptr) {
        pv = ld;
        ld = full;
        c.bulk.Add(1);
        continue;
      }
      // The depot has no full magazine: allocate the rest from the layer below (the store).
      if (!Below::Get(sh, s, objs + i, n - i)) {
        Load(st, ld, pv);
        Put<Below>(sh, s, objs, i);  // all or nothing
        return false;
      }
      c.alloc_misses.Add(n - i);
      c.alloc_hits.Add(i);
      Load(st, ld, pv);
      return true;
    }
    c.alloc_hits.Add(n);
    Load(st, ld, pv);
    return true;
  }

  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<MagazineLayer>(s);
    Unload(st);
    Magazine* ld = st.loaded;
    Magazine* pv = st.previous;
    LayerCounters& c = s.counters.layer[kIndex];
    unsigned i = 0;
    while (i < n) {
      uint32_t r = ld->rounds;
      if (r < ld->capacity) {
        unsigned take = std::min<unsigned>(n - i, ld->capacity - r);
        void** dst = ld->objs;
        for (unsigned k = 0; k < take; ++k) dst[r++] = objs[i + k];
        ld->rounds = r;
        i += take;
        continue;
      }
      if (pv->rounds == 0) {
        std::swap(ld, pv);
        continue;
      }
      s.counters.depot_locks.Add(1);
      uint64_t waited;
      Magazine* empty = st.depot->ExchangeFullForEmpty(pv, waited);
      CountDepotWait(s.counters, waited);
      if (empty != nullptr) {
        pv = ld;
        ld = empty;
        c.bulk.Add(1);
        continue;
      }
      // The depot has no empty magazine: free the rest to the layer below (the store).
      Below::Put(sh, s, objs + i, n - i);
      c.free_misses.Add(n - i);
      break;
    }
    c.free_hits.Add(std::min(i, n));
    Load(st, ld, pv);
  }

  // The burst a PMD refills with, when the loaded magazine holds all of it: what Get does
  // then, counted as its hits; false, with nothing done, otherwise (Pool::Handle::GetBurst).
  template <class S>
  static bool GetBurst(S& s, void** objs, unsigned n) {
    State& st = StateOf<MagazineLayer>(s);
    const uint32_t r = st.ld_rounds.get();
    if (n > r) return false;
    PopInto(objs, st.ld_objs + r, n);
    st.ld_rounds.set(r - n);
    s.counters.layer[kIndex].alloc_hits.Add(n);
    return true;
  }

  // Single-object hits: the loaded magazine, through the State's copy of its fill.
  template <class S>
  static bool GetOne(S& s, void** obj) {
    State& st = StateOf<MagazineLayer>(s);
    const uint32_t r = st.ld_rounds.get();
    if (r == 0) return false;
    *obj = st.ld_objs[r - 1];
    st.ld_rounds.set(r - 1);
    s.counters.layer[kIndex].fast_alloc_hits.Add(1);
    return true;
  }
  template <class S, class PortOf>
  static bool PutOne(S& s, void* obj, const PortOf& /*port_of*/) {
    State& st = StateOf<MagazineLayer>(s);
    const uint32_t r = st.ld_rounds.get();
    if (r == st.ld_capacity) return false;
    // (The count first: GCC then makes r + 1 with one lea instead of a copy and an add.)
    st.ld_rounds.set(r + 1);
    st.ld_objs[r] = obj;
    s.counters.layer[kIndex].fast_free_hits.Add(1);
    return true;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_MAGAZINE_H_
