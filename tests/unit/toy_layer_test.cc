// SPDX-License-Identifier: BSD-3-Clause
// The toy layer (toy_layer.h) is really in the stack, and the pool's folds reach it: its
// objects are counted by the gauges and the audit, and flushed by a swap, a pause, a reclaim
// and unregistration. (The rest of pool_toy_layer_tests is the production suites over the
// same pool.) Each check fails if the corresponding fold leaves the toy out.
#include "tests/unit/toy_layer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/unit/test_pool.h"

namespace skbnf::pool {
namespace {

using testing::MakePool;
using testing::Spec;
using testing::ToyPool;
using testing::ToyStash;

static_assert(std::is_same_v<TestedPool, ToyPool>);

// Puts `k` objects back on core 0 so that the toy (on top) keeps them.
void Stash(ToyPool& pool, std::vector<void*>& held, unsigned k) {
  held.resize(k);
  ASSERT_TRUE(pool.Get(0, held.data(), k));
  for (void* o : held) pool.Put(0, &o, 1);
}

TEST(ToyLayerTest, ItsObjectsAreGaugedAndAudited) {
  for (const char* spec : {"slab", "headpool", "lcache+recycle+headpool+magazine,prefetch"}) {
    auto t = MakePool(spec, {.n = 64});
    ASSERT_TRUE(t->RegisterWorker(0).ok());
    std::vector<void*> held;
    Stash(*t.pool, held, 3);
    EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 3u) << spec;
    AuditReport r = t->Audit(0);
    EXPECT_TRUE(r.ok) << spec << ": " << r.message;
    EXPECT_EQ(r.in_layers[ToyStash::kIndex], 3u) << spec;
    // The toy serves a request it holds whole, most recent first.
    void* back[2];
    ASSERT_TRUE(t->Get(0, back, 2)) << spec;
    EXPECT_EQ(back[0], held[2]) << spec;
    EXPECT_EQ(back[1], held[1]) << spec;
    EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 1u) << spec;
    t->Put(0, back, 2);
  }
}

// Debug builds check the pool's invariants where objects change layers (dataplane/pool/dcheck.h):
// a layer whose Flush hands down fewer objects than its gauge said it held stops the process at
// the flush, naming the broken invariant, instead of leaving the audit to find a lost object
// later.
TEST(ToyLayerTest, DebugBuildsCatchALayerThatLosesAnObjectOnFlush) {
#if defined(NDEBUG)
  GTEST_SKIP() << "the invariant checks are compiled only without NDEBUG (the ASan stage's build)";
#elif defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "no death test under ThreadSanitizer (the ASan stage runs it)";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto t = MakePool("slab", {.n = 32});
        if (!t->RegisterWorker(0).ok()) std::abort();
        std::vector<void*> held;
        held.resize(3);
        if (!t.pool->Get(0, held.data(), 3)) std::abort();
        for (void* o : held) t.pool->Put(0, &o, 1);
        ToyStash::lose_one_on_flush = true;
        (void)t->UnregisterWorker(0);  // flushes core 0's layers (the result does not matter)
      },
      "pool invariant broken: flushed == held");
#endif
}

// The toy's facts (its kFacts and MaxHeld, in toy_layer.h only) reach the catalog of its list,
// the held-objects bound (what the pool-share check and preflight's sizing compute) and the
// listing, in its place on top of the stack.
TEST(ToyLayerTest, ItsFactsAreCatalogedAndBounded) {
  const std::vector<CatalogEntry>& cat = testing::ToyLayers::Catalog();
  ASSERT_EQ(cat.size(), 5u);
  EXPECT_EQ(cat[0].facts.name, "toy");
  EXPECT_EQ(cat[0].order, 0u);
  EXPECT_EQ(cat[0].index, kNumLayers);
  EXPECT_TRUE(cat[0].facts.has_tunable);
  EXPECT_EQ(cat[0].facts.tunable.key, "keep");
  EXPECT_EQ(StackOrderText(cat), "toy+lcache+recycle+headpool+magazine");
  const HoldEnv env{.rx_ring_sizes = {256}};
  const HeldBound b = MaxHeld(Spec("headpool:hot_list_len=100"), env, cat);
  EXPECT_EQ(b.by_order[0], ToyStash::kCapacity);  // in every strategy's stack
  EXPECT_EQ(b.total, ToyStash::kCapacity + 100u);
  EXPECT_EQ(MaxHeld(Spec("slab"), env, cat).total, ToyStash::kCapacity);
  // The production catalog does not know it.
  EXPECT_EQ(MaxHeld(Spec("slab"), env).total, 0u);
}

