// SPDX-License-Identifier: BSD-3-Clause
// The pool's control protocol: registration, hot swap with acknowledgement and roll-back,
// pause/resume with on-behalf switching, non-worker threads, the audit and the debug switch.
#include "dataplane/pool/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using std::chrono::milliseconds;
using testing::MakePool;
using testing::Spec;

// A worker thread that loops like a poll loop: Quiesce, then one alloc/free burst.
class Worker {
 public:
  Worker(TestedPool& pool, int core) : pool_(pool), core_(core) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Worker() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // While frozen the thread does not reach its quiescent point (a stuck worker). Freezing
  // waits until the thread is in its frozen loop: it may have passed the check just before and
  // be on its way to a quiescent point (where it could still park or acknowledge).
  void Freeze(bool f) {
    if (!f) {
      frozen_ = false;
      return;
    }
    const uint64_t g = ++freeze_gen_;
    frozen_ = true;
    while (seen_gen_.load() < g && !stop_) std::this_thread::yield();
  }
  uint64_t iterations() const { return iterations_.load(); }
  uint64_t paused_iterations() const { return paused_.load(); }

 private:
  void Run() {
    void* objs[32];
    while (!stop_) {
      if (frozen_) {
        seen_gen_.store(freeze_gen_.load());
        std::this_thread::yield();
        continue;
      }
      if (!pool_.Quiesce(core_)) {
        ++paused_;
        std::this_thread::yield();
        continue;
      }
      if (pool_.Get(core_, objs, 32)) pool_.Put(core_, objs, 32);
      ++iterations_;
    }
  }
  TestedPool& pool_;
  const int core_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> frozen_{false};
  std::atomic<uint64_t> freeze_gen_{0}, seen_gen_{0};
  std::atomic<uint64_t> iterations_{0};
  std::atomic<uint64_t> paused_{0};
  std::thread thread_;
};

TEST(PoolTest, NonWorkerThreadsGoStraightToTheStore) {
  auto t = MakePool("headpool+magazine", {.n = 64});
  void* o[10];
  ASSERT_TRUE(t->Get(kNoCore, o, 10));
  EXPECT_EQ(t->in_store(), 54u);
  t->Put(kNoCore, o, 10);
  EXPECT_EQ(t->in_store(), 64u);
  // An unregistered core id behaves the same.
  ASSERT_TRUE(t->Get(5, o, 3));
  t->Put(5, o, 3);
  EXPECT_EQ(t->in_store(), 64u);
  CoreCountersSnapshot other = t->CoreStats(kNoCore);
  EXPECT_EQ(other.store_allocs, 10u);
  EXPECT_EQ(other.allocs, 10u);
  EXPECT_EQ(t->CoreStats(5).store_allocs, 3u);
}

