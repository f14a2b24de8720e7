// SPDX-License-Identifier: BSD-3-Clause
// Test host for the buffer core: aligned heap memory instead of DPDK's populate, and a recycle
// check that reads an RX port tag the test writes into the first two bytes of each object.
#ifndef SKBNF_TESTS_UNIT_TEST_POOL_H_
#define SKBNF_TESTS_UNIT_TEST_POOL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/pool/pool.h"
#ifdef SKBNF_TEST_TOY_LAYER
#include "tests/unit/toy_layer.h"
#endif

namespace skbnf::pool {
// The pool the suites test: production's, or (pool_toy_layer_tests, built with
// SKBNF_TEST_TOY_LAYER) the same suites over a pool with a toy layer on top of every stack.
#ifdef SKBNF_TEST_TOY_LAYER
using TestedPool = testing::ToyPool;
#else
using TestedPool = Pool;
#endif
}  // namespace skbnf::pool

namespace skbnf::pool::testing {

inline void TagClassify(void* /*ctx*/, void* const* objs, unsigned n, int16_t* ports) {
  for (unsigned i = 0; i < n; ++i) std::memcpy(&ports[i], objs[i], sizeof(int16_t));
}
inline void SetTag(void* obj, int16_t port) { std::memcpy(obj, &port, sizeof(port)); }

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

struct TestPool {
  std::unique_ptr<void, FreeDeleter> mem;
  std::unique_ptr<TestedPool> pool;
  std::vector<void*> objects;  // every handle, in populate order
  TestedPool* operator->() { return pool.get(); }
};

inline StrategySpec Spec(const std::string& text) {
  auto s = StrategySpec::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : StrategySpec{};
}

struct TestPoolOptions {
  uint32_t n = 1024;
  uint32_t elt_size = 128;
  uint32_t objs_per_slab = 16;
  bool colour = false;
  bool debug = false;
  bool classify = true;
  std::chrono::microseconds timeout{std::chrono::milliseconds(2000)};
  std::chrono::microseconds reclaim_wait{std::chrono::milliseconds(1)};  // the default
  bool asymmetric_fence = true;
  PoolTestHooks hooks = {};
  uint32_t stamp_offset = 0;  // the track modifier's word (0: none)
};

inline TestPool MakePool(const std::string& spec, TestPoolOptions o = {}) {
  PoolConfig c;
  c.store.elt_size = o.elt_size;
  c.store.objs_per_slab = o.objs_per_slab;
  c.store.colour = o.colour;
  c.debug = o.debug;
  c.quiesce_timeout = o.timeout;
  c.reclaim_wait = o.reclaim_wait;
  c.asymmetric_fence = o.asymmetric_fence;
  c.test_hooks = o.hooks;
  c.stamp_offset = o.stamp_offset;
  if (o.classify) c.classify = &TagClassify;
  TestPool t;
  auto p = TestedPool::Create(c, Spec(spec));
  EXPECT_TRUE(p.ok()) << p.status();
  t.pool = std::move(*p);
  size_t bytes = t.pool->MemSize(o.n);
  t.mem.reset(std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}));
  auto placed = t.pool->Populate(t.mem.get(), bytes, o.n, [&](void* obj) {
    t.objects.push_back(obj);
    SetTag(obj, -1);
  });
  EXPECT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed, o.n);
  return t;
}

// Every spec the buffer core can run: each layer mask, with and without prefetch, with small
// tunables so that bounds are reached quickly.
inline std::vector<StrategySpec> AllSpecs() {
  std::vector<StrategySpec> out;
  for (unsigned mask = 0; mask < (1u << kNumLayers); ++mask) {
    for (int prefetch = 0; prefetch < 2; ++prefetch) {
      StrategySpec s;
      s.layers = mask;
      s.prefetch = prefetch != 0;
      if (s.Has(Layer::kLcache)) s.Tunable(Layer::kLcache) = 8 + 8 * prefetch;
      if (s.Has(Layer::kHeadPool)) s.Tunable(Layer::kHeadPool) = 16 + 48 * prefetch;
      if (s.Has(Layer::kMagazine)) s.Tunable(Layer::kMagazine) = 4 + 12 * prefetch;
      if (s.Has(Layer::kRecycle)) s.Tunable(Layer::kRecycle) = 24 * prefetch;
      out.push_back(s);
    }
  }
  return out;
}

inline uint64_t LayerTotal(const AuditReport& r) {
  uint64_t n = r.in_unlisted_layers;
  for (uint64_t v : r.in_layers) n += v;
  return n;
}

}  // namespace skbnf::pool::testing

#endif  // SKBNF_TESTS_UNIT_TEST_POOL_H_
