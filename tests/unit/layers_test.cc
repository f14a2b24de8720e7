// SPDX-License-Identifier: BSD-3-Clause
// Each layer alone and stacked: LIFO order, bounds, fall-through, flush and counters. The test
// thread is registered as worker core 0, so it runs the layers itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/pool/depot.h"
#include "tests/unit/test_peers.h"
#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::SetTag;
using testing::Spec;

constexpr int kCore = 0;
constexpr int kHp = static_cast<int>(Layer::kHeadPool);
constexpr int kMg = static_cast<int>(Layer::kMagazine);
constexpr int kRc = static_cast<int>(Layer::kRecycle);
constexpr int kLc = static_cast<int>(Layer::kLcache);

TEST(HeadPoolTest, MissesGoToTheStoreOneObjectAtATime) {
  auto t = MakePool("headpool:hot_list_len=4", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  void* o[8];
  ASSERT_TRUE(t->Get(kCore, o, 8));
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kHp].alloc_misses, 8u);
  EXPECT_EQ(c.layer[kHp].alloc_hits, 0u);
  EXPECT_EQ(c.store_locks, 8u);  // skb_head_from_pool empty: kmem_cache_alloc, one by one
  EXPECT_EQ(c.store_allocs, 8u);

  t->Put(kCore, o, 8);
  c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kHp].free_hits, 4u);  // bounded by hot_list_len
  EXPECT_EQ(c.layer[kHp].free_misses, 4u);
  EXPECT_EQ(c.store_locks, 12u);  // four more single frees
  EXPECT_EQ(t->CoreGauges(kCore).objects[kHp], 4u);
  EXPECT_EQ(t->in_store(), 64u - 4u);
}

TEST(HeadPoolTest, HotListIsLifo) {
  auto t = MakePool("headpool:hot_list_len=8", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  void* o[4];
  ASSERT_TRUE(t->Get(kCore, o, 4));
  for (int i = 0; i < 4; ++i) t->Put(kCore, &o[i], 1);
  void* back[4];
  ASSERT_TRUE(t->Get(kCore, back, 4));
  EXPECT_EQ(back[0], o[3]);
  EXPECT_EQ(back[1], o[2]);
  EXPECT_EQ(back[2], o[1]);
  EXPECT_EQ(back[3], o[0]);
  EXPECT_EQ(t->CoreStats(kCore).layer[kHp].alloc_hits, 4u);
  t->Put(kCore, back, 4);
}

// A bounded wait for the tests below (no sleep-then-hope: they wait for the event, then act).
template <typename Pred>
bool Within(std::chrono::seconds limit, Pred done) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return done();
    std::this_thread::yield();
  }
  return true;
}

// SpinLock::LockTimed (the depot's lock, the `depot_wait` slow-iteration cause): 0 when the
// lock is free, the ticks spun when another holder made it wait.
TEST(SpinLockTest, LockTimedTellsAWaitAndOnlyAWait) {
  SpinLock l;
  EXPECT_EQ(l.LockTimed(), 0u);
  l.unlock();
  l.lock();
  std::atomic<uint64_t> waited{0};
  std::thread t([&] {
    waited = l.LockTimed();
    l.unlock();
  });
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return l.waiters() == 1; }));
  l.unlock();
  t.join();
  EXPECT_GT(waited.load(), 0u);
  EXPECT_EQ(l.waiters(), 0u);
}

// A magazine exchange that spins on the depot's lock is counted on the core that waited, with
// the ticks and the end of the wait (what a worker's slow iteration reads); one that finds the
// lock free counts nothing.
TEST(DepotTest, AnExchangeThatWaitsIsCountedOnItsCore) {
  Depot d(4, 4);
  CoreCounters c;
  Magazine* full = d.TakeEmpty();
  uint64_t waited = 1;
  Magazine* empty = d.ExchangeFullForEmpty(full, waited);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(waited, 0u);
  CountDepotWait(c, waited);
  EXPECT_EQ(c.depot_waits.Get(), 0u);
  EXPECT_EQ(c.depot_wait_end.load(), 0u);

  const uint64_t before = SpinLock::Ticks();
  d.lock_for_test().lock();  // another core holds the depot
  std::thread t([&] {
    uint64_t w = 0;
    Magazine* got = d.ExchangeEmptyForFull(empty, w);
    CountDepotWait(c, w);
    EXPECT_EQ(got, full);
  });
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return d.lock_for_test().waiters() == 1; }));
  d.lock_for_test().unlock();
  t.join();
  EXPECT_EQ(c.depot_waits.Get(), 1u);
  EXPECT_GT(c.depot_wait_ticks.Get(), 0u);
#if defined(__x86_64__)
  EXPECT_GE(c.depot_wait_end.load(), before);
#endif
  const CoreCountersSnapshot s = Snapshot(c);
  EXPECT_EQ(s.depot_waits, 1u);
  EXPECT_EQ(s.depot_wait_ticks, c.depot_wait_ticks.Get());
}

// Reserve makes its magazines as one mapped region (depot.h: not one heap chunk each), every
// magazine on a cache line of its own and all of them usable; a magazine taken beyond the
// reserve still comes from the heap, and the depot counts it.
TEST(DepotTest, ReserveMapsItsMagazinesAsOneRegion) {
  Depot d(16, 512);
  EXPECT_EQ(d.mapped_regions_for_test(), 1u);
  EXPECT_TRUE(d.AllEmpty());
  std::set<Magazine*> seen;
  std::vector<Magazine*> taken;
  for (int i = 0; i < 513; ++i) {  // the 513th: none spare, made on the heap
    Magazine* m = d.TakeEmpty();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->capacity, 16u);
    EXPECT_EQ(m->rounds, 0u);
    if (i < 512) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m) % 64, 0u);
    }
    EXPECT_TRUE(seen.insert(m).second);
    for (uint32_t k = 0; k < m->capacity; ++k) m->objs[k] = m;  // every round writable
    taken.push_back(m);
  }
  EXPECT_EQ(d.mapped_regions_for_test(), 1u);
  EXPECT_FALSE(d.AllEmpty());
  for (Magazine* m : taken) d.ReturnEmpty(m);
  EXPECT_TRUE(d.AllEmpty());  // 513 made, 513 back
  d.Reserve(600);             // 87 more: a second region
  EXPECT_EQ(d.mapped_regions_for_test(), 2u);
  EXPECT_TRUE(d.AllEmpty());
}

