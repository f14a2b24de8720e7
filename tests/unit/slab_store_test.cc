// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/slab_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "dataplane/pool/pool.h"
#include "tests/unit/test_peers.h"

namespace skbnf::pool {
namespace {

struct Arena {
  explicit Arena(size_t bytes)
      : size(bytes),
        base(static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}))) {}
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
  for (uint32_t i = 0; i < 15; ++i)
    offsets.insert(reinterpret_cast<uintptr_t>(seen[i * 16]) % 4096);
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
  SlabListCounts l = SlabStoreTestPeer::ListCounts(*store);
  EXPECT_EQ(l.empty, 4u);
  EXPECT_EQ(l.partial + l.full, 0u);

  void* o[16];
  ASSERT_TRUE(store->Get(o, 5));  // one slab full, one partial
  l = SlabStoreTestPeer::ListCounts(*store);
  EXPECT_EQ(l.full, 1u);
  EXPECT_EQ(l.partial, 1u);
  EXPECT_EQ(l.empty, 2u);
  const int64_t partial_slab = store->IndexOf(o[4]) / 4;

  // The next three come from the partial slab, not from an empty one.
  ASSERT_TRUE(store->Get(o + 5, 3));
  for (int i = 5; i < 8; ++i) EXPECT_EQ(store->IndexOf(o[i]) / 4, partial_slab);
  l = SlabStoreTestPeer::ListCounts(*store);
  EXPECT_EQ(l.full, 2u);
  EXPECT_EQ(l.partial, 0u);

  // Freeing one object of a full slab makes it partial; the next alloc takes it back.
  store->Put(&o[1], 1);
  l = SlabStoreTestPeer::ListCounts(*store);
  EXPECT_EQ(l.partial, 1u);
  void* again;
  ASSERT_TRUE(store->Get(&again, 1));
  EXPECT_EQ(again, o[1]);

  // Freeing everything empties every slab.
  store->Put(&again, 1);
  for (int i = 0; i < 8; ++i) {
    if (i != 1) store->Put(&o[i], 1);
  }
  l = SlabStoreTestPeer::ListCounts(*store);
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
  EXPECT_EQ(SlabStoreTestPeer::GetUpTo(*store, o, 16), 10u);
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

// ---- Stride (issue 23's layout control: skbnfd --store-stride). The geometry of a pktmbuf on
// x86: DPDK's 64-byte object header + 128-byte rte_mbuf + 2,176-byte default data room.
constexpr uint32_t kMbufElt = 2368, kMbufHeader = 64, kSlab64K = 64 * 1024;

SlabStoreConfig MbufGeometry(uint32_t stride) {
  // As the skbnf ops driver sizes it (skbnf_mempool.cc, OpAlloc): 64 KiB slabs.
  SlabStoreConfig c{.elt_size = kMbufElt, .handle_offset = kMbufHeader, .slab_align = kSlab64K};
  c.SetStride(stride, kSlab64K);
  return c;
}

TEST(SlabStoreStrideTest, SetStrideFitsAsManyStepsAsTheSlabHolds) {
  EXPECT_EQ(MbufGeometry(0).objs_per_slab, 27u);  // packed: 65536 / 2368
  EXPECT_EQ(MbufGeometry(0).step(), kMbufElt);
  EXPECT_EQ(MbufGeometry(4096).objs_per_slab, 16u);
  EXPECT_EQ(MbufGeometry(4096).step(), 4096u);
  EXPECT_EQ(MbufGeometry(65536).objs_per_slab, 1u);
  SlabStoreConfig big{.elt_size = 70000};
  big.SetStride(0, kSlab64K);
  EXPECT_EQ(big.objs_per_slab, 1u);  // an element larger than the slab: one per slab
}

// Every object in its own 4 KiB page at the same page offset (DPDK's --no-huge layout), the
// slabs exactly 64 KiB, and the store's bookkeeping (index, lists, counts) as exact as packed.
TEST(SlabStoreStrideTest, Stride4096PutsEachObjectOnItsOwnPageAtOneOffset) {
  auto store = MakeStore(MbufGeometry(4096));
  EXPECT_EQ(store->slab_bytes(), kSlab64K);  // 16 x 4096: no slack, so one colour
  EXPECT_EQ(store->colours(), 1u);
  constexpr uint32_t kN = 100;
  Arena a(store->MemSize(kN));
  std::vector<void*> seen;
  ASSERT_EQ(*store->Populate(a.base, a.size, kN, [&](void* h) { seen.push_back(h); }), kN);
  ASSERT_EQ(seen.size(), kN);
  EXPECT_EQ(store->num_slabs(), 7u);  // ceil(100 / 16)
  std::set<uintptr_t> page_offsets;
  for (uint32_t i = 0; i < kN; ++i) {
    const auto h = reinterpret_cast<uintptr_t>(seen[i]);
    page_offsets.insert(h % 4096);
    if (i > 0) {
      EXPECT_EQ(h - reinterpret_cast<uintptr_t>(seen[i - 1]), 4096u) << i;
    }
    EXPECT_EQ(store->IndexOf(seen[i]), int64_t{i});
    // The gap after an element belongs to no object.
    EXPECT_EQ(store->IndexOf(reinterpret_cast<void*>(h + kMbufElt)), -1);
  }
  EXPECT_EQ(page_offsets, std::set<uintptr_t>{kMbufHeader});  // the arena is page-aligned

  std::vector<void*> o(kN);
  ASSERT_TRUE(store->Get(o.data(), kN));
  EXPECT_EQ(store->free_count(), 0u);
  EXPECT_EQ(SlabStoreTestPeer::ListCounts(*store).full, 7u);
  std::set<void*> distinct(o.begin(), o.end());
  EXPECT_EQ(distinct, std::set<void*>(seen.begin(), seen.end()));
  store->Put(o.data(), kN);
  EXPECT_EQ(store->free_count(), kN);
  EXPECT_EQ(SlabStoreTestPeer::ListCounts(*store).empty, 7u);
}

