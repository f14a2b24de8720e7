// The layer chain: ChainGet<M>/ChainPut<M> dispatch at compile time to the top layer of mask M.
// Only pool.cc includes this; it instantiates one Get and one Put per (mask, prefetch).
#ifndef SKBNF_DATAPLANE_POOL_STACK_H_
#define SKBNF_DATAPLANE_POOL_STACK_H_

#include "dataplane/pool/core_slot.h"
#include "dataplane/pool/headpool.h"
#include "dataplane/pool/lcache.h"
#include "dataplane/pool/magazine.h"
#include "dataplane/pool/recycle.h"

namespace skbnf::pool {

inline constexpr unsigned kLcBit = LayerBit(Layer::kLcache);
inline constexpr unsigned kRcBit = LayerBit(Layer::kRecycle);
inline constexpr unsigned kHpBit = LayerBit(Layer::kHeadPool);
inline constexpr unsigned kMgBit = LayerBit(Layer::kMagazine);

template <unsigned M>
bool ChainGet(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
  if constexpr ((M & kLcBit) != 0) {
    return Lcache::Get<M & ~kLcBit>(sh, s, objs, n);
  } else if constexpr ((M & kRcBit) != 0) {
    return Recycle::Get<M & ~kRcBit>(sh, s, objs, n);
  } else if constexpr ((M & kHpBit) != 0) {
    return HeadPool::Get<M & ~kHpBit>(sh, s, objs, n);
  } else if constexpr ((M & kMgBit) != 0) {
    return MagazineLayer::Get<M & ~kMgBit>(sh, s, objs, n);
  } else {
    return StoreGet(sh, s, objs, n);
  }
}

template <unsigned M>
void ChainPut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
  if constexpr ((M & kLcBit) != 0) {
    Lcache::Put<M & ~kLcBit>(sh, s, objs, n);
  } else if constexpr ((M & kRcBit) != 0) {
    Recycle::Put<M & ~kRcBit>(sh, s, objs, n);
  } else if constexpr ((M & kHpBit) != 0) {
    HeadPool::Put<M & ~kHpBit>(sh, s, objs, n);
  } else if constexpr ((M & kMgBit) != 0) {
    MagazineLayer::Put<M & ~kMgBit>(sh, s, objs, n);
  } else {
    StorePut(sh, s, objs, n);
  }
}

// Top of the stack: the prefetch modifier (2010 prefetchw) touches each object handed out for
// writing, so the host's first store into it does not stall.
template <unsigned M, bool Prefetch>
bool TopGet(Shared& sh, CoreSlot& s, void** objs, unsigned n) {
  if (!ChainGet<M>(sh, s, objs, n)) return false;
  if constexpr (Prefetch) {
    for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
  }
  return true;
}

template <unsigned M>
void TopPut(Shared& sh, CoreSlot& s, void* const* objs, unsigned n) {
  ChainPut<M>(sh, s, objs, n);
}

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_STACK_H_