TEST(MagazineTest, BonwickExchangeWithTheDepot) {
  auto t = MakePool("magazine:size=4", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  void* o[16];
  // Depot starts with no full magazine: allocations go to the store (one bulk per call).
  ASSERT_TRUE(t->Get(kCore, o, 9));
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kMg].alloc_misses, 9u);
  EXPECT_EQ(c.store_locks, 1u);
  EXPECT_EQ(c.depot_locks, 1u);  // asked the depot once, it had nothing

  // 4 fill loaded, 4 fill the (swapped) other one, the 9th forces previous (full) to the depot.
  t->Put(kCore, o, 9);
  c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kMg].free_hits, 9u);
  EXPECT_EQ(c.layer[kMg].bulk, 1u);                  // one whole-magazine exchange
  EXPECT_EQ(t->CoreGauges(kCore).objects[kMg], 5u);  // loaded 1 + previous 4
  EXPECT_EQ(t->in_depots(), 4u);
  EXPECT_EQ(t->in_store(), 64u - 9u);

  // LIFO: the last object freed comes back first.
  void* one;
  ASSERT_TRUE(t->Get(kCore, &one, 1));
  EXPECT_EQ(one, o[8]);
  // Drain the core's 4 + 1 and then the depot's magazine: no store access.
  const uint64_t store_locks = t->CoreStats(kCore).store_locks;
  void* more[8];
  ASSERT_TRUE(t->Get(kCore, more, 8));
  EXPECT_EQ(t->CoreStats(kCore).store_locks, store_locks);
  EXPECT_EQ(t->in_depots(), 0u);
  t->Put(kCore, &one, 1);
  t->Put(kCore, more, 8);
}

TEST(MagazineTest, LargeBurstCrossesMagazines) {
  auto t = MakePool("magazine:size=8", {.n = 256});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  std::vector<void*> o(100);
  ASSERT_TRUE(t->Get(kCore, o.data(), 100));
  t->Put(kCore, o.data(), 100);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.in_layers[kMg] + r.in_depots, 100u);
  EXPECT_EQ(r.in_depots % 8, 0u);  // the depot only holds full magazines
  std::vector<void*> back(100);
  ASSERT_TRUE(t->Get(kCore, back.data(), 100));
  EXPECT_EQ(t->in_store(), 156u);  // all 100 came from the core and the depot
  t->Put(kCore, back.data(), 100);
}

TEST(RecycleTest, TxCompletedBuffersRefillTheirRxPort) {
  auto t = MakePool("recycle", {.n = 64});
  ASSERT_TRUE(
      t->RegisterWorker(kCore, {{.port = 0, .ring_size = 4}, {.port = 1, .ring_size = 8}}).ok());
  void* o[12];
  ASSERT_TRUE(t->Get(kCore, o, 12));
  for (int i = 0; i < 6; ++i) SetTag(o[i], 0);  // RX port 0 of this core: limit 4
  SetTag(o[6], 5);                              // not an RX port of this core
  SetTag(o[7], -1);                             // refused by the recycle check
  for (int i = 8; i < 12; ++i) SetTag(o[i], 1);
  t->Put(kCore, o, 12);
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kRc].free_hits, 8u);    // 4 to port 0, 4 to port 1
  EXPECT_EQ(c.layer[kRc].free_misses, 4u);  // 2 over port 0's bound, port 5, refused
  EXPECT_EQ(t->CoreGauges(kCore).objects[kRc], 8u);
  EXPECT_EQ(t->in_store(), 64u - 8u);

  // Refill of port 0 takes port 0's list, LIFO.
  t->SetRxPort(kCore, 0);
  void* r[2];
  ASSERT_TRUE(t->Get(kCore, r, 2));
  EXPECT_EQ(r[0], o[3]);
  EXPECT_EQ(r[1], o[2]);
  // Refill of port 1 never sees port 0's buffers; asking for 6 drains 4 then falls through.
  t->SetRxPort(kCore, 1);
  void* r1[6];
  ASSERT_TRUE(t->Get(kCore, r1, 6));
  EXPECT_EQ(r1[0], o[11]);
  EXPECT_EQ(r1[3], o[8]);
  c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kRc].alloc_hits, 6u);          // 2 for port 0, 4 for port 1
  EXPECT_EQ(c.layer[kRc].alloc_misses, 12u + 2u);  // the first 12 (no RX port) + 2 for port 1
  EXPECT_EQ(t->CoreGauges(kCore).objects[kRc], 2u);
  // No RX port set: allocations bypass the lists.
  t->SetRxPort(kCore, -1);
  void* x;
  ASSERT_TRUE(t->Get(kCore, &x, 1));
  EXPECT_EQ(t->CoreGauges(kCore).objects[kRc], 2u);
  t->Put(kCore, r, 2);
  t->Put(kCore, r1, 6);
  t->Put(kCore, &x, 1);
}

TEST(RecycleTest, LimitTunableOverridesRingSize) {
  auto t = MakePool("recycle:limit=2", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(kCore, {{.port = 3, .ring_size = 512}}).ok());
  void* o[5];
  ASSERT_TRUE(t->Get(kCore, o, 5));
  for (void* p : o) SetTag(p, 3);
  t->Put(kCore, o, 5);
  EXPECT_EQ(t->CoreGauges(kCore).objects[kRc], 2u);
}

// Step by step as rte_mempool_do_generic_get/put of DPDK 22.11 (lcache.h); the same sequence
// runs against DPDK's own cache in tests/integration/lcache_fidelity_test.cc.
TEST(LcacheTest, FollowsDpdk2211GetAndPut) {
  auto t = MakePool("lcache:size=8", {.n = 1024});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  auto len = [&] { return t->CoreGauges(kCore).objects[kLc]; };
  void* o[1024];
  ASSERT_TRUE(t->Get(kCore, o, 1));  // empty: one fill of size + 1, the top one handed out
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_EQ(c.store_locks, 1u);
  EXPECT_EQ(c.store_allocs, 9u);
  EXPECT_EQ(len(), 8u);
  ASSERT_TRUE(t->Get(kCore, o + 1, 4));  // from the cache
  EXPECT_EQ(t->CoreStats(kCore).store_locks, 1u);
  EXPECT_EQ(len(), 4u);
  // 22.11: a request of size or more still takes what the cache has first (4), then fills
  // size + the remaining 4 and hands out the top 4: len == size.
  ASSERT_TRUE(t->Get(kCore, o + 5, 8));
  c = t->CoreStats(kCore);
  EXPECT_EQ(c.store_locks, 2u);
  EXPECT_EQ(c.store_allocs, 9u + 12u);
  EXPECT_EQ(c.layer[kLc].alloc_hits, 1u * 0 + 4u + 4u);  // 0 + 4 + 4 from the cache
  EXPECT_EQ(c.layer[kLc].alloc_misses, 1u + 4u);
  EXPECT_EQ(len(), 8u);
  // Frees: 8 + 8 = 16 > flushthresh 12: the whole cache goes below, the 8 stay.
  t->Put(kCore, o + 5, 8);
  EXPECT_EQ(len(), 8u);
  t->Put(kCore, o, 1);  // 9 <= 12: appended
  EXPECT_EQ(len(), 9u);
  t->Put(kCore, o + 1, 4);  // 13 > 12: flush 9, keep 4
  EXPECT_EQ(len(), 4u);
  EXPECT_EQ(t->CoreStats(kCore).layer[kLc].bulk, 4u);  // two fills, two flushes
  // A put larger than flushthresh goes straight below; the cache is untouched.
  ASSERT_TRUE(t->Get(kCore, o, 13));  // 4 from the cache, fill 8 + 9
  EXPECT_EQ(len(), 8u);
  t->Put(kCore, o, 13);
  EXPECT_EQ(len(), 8u);
  // remaining > 512 (RTE_MEMPOOL_CACHE_MAX_SIZE): no fill, straight from below.
  const uint64_t locks = t->CoreStats(kCore).store_locks;
  ASSERT_TRUE(t->Get(kCore, o, 600));  // 8 from the cache + 592 from below
  EXPECT_EQ(len(), 0u);
  EXPECT_EQ(t->CoreStats(kCore).store_locks, locks + 1);
  t->Put(kCore, o, 600);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(StackTest, HeadPoolOverMagazineFallsThroughOneAtATime) {
  auto t = MakePool("headpool:hot_list_len=2+magazine:size=4", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  void* o[6];
  ASSERT_TRUE(t->Get(kCore, o, 6));
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kHp].alloc_misses, 6u);
  EXPECT_EQ(c.layer[kMg].alloc_misses, 6u);  // each single request fell to the store
  EXPECT_EQ(c.store_locks, 6u);
  t->Put(kCore, o, 6);
  c = t->CoreStats(kCore);
  EXPECT_EQ(c.layer[kHp].free_hits, 2u);
  EXPECT_EQ(c.layer[kMg].free_hits, 4u);  // the other 4 went down one at a time into magazines
  EXPECT_EQ(c.store_locks, 6u);           // and none of them reached the store
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.in_layers[kHp], 2u);
  EXPECT_EQ(r.in_layers[kMg], 4u);
}