TEST(PoolTest, RegistrationIsValidated) {
  auto t = MakePool("magazine", {.n = 64});
  EXPECT_EQ(t->RegisterWorker(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->RegisterWorker(kMaxCores).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->RegisterWorker(1, {{.port = 40, .ring_size = 8}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->RegisterWorker(1, {{.port = 2, .ring_size = 0}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->RegisterWorker(1, {{.port = 2, .ring_size = 8}, {.port = 2, .ring_size = 8}}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(t->RegisterWorker(1).ok());
  EXPECT_EQ(t->RegisterWorker(1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(t->workers(), std::vector<int>{1});
  EXPECT_TRUE(t->UnregisterWorker(1).ok());
  EXPECT_EQ(t->UnregisterWorker(1).code(), absl::StatusCode::kNotFound);
}

TEST(PoolTest, UnregisterFlushesTheCoresLayers) {
  auto t = MakePool("headpool+magazine:size=4", {.n = 64});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  void* o[20];
  ASSERT_TRUE(t->Get(0, o, 20));
  t->Put(0, o, 20);
  EXPECT_LT(t->in_store(), 64u);
  ASSERT_TRUE(t->UnregisterWorker(0).ok());
  EXPECT_EQ(t->in_store(), 64u);
  EXPECT_EQ(t->in_depots(), 0u);
}

TEST(PoolTest, SwapWaitsForEveryWorkerAndReports) {
  auto t = MakePool("magazine", {.n = 1024});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  ASSERT_TRUE(t->RegisterWorker(1).ok());
  Worker w0(*t.pool, 0), w1(*t.pool, 1);
  const uint64_t e0 = t->epoch();
  SwapReport r = t->Swap(Spec("headpool:hot_list_len=64"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_FALSE(r.rolled_back);
  EXPECT_EQ(r.old_spec, "magazine");
  EXPECT_EQ(r.new_spec, "headpool:hot_list_len=64");
  EXPECT_EQ(r.epoch, e0 + 1);
  EXPECT_EQ(t->epoch(), e0 + 1);
  EXPECT_EQ(t->strategy().ToString(), "headpool:hot_list_len=64");
  ASSERT_EQ(r.cores.size(), 2u);
  for (const CoreSwapResult& c : r.cores) {
    EXPECT_TRUE(c.acknowledged);
    EXPECT_FALSE(c.on_behalf);
  }
  EXPECT_EQ(t->swaps_ok(), 1u);
  // The old generation's depot was drained when it retired.
  w0.Stop();
  w1.Stop();
  EXPECT_EQ(t->in_depots(), 0u);
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

TEST(PoolTest, StuckWorkerMakesTheSwapRollBack) {
  // The deadline is long enough for a running worker on a loaded sanitizer build (w0 must
  // acknowledge in time); the frozen w1 misses any deadline.
  auto t = MakePool("magazine", {.n = 1024});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  ASSERT_TRUE(t->RegisterWorker(1).ok());
  Worker w0(*t.pool, 0), w1(*t.pool, 1);
  w1.Freeze(true);
  SwapReport r = t->Swap(Spec("recycle+magazine"), milliseconds(500));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(r.status.message()).find("core(s) 1 did not acknowledge"),
            std::string::npos)
      << r.status;
  EXPECT_TRUE(r.rolled_back);
  EXPECT_EQ(r.failed_cores, std::vector<int>{1});
  EXPECT_EQ(t->strategy().ToString(), "magazine");
  EXPECT_EQ(t->swaps_failed(), 1u);
  // The stuck worker catches up with the rolled-back generation when it runs again.
  w1.Freeze(false);
  SwapReport ok = t->Swap(Spec("headpool"));
  EXPECT_TRUE(ok.status.ok()) << ok.status;
  w0.Stop();
  w1.Stop();
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

TEST(PoolTest, PausedWorkerIsDrainedAndSwitchedOnItsBehalf) {
  auto t = MakePool("headpool", {.n = 1024});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  ASSERT_TRUE(t->RegisterWorker(1).ok());
  Worker w0(*t.pool, 0), w1(*t.pool, 1);
  ASSERT_TRUE(t->PauseWorker(1).ok());
  EXPECT_TRUE(t->IsPaused(1));
  EXPECT_EQ(t->CoreGauges(1).objects[static_cast<int>(Layer::kHeadPool)], 0u);
  const uint64_t before = w1.iterations();
  SwapReport r = t->Swap(Spec("magazine:size=8"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  bool saw_on_behalf = false;
  for (const CoreSwapResult& c : r.cores) {
    if (c.core == 1) saw_on_behalf = c.on_behalf;
  }
  EXPECT_TRUE(saw_on_behalf);
  EXPECT_EQ(w1.iterations(), before);  // it did not run while paused
  EXPECT_GT(w1.paused_iterations(), 0u);
  ASSERT_TRUE(t->ResumeWorker(1).ok());
  EXPECT_FALSE(t->IsPaused(1));  // resume returns once the worker runs again
  while (w1.iterations() < before + 100) std::this_thread::yield();
  EXPECT_GT(t->CoreStats(1).layer[static_cast<int>(Layer::kMagazine)].alloc_hits, 0u);
  w0.Stop();
  w1.Stop();
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

TEST(PoolTest, PauseOfAStuckWorkerTimesOutAndLeavesItRunning) {
  auto t = MakePool("magazine", {.n = 256, .timeout = milliseconds(30)});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  Worker w0(*t.pool, 0);
  w0.Freeze(true);
  absl::Status s = t->PauseWorker(0);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  w0.Freeze(false);
  const uint64_t before = w0.iterations();
  while (w0.iterations() < before + 100) std::this_thread::yield();
  EXPECT_FALSE(t->IsPaused(0));
  EXPECT_EQ(t->PauseWorker(7).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PoolTest, PauseResumeCyclesAreEachAcknowledged) {
  auto t = MakePool("magazine", {.n = 256});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  Worker w0(*t.pool, 0);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(t->PauseWorker(0).ok());
    ASSERT_TRUE(t->IsPaused(0));
    ASSERT_TRUE(t->ResumeWorker(0).ok());
    ASSERT_FALSE(t->IsPaused(0));
  }
  // Resuming a running worker is a no-op.
  EXPECT_TRUE(t->ResumeWorker(0).ok());
  w0.Stop();
  AuditReport a = t->Audit(0);
  EXPECT_TRUE(a.ok) << a.message;
}

TEST(PoolTest, ResumeOfAFrozenWorkerReportsTheDeadline) {
  auto t = MakePool("magazine", {.n = 256});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  Worker w0(*t.pool, 0);
  ASSERT_TRUE(t->PauseWorker(0).ok());  // the pool's 2 s: this one must succeed
  w0.Freeze(true);
  EXPECT_EQ(t->ResumeWorker(0, milliseconds(30)).code(), absl::StatusCode::kDeadlineExceeded);
  w0.Freeze(false);
  while (t->IsPaused(0)) std::this_thread::yield();  // it resumes when it gets there
  w0.Stop();
}

TEST(PoolTest, AuditCountsInFlightObjects) {
  auto t = MakePool("headpool+magazine:size=4", {.n = 128});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  void* o[50];
  ASSERT_TRUE(t->Get(0, o, 50));
  t->Put(0, o, 20);
  AuditReport a = t->Audit(30);
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.handed_out, 30u);
  AuditReport wrong = t->Audit(29);
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.message.find("MISMATCH"), std::string::npos);
  t->Put(0, o + 20, 30);
}

TEST(PoolTest, DebugSwitchCountsAndDropsDoubleAndForeignFrees) {
  for (const StrategySpec& spec : testing::AllSpecs()) {
    auto t = MakePool(spec.ToString(), {.n = 64, .debug = true});
    ASSERT_TRUE(t->RegisterWorker(0, {{.port = 0, .ring_size = 8}}).ok());
    void* o[4];
    ASSERT_TRUE(t->Get(0, o, 4));
    t->Put(0, o, 4);
    t->Put(0, o, 2);            // double free
    t->Put(kNoCore, o + 3, 1);  // double free from another thread
    int local = 0;
    void* foreign[2] = {&local, static_cast<char*>(o[0]) + 1};
    t->Put(0, foreign, 2);
    EXPECT_EQ(t->double_frees(), 3u) << spec.ToString();
    EXPECT_EQ(t->foreign_frees(), 2u) << spec.ToString();
    AuditReport a = t->Audit(0);
    EXPECT_TRUE(a.ok) << spec.ToString() << ": " << a.message;
    // Every object can still be handed out exactly once.
    std::vector<void*> all(64);
    for (int i = 0; i < 64; ++i) ASSERT_TRUE(t->Get(0, &all[i], 1)) << spec.ToString();
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
    t->Put(0, all.data(), 64);
  }
}

TEST(PoolTest, DebugIsOffByDefault) {
  auto t = MakePool("magazine", {.n = 64});
  EXPECT_FALSE(t->debug());
}

}  // namespace
}  // namespace skbnf::pool
