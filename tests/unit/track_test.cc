// SPDX-License-Identifier: BSD-3-Clause
// Since when, and who took it (dataplane/pool/track.h): the track modifier stamps every object
// the pool hands out, on every path (the chain, the inline single-object and burst hits, the
// "other" threads' store path, a foreign owner's), with the TSC and the taker's site; the census
// empties every per-core layer and finds exactly the objects in flight, with their stamps.
// Off, nothing is written; switched on, stamps of an earlier period are cleared.
#include "dataplane/pool/track.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::Spec;
using testing::TestPool;
using testing::TestPoolOptions;

constexpr uint32_t kStampOffset = 8;  // bytes 8..15 (the recycle tag is bytes 0..1)
constexpr auto kPatient = std::chrono::seconds(30);

TestPoolOptions Tracked(uint32_t n = 512) {
  TestPoolOptions o;
  o.n = n;
  o.stamp_offset = kStampOffset;
  return o;
}

uint64_t StampOf(const void* obj) {
  uint64_t v;
  std::memcpy(&v, static_cast<const char*>(obj) + kStampOffset, sizeof(v));
  return v;
}

using SiteKey = std::tuple<SiteKind, int, int>;
SiteKey KeyOf(uint64_t stamp) {
  const Site s = DecodeSite(stamp);
  return {s.kind, s.core, s.rx_port};
}

// A worker thread on `core`: runs `work` once, then reaches its quiescent point until stopped
// (a census's flush request is served there).
class Worker {
 public:
  template <typename Work>
  Worker(TestedPool& pool, int core, Work work) : pool_(pool) {
    thread_ = std::thread([this, core, work] {
      work();
      ready_.store(true);
      while (!stop_.load()) {
        pool_.Quiesce(core);
        std::this_thread::yield();
      }
    });
    while (!ready_.load()) std::this_thread::yield();
  }
  ~Worker() {
    stop_.store(true);
    thread_.join();
  }

 private:
  TestedPool& pool_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_{false};
};

TEST(TrackTest, SiteRoundTrips) {
  for (SiteKind k : {SiteKind::kWorker, SiteKind::kApplication, SiteKind::kOther}) {
    for (int core : {0, 1, 63, 127}) {
      for (int port : {-1, 0, 5, 31}) {
        const uint64_t stamp =
            (uint64_t{0x123456789} << 16) | SiteWithPort(SiteBase(k, core), port);
        const Site s = DecodeSite(stamp);
        EXPECT_EQ(s.kind, k);
        EXPECT_EQ(s.core, core);
        EXPECT_EQ(s.rx_port, port);
        EXPECT_EQ(StampTsc(stamp), uint64_t{0x123456789} << 16);
        EXPECT_NE(stamp & kStampSiteBits, 0u) << "a stamp is never 0";
      }
    }
  }
}

TEST(TrackTest, ModifierParsesAndPrints) {
  absl::StatusOr<StrategySpec> s = StrategySpec::Parse("recycle+magazine:size=64,prefetch,track");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->track);
  EXPECT_TRUE(s->prefetch);
  EXPECT_EQ(s->ToString(), "recycle+magazine:size=64,prefetch,track");
  EXPECT_EQ(StrategySpec::Parse(s->ToString())->ToString(), s->ToString());
  absl::StatusOr<StrategySpec> twice = StrategySpec::Parse("headpool,track,track");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'track' appears twice"), std::string::npos);
  absl::StatusOr<StrategySpec> unknown = StrategySpec::Parse("headpool,trace");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("known: prefetch, track"), std::string::npos);
}

TEST(TrackTest, RefusedWhereTheHostReservedNoStampWord) {
  PoolConfig c;
  c.store.elt_size = 128;
  absl::StatusOr<std::unique_ptr<TestedPool>> p = TestedPool::Create(c, Spec("headpool,track"));
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("'track' needs a word"), std::string::npos);

  TestPool t = MakePool("headpool");
  const uint64_t epoch = t->epoch();
  SwapReport r = t->Swap(Spec("headpool,track"));
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status)) << r.status;
  EXPECT_EQ(t->epoch(), epoch) << "nothing applied";
  EXPECT_FALSE(t->strategy().track);
  EXPECT_TRUE(absl::IsFailedPrecondition(t->Census(kPatient).status()));
}

TEST(TrackTest, OffWritesNoStampAndTakesNoCensus) {
  TestPool t = MakePool("headpool+magazine", Tracked());
  std::vector<void*> out(64);
  ASSERT_TRUE(t->Get(kNoCore, out.data(), 64));
  for (void* o : out) EXPECT_EQ(StampOf(o), 0u);
  absl::StatusOr<InFlightCensus> c = t->Census(kPatient);
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status())) << c.status();
  t->Put(kNoCore, out.data(), 64);
}

