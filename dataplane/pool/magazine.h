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

#include "dataplane/pool/core_slot.h"

namespace skbnf::pool {

struct MagazineLayer {
  static constexpr int kIndex = static_cast<int>(Layer::kMagazine);

  template <unsigned Below>
  static bool Get(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
    Magazine* ld = s.loaded;
    Magazine* pv = s.previous;
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
      if (Magazine* full = s.depot->ExchangeEmptyForFull(pv)) {
        pv = ld;
        ld = full;
        c.bulk.Add(1);
        continue;
      }
      // The depot has no full magazine: allocate the rest from the layer below (the store).
      if (!ChainGet<Below>(sh, s, objs + i, n - i)) {
        s.loaded = ld;
        s.previous = pv;
        Put<Below>(sh, s, objs, i);  // all or nothing
        return false;
      }
      c.alloc_misses.Add(n - i);
      c.alloc_hits.Add(i);
      s.loaded = ld;
      s.previous = pv;
      s.mag_objects.set(ld->rounds + pv->rounds);
      return true;
    }
    c.alloc_hits.Add(n);
    s.loaded = ld;
    s.previous = pv;
    s.mag_objects.set(ld->rounds + pv->rounds);
    return true;
  }

  template <unsigned Below>
  static void Put(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
    Magazine* ld = s.loaded;
    Magazine* pv = s.previous;
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
      if (Magazine* empty = s.depot->ExchangeFullForEmpty(pv)) {
        pv = ld;
        ld = empty;
        c.bulk.Add(1);
        continue;
      }
      // The depot has no empty magazine: free the rest to the layer below (the store).
      ChainPut<Below>(sh, s, objs + i, n - i);
      c.free_misses.Add(n - i);
      break;
    }
    c.free_hits.Add(std::min(i, n));
    s.loaded = ld;
    s.previous = pv;
    s.mag_objects.set(ld->rounds + pv->rounds);
  }
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_MAGAZINE_H_
