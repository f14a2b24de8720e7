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
#ifndef SKBNF_DATAPLANE_POOL_MAGAZINE_H_
#define SKBNF_DATAPLANE_POOL_MAGAZINE_H_

#include <algorithm>

#include "dataplane/pool/depot.h"
#include "dataplane/pool/layer.h"

namespace skbnf::pool {

struct MagazineLayer {
  static constexpr int kIndex = static_cast<int>(Layer::kMagazine);
  static constexpr int kSingleHitRank = 1;

  struct State {
    Magazine* loaded = nullptr;
    Magazine* previous = nullptr;
    Depot* depot = nullptr;  // the generation's, which the magazines belong to
    Gauge objects;           // loaded->rounds + previous->rounds
  };

  static bool InStack(const StrategySpec& spec) { return spec.Has(Layer::kMagazine); }
  // Two empty magazines from the generation's depot (Detach gave the last ones back).
  static void Configure(State& st, const LayerEnv& env, bool on) {
    if (!on) return;
    st.depot = env.depot;
    st.loaded = st.depot->TakeEmpty();
    st.previous = st.depot->TakeEmpty();
  }
  static uint64_t Flush(State& st, CoreCounters& c, FlushSink to_below) {
    uint64_t n = 0;
    for (Magazine* m : {st.loaded, st.previous}) {
      if (m != nullptr && m->rounds > 0) {
        to_below(m->objs, m->rounds);
        n += m->rounds;
        m->rounds = 0;
        c.layer[kIndex].bulk.Add(1);
      }
    }
    st.objects.set(0);
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
  }
  static uint32_t Objects(const State& st) { return st.objects.get(); }

  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    State& st = StateOf<MagazineLayer>(s);
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
      if (Magazine* full = st.depot->ExchangeEmptyForFull(pv)) {
        pv = ld;
        ld = full;
        c.bulk.Add(1);
        continue;
      }
      // The depot has no full magazine: allocate the rest from the layer below (the store).
      if (!Below::Get(sh, s, objs + i, n - i)) {
        st.loaded = ld;
        st.previous = pv;
        Put<Below>(sh, s, objs, i);  // all or nothing
        return false;
      }
      c.alloc_misses.Add(n - i);
      c.alloc_hits.Add(i);
      st.loaded = ld;
      st.previous = pv;
      st.objects.set(ld->rounds + pv->rounds);
      return true;
    }
    c.alloc_hits.Add(n);
    st.loaded = ld;
    st.previous = pv;
    st.objects.set(ld->rounds + pv->rounds);
    return true;
  }

  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    State& st = StateOf<MagazineLayer>(s);
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
      if (Magazine* empty = st.depot->ExchangeFullForEmpty(pv)) {
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
    st.loaded = ld;
    st.previous = pv;
    st.objects.set(ld->rounds + pv->rounds);
  }

  // Single-object hits: the loaded magazine.
  template <class S>
  static bool GetOne(S& s, void** obj) {
    State& st = StateOf<MagazineLayer>(s);
    Magazine* ld = st.loaded;
    if (ld->rounds == 0) return false;
    *obj = ld->objs[--ld->rounds];
    st.objects.set(st.objects.get() - 1);
    s.counters.layer[kIndex].fast_alloc_hits.Add(1);
    return true;
  }
  template <class S, class PortOf>
  static bool PutOne(S& s, void* obj, const PortOf& /*port_of*/) {
    State& st = StateOf<MagazineLayer>(s);
    Magazine* ld = st.loaded;
    if (ld->rounds == ld->capacity) return false;
    ld->objs[ld->rounds++] = obj;
    st.objects.set(st.objects.get() + 1);
    s.counters.layer[kIndex].fast_free_hits.Add(1);
    return true;
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_MAGAZINE_H_