TEST(SlabStoreStrideTest, DefaultIsPackedOneElementApart) {
  auto store = MakeStore(MbufGeometry(0));
  constexpr uint32_t kN = 27 * 3;
  Arena a(store->MemSize(kN));
  std::vector<void*> seen;
  ASSERT_EQ(*store->Populate(a.base, a.size, kN, [&](void* h) { seen.push_back(h); }), kN);
  std::set<uintptr_t> page_offsets;
  for (uint32_t i = 0; i < kN; ++i) {
    page_offsets.insert(reinterpret_cast<uintptr_t>(seen[i]) % 4096);
    if (i % 27 == 0) continue;  // a slab's first object follows the previous slab's slack
    EXPECT_EQ(reinterpret_cast<uintptr_t>(seen[i]) - reinterpret_cast<uintptr_t>(seen[i - 1]),
              kMbufElt)
        << i;
  }
  EXPECT_GT(page_offsets.size(), 20u);  // spread over the page, unlike the 4096 stride
}

// A stride with slack left in the slab still colours: each slab shifted by a cache line,
// the objects inside it a stride apart.
TEST(SlabStoreStrideTest, StrideAndColourCompose) {
  SlabStoreConfig c{.elt_size = 200, .stride = 256, .objs_per_slab = 12, .colour = true};
  auto store = MakeStore(c);
  EXPECT_EQ(store->slab_bytes(), 4096u);
  EXPECT_EQ(store->colours(), (4096u - 12 * 256) / 64 + 1);
  Arena a(store->MemSize(48));
  std::vector<void*> seen;
  ASSERT_TRUE(store->Populate(a.base, a.size, 48, [&](void* h) { seen.push_back(h); }).ok());
  for (uint32_t s = 0; s < 4; ++s) {
    const SlabStore::SlabView v = store->Slab(s);
    EXPECT_EQ(v.colour_offset, s * 64);
    for (uint32_t j = 0; j < 12; ++j) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(seen[s * 12 + j]), v.base + v.colour_offset + j * 256);
    }
  }
}

TEST(SlabStoreStrideTest, BadStridesAreRefusedSayingWhatToWrite) {
  for (uint32_t bad : {2304u /* < element */, 2400u /* not x 64 */, 65600u /* > 64 KiB */}) {
    SlabStoreConfig c = MbufGeometry(0);
    c.stride = bad;
    auto s = SlabStore::Create(c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("write 0 (packed) or e.g. 2368"), absl::string_view::npos)
        << s.status();
  }
  SlabStoreConfig same{.elt_size = 128, .stride = 128, .objs_per_slab = 8};
  EXPECT_TRUE(SlabStore::Create(same).ok());  // a stride of one element is packed
}

// Conservation over a strided store: every strategy's layers hand out and take back the same
// objects, and the audit balances with objects out and after they are all back.
TEST(SlabStoreStrideTest, PoolOverAStridedStoreConserves) {
  for (const char* spec : {"magazine", "headpool", "lcache:size=16+magazine:size=8"}) {
    SCOPED_TRACE(spec);
    PoolConfig c;
    c.store = MbufGeometry(4096);
    auto s = StrategySpec::Parse(spec);
    ASSERT_TRUE(s.ok());
    auto p = Pool::Create(c, *s);
    ASSERT_TRUE(p.ok()) << p.status();
    Pool& pool = **p;
    constexpr uint32_t kN = 256;
    Arena a(pool.MemSize(kN));
    ASSERT_EQ(*pool.Populate(a.base, a.size, kN, [](void*) {}), kN);
    ASSERT_TRUE(pool.RegisterWorker(0).ok());
    std::vector<void*> out(64);
    for (int round = 0; round < 50; ++round) {
      ASSERT_TRUE(pool.Get(0, out.data(), 64));
      for (void* h : out) {
        ASSERT_GE(pool.store().IndexOf(h), 0);
        ASSERT_EQ(reinterpret_cast<uintptr_t>(h) % 4096, kMbufHeader);
      }
      const AuditReport held = pool.Audit(64);
      EXPECT_TRUE(held.ok) << held.message;
      pool.Put(0, out.data(), 64);
    }
    const AuditReport back = pool.Audit(0);
    EXPECT_TRUE(back.ok) << back.message;
    ASSERT_TRUE(pool.UnregisterWorker(0).ok());
    EXPECT_EQ(pool.in_store(), kN);
  }
}

}  // namespace
}  // namespace skbnf::pool
