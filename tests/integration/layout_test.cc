// SPDX-License-Identifier: BSD-3-Clause
// Issue 23's layout control, as the engine builds its pool (EngineConfig::no_iova_contig,
// store_stride; skbnfd --pool-flags=no_iova_contig, --store-stride=N): where the mbufs are, read
// back with rte_mempool_obj_iter / rte_mempool_mem_iter, on --no-huge (4 KiB pages), the memory
// where the layouts differ. What DPDK does there, from its source (DPDK 22.11):
//   - lib/mempool/rte_mempool.c rte_mempool_get_page_size: a pool that needs IOVA-contiguous
//     objects populates with the system page size when EAL has no hugepages, page size 0 with
//     RTE_MEMPOOL_F_NO_IOVA_CONTIG;
//   - lib/mempool/rte_mempool_ops_default.c rte_mempool_op_populate_helper / check_obj_bounds:
//     an object that would cross a page (of that size) starts at the next page instead.
// So a 2,368-byte mbuf element takes a 4 KiB page of its own without the flag, and the objects
// are one element apart with it. skbnf's store packs them unless told a stride.
//
// One EAL per process (ctest runs each test in its own), net_null ports, one worker.
#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine.h"
#include "gtest/gtest.h"
#include "tests/integration/eal_environment.h"
#include "tests/integration/engine_mempool.h"

namespace skbnf::dpdk {
namespace {

using namespace std::chrono_literals;

// The pool's objects, sorted by address, grouped by the memory chunk that holds them.
struct Layout {
  std::vector<std::vector<uintptr_t>> chunks;
  std::vector<uintptr_t> all;  // every object
  size_t objects = 0;
  uint32_t element = 0;  // header + element + trailer: what DPDK lays out per object
  std::set<uintptr_t> page_offsets;
  // Distances between neighbours inside one chunk.
  std::vector<uintptr_t> Strides() const {
    std::vector<uintptr_t> d;
    for (const auto& c : chunks) {
      for (size_t i = 1; i < c.size(); ++i) d.push_back(c[i] - c[i - 1]);
    }
    return d;
  }
};

Layout LayoutOf(rte_mempool* mp) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  rte_mempool_mem_iter(
      mp,
      [](rte_mempool*, void* arg, rte_mempool_memhdr* m, unsigned) {
        const auto a = reinterpret_cast<uintptr_t>(m->addr);
        static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(arg)->push_back({a, a + m->len});
      },
      &ranges);
  std::vector<uintptr_t> objs;
  rte_mempool_obj_iter(
      mp,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        static_cast<std::vector<uintptr_t>*>(arg)->push_back(reinterpret_cast<uintptr_t>(obj));
      },
      &objs);
  std::sort(objs.begin(), objs.end());
  std::sort(ranges.begin(), ranges.end());
  Layout l;
  l.objects = objs.size();
  l.all = objs;
  l.element = mp->header_size + mp->elt_size + mp->trailer_size;
  l.chunks.resize(ranges.size());
  for (uintptr_t o : objs) {
    l.page_offsets.insert(o % 4096);
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (o >= ranges[i].first && o < ranges[i].second) l.chunks[i].push_back(o);
    }
  }
  return l;
}

constexpr uint32_t kMbufs = 4096;

class LayoutTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (engine_ != nullptr && engine_->running()) (void)engine_->Stop();
    engine_.reset();
    for (const std::string& v : vdevs_) rte_vdev_uninit(v.c_str());
  }

  EngineConfig NullIo(const std::string& pool_ops) {
    static int seq = 0;
    for (int i = 0; i < 2; ++i) {
      vdevs_.push_back(absl::StrCat("net_null", 100 + seq++));
      EXPECT_EQ(rte_vdev_init(vdevs_.back().c_str(), ""), 0) << vdevs_.back();
    }
    const std::string a = vdevs_[vdevs_.size() - 2], b = vdevs_.back();
    EngineConfig c;
    c.mode = ForwardingMode::kIo;
    c.pool_ops = ParsePoolOps(pool_ops).value();
    // bench/run layout's skbnf arm
    c.strategy = pool::StrategySpec::Parse("lcache+headpool").value();
    c.mbufs = kMbufs;
    c.ports = {{a, b, ""}, {b, a, ""}};
    c.workers = {{1, {{a, 0}, {b, 0}}}};
    return c;
  }

  Engine& Make(const EngineConfig& c) {
    auto e = Engine::Create(c);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) std::abort();
    engine_ = std::move(*e);
    return *engine_;
  }

  // The pool works in this layout: the worker forwards, and after Stop every mbuf is back.
  void ForwardsAndAuditsExact(Engine& e) {
    ASSERT_TRUE(e.Start().ok());
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    auto tx = [&] {
      uint64_t n = 0;
      for (const WorkerSnapshot& w : e.Snapshot().workers) n += w.tx_packets;
      return n;
    };
    while (tx() < 100'000 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(2ms);
    }
    EXPECT_GE(tx(), 100'000u) << "no forwarding within 20 s";
    ASSERT_TRUE(e.Stop().ok());
    const AuditReport& a = e.final_audit();
    EXPECT_TRUE(a.exact);
    EXPECT_TRUE(a.ok) << a.message;
    EXPECT_EQ(a.available, a.populated) << a.message;
  }

  absl::Status CreateStatus(const EngineConfig& c) { return Engine::Create(c).status(); }

  std::unique_ptr<Engine> engine_;
  std::vector<std::string> vdevs_;
};

// DPDK's pool as --no-huge lays it out: no element crosses a 4 KiB page (check_obj_bounds), and
// as one is more than half a page, every mbuf has a page of its own, at one page offset (only a
// chunk's first object may sit elsewhere: where the memzone happened to start).
TEST_F(LayoutTest, RingMpMcOnFourKiBPagesPutsOneMbufPerPage) {
  Engine& e = Make(NullIo("ring_mp_mc"));
  EXPECT_EQ(MempoolOf(e)->flags & RTE_MEMPOOL_F_NO_IOVA_CONTIG, 0u);
  const Layout l = LayoutOf(MempoolOf(e));
  ASSERT_EQ(l.objects, kMbufs);
  ASSERT_GT(l.element, 2048u);  // more than half a page: two cannot share one
  ASSERT_LT(l.element, 4096u);
  const uintptr_t header = MempoolOf(e)->header_size;
  std::set<uintptr_t> pages;
  std::map<uintptr_t, size_t> at_offset;
  for (uintptr_t o : l.all) {
    const uintptr_t start = o - header, last = start + l.element - 1;
    ASSERT_EQ(start / 4096, last / 4096) << "element at " << start << " crosses a page";
    pages.insert(start / 4096);
    ++at_offset[o % 4096];
  }
  EXPECT_EQ(pages.size(), kMbufs);  // one mbuf per page
  size_t most = 0;
  for (const auto& [offset, n] : at_offset) most = std::max(most, n);
  EXPECT_GE(most, kMbufs - l.chunks.size());
  size_t one_page = 0;
  for (size_t i = 1; i < l.all.size(); ++i) one_page += l.all[i] - l.all[i - 1] == 4096;
  EXPECT_GE(one_page, kMbufs - 1 - 2 * l.chunks.size());
  ForwardsAndAuditsExact(e);
}