TEST(StackTest, FullStackServesFromTheTopFirst) {
  auto t = MakePool("lcache:size=4+recycle+headpool+magazine:size=4,prefetch", {.n = 128});
  ASSERT_TRUE(t->RegisterWorker(kCore, {{.port = 0, .ring_size = 16}}).ok());
  t->SetRxPort(kCore, 0);
  std::vector<void*> o(40);
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(t->Get(kCore, o.data(), 40));
    for (void* p : o) SetTag(p, 0);
    t->Put(kCore, o.data(), 40);
  }
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
  CoreCountersSnapshot c = t->CoreStats(kCore);
  EXPECT_GT(c.layer[kLc].alloc_hits + c.layer[kLc].alloc_misses, 0u);
  EXPECT_GT(c.layer[kRc].free_hits, 0u);
  EXPECT_EQ(c.allocs, 800u);
  EXPECT_EQ(c.frees, 800u);
}

TEST(FlushTest, SwapToSlabReturnsEveryLayersObjectsToTheStore) {
  for (const StrategySpec& spec : testing::AllSpecs()) {
    auto t = MakePool(spec.ToString(), {.n = 256});
    ASSERT_TRUE(t->RegisterWorker(kCore, {{.port = 0, .ring_size = 32}}).ok());
    t->SetRxPort(kCore, 0);
    std::vector<void*> o(100);
    ASSERT_TRUE(t->Get(kCore, o.data(), 100)) << spec.ToString();
    for (void* p : o) SetTag(p, 0);
    t->Put(kCore, o.data(), 100);
    // The worker acknowledges at its quiescent point, from another thread here.
    std::atomic<bool> stop{false};
    std::thread worker([&] {
      while (!stop.load()) t->Quiesce(kCore);
    });
    SwapReport rep = t->Swap(Spec("slab"));
    stop = true;
    worker.join();
    ASSERT_TRUE(rep.status.ok()) << rep.status;
    EXPECT_EQ(t->in_store(), 256u) << spec.ToString();
    EXPECT_EQ(rep.cores.size(), 1u);
    AuditReport r = t->Audit(0);
    EXPECT_TRUE(r.ok) << r.message;
    EXPECT_EQ(testing::LayerTotal(r) + r.in_depots, 0u);
  }
}

// A Get that fails hands out nothing, and has first made every free object reachable: the
// caller's own layers are flushed to the store by the reclaim, so the next Get of what really
// exists succeeds whatever the layer (lcache's cache, the recycle list of another RX port).
TEST(AllOrNothingTest, FailedGetHandsOutNothingAndReclaims) {
  for (const StrategySpec& spec : testing::AllSpecs()) {
    auto t = MakePool(spec.ToString(), {.n = 64});
    ASSERT_TRUE(t->RegisterWorker(kCore, {{.port = 0, .ring_size = 8}}).ok());
    t->SetRxPort(kCore, 0);
    std::vector<void*> held(61);
    ASSERT_TRUE(t->Get(kCore, held.data(), 61)) << spec.ToString();
    for (void* p : held) SetTag(p, 0);
    t->Put(kCore, held.data() + 58, 3);  // three back into the layers
    AuditReport before = t->Audit(58);
    ASSERT_TRUE(before.ok) << before.message;
    void* o[8];
    EXPECT_FALSE(t->Get(kCore, o, 7)) << spec.ToString();  // only 6 exist
    AuditReport after = t->Audit(58);
    EXPECT_TRUE(after.ok) << spec.ToString() << ": " << after.message;
    EXPECT_EQ(after.handed_out, before.handed_out) << spec.ToString();
    // The reclaim put every free object in the store (the retry's one-at-a-time headpool
    // misses may give what they pulled back to the magazine below: still reachable).
    EXPECT_EQ(after.in_store + testing::LayerTotal(after) + after.in_depots, 6u) << spec.ToString();
    if (!spec.Has(Layer::kHeadPool)) {
      EXPECT_EQ(after.in_store, 6u) << spec.ToString();
    }
    EXPECT_EQ(t->CoreStats(kCore).alloc_failures, 1u);
    EXPECT_EQ(t->reclaims(), 1u);
    t->SetRxPort(kCore, -1);  // not even a recycle list in reach: all six still come
    ASSERT_TRUE(t->Get(kCore, o, 6)) << spec.ToString();
    t->Put(kCore, o, 6);
    t->Put(kCore, held.data(), 58);
  }
}

}  // namespace
}  // namespace skbnf::pool

