// SPDX-License-Identifier: BSD-3-Clause
// Where the objects are: per-core gauges, the conservation audit and the debug switch's
// double/foreign free checks.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/pool_core.h"
#include "dataplane/pool/pool_protocol.h"

namespace skbnf::pool {

LayerGauges PoolCore::CoreGauges(int core) const {
  LayerGauges out;
  if (core < 0 || core >= kMaxCores) return out;
  LayerObjects(Slot(core), out);
  return out;
}

AuditReport PoolCore::Audit(uint64_t in_flight) {
  MutexLock lock(&control_mu_);
  AuditReport r;
  r.populated = store_->populated();
  r.in_store = store_->free_count();
  r.in_flight = in_flight;
  uint64_t allocs = 0, frees = 0;
  for (int c = 0; c <= kMaxCores; ++c) {
    const CoreSlot& s = c < kMaxCores ? Slot(c) : *other_;
    allocs += CoreAllocs(s.counters);
    frees += CoreFrees(s.counters);
    if (c == kMaxCores || !Owned(s)) continue;
    LayerGauges g = CoreGauges(c);
    for (int l = 0; l < kMaxLayers; ++l) r.in_layers[l] += g.objects[l];
    r.in_unlisted_layers += g.unlisted;
  }
  for (const auto& g : generations_) {
    if (g->depot) r.in_depots += g->depot->objects();
  }
  r.handed_out = allocs - frees;
  r.double_frees = double_frees();
  r.foreign_frees = foreign_frees();
  uint64_t layers = r.in_unlisted_layers;
  for (uint64_t v : r.in_layers) layers += v;
  const uint64_t accounted = r.in_store + layers + r.in_depots + r.in_flight;
  r.ok = accounted == r.populated;
  r.message = absl::StrCat(r.ok ? "ok" : "MISMATCH", ": populated ", r.populated, " ",
                           r.ok ? "==" : "!=", " store ", r.in_store, " + layers ", layers,
                           " + depots ", r.in_depots, " + in flight ", r.in_flight,
                           " (= ", accounted, "); handed out by counters ", r.handed_out);
  return r;
}

void PoolCore::MarkHandedOut(void* const* objs, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    int64_t idx = store_->IndexOf(objs[i]);
    if (idx >= 0 && static_cast<uint64_t>(idx) < obj_state_size_) {
      obj_state_[idx].store(1, std::memory_order_relaxed);
    }
  }
}

void PoolCore::DebugPut(CoreSlot& s, void* const* objs, unsigned n) {
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