// --pool-flags=no_iova_contig: the same pool, packed one element apart inside each chunk.
TEST_F(LayoutTest, RingMpMcWithNoIovaContigIsPacked) {
  EngineConfig c = NullIo("ring_mp_mc");
  c.no_iova_contig = true;
  Engine& e = Make(c);
  EXPECT_NE(MempoolOf(e)->flags & RTE_MEMPOOL_F_NO_IOVA_CONTIG, 0u);
  const Layout l = LayoutOf(MempoolOf(e));
  ASSERT_EQ(l.objects, kMbufs);
  const std::vector<uintptr_t> d = l.Strides();
  ASSERT_GE(d.size(), kMbufs - l.chunks.size());  // every neighbour pair inside a chunk
  for (uintptr_t s : d) ASSERT_EQ(s, l.element);
  EXPECT_GT(l.page_offsets.size(), 60u);  // 2,368 bytes apart: spread over the page
  // The mbufs are initialised as rte_pktmbuf_pool_create's (rte_pktmbuf_init ran on each).
  rte_mbuf* m = rte_pktmbuf_alloc(MempoolOf(e));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->pool, MempoolOf(e));
  EXPECT_EQ(m->buf_len, RTE_MBUF_DEFAULT_BUF_SIZE);
  EXPECT_EQ(rte_pktmbuf_data_room_size(MempoolOf(e)), RTE_MBUF_DEFAULT_BUF_SIZE);
  rte_pktmbuf_free(m);
  ForwardsAndAuditsExact(e);
}

// skbnf's store, default: packed, one element apart inside each 64 KiB slab.
TEST_F(LayoutTest, SkbnfStoreIsPackedByDefault) {
  Engine& e = Make(NullIo("skbnf"));
  const Layout l = LayoutOf(MempoolOf(e));
  ASSERT_EQ(l.objects, kMbufs);
  const std::vector<uintptr_t> d = l.Strides();
  const auto packed = std::count(d.begin(), d.end(), uintptr_t{l.element});
  // Only a slab's first object is further from its neighbour (the slab's slack before it).
  const uint64_t per_slab = 64 * 1024 / l.element;
  EXPECT_GE(static_cast<uint64_t>(packed), kMbufs - kMbufs / per_slab - 1 - l.chunks.size());
  EXPECT_GT(l.page_offsets.size(), 20u);
  ForwardsAndAuditsExact(e);
}

// --store-stride=4096: one mbuf per 4 KiB page at one page offset, like DPDK's on --no-huge.
TEST_F(LayoutTest, SkbnfStoreStride4096PutsOneMbufPerPage) {
  EngineConfig c = NullIo("skbnf");
  c.store_stride = 4096;
  Engine& e = Make(c);
  ASSERT_NE(e.pool(), nullptr);
  EXPECT_EQ(e.pool()->store().config().objs_per_slab, 16u);
  const Layout l = LayoutOf(MempoolOf(e));
  ASSERT_EQ(l.objects, kMbufs);
  const std::vector<uintptr_t> d = l.Strides();
  ASSERT_GE(d.size(), kMbufs - l.chunks.size());
  for (uintptr_t s : d) ASSERT_EQ(s, 4096u);
  EXPECT_EQ(l.page_offsets.size(), 1u);
  ForwardsAndAuditsExact(e);
}

// Each knob belongs to one pool; a bad stride is refused with what to write. Nothing is made.
TEST_F(LayoutTest, MisplacedOrBadKnobsAreRefusedSayingWhatToWrite) {
  struct Case {
    const char* pool_ops;
    bool no_iova_contig;
    uint32_t stride;
    const char* says;
  };
  for (const Case& k : {Case{"skbnf", true, 0, "write it with --pool-ops=ring_mp_mc"},
                        Case{"ring_mp_mc", false, 4096, "write it with --pool-ops=skbnf"},
                        Case{"skbnf", false, 1024, "from 2368 to 65536"},
                        Case{"skbnf", false, 4100, "a multiple of 64"},
                        Case{"skbnf", false, 131072, "e.g. 4096"}}) {
    SCOPED_TRACE(
        absl::StrCat(k.pool_ops, " no_iova_contig=", k.no_iova_contig, " stride=", k.stride));
    EngineConfig c = NullIo(k.pool_ops);
    c.no_iova_contig = k.no_iova_contig;
    c.store_stride = k.stride;
    const absl::Status st = CreateStatus(c);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(k.says), absl::string_view::npos) << st;
  }
}

}  // namespace
}  // namespace skbnf::dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(
      new skbnf::dpdk::EalEnvironment("skbnf-layout", {"--no-huge", "-m", "512"}, 1));
  return RUN_ALL_TESTS();
}
