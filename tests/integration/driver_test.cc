// SPDX-License-Identifier: BSD-3-Clause
// The skbnf mempool driver as a foreign DPDK 22.11 application sees it, and DPDK's own lcore
// cache as the yardstick of the `lcache` layer. One EAL per process (ctest runs each test in
// its own process); the plugin is loaded with `-d` exactly as testpmd would.
//
//   Stranding   the two-lcore sequence of issue 7: a pool of 64 mbufs with cache_size 0,
//               lcore 0 allocates all 64 and hands them over a ring to lcore 1, which frees
//               them and goes back to waiting on the ring. rte_mempool_avail_count() says 64
//               and lcore 0 must be able to allocate every one of them again - for every
//               per-core layer. (Before the reclaim, only `slab` and `magazine:size=4` did.)
//   Lcache      the same random get/put sequence through DPDK's cache (ring_mp_mc, cache
//               size S) and through our Pool with `lcache:size=S` over the store: after every
//               operation both succeed or fail alike and hold the same number of objects in
//               the cache and below it (a failed get also flushes the failing core's own
//               cache: the reclaim, pool.h; the test flushes DPDK's then too).
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dataplane/pool/pool.h"

namespace skbnf {
namespace {

// EAL refuses a plugin below a world-writable directory: load a private copy then.
std::string PluginPath() {
  const char* env = std::getenv("SKBNF_PLUGIN");
  if (env == nullptr) return "";
  std::filesystem::path p = std::filesystem::canonical(env);
  for (auto d = p.parent_path(); d != d.root_path(); d = d.parent_path()) {
    struct stat st;
    if (stat(d.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
      std::string dir = std::string(std::getenv("HOME")) + "/.skbnf-driver-test-XXXXXX";
      if (mkdtemp(dir.data()) == nullptr) return p.string();
      const auto copy = std::filesystem::path(dir) / p.filename();
      std::filesystem::copy_file(p, copy);
      return copy.string();
    }
  }
  return p.string();
}

class Eal : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string plugin = PluginPath();
    ASSERT_FALSE(plugin.empty()) << "set SKBNF_PLUGIN to libskbnf_mempool.so";
    const std::string prefix = "skbnf-drv-" + std::to_string(getpid());
    std::vector<std::string> args = {"driver_test",
                                     "-l",
                                     "0,1",
                                     "--no-huge",
                                     "-m",
                                     "256",
                                     "--no-pci",
                                     "--no-shconf",
                                     "--no-telemetry",
                                     "--file-prefix",
                                     prefix,
                                     "-d",
                                     plugin,
                                     "--log-level=lib.eal:error"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
    ASSERT_GE(rte_lcore_count(), 2u);
  }
  void TearDown() override { rte_eal_cleanup(); }
};

// ---- stranding

// The "ring" between the two lcores: a locked queue, so that ThreadSanitizer sees the hand-over
// (DPDK's rte_ring orders with barriers it cannot see).
struct Handover {
  std::mutex mu;
  std::deque<rte_mbuf*> queue;
  std::atomic<uint64_t> freed{0};
  std::atomic<bool> stop{false};
};

// rte_eal_remote_launch hands its argument over inside librte_eal, where ThreadSanitizer cannot
// see it: the test publishes and retires the hand-over with atomics of its own.
std::atomic<Handover*> g_handover{nullptr};
std::atomic<bool> g_lcore1_done{false};

int FreeFromRing(void*) {  // lcore 1: free what arrives, then go back to waiting
  Handover* h;
  while ((h = g_handover.load(std::memory_order_acquire)) == nullptr) rte_pause();
  std::vector<rte_mbuf*> got;
  while (!h->stop.load()) {
    {
      std::lock_guard<std::mutex> lock(h->mu);
      got.assign(h->queue.begin(), h->queue.end());
      h->queue.clear();
    }
    for (rte_mbuf* m : got) rte_pktmbuf_free(m);
    if (!got.empty()) h->freed.fetch_add(got.size());
    rte_pause();
  }
  g_lcore1_done.store(true, std::memory_order_release);
  return 0;
}

class StrandingTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StrandingTest, WhatOneLcoreFreesAnotherCanAllocate) {
  constexpr unsigned kMbufs = 64;
  ASSERT_EQ(setenv("SKBNF_STRATEGY", GetParam(), 1), 0);
  rte_mempool* mp = rte_pktmbuf_pool_create_by_ops("strand", kMbufs, /*cache_size=*/0, 0,
                                                   RTE_MBUF_DEFAULT_BUF_SIZE,
                                                   static_cast<int>(rte_socket_id()), "skbnf");
  ASSERT_NE(mp, nullptr) << rte_strerror(rte_errno);
  ASSERT_STREQ(rte_mempool_get_ops(mp->ops_index)->name, "skbnf");
  Handover h;
  g_lcore1_done.store(false);
  g_handover.store(&h, std::memory_order_release);
  ASSERT_EQ(rte_eal_remote_launch(&FreeFromRing, nullptr, 1), 0);
  for (int round = 0; round < 4; ++round) {
    rte_mbuf* m[kMbufs];
    unsigned got = 0;
    for (; got < kMbufs; ++got) {
      m[got] = rte_pktmbuf_alloc(mp);
      if (m[got] == nullptr) break;
    }
    EXPECT_EQ(got, kMbufs) << "round " << round << ": avail_count says "
                           << rte_mempool_avail_count(mp);
    {
      std::lock_guard<std::mutex> lock(h.mu);
      h.queue.insert(h.queue.end(), m, m + got);
    }
    while (h.freed.load() < uint64_t{kMbufs} * round + got) rte_pause();
    EXPECT_EQ(rte_mempool_avail_count(mp), kMbufs) << "round " << round;
    if (got != kMbufs) break;
  }
  h.stop.store(true);
  rte_eal_wait_lcore(1);
  while (!g_lcore1_done.load(std::memory_order_acquire)) rte_pause();
  g_handover.store(nullptr);
  EXPECT_EQ(rte_mempool_avail_count(mp), kMbufs);
  rte_mempool_free(mp);
}

INSTANTIATE_TEST_SUITE_P(EveryLayer, StrandingTest,
                         ::testing::Values("slab", "headpool", "magazine", "lcache", "recycle",
                                           "recycle+headpool", "headpool+magazine",
                                           "lcache:size=32+magazine:size=8",
                                           "magazine:size=4,prefetch"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n;
                           for (const char* c = p.param; *c != '\0'; ++c) {
                             n += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           }
                           return n;
                         });

// ---- the plugin's per-thread slot cache

// The plugin caches each thread's slot per pool (skbnf_mempool.cc, ThreadSlots) and compares
// only the rte_mempool pointer. A pool made where a freed one was (same name and size: DPDK
// hands it the same memory) must be served by its own slots, not through the freed pool's.
TEST(ThreadSlotCacheTest, APoolMadeWhereAFreedOneWasIsServedByItsOwnSlots) {
  constexpr unsigned kMbufs = 64;
  ASSERT_EQ(setenv("SKBNF_STRATEGY", "headpool", 1), 0);
  const auto make = [] {
    return rte_pktmbuf_pool_create_by_ops("tscache", kMbufs, /*cache_size=*/0, 0,
                                          RTE_MBUF_DEFAULT_BUF_SIZE,
                                          static_cast<int>(rte_socket_id()), "skbnf");
  };
  rte_mempool* a = make();
  ASSERT_NE(a, nullptr) << rte_strerror(rte_errno);
  // Single-object calls cache this thread's slot of `a` and leave mbufs on its hot list.
  rte_mbuf* m[8];
  for (rte_mbuf*& x : m) ASSERT_NE(x = rte_pktmbuf_alloc(a), nullptr);
  for (rte_mbuf* x : m) rte_pktmbuf_free(x);
  const void* a_addr = a;
  rte_mempool_free(a);
  rte_mempool* b = make();
  ASSERT_NE(b, nullptr) << rte_strerror(rte_errno);
  if (static_cast<const void*>(b) != a_addr) {
    rte_mempool_free(b);
    GTEST_SKIP() << "the new pool did not get the freed pool's address: nothing to check here";
  }
  std::set<void*> own;
  rte_mempool_obj_iter(
      b,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        static_cast<std::set<void*>*>(arg)->insert(obj);
      },
      &own);
  ASSERT_EQ(own.size(), kMbufs);
  std::vector<rte_mbuf*> got;
  for (unsigned i = 0; i < kMbufs; ++i) {
    rte_mbuf* x = rte_pktmbuf_alloc(b);
    ASSERT_NE(x, nullptr) << i;
    EXPECT_TRUE(own.count(x) == 1) << "mbuf " << i << " is not one of the new pool's";
    got.push_back(x);
  }
  EXPECT_EQ(rte_pktmbuf_alloc(b), nullptr) << "the new pool handed out more than it holds";
  for (rte_mbuf* x : got) rte_pktmbuf_free(x);
  EXPECT_EQ(rte_mempool_avail_count(b), kMbufs);
  rte_mempool_free(b);
}