namespace skbnf::pool {
namespace {

TEST(FastPathTest, SingleObjectsTakeTheTopLayerInline) {
  for (const char* spec :
       {"magazine:size=4", "headpool:hot_list_len=4+magazine", "magazine:size=4,prefetch"}) {
    auto t = testing::MakePool(spec, {.n = 64});
    ASSERT_TRUE(t->RegisterWorker(0).ok());
    const int top = std::string(spec).rfind("headpool", 0) == 0 ? kHp : kMg;
    void* o[6];
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(t->Get(0, &o[i], 1)) << spec;
    for (int i = 0; i < 6; ++i) t->Put(0, &o[i], 1);
    CoreCountersSnapshot c = t->CoreStats(0);
    EXPECT_EQ(c.allocs, 6u);
    EXPECT_EQ(c.frees, 6u);
    // Same LIFO as the burst path: the last object the top layer kept comes back first (the
    // hot list of 4 kept o0..o3; o4 and o5 overflowed to the magazine one at a time).
    void* back;
    ASSERT_TRUE(t->Get(0, &back, 1));
    EXPECT_EQ(back, top == kHp ? o[3] : o[5]) << spec;
    EXPECT_GT(t->CoreStats(0).layer[top].alloc_hits, 0u) << spec;
    t->Put(0, &back, 1);
    AuditReport r = t->Audit(0);
    EXPECT_TRUE(r.ok) << spec << ": " << r.message;
    EXPECT_EQ(r.in_layers[top] + (top == kHp ? r.in_layers[kMg] : 0) + r.in_depots + r.in_store,
              64u);
  }
}

// A host with a cache of its own in front of the pool, as DPDK's lcore cache: the adopt hook
// must flush it into the pool and resize it whenever what the core runs changes.
struct HostCache {
  Pool* pool = nullptr;
  std::vector<void*> objs[2];
  uint32_t size[2] = {0, 0};
  std::vector<std::string> calls;
  static void Hook(void* ctx, int core, const StrategySpec& next) {
    auto* h = static_cast<HostCache*>(ctx);
    h->calls.push_back(std::to_string(core) + ":" + next.ToString());
    auto& c = h->objs[core];
    h->pool->Put(core, c.data(), static_cast<unsigned>(c.size()));
    c.clear();
    h->size[core] = next.Has(Layer::kLcache) ? next.Tunable(Layer::kLcache) : 0;
  }
};

TEST(HostLcacheTest, HookFlushesTheHostCacheAndPoolLeavesLcacheOut) {
  HostCache host;
  PoolConfig c;
  c.store.elt_size = 128;
  c.store.objs_per_slab = 16;
  c.host_lcache = true;
  c.adopt_hook = &HostCache::Hook;
  c.adopt_ctx = &host;
  auto p = Pool::Create(c, testing::Spec("lcache:size=8+magazine:size=4"));
  ASSERT_TRUE(p.ok()) << p.status();
  Pool& pool = **p;
  host.pool = &pool;
  std::vector<char> mem(pool.MemSize(64) + 64);
  ASSERT_TRUE(pool.Populate(mem.data(), mem.size(), 64, [](void*) {}).ok());
  ASSERT_TRUE(pool.RegisterWorker(0).ok());
  EXPECT_EQ(host.size[0], 8u);  // registration ran the hook with the first spec
  // The host's cache holds 5 objects; the pool's own chain is the magazine alone.
  void* o[10];
  ASSERT_TRUE(pool.Get(0, o, 10));
  host.objs[0].assign(o, o + 5);
  pool.Put(0, o + 5, 5);
  EXPECT_EQ(pool.CoreGauges(0).objects[kLc], 0u);
  EXPECT_EQ(pool.CoreGauges(0).objects[kMg], 5u);

  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop) pool.Quiesce(0);
  });
  SwapReport r = pool.Swap(testing::Spec("headpool"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  // Registration sized the cache for the first spec; the swap flushed and resized it.
  EXPECT_EQ(host.calls,
            (std::vector<std::string>{"0:lcache:size=8+magazine:size=4", "0:headpool"}));
  EXPECT_EQ(host.size[0], 0u);
  EXPECT_TRUE(host.objs[0].empty());
  EXPECT_EQ(pool.in_store(), 64u);  // the host's 5 and the magazine's 5, all flushed

  // Pausing runs the hook too (the parked core's cache is emptied), and a swap while parked
  // runs it on the worker's behalf with the new spec.
  ASSERT_TRUE(pool.PauseWorker(0).ok());
  SwapReport r2 = pool.Swap(testing::Spec("lcache:size=32+magazine"));
  ASSERT_TRUE(r2.status.ok());
  EXPECT_EQ(host.calls.back(), "0:lcache:size=32+magazine");
  EXPECT_EQ(host.size[0], 32u);
  ASSERT_TRUE(pool.ResumeWorker(0).ok());
  stop = true;
  worker.join();
  ASSERT_TRUE(pool.UnregisterWorker(0).ok());
  EXPECT_EQ(pool.in_store(), 64u);
}

TEST(HostLcacheTest, NeedsAHook) {
  PoolConfig c;
  c.store.elt_size = 128;
  c.host_lcache = true;
  EXPECT_EQ(Pool::Create(c, StrategySpec{}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skbnf::pool

namespace skbnf::pool {
namespace {

TEST(FastPathTest, SingleObjectRecycleKeepsBoundsAndPorts) {
  auto t = testing::MakePool("recycle+magazine", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(0, {{.port = 1, .ring_size = 2}}).ok());
  t->SetRxPort(0, 1);
  void* o[4];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t->Get(0, &o[i], 1));
  SetTag(o[0], 1);
  SetTag(o[1], 1);
  SetTag(o[2], 1);  // over the bound of 2: passes to the magazine
  SetTag(o[3], 2);  // not an RX port of this core
  for (int i = 0; i < 4; ++i) t->Put(0, &o[i], 1);
  CoreCountersSnapshot c = t->CoreStats(0);
  EXPECT_EQ(c.layer[kRc].free_hits, 2u);
  EXPECT_EQ(c.layer[kRc].free_misses, 2u);
  EXPECT_EQ(c.layer[kMg].free_hits, 2u);
  EXPECT_EQ(t->CoreGauges(0).objects[kRc], 2u);
  void* back;
  ASSERT_TRUE(t->Get(0, &back, 1));
  EXPECT_EQ(back, o[1]);  // LIFO
  t->SetRxPort(0, -1);    // not refilling RX: the list is not touched
  void* other;
  ASSERT_TRUE(t->Get(0, &other, 1));
  EXPECT_NE(other, o[0]);
  EXPECT_EQ(t->CoreGauges(0).objects[kRc], 1u);
  t->Put(0, &back, 1);
  t->Put(0, &other, 1);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
}

// The ops' inline single-object free (skbnf_mempool.cc's OpEnqueue): recycle is served with
// the host's check inlined, within the same bounds as the full path; what it declines (over
// the bound, not an RX port of this core, no inline check) is left untouched for Put.
TEST(FastPathTest, PutOneServesRecycleThroughTheHostsInlineCheck) {
  auto t = testing::MakePool("recycle+magazine", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(0, {{.port = 1, .ring_size = 2}}).ok());
  t->SetRxPort(0, 1);
  void* o[5];
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->Get(0, &o[i], 1));
  const CoreCountersSnapshot before = t->CoreStats(0);
  const auto tag = [](const void* obj) {
    int16_t port;
    std::memcpy(&port, obj, sizeof(port));
    return static_cast<int>(port);
  };
  SetTag(o[0], 1);
  SetTag(o[1], 1);
  SetTag(o[2], 1);
  SetTag(o[3], 2);
  SetTag(o[4], -1);                      // the check's "not recyclable"
  const auto h = t->For<Owner::kWorker>(0);
  EXPECT_FALSE(h.PutOne(o[0]));  // no inline check: recycle takes Put
  EXPECT_TRUE(h.PutOne(o[0], tag));
  EXPECT_TRUE(h.PutOne(o[1], tag));
  EXPECT_FALSE(h.PutOne(o[2], tag));  // over the bound of 2
  EXPECT_FALSE(h.PutOne(o[3], tag));  // not an RX port of this core
  EXPECT_FALSE(h.PutOne(o[4], tag));
  CoreCountersSnapshot c = t->CoreStats(0);
  EXPECT_EQ(c.frees - before.frees, 2u);
  EXPECT_EQ(c.layer[kRc].free_hits - before.layer[kRc].free_hits, 2u);
  EXPECT_EQ(t->CoreGauges(0).objects[kRc], 2u);
  for (int i = 2; i < 5; ++i) t->Put(0, &o[i], 1);  // the declined ones, by the full path
  void* back;
  ASSERT_TRUE(h.GetOne(&back));
  EXPECT_EQ(back, o[1]);  // LIFO, as the burst path
  t->Put(0, &back, 1);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(t->CoreStats(0).frees - before.frees, 6u);
}

// The plugin's cached foreign pair (a foreign handle's PutOneOf<K> / GetOne, K its Hit())
// serves and counts exactly as the full foreign path, for both kinds.
TEST(FastPathTest, ForeignSlotPairServesAndCountsAsTheFullPath) {
  for (const char* spec : {"headpool:hot_list_len=4+magazine", "magazine:size=4"}) {
    auto t = testing::MakePool(spec, {.n = 64});
    ASSERT_TRUE(t->RegisterForeignCore(0).ok());
    const auto s = t->For<Owner::kForeign>(0);
    ASSERT_TRUE(s.Owns()) << spec;
    const int kind = s.Hit();
    ASSERT_GE(kind, 0) << spec;
    const int top = kind == Pool::kHitOf<HeadPool> ? kHp : kMg;
    EXPECT_EQ(top, std::string(spec).rfind("headpool", 0) == 0 ? kHp : kMg) << spec;
    void* o[3];
    ASSERT_TRUE(t->Get(0, o, 3)) << spec;
    const CoreCountersSnapshot before = t->CoreStats(0);
    for (void* obj : o) {
      EXPECT_TRUE(kind == Pool::kHitOf<HeadPool> ? s.PutOneOf<Pool::kHitOf<HeadPool>>(obj)
                                                 : s.PutOneOf<Pool::kHitOf<MagazineLayer>>(obj))
          << spec;
    }
    CoreCountersSnapshot c = t->CoreStats(0);
    EXPECT_EQ(c.frees - before.frees, 3u) << spec;
    EXPECT_EQ(c.layer[top].free_hits - before.layer[top].free_hits, 3u) << spec;
    void* back;
    ASSERT_TRUE(s.GetOne(&back)) << spec;
    EXPECT_EQ(back, o[2]) << spec;
    EXPECT_EQ(t->CoreStats(0).allocs - c.allocs, 1u) << spec;
    EXPECT_EQ(t->CoreStats(0).layer[top].alloc_hits - c.layer[top].alloc_hits, 1u) << spec;
    t->Put(0, &back, 1);
    AuditReport r = t->Audit(0);
    EXPECT_TRUE(r.ok) << spec << ": " << r.message;
    EXPECT_EQ(r.handed_out, 0u) << spec;
  }
}

// skbnfd's ops cache each worker thread's handle (slot_cache_skbnfd.cc, ThreadSlots) and call
// PutOne / GetOne / GetBurst on it, taking Put/Get when they decline. Two
// pools fed the same random operations, one through the full path only, one through the
// cached slot first, swapped together through every spec: after every operation they must have
// handed out the same objects (by populate index) and hold and count exactly the same.
TEST(FastPathTest, WorkerHandleCallsAreTheFullPathAcrossSwaps) {
  const std::vector<StrategySpec> specs = testing::AllSpecs();
  auto full = MakePool("slab", {.n = 256});
  auto fast = MakePool("slab", {.n = 256});
  for (auto* t : {&full, &fast}) {
    ASSERT_TRUE((*t)->RegisterWorker(kCore, {{.port = 1, .ring_size = 8}}).ok());
    (*t)->SetRxPort(kCore, 1);
  }
  EXPECT_FALSE(fast->For<Owner::kWorker>(1).Owns()) << "not registered";
  EXPECT_FALSE(fast->For<Owner::kWorker>(-1).Owns());
  EXPECT_FALSE(fast->For<Owner::kWorker>(kMaxCores).Owns());
  const auto s = fast->For<Owner::kWorker>(kCore);
  ASSERT_TRUE(s.Owns());
  const auto tag = [](const void* obj) {
    int16_t port;
    std::memcpy(&port, obj, sizeof(port));
    return static_cast<int>(port);
  };
  const auto swap = [](testing::TestPool& t, const StrategySpec& spec) {
    auto f = std::async(std::launch::async, [&] { return t->Swap(spec); });
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) t->Quiesce(kCore);
    return f.get();
  };
  std::mt19937 rng(23);
  std::vector<std::pair<void*, void*>> held;  // the same object (store index) of each pool
  uint64_t served_inline = 0;
  for (int op = 0; op < 6000; ++op) {
    const int kind = static_cast<int>(rng() % 100);
    std::string what;
    if (kind < 2) {
      const StrategySpec& spec = specs[rng() % specs.size()];
      what = "swap to " + spec.ToString();
      ASSERT_TRUE(swap(full, spec).status.ok()) << what;
      ASSERT_TRUE(swap(fast, spec).status.ok()) << what;
    } else if (kind < 50) {
      const unsigned n = rng() % 3 == 0 ? 32 : 1 + rng() % 40;
      what = "get " + std::to_string(n);
      std::vector<void*> a(n), b(n);
      const bool ok_a = full->Get(kCore, a.data(), n);
      bool ok_b;
      if (n == 1 ? s.GetOne(b.data()) : s.GetBurst(b.data(), n)) {
        ok_b = true;
        ++served_inline;
      } else {
        ok_b = fast->Get(kCore, b.data(), n);
      }
      ASSERT_EQ(ok_a, ok_b) << what << " op " << op;
      for (unsigned i = 0; ok_a && i < n; ++i) {
        ASSERT_EQ(full->store().IndexOf(a[i]), fast->store().IndexOf(b[i]))
            << what << " op " << op << " object " << i;
        held.emplace_back(a[i], b[i]);
      }
    } else if (!held.empty()) {
      const unsigned n = std::min<unsigned>(rng() % 2 == 0 ? 1 : 1 + rng() % 40, held.size());
      what = "put " + std::to_string(n);
      std::vector<void*> a, b;
      for (unsigned i = 0; i < n; ++i) {
        const size_t k = rng() % held.size();
        const auto [oa, ob] = held[k];
        held.erase(held.begin() + static_cast<ptrdiff_t>(k));
        const int64_t idx = full->store().IndexOf(oa);
        const int16_t port = idx % 3 == 0 ? -1 : (idx % 3 == 1 ? 1 : 2);
        SetTag(oa, port);
        SetTag(ob, port);
        a.push_back(oa);
        b.push_back(ob);
      }
      full->Put(kCore, a.data(), n);
      if (n == 1 && s.PutOne(b[0], tag)) {
        ++served_inline;
      } else {
        fast->Put(kCore, b.data(), n);
      }
    }
    const CoreCountersSnapshot ca = full->CoreStats(kCore), cb = fast->CoreStats(kCore);
    ASSERT_EQ(ca.allocs, cb.allocs) << what << " op " << op;
    ASSERT_EQ(ca.frees, cb.frees) << what << " op " << op;
    ASSERT_EQ(ca.alloc_failures, cb.alloc_failures) << what << " op " << op;
    for (int l = 0; l < kNumLayers; ++l) {
      ASSERT_EQ(ca.layer[l].alloc_hits, cb.layer[l].alloc_hits) << what << " layer " << l;
      ASSERT_EQ(ca.layer[l].alloc_misses, cb.layer[l].alloc_misses) << what << " layer " << l;
      ASSERT_EQ(ca.layer[l].free_hits, cb.layer[l].free_hits) << what << " layer " << l;
      ASSERT_EQ(ca.layer[l].free_misses, cb.layer[l].free_misses) << what << " layer " << l;
      ASSERT_EQ(full->CoreGauges(kCore).objects[l], fast->CoreGauges(kCore).objects[l])
          << what << " layer " << l;
    }
    ASSERT_EQ(ca.store_allocs, cb.store_allocs) << what << " op " << op;
    ASSERT_EQ(ca.store_frees, cb.store_frees) << what << " op " << op;
  }
  // (About one in ten: half the specs have no single-object hit on top, and most bursts miss.)
  EXPECT_GT(served_inline, 300u) << "the cached slot's calls were hardly ever taken";
  AuditReport r = fast->Audit(held.size());
  EXPECT_TRUE(r.ok) << r.message;
  // Unregistered: the slot's kind is 0, every call declines and changes nothing.
  for (auto& [oa, ob] : held) fast->Put(kCore, &ob, 1);
  ASSERT_TRUE(swap(fast, Spec("headpool")).status.ok());
  void* o[4];
  ASSERT_TRUE(fast->Get(kCore, o, 4));
  fast->Put(kCore, o, 4);
  ASSERT_TRUE(fast->UnregisterWorker(kCore).ok());
  EXPECT_FALSE(fast->For<Owner::kWorker>(kCore).Owns());
  const uint64_t in_store = fast->in_store();
  void* x;
  EXPECT_FALSE(s.GetOne(&x));
  EXPECT_FALSE(s.GetBurst(o, 4));
  EXPECT_FALSE(s.PutOne(fast.objects[0], tag));
  EXPECT_EQ(fast->in_store(), in_store);
  // A foreign owner's slot is never a worker's.
  auto foreign = MakePool("headpool", {.n = 64});
  ASSERT_TRUE(foreign->RegisterForeignCore(kCore).ok());
  EXPECT_FALSE(foreign->For<Owner::kWorker>(kCore).Owns());
  EXPECT_TRUE(foreign->For<Owner::kForeign>(kCore).Owns());
}

// PopInto (every layer's burst get) against the plain reverse copy, for every length around
// the SSE2 path's cases (pairs, runs of 16, the burst of 32, an odd object).
// On an AVX2 machine the burst of 32 is checked on both paths (g_pop_avx2).
TEST(FastPathTest, PopIntoHandsOutTheMostRecentFirstForEveryLength) {
  std::vector<void*> stack(80);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = reinterpret_cast<void*>(0x1000 + 8 * i);
  const bool avx2 = g_pop_avx2;
  for (bool use_avx2 : {false, avx2}) {
    g_pop_avx2 = use_avx2;
    for (unsigned n = 0; n <= 70; ++n) {
      std::vector<void*> out(n + 2, nullptr);
      PopInto(out.data(), stack.data() + 75, n);
      for (unsigned k = 0; k < n; ++k) {
        ASSERT_EQ(out[k], stack[74 - k]) << "n=" << n << " k=" << k << " avx2=" << use_avx2;
      }
      EXPECT_EQ(out[n], nullptr) << "n=" << n << ": wrote past the end";
      EXPECT_EQ(out[n + 1], nullptr) << "n=" << n << ": wrote past the end";
    }
  }
  g_pop_avx2 = avx2;
}

// What the plugin's per-thread slot cache relies on: a foreign handle Owns() registered
// foreign owners' slots only, its Hit() names the top layer's single-object hit (-1: none),
// and the inline burst from the hot list (GetBurstOf<K>) is the chain's answer: most recent
// first, counted, all or nothing, and declined while a reclaimer would be at work.
TEST(FastPathTest, ForeignHandleAndTheInlineHotListBurst) {
  struct Case {
    const char* spec;
    int kind;  // -1: no hit to cache
  };
  for (const Case& c : {Case{"headpool:hot_list_len=64", Pool::kHitOf<HeadPool>},
                        Case{"headpool+magazine", Pool::kHitOf<HeadPool>},
                        Case{"magazine:size=8", Pool::kHitOf<MagazineLayer>},
                        Case{"lcache+headpool", -1}, Case{"slab", -1}}) {
    auto t = MakePool(c.spec, {.n = 256});
    ASSERT_TRUE(t->RegisterForeignCore(0).ok()) << c.spec;
    const auto s = t->For<Owner::kForeign>(0);
    EXPECT_TRUE(s.Owns()) << c.spec;
    EXPECT_EQ(s.Hit(), c.kind) << c.spec;
    EXPECT_FALSE(t->For<Owner::kForeign>(5).Owns()) << c.spec << ": not registered";
    EXPECT_FALSE(t->For<Owner::kForeign>(-1).Owns()) << c.spec;
    EXPECT_FALSE(t->For<Owner::kForeign>(kMaxCores).Owns()) << c.spec;
  }
  {
    auto t = MakePool("headpool:hot_list_len=64", {.n = 256});
    ASSERT_TRUE(t->RegisterWorker(1).ok());
    EXPECT_FALSE(t->For<Owner::kForeign>(1).Owns()) << "a worker's slot is not a foreign one";
  }

  auto t = MakePool("headpool:hot_list_len=64", {.n = 256});
  ASSERT_TRUE(t->RegisterForeignCore(0).ok());
  constexpr size_t kHit = Pool::kHitOf<HeadPool>;
  const auto s = t->For<Owner::kForeign>(0);
  ASSERT_TRUE(s.Owns());
  CoreSlot& slot = HandleTestPeer::SlotOf(s);
  void* o[40];
  ASSERT_TRUE(t->Get(0, o, 40));
  for (void* obj : o) ASSERT_TRUE(s.PutOneOf<kHit>(obj));
  const CoreCountersSnapshot before = t->CoreStats(0);
  EXPECT_EQ(before.frees, 40u);
  EXPECT_EQ(before.layer[kHp].free_hits, 40u);
  void* out[40] = {};
  ASSERT_TRUE(s.GetBurstOf<kHit>(out, 32));
  for (int k = 0; k < 32; ++k) EXPECT_EQ(out[k], o[39 - k]) << k;
  CoreCountersSnapshot after = t->CoreStats(0);
  EXPECT_EQ(after.allocs - before.allocs, 32u);
  EXPECT_EQ(after.layer[kHp].alloc_hits - before.layer[kHp].alloc_hits, 32u);
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 8u);
  // More than the hot list holds: nothing happens (the host then takes Get).
  EXPECT_FALSE(s.GetBurstOf<kHit>(out + 32, 9));
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 8u);
  EXPECT_EQ(t->CoreStats(0).allocs, after.allocs);
  ASSERT_TRUE(s.Get(out + 32, 8));
  for (int k = 0; k < 8; ++k) EXPECT_EQ(out[32 + k], o[7 - k]) << k;
  // A raised steal (a reclaimer at work) declines the inline burst without touching anything;
  // the head pool's single-object free takes no marks (the reclaimer steals around it) and is
  // served all the same.
  t->Put(0, out, 39);
  slot.steal.store(1);
  EXPECT_FALSE(s.GetBurstOf<kHit>(out, 4));
  EXPECT_EQ(slot.in_op.load(), 0) << "a declined call leaves no mark";
  EXPECT_TRUE(s.PutOneOf<kHit>(out[39]));
  EXPECT_EQ(slot.in_op.load(), 0) << "the head pool's free takes no mark";
  slot.steal.store(0);
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 40u);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.handed_out, 0u);
}

