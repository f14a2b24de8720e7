// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/slab_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

namespace skbnf::pool {
namespace {

struct Arena {
  explicit Arena(size_t bytes) : size(bytes), base(static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}))) {}
  ~Arena() { std::free(base); }
  size_t size;
  char* base;
};

std::unique_ptr<SlabStore> MakeStore(SlabStoreConfig c) {
  auto s = SlabStore::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(SlabStoreTest, PopulateLaysOutDistinctObjectsInAddressOrder) {
  SlabStoreConfig c{.elt_size = 200, .handle_offset = 8, .objs_per_slab = 16};
  auto store = MakeStore(c);
  Arena a(store->MemSize(100));
  std::vector<void*> seen;
  auto n = store->Populate(a.base, a.size, 100, [&](void* h) { seen.push_back(h); });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 100u);
  EXPECT_EQ(store->populated(), 100u);
  EXPECT_EQ(store->free_count(), 100u);
  EXPECT_EQ(store->num_slabs(), 7u);  // ceil(100 / 16)
  ASSERT_EQ(seen.size(), 100u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  std::set<int64_t> idx;
  for (void* h : seen) {
    int64_t i = store->IndexOf(h);
    ASSERT_GE(i, 0);
    idx.insert(i);
    // Handles sit inside the arena, handle_offset past an element start.
    EXPECT_GE(static_cast<char*>(h), a.base + 8);
    EXPECT_LT(static_cast<char*>(h), a.base + a.size);
  }
  EXPECT_EQ(idx.size(), 100u);
}

TEST(SlabStoreTest, IndexOfRejectsForeignAndMisalignedPointers) {
  SlabStoreConfig c{.elt_size = 128, .objs_per_slab = 8};
  auto store = MakeStore(c);
  Arena a(store->MemSize(8));
  std::vector<void*> seen;
  ASSERT_TRUE(store->Populate(a.base, a.size, 8, [&](void* h) { seen.push_back(h); }).ok());
  int local = 0;
  EXPECT_EQ(store->IndexOf(&local), -1);
  EXPECT_EQ(store->IndexOf(static_cast<char*>(seen[0]) + 1), -1);
  EXPECT_EQ(store->IndexOf(static_cast<char*>(seen[7]) + 128), -1);  // past the last object
  EXPECT_EQ(store->IndexOf(seen[3]), 3);
}

TEST(SlabStoreTest, ColouringShiftsEachSlabByOneCacheLine) {
  // 16 x 200 = 3200 bytes used of a 4096-byte slab: 896 bytes of slack, 14 + 1 colours.
  SlabStoreConfig c{.elt_size = 200, .objs_per_slab = 16, .colour = true};
  auto store = MakeStore(c);
  EXPECT_EQ(store->slab_bytes(), 4096u);
  EXPECT_EQ(store->colours(), 15u);
  Arena a(store->MemSize(16 * 20));
  std::vector<void*> seen;
  ASSERT_TRUE(store->Populate(a.base, a.size, 16 * 20, [&](void* h) { seen.push_back(h); }).ok());
  for (uint32_t i = 0; i < 20; ++i) {
    SlabStore::SlabView v = store->Slab(i);
    EXPECT_EQ(v.colour_offset, (i % 15) * 64) << "slab " << i;
    uintptr_t first = reinterpret_cast<uintptr_t>(seen[i * 16]);
    EXPECT_EQ(first - v.base, v.colour_offset);
    // The whole slab, colour offset included, stays inside its slab_bytes.
    uintptr_t last = reinterpret_cast<uintptr_t>(seen[i * 16 + 15]) + 200;
    EXPECT_LE(last, v.base + store->slab_bytes());
  }
  // First objects of consecutive slabs land on different cache-line offsets mod 4096.
  std::set<uintptr_t> offsets;
  for (uint32_t i = 0; i < 15; ++i) offsets.insert(reinterpret_cast<uintptr_t>(seen[i * 16]) % 4096);
  EXPECT_EQ(offsets.size(), 15u);
}

TEST(SlabStoreTest, WithoutColouringEverySlabStartsAtItsBase) {
  SlabStoreConfig c{.elt_size = 200, .objs_per_slab = 16, .colour = false};
  auto store = MakeStore(c);
  EXPECT_EQ(store->colours(), 1u);
  Arena a(store->MemSize(64));
  ASSERT_TRUE(store->Populate(a.base, a.size, 64, [](void*) {}).ok());
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(store->Slab(i).colour_offset, 0u);
}

TEST(SlabStoreTest, NoSlackMeansOneColour) {
  SlabStoreConfig c{.elt_size = 256, .objs_per_slab = 16, .colour = true};
  auto store = MakeStore(c);
  EXPECT_EQ(store->colours(), 1u);
}

TEST(SlabStoreTest, AllocationPrefersPartialSlabsAndListsFollowCounts) {
  SlabStoreConfig c{.elt_size = 64, .objs_per_slab = 4};
  auto store = MakeStore(c);
  Arena a(store->MemSize(16));
  ASSERT_TRUE(store->Populate(a.base, a.size, 16, [](void*) {}).ok());
  SlabListCounts l = store->ListCounts();
  EXPECT_EQ(l.empty, 4u);
  EXPECT_EQ(l.partial + l.full, 0u);

  void* o[16];
  ASSERT_TRUE(store->Get(o, 5));  // one slab full, one partial
  l = store->ListCounts();
  EXPECT_EQ(l.full, 1u);
  EXPECT_EQ(l.partial, 1u);
  EXPECT_EQ(l.empty, 2u);
  const int64_t partial_slab = store->IndexOf(o[4]) / 4;

  // The next three come from the partial slab, not from an empty one.
  ASSERT_TRUE(store->Get(o + 5, 3));
  for (int i = 5; i < 8; ++i) EXPECT_EQ(store->IndexOf(o[i]) / 4, partial_slab);
  l = store->ListCounts();
  EXPECT_EQ(l.full, 2u);
  EXPECT_EQ(l.partial, 0u);

  // Freeing one object of a full slab makes it partial; the next alloc takes it back.
  store->Put(&o[1], 1);
  l = store->ListCounts();
  EXPECT_EQ(l.partial, 1u);
  void* again;
  ASSERT_TRUE(store->Get(&again, 1));
  EXPECT_EQ(again, o[1]);

  // Freeing everything empties every slab.
  store->Put(&again, 1);
  for (int i = 0; i < 8; ++i) {
    if (i != 1) store->Put(&o[i], 1);
  }
  l = store->ListCounts();
  EXPECT_EQ(l.empty, 4u);
  EXPECT_EQ(store->free_count(), 16u);
}

TEST(SlabStoreTest, GetIsAllOrNothing) {
  SlabStoreConfig c{.elt_size = 64, .objs_per_slab = 4};
  auto store = MakeStore(c);
  Arena a(store->MemSize(10));
  ASSERT_TRUE(store->Populate(a.base, a.size, 10, [](void*) {}).ok());
  void* o[16];
  EXPECT_FALSE(store->Get(o, 11));
  EXPECT_EQ(store->free_count(), 10u);
  EXPECT_EQ(store->GetUpTo(o, 16), 10u);
  EXPECT_EQ(store->free_count(), 0u);
  EXPECT_FALSE(store->Get(o + 10, 1));
  store->Put(o, 10);
  EXPECT_EQ(store->free_count(), 10u);
}

TEST(SlabStoreTest, NeverWritesIntoObjects) {
  SlabStoreConfig c{.elt_size = 96, .objs_per_slab = 8};
  auto store = MakeStore(c);
  Arena a(store->MemSize(32));
  std::memset(a.base, 0xAB, a.size);
  ASSERT_TRUE(store->Populate(a.base, a.size, 32, [](void*) {}).ok());
  void* o[32];
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(store->Get(o, 32));
    store->Put(o, 32);
  }
  for (size_t i = 0; i < a.size; ++i) ASSERT_EQ(static_cast<unsigned char>(a.base[i]), 0xAB) << i;
}