// Every spec, with track: a worker takes objects while refilling an RX port, more without one,
// frees some into its layers; another thread takes a few. The census finds exactly the objects
// out, each with its taker's site, whatever the layers held.
TEST(TrackTest, CensusFindsExactlyTheObjectsOutWithTheirSites) {
  for (StrategySpec spec : testing::AllSpecs()) {
    spec.track = true;
    SCOPED_TRACE(spec.ToString());
    TestPool t = MakePool(spec.ToString(), Tracked());
    ASSERT_TRUE(t->RegisterWorker(1, {{2, 64}}).ok());
    std::vector<void*> rx(10), mine(5), churn(40);
    {
      Worker w(*t.pool, 1, [&] {
        t->SetRxPort(1, 2);
        for (int i = 0; i < 3; ++i) {  // fill the layers, then take from them
          ASSERT_TRUE(t->Get(1, churn.data(), 40));
          t->Put(1, churn.data(), 40);
        }
        ASSERT_TRUE(t->Get(1, rx.data(), 9));
        ASSERT_TRUE(t->Get(1, &rx[9], 1));  // the inline single-object hit, where there is one
        t->SetRxPort(1, -1);
        ASSERT_TRUE(t->Get(1, mine.data(), 5));
      });
      std::vector<void*> other(3);
      ASSERT_TRUE(t->Get(kNoCore, other.data(), 3));
      absl::StatusOr<InFlightCensus> c = t->Census(kPatient);
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_TRUE(c->unanswered_cores.empty());
      EXPECT_EQ(c->populated, 512u);
      EXPECT_EQ(c->in_flight, 18u);
      EXPECT_EQ(c->untracked, 0u);
      ASSERT_EQ(c->tracked.size(), 18u);
      std::map<const void*, uint64_t> found;
      for (const TrackedObject& o : c->tracked) {
        found[o.handle] = o.stamp;
        EXPECT_LE(StampTsc(o.stamp), c->now_tsc);
      }
      for (void* o : rx) EXPECT_EQ(KeyOf(found.at(o)), SiteKey(SiteKind::kWorker, 1, 2));
      for (void* o : mine) EXPECT_EQ(KeyOf(found.at(o)), SiteKey(SiteKind::kWorker, 1, -1));
      for (void* o : other) EXPECT_EQ(DecodeSite(found.at(o)).kind, SiteKind::kOther);
      t->Put(kNoCore, other.data(), 3);
    }
    t->Put(kNoCore, rx.data(), 10);
    t->Put(kNoCore, mine.data(), 5);
    ASSERT_TRUE(t->UnregisterWorker(1).ok());
    EXPECT_TRUE(t->Audit(0).ok);
  }
}