// A robbed foreign owner's hot list (headpool.h): the reclaimer takes hot[base, top) and moves
// only `base`; the owner's unmarked frees keep pushing at `top` until it reaches
// hot_list_len, and the owner's next marked Put or missing Get moves the list back to hot[0].
// Objects, order and counters stay exact throughout.
TEST(HeadPoolTest, RobbedForeignListRebasesOnTheOwnersNextMarkedCall) {
  auto t = MakePool("headpool:hot_list_len=8", {.n = 16});
  ASSERT_TRUE(t->RegisterForeignCore(0).ok());
  ASSERT_TRUE(t->RegisterForeignCore(1).ok());
  constexpr size_t kHit = Pool::kHitOf<HeadPool>;
  const auto s = t->For<Owner::kForeign>(0);
  ASSERT_TRUE(s.Owns());
  ASSERT_EQ(s.Hit(), static_cast<int>(kHit));
  void* o[16];
  ASSERT_TRUE(t->Get(0, o, 16));
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(s.PutOneOf<kHit>(o[k]));
  // Core 1 finds the store empty and robs core 0's five.
  void* r[5];
  ASSERT_TRUE(t->Get(1, r, 5));
  EXPECT_EQ(t->reclaims(), 1u);
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 0u);
  // Three slots left above the robbed bottom: three unmarked frees, then the fourth declines.
  for (int k = 5; k < 8; ++k) ASSERT_TRUE(s.PutOneOf<kHit>(o[k])) << k;
  EXPECT_FALSE(s.PutOneOf<kHit>(o[8]));
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 3u);
  // The full path (marked) rebases and keeps it: the list holds four, o[8] on top.
  t->Put(0, &o[8], 1);
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 4u);
  CoreCountersSnapshot c = t->CoreStats(0);
  EXPECT_EQ(c.frees, 9u);
  EXPECT_EQ(c.layer[kHp].free_hits, 9u);
  EXPECT_EQ(c.layer[kHp].free_misses, 0u);
  for (int k = 9; k < 13; ++k) ASSERT_TRUE(s.PutOneOf<kHit>(o[k])) << k;
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 8u);
  void* back[8];
  ASSERT_TRUE(t->Get(0, back, 8));
  const void* want[8] = {o[12], o[11], o[10], o[9], o[8], o[7], o[6], o[5]};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(back[k], want[k]) << k;
  // Robbed again, then a Get the list cannot serve whole rebases too (GetMissing).
  t->Put(0, back, 3);  // back[0..2] in the list
  void* r2[3];
  ASSERT_TRUE(t->Get(1, r2, 3));  // the store is empty: robs those three
  EXPECT_EQ(t->reclaims(), 2u);
  ASSERT_TRUE(s.PutOneOf<kHit>(back[3]));  // hot[3], above base 3
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 1u);
  t->Put(kNoCore, r2, 3);  // straight to the store (a thread that owns no core)
  void* two[2];
  // Not whole from the list: GetMissing moves the list's one object to hot[0], hands it out
  // first, and takes the other from the store.
  ASSERT_TRUE(t->Get(0, two, 2));
  EXPECT_EQ(two[0], back[3]);
  EXPECT_EQ(t->reclaims(), 2u);
  EXPECT_EQ(t->CoreGauges(0).objects[kHp], 0u);
  t->Put(0, two, 2);
  t->Put(0, back + 4, 4);
  t->Put(0, o + 13, 3);
  t->Put(1, r, 5);
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.handed_out, 0u);
  uint64_t allocs = 0, frees = 0;
  for (int core : {0, 1, kNoCore}) {
    allocs += t->CoreStats(core).allocs;
    frees += t->CoreStats(core).frees;
  }
  EXPECT_EQ(allocs, frees);
  EXPECT_EQ(t->reclaimed_objects(), 8u);  // five, then three, all by Steal
}

}  // namespace
}  // namespace skbnf::pool

