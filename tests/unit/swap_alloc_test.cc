// SPDX-License-Identifier: BSD-3-Clause
// A hot swap allocates nothing on the worker and no magazines on its own path (issue 11: the
// first swap of a run took 1.3-1.8 ms, of which 0.6 ms was the worker's first malloc creating
// its arena, and most of the rest the control thread allocating the new generation's depot).
//
// This binary replaces the global operator new/delete with counting forwards to malloc/free
// (per thread), which is why it is not part of pool_unit_tests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>

#include "dataplane/pool/pool.h"
#include "tests/unit/test_pool.h"

namespace {
thread_local uint64_t t_news = 0;

void* CountedNew(std::size_t n) {
  ++t_news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return CountedNew(n); }
void* operator new[](std::size_t n) { return CountedNew(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::Spec;

// A poll loop on `core` that publishes how many allocations its thread has made.
class CountingWorker {
 public:
  CountingWorker(Pool& pool, int core) : pool_(pool), core_(core) {
    thread_ = std::thread([this] { Run(); });
  }
  ~CountingWorker() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t news() const { return news_.load(); }
  // Waits until the loop has gone round `n` more times (each: Quiesce, one burst).
  void WaitIterations(uint64_t n) {
    const uint64_t target = iterations_.load() + n;
    while (iterations_.load() < target) std::this_thread::yield();
  }

 private:
  void Run() {
    void* objs[32];
    pool_.SetRxPort(core_, 1);
    while (!stop_) {
      if (pool_.Quiesce(core_) && pool_.Get(core_, objs, 32)) pool_.Put(core_, objs, 32);
      news_.store(t_news);
      iterations_.fetch_add(1);
    }
  }

  Pool& pool_;
  const int core_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> news_{0};
  std::atomic<uint64_t> iterations_{0};
  std::thread thread_;
};

TEST(SwapAllocTest, WorkerAllocatesNothingAdoptingDefaultTunables) {
  auto t = MakePool("lcache+magazine", {.n = 8192});
  ASSERT_TRUE(t->RegisterWorker(0, {{.port = 1, .ring_size = 256}}).ok());
  CountingWorker w(*t.pool, 0);
  w.WaitIterations(100);
  const uint64_t before = w.news();
  for (const char* spec : {"recycle+magazine", "headpool+magazine", "lcache+recycle+headpool",
                           "lcache+magazine", "recycle+headpool+magazine", "magazine"}) {
    SwapReport r = t->Swap(Spec(spec));
    ASSERT_TRUE(r.status.ok()) << spec << ": " << r.status;
    w.WaitIterations(100);
    EXPECT_EQ(w.news(), before) << "the worker allocated adopting " << spec;
  }
  // Larger than the default tunables: the worker grows the layer's buffer, once. (Also shows
  // that this test sees the worker's allocations.)
  ASSERT_TRUE(t->Swap(Spec("headpool:hot_list_len=4096")).status.ok());
  w.WaitIterations(100);
  EXPECT_GT(w.news(), before);
  w.Stop();
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

TEST(SwapAllocTest, SwapsIntoTheDefaultMagazineSizeMakeNoMagazines) {
  // 8,192 objects in 32-round magazines: a new depot is over 256 magazines (256 allocations).
  auto t = MakePool("lcache+magazine", {.n = 8192});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  CountingWorker w(*t.pool, 0);
  w.WaitIterations(100);
  for (const char* spec : {"headpool+magazine", "lcache+magazine", "magazine"}) {
    const uint64_t n0 = t_news;
    SwapReport r = t->Swap(Spec(spec));
    const uint64_t made = t_news - n0;
    ASSERT_TRUE(r.status.ok()) << spec << ": " << r.status;
    // The generation, the report's vectors and strings: a few dozen at most.
    EXPECT_LT(made, 64u) << spec;
  }
  // A magazine size never used before makes a depot, on the control thread: its hundreds of
  // magazines are one mapped region (depot.h), not one heap chunk each as they were, so this
  // swap too makes only the generation's few dozen allocations.
  const uint64_t n0 = t_news;
  ASSERT_TRUE(t->Swap(Spec("magazine:size=16")).status.ok());
  EXPECT_LT(t_news - n0, 64u);
  w.Stop();
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

}  // namespace
}  // namespace skbnf::pool