TEST(SlabStoreTest, SeveralChunks) {
  SlabStoreConfig c{.elt_size = 64, .objs_per_slab = 8};
  auto store = MakeStore(c);
  Arena a(store->MemSize(20)), b(store->MemSize(20));
  ASSERT_TRUE(store->Populate(b.base, b.size, 20, [](void*) {}).ok());
  ASSERT_TRUE(store->Populate(a.base, a.size, 20, [](void*) {}).ok());
  EXPECT_EQ(store->populated(), 40u);
  void* o[40];
  ASSERT_TRUE(store->Get(o, 40));
  std::set<int64_t> idx;
  for (void* h : o) idx.insert(store->IndexOf(h));
  EXPECT_EQ(idx.size(), 40u);
  EXPECT_FALSE(idx.count(-1));
  store->Put(o, 40);
  EXPECT_EQ(store->free_count(), 40u);
  // Overlapping memory is refused.
  EXPECT_FALSE(store->Populate(a.base, a.size, 20, [](void*) {}).ok());
}

TEST(SlabStoreTest, BadConfigsAreRefused) {
  EXPECT_FALSE(SlabStore::Create({.elt_size = 0}).ok());
  EXPECT_FALSE(SlabStore::Create({.elt_size = 64, .handle_offset = 64}).ok());
  EXPECT_FALSE(SlabStore::Create({.elt_size = 64, .objs_per_slab = 0}).ok());
  EXPECT_FALSE(SlabStore::Create({.elt_size = 64, .slab_align = 1000}).ok());
  EXPECT_FALSE(SlabStore::Create({.elt_size = 64, .cache_line = 48}).ok());
}

}  // namespace
}  // namespace skbnf::pool