namespace skbnf::pool {
namespace {

int g_classify_calls = 0;
void CountingClassify(void* ctx, void* const* objs, unsigned n, int16_t* ports) {
  ++g_classify_calls;
  testing::TagClassify(ctx, objs, n, ports);
}

TEST(RecycleTest, CoreWithoutRxPortsDoesNotClassify) {
  PoolConfig c;
  c.store.elt_size = 128;
  c.store.objs_per_slab = 16;
  c.classify = &CountingClassify;
  auto p = Pool::Create(c, testing::Spec("recycle+magazine"));
  ASSERT_TRUE(p.ok());
  Pool& pool = **p;
  std::vector<char> mem(pool.MemSize(64) + 64);
  ASSERT_TRUE(pool.Populate(mem.data(), mem.size(), 64, [](void* o) { SetTag(o, 0); }).ok());
  ASSERT_TRUE(pool.RegisterWorker(0).ok());  // no RX ports
  ASSERT_TRUE(pool.RegisterWorker(1, {{.port = 0, .ring_size = 8}}).ok());
  void* o[8];
  g_classify_calls = 0;
  ASSERT_TRUE(pool.Get(0, o, 8));
  pool.Put(0, o, 8);
  pool.Put(0, o, 0);
  ASSERT_TRUE(pool.Get(0, o, 1));
  pool.Put(0, o, 1);
  EXPECT_EQ(g_classify_calls, 0);
  EXPECT_EQ(pool.CoreStats(0).layer[kRc].free_misses, 9u);
  ASSERT_TRUE(pool.Get(1, o, 4));
  pool.Put(1, o, 4);
  EXPECT_GT(g_classify_calls, 0);
  EXPECT_EQ(pool.CoreGauges(1).objects[kRc], 4u);
}

// ---- the layers' facts (layer_facts.h): one held-objects definition, one catalog

// What the pool-share check and preflight's sizing both compute (pool::MaxHeld over the
// layers' own MaxHeld), pinned: they once disagreed on the lcache (`(size*3+1)/2` against
// `size*3/2`, off by one for an odd size).
TEST(LayerFactsTest, HeldBoundIsTheLayersOwnDefinition) {
  const HoldEnv two_ports{.rx_ring_sizes = {512, 1024}};
  HeldBound b =
      MaxHeld(Spec("lcache:size=255+recycle+headpool:hot_list_len=100+magazine:size=7"), two_ports);
  ASSERT_EQ(b.by_order.size(), 4u);
  EXPECT_EQ(b.by_order[kLc], 382u);   // 1.5 x 255, rounded down as DPDK's flush threshold is
  EXPECT_EQ(b.by_order[kRc], 1536u);  // one RX ring per port the core refills
  EXPECT_EQ(b.by_order[kHp], 100u);
  EXPECT_EQ(b.by_order[kMg], 14u);  // loaded + previous
  EXPECT_EQ(b.total, 382u + 1536u + 100u + 14u);
  b = MaxHeld(Spec("recycle:limit=40"), two_ports);
  EXPECT_EQ(b.by_order[kRc], 80u);
  EXPECT_EQ(b.by_order[kLc], 0u);  // not in the stack
  EXPECT_EQ(b.total, 80u);
  EXPECT_EQ(MaxHeld(Spec("slab"), two_ports).total, 0u);
  EXPECT_EQ(LcoreCacheMaxHeld(255), 382u);  // DPDK's own cache: the same formula
  EXPECT_EQ(LcoreCacheMaxHeld(256), 384u);
}

// The bound is what the layer really reaches: single-object frees into an odd-sized lcache
// fill it to exactly MaxHeld, never past it.
TEST(LayerFactsTest, TheLcacheReachesItsBoundAndNoMore) {
  auto t = MakePool("lcache:size=255", {.n = 2048});
  ASSERT_TRUE(t->RegisterWorker(kCore).ok());
  std::vector<void*> o(600);
  ASSERT_TRUE(t->Get(kCore, o.data(), 600));  // > 512: straight from below, the cache empty
  ASSERT_EQ(t->CoreGauges(kCore).objects[kLc], 0u);
  uint64_t most = 0;
  for (void* obj : o) {
    t->Put(kCore, &obj, 1);
    most = std::max<uint64_t>(most, t->CoreGauges(kCore).objects[kLc]);
  }
  EXPECT_EQ(most, MaxHeld(Spec("lcache:size=255"), {}).total);
}

// The catalog is the layers' kFacts in stack order, and the spec's tables read it.
TEST(LayerFactsTest, TheCatalogIsTheStackInOrder) {
  const std::vector<CatalogEntry>& cat = LayerCatalog();
  ASSERT_EQ(cat.size(), static_cast<size_t>(kNumLayers));
  for (size_t i = 0; i < cat.size(); ++i) {
    EXPECT_EQ(cat[i].order, i);
    EXPECT_EQ(cat[i].index, static_cast<int>(i));
    EXPECT_EQ(cat[i].facts.name, LayerName(static_cast<Layer>(i)));
    EXPECT_EQ(AllLayers()[i].help, cat[i].facts.help);
    ASSERT_TRUE(cat[i].facts.has_tunable);
    EXPECT_EQ(AllTunables()[i].key, cat[i].facts.tunable.key);
    EXPECT_EQ(AllTunables()[i].max, cat[i].facts.tunable.max);
  }
  EXPECT_EQ(StackOrderText(), "lcache+recycle+headpool+magazine");
  EXPECT_EQ(cat[kHp].facts.tunable.key, "hot_list_len");
  EXPECT_EQ(cat[kMg].facts.tunable.default_value, StrategySpec{}.Tunable(Layer::kMagazine));
  // The parser's range is the layer's.
  EXPECT_TRUE(StrategySpec::Parse("headpool:hot_list_len=65536").ok());
  EXPECT_FALSE(StrategySpec::Parse("headpool:hot_list_len=65537").ok());
  // The order error spells the catalog's order.
  auto bad = StrategySpec::Parse("magazine+headpool");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(order: lcache+recycle+headpool+magazine)"),
            std::string::npos)
      << bad.status();
}

// The interface is a checked concept at LayerList (layer.h, PoolLayer): planted violations.
struct NoMaxHeld {
  static constexpr int kIndex = kUnlisted;
  static constexpr LayerFacts kFacts{
      .name = "no_max_held", .help = "", .has_tunable = false, .tunable = {}};
  struct State {};
  static bool InStack(const StrategySpec&) { return true; }
  static void Configure(State&, const LayerEnv&, bool) {}
  static uint64_t Flush(State&, CoreCounters&, FlushSink) { return 0; }
  static uint32_t Objects(const State&) { return 0; }
  template <class Below, class S>
  static bool Get(Shared& sh, S& s, void** objs, unsigned n) {
    return Below::Get(sh, s, objs, n);
  }
  template <class Below, class S>
  static void Put(Shared& sh, S& s, void* const* objs, unsigned n) {
    Below::Put(sh, s, objs, n);
  }
};
struct WithMaxHeld : NoMaxHeld {
  static uint64_t MaxHeld(const StrategySpec&, const HoldEnv&) { return 0; }
};
struct PutReturnsBool : WithMaxHeld {
  template <class Below, class S>
  static bool Put(Shared&, S&, void* const*, unsigned) {
    return true;
  }
};
static_assert(PoolLayer<WithMaxHeld>, "the probe layer is complete");
static_assert(!PoolLayer<NoMaxHeld>, "a layer without its held-objects bound is refused");
static_assert(!PoolLayer<PutReturnsBool>, "a Put with another signature is refused");
static_assert(PoolLayer<HeadPool> && PoolLayer<MagazineLayer> && PoolLayer<Recycle> &&
              PoolLayer<Lcache>);
static_assert(HasBurstHit<HeadPool> && HasBurstHit<MagazineLayer> && !HasBurstHit<Recycle>);
static_assert(SingleHitReadsPort<Recycle> && !SingleHitReadsPort<HeadPool>);

}  // namespace
}  // namespace skbnf::pool