// Parsing (consumer 1 of the toy's facts, the others in tests/control/
// toy_layer_consumers_test.cc): a spec read under ToyLayers' catalogue names the toy by its
// kFacts name, in its place in the order, and prints back; the production grammar does not know
// it. What follows the spec (MaxHeld) reads the catalogue the spec was parsed under.
TEST(ToyLayerTest, ItIsParsedUnderItsListsCatalog) {
  const std::vector<CatalogEntry>& cat = testing::ToyLayers::Catalog();
  absl::StatusOr<StrategySpec> s = StrategySpec::Parse("toy+headpool:hot_list_len=100", cat);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Has(ToyStash::kIndex));
  EXPECT_TRUE(s->Has(Layer::kHeadPool));
  EXPECT_EQ(s->Tunable(Layer::kHeadPool), 100u);
  EXPECT_EQ(s->ToString(), "toy+headpool:hot_list_len=100");
  EXPECT_EQ(&s->Catalog(), &cat);
  // Its tunable's default is its kFacts', in its own slot (kIndex) of the spec.
  EXPECT_EQ(s->Tunable(ToyStash::kIndex), ToyStash::kCapacity);
  EXPECT_EQ(MaxHeld(*s, HoldEnv{}).total, ToyStash::kCapacity + 100u);
  // Its place: on top.
  absl::StatusOr<StrategySpec> late = StrategySpec::Parse("headpool+toy", cat);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(
      late.status().message(),
      "layer 'toy' must come before 'headpool' (order: toy+lcache+recycle+headpool+magazine)");
  // Its tunable (toy:keep, kFacts only): parsed into its slot, bounding what it holds,
  // printed canonically (the default omitted, as a production layer's).
  absl::StatusOr<StrategySpec> tuned = StrategySpec::Parse("toy:keep=7+magazine:size=3", cat);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(tuned->Tunable(ToyStash::kIndex), 7u);
  EXPECT_EQ(tuned->Tunable(Layer::kMagazine), 3u);
  EXPECT_EQ(tuned->ToString(), "toy:keep=7+magazine:size=3");
  EXPECT_EQ(MaxHeld(*tuned, HoldEnv{}).total, 7u + 2 * 3u);
  absl::StatusOr<StrategySpec> again = StrategySpec::Parse(tuned->ToString(), cat);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *tuned);
  absl::StatusOr<StrategySpec> dflt = StrategySpec::Parse("toy:keep=4", cat);
  ASSERT_TRUE(dflt.ok()) << dflt.status();
  EXPECT_EQ(dflt->ToString(), "toy");
  EXPECT_EQ(*dflt, *StrategySpec::Parse("toy", cat));
  // Its range and key are refused by name, as a production layer's.
  for (const auto& [text, error] : std::vector<std::pair<const char*, const char*>>{
           {"toy:keep=9", "tunable 'toy:keep' = 9 is out of range [1, 8]"},
           {"toy:keep=0", "tunable 'toy:keep' = 0 is out of range [1, 8]"},
           {"toy:keep=x", "tunable 'toy:keep' value 'x' is not a whole number"},
           {"toy:keep=2,keep=3", "tunable 'toy:keep' is given twice"},
           {"toy:size=2", "layer 'toy' has no tunable 'size' (it has: keep)"}}) {
    absl::StatusOr<StrategySpec> bad = StrategySpec::Parse(text, cat);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().message(), error) << text;
  }
  // The production grammar has no toy; a production spec means the same under either.
  absl::StatusOr<StrategySpec> prod = StrategySpec::Parse("toy+headpool");
  ASSERT_FALSE(prod.ok());
  EXPECT_EQ(prod.status().message(),
            "unknown layer 'toy' (known: lcache, recycle, headpool, magazine, or slab)");
  absl::StatusOr<StrategySpec> both = StrategySpec::Parse("lcache+magazine:size=7", cat);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->layers, Spec("lcache+magazine:size=7").layers);
  EXPECT_EQ(both->ToString(), "lcache+magazine:size=7");
}

// The pool runs the toy with the value the spec gives it (read at the swap's configure, from the
// spec's slot kIndex): toy:keep=2 stashes two of three freed objects, the default four.
TEST(ToyLayerTest, ItKeepsWhatItsTunableSays) {
  auto t = MakePool("slab", {.n = 32});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  std::vector<void*> held;
  Stash(*t.pool, held, 3);
  EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 3u);  // a production spec: keep=4
  absl::StatusOr<StrategySpec> two =
      StrategySpec::Parse("toy:keep=2", testing::ToyLayers::Catalog());
  ASSERT_TRUE(two.ok()) << two.status();
  std::atomic<bool> done{false};
  SwapReport report;
  std::thread control([&] {
    report = t->Swap(*two);
    done = true;
  });
  while (!done) t->Quiesce(0);
  control.join();
  ASSERT_TRUE(report.status.ok()) << report.status;
  EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 0u);  // flushed by the swap
  Stash(*t.pool, held, 3);
  EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 2u);
  EXPECT_EQ(t->in_store(), 32u - 2u);
}

TEST(ToyLayerTest, SwapReclaimAndUnregisterFlushIt) {
  auto t = MakePool("slab", {.n = 32});
  ASSERT_TRUE(t->RegisterWorker(0).ok());
  std::vector<void*> held;
  // Swap: this thread is core 0's worker; it adopts the new generation at its quiescent point.
  Stash(*t.pool, held, ToyStash::kCapacity);
  EXPECT_EQ(t->in_store(), 32u - ToyStash::kCapacity);
  std::atomic<bool> done{false};
  SwapReport report;
  std::thread control([&] {
    report = t->Swap(Spec("headpool"));
    done = true;
  });
  while (!done) t->Quiesce(0);
  control.join();
  ASSERT_TRUE(report.status.ok()) << report.status;
  EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 0u);
  EXPECT_EQ(t->in_store(), 32u);
  // Reclaim: core 0 asks for every object; only the toy's flush makes that possible.
  Stash(*t.pool, held, ToyStash::kCapacity);
  ASSERT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], ToyStash::kCapacity);
  std::vector<void*> all(32);
  ASSERT_TRUE(t->Get(0, all.data(), 32));
  EXPECT_GE(t->reclaims(), 1u);
  EXPECT_EQ(t->CoreGauges(0).objects[ToyStash::kIndex], 0u);
  t->Put(0, all.data(), 32);
  // Unregistration.
  Stash(*t.pool, held, 2);
  ASSERT_GT(t->CoreGauges(0).objects[ToyStash::kIndex], 0u);
  ASSERT_TRUE(t->UnregisterWorker(0).ok());
  EXPECT_EQ(t->in_store(), 32u);
  AuditReport r = t->Audit(0);
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace skbnf::pool