#ifndef SKBNF_TEST_TOY_LAYER  // the toy layer on top of every stack has no inline hit
// A tracking slot takes no inline single-object get hit (fast_get 0: GetOne declines, the
// host takes the hit with TakeTrackedOne and stamps it), says it has no hit kind a host could
// take gets of without reading it, and keeps its inline free hit. Its inline burst hit stays,
// and says the caller stamps (Tracking(): skbnfd's OpDequeue does, StampBurst). The same slot
// without track: GetOne hits again, nothing declines, Tracking() is false.
TEST(TrackTest, TrackingSlotsLeaveTheStampsOfTheirInlineGetHitsToTheHost) {
  TestPool t = MakePool("headpool,track", Tracked());
  ASSERT_TRUE(t->RegisterWorker(1, {{0, 64}}).ok());
  std::vector<void*> objs(32);
  std::vector<void*> burst(8);
  {
    Worker w(*t.pool, 1, [&] {
      auto h = t->For<Owner::kWorker>(1);
      ASSERT_TRUE(t->Get(1, objs.data(), 32));
      for (void* o : objs) ASSERT_TRUE(h.PutOne(o)) << "the inline free hit stays";
      EXPECT_EQ(h.GetHit(), -1) << "no get kind to take without reading the slot";
      EXPECT_GE(h.Hit(), 0) << "the free kind stays";
      EXPECT_TRUE(h.Tracking());
      EXPECT_FALSE(h.GetOne(&burst[0])) << "no inline single-object get hit while tracking";
      t->SetRxPort(1, 0);
      ASSERT_TRUE(h.GetBurst(objs.data(), 32));  // DPDK's usual burst (StampBurst's 32)
      StampBurst(h.slot(), objs.data(), 32);     // (a stamp stays when the object is freed)
      for (void* o : objs) ASSERT_TRUE(h.PutOne(o));
      ASSERT_TRUE(h.Get(burst.data(), 3));       // the full path: the chain stamps
      ASSERT_TRUE(h.TakeTrackedOne(&burst[3]));  // the host's slow path: the hit, then
      StampOut(h.slot(), &burst[3], 1);          // the stamp
      ASSERT_TRUE(h.GetBurst(&burst[4], 4));     // the inline burst hit, then
      StampBurst(h.slot(), &burst[4], 4);        // the host's stamps
      t->SetRxPort(1, -1);
    });
    for (void* o : objs) EXPECT_EQ(KeyOf(StampOf(o)), SiteKey(SiteKind::kWorker, 1, 0));
    for (void* o : burst) EXPECT_EQ(KeyOf(StampOf(o)), SiteKey(SiteKind::kWorker, 1, 0));
  }
  t->Put(kNoCore, burst.data(), 8);
  {
    Worker idle(*t.pool, 1, [] {});  // reaches its quiescent point: the swap's acknowledgement
    ASSERT_TRUE(t->Swap(Spec("headpool")).status.ok());
  }
  {
    Worker w(*t.pool, 1, [&] {
      auto h = t->For<Owner::kWorker>(1);
      EXPECT_GE(h.GetHit(), 0);
      EXPECT_FALSE(h.Tracking());
      EXPECT_FALSE(h.TakeTrackedOne(&burst[0])) << "only a tracking slot's";
      ASSERT_TRUE(t->Get(1, objs.data(), 32));
      t->Put(1, objs.data(), 32);
      EXPECT_TRUE(h.GetOne(&burst[0])) << "the inline get hit is back without track";
      EXPECT_TRUE(h.GetBurst(&burst[1], 7));
      t->Put(1, burst.data(), 8);
    });
  }
  ASSERT_TRUE(t->UnregisterWorker(1).ok());
}
#endif

// A foreign owner (the plugin's lcore) is "application" with its core; its layers are robbed
// by the census.
TEST(TrackTest, ForeignOwnersAreApplicationsAndTheirLayersAreEmptied) {
  TestPool t = MakePool("headpool+magazine,track", Tracked());
  std::vector<void*> held(7), churn(48);
  std::thread app([&] {
    ASSERT_TRUE(t->RegisterForeignCore(5).ok());
    ASSERT_TRUE(t->Get(5, churn.data(), 48));
    t->Put(5, churn.data(), 48);  // into its layers
    ASSERT_TRUE(t->Get(5, held.data(), 7));
  });
  app.join();
  absl::StatusOr<InFlightCensus> c = t->Census(kPatient);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->in_flight, 7u);
  ASSERT_EQ(c->tracked.size(), 7u);
  EXPECT_GT(c->flushed, 0u) << "the owner's layers went to the store";
  for (const TrackedObject& o : c->tracked) {
    EXPECT_EQ(KeyOf(o.stamp), SiteKey(SiteKind::kApplication, 5, -1));
    EXPECT_NE(std::find(held.begin(), held.end(), o.handle), held.end());
  }
  t->Put(kNoCore, held.data(), 7);
}

// Objects out before tracking began have no stamp (untracked); a later tracking period starts
// clean: stamps left on objects freed while tracking was off are cleared.
TEST(TrackTest, SwitchingOnClearsStampsOfAnEarlierPeriod) {
  TestPool t = MakePool("magazine", Tracked());
  std::vector<void*> before(4), during(6);
  ASSERT_TRUE(t->Get(kNoCore, before.data(), 4));
  ASSERT_TRUE(t->Swap(Spec("magazine,track")).status.ok());
  ASSERT_TRUE(t->Get(kNoCore, during.data(), 6));
  absl::StatusOr<InFlightCensus> c = t->Census(kPatient);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->in_flight, 10u);
  EXPECT_EQ(c->tracked.size(), 6u);
  EXPECT_EQ(c->untracked, 4u);
  // Off, the six come back with their stamps on; on again, they are free and clean.
  ASSERT_TRUE(t->Swap(Spec("magazine")).status.ok());
  t->Put(kNoCore, during.data(), 6);
  ASSERT_TRUE(t->Swap(Spec("magazine,track")).status.ok());
  for (void* o : during) EXPECT_EQ(StampOf(o), 0u);
  c = t->Census(kPatient);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->in_flight, 4u);
  EXPECT_EQ(c->untracked, 4u);
  EXPECT_TRUE(c->tracked.empty());
  t->Put(kNoCore, before.data(), 4);
}

}  // namespace
}  // namespace skbnf::pool