// ---- lcache against DPDK's own cache

TEST(LcacheFidelityTest, SameSequenceSameCacheAsDpdk2211) {
  constexpr unsigned kObjects = 4096;
  constexpr unsigned kCacheSize = 32;  // flushthresh 48
  rte_mempool* mp = rte_mempool_create("fidelity", kObjects, 64, kCacheSize, 0, nullptr, nullptr,
                                       nullptr, nullptr, static_cast<int>(rte_socket_id()), 0);
  ASSERT_NE(mp, nullptr) << rte_strerror(rte_errno);
  rte_mempool_cache* cache = rte_mempool_default_cache(mp, rte_lcore_id());
  ASSERT_NE(cache, nullptr);

  pool::PoolConfig c;
  c.store.elt_size = 64;
  c.store.objs_per_slab = 64;
  auto created = pool::Pool::Create(c, *pool::StrategySpec::Parse("lcache:size=32"));
  ASSERT_TRUE(created.ok()) << created.status();
  pool::Pool& ours = **created;
  const size_t bytes = ours.MemSize(kObjects);
  std::vector<char> mem(bytes + 4096);
  void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(mem.data()) + 4095) & ~4095ul);
  ASSERT_TRUE(ours.Populate(base, bytes, kObjects, [](void*) {}).ok());
  ASSERT_TRUE(ours.RegisterWorker(0).ok());
  constexpr int kLc = static_cast<int>(pool::Layer::kLcache);

  std::mt19937 rng(2211);
  std::vector<void*> held_dpdk, held_ours;
  std::vector<void*> a(700), b(700);
  for (int op = 0; op < 20000; ++op) {
    const unsigned r = rng() % 100;
    unsigned n = r < 2 ? 513 + rng() % 150 : 1 + rng() % 70;  // some past 512
    if (rng() % 2 == 0) {
      const bool ok_dpdk = rte_mempool_generic_get(mp, a.data(), n, cache) == 0;
      const bool ok_ours = ours.Get(0, b.data(), n);
      ASSERT_EQ(ok_dpdk, ok_ours) << "get " << n << " at op " << op;
      if (!ok_dpdk) {
        // The one intended difference: before failing, our Get reclaims, which flushes the
        // failing core's own layers (the cache) to the store. DPDK keeps its cache; flush it
        // to stay in step.
        EXPECT_EQ(ours.CoreGauges(0).objects[kLc], 0u);
        rte_mempool_cache_flush(cache, mp);
      } else {
        held_dpdk.insert(held_dpdk.end(), a.begin(), a.begin() + n);
        held_ours.insert(held_ours.end(), b.begin(), b.begin() + n);
      }
    } else {
      n = std::min<unsigned>(n, static_cast<unsigned>(held_dpdk.size()));
      rte_mempool_generic_put(mp, held_dpdk.data() + held_dpdk.size() - n, n, cache);
      ours.Put(0, held_ours.data() + held_ours.size() - n, n);
      held_dpdk.resize(held_dpdk.size() - n);
      held_ours.resize(held_ours.size() - n);
    }
    ASSERT_EQ(cache->len, ours.CoreGauges(0).objects[kLc])
        << "op " << op << " n " << n << " held " << held_dpdk.size();
    ASSERT_EQ(rte_mempool_avail_count(mp) - cache->len, ours.in_store()) << "op " << op;
  }
  rte_mempool_generic_put(mp, held_dpdk.data(), static_cast<unsigned>(held_dpdk.size()), cache);
  ours.Put(0, held_ours.data(), static_cast<unsigned>(held_ours.size()));
  ASSERT_TRUE(ours.UnregisterWorker(0).ok());
  EXPECT_EQ(ours.in_store(), kObjects);
  rte_mempool_free(mp);
}

}  // namespace
}  // namespace skbnf

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new skbnf::Eal);
  return RUN_ALL_TESTS();
}
