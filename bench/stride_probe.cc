// SPDX-License-Identifier: BSD-3-Clause
// stride_probe: where a pktmbuf pool puts its mbufs, as testpmd creates it (issue 23's layout
// control). It prints the addresses' shape, not a timing, so its output is deterministic.
//
//   stride_probe [--ops=NAME] [--pool-flags=no_iova_contig] [--objects=N] [--cache=N]
//                [--burst=N] -- <EAL args>
//
// --pool-flags=no_iova_contig makes the pool as skbnfd --pool-flags=no_iova_contig does
// (dataplane/dpdk/mbuf_pool.cc): rte_pktmbuf_pool_create_by_ops's steps with
// RTE_MEMPOOL_F_NO_IOVA_CONTIG, so DPDK packs the objects on any page size. skbnf's store at a
// stride comes from the plugin's environment (SKBNF_STORE_STRIDE=N, as skbnfd --store-stride).
//
// Why: DPDK's mempool may not let an object cross a page when the pool needs IOVA-contiguous
// objects (rte_mempool_op_populate_helper with RTE_MEMPOOL_POPULATE_F_ALIGN_OBJ off, page size
// from rte_mempool_get_page_size). On --no-huge's 4 KiB pages a 2,368-byte mbuf element then
// takes a page of its own: every mbuf header sits at the same offset in its page, hence on the
// same L1 sets. On 2 MiB hugepages (or in skbnf's slab store, which packs its objects in one
// IOVA-contiguous chunk) they are one element apart. This probe shows which.
//
// Output (stdout, CSV, one header line then one row): the pool's layout over all its objects
// (rte_mempool_obj_iter, sorted by address) and over one burst taken from the lcore cache as a
// PMD's RX refill takes it (rte_pktmbuf_alloc_bulk after a free of the same burst, so LIFO):
//   ops,objects,elt_bytes,stride_min,stride_median,stride_max,distinct_page_offsets,
//   burst,burst_distinct_page_offsets,burst_distinct_l1_lines_mod_4k
// page offsets are address mod 4,096 (the L1 set index is a function of it on any x86 L1 of
// 64 sets x 64-byte lines); bench/stride_probe.py runs it on both memories and records the L1
// geometry beside it.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

void CollectAddress(rte_mempool* /*mp*/, void* opaque, void* obj, unsigned /*idx*/) {
  static_cast<std::vector<uintptr_t>*>(opaque)->push_back(reinterpret_cast<uintptr_t>(obj));
}

// As rte_pktmbuf_pool_create_by_ops (DPDK 22.11 lib/mbuf/rte_mbuf.c), with mempool flags.
rte_mempool* CreateWithFlags(const char* ops, unsigned objects, unsigned cache, unsigned flags) {
  rte_pktmbuf_pool_private priv = {};
  priv.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE;
  rte_mempool* mp =
      rte_mempool_create_empty("probe", objects, sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE,
                               cache, sizeof(priv), SOCKET_ID_ANY, flags);
  if (mp == nullptr) return nullptr;
  int rc = rte_mempool_set_ops_byname(mp, ops, nullptr);
  if (rc == 0) {
    rte_pktmbuf_pool_init(mp, &priv);
    rc = rte_mempool_populate_default(mp);
  }
  if (rc < 0) {
    rte_mempool_free(mp);
    rte_errno = -rc;
    return nullptr;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

const char* Flag(int argc, char** argv, const char* name, const char* def) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  int sep = 1;
  while (sep < argc && std::strcmp(argv[sep], "--") != 0) {
    if (std::strncmp(argv[sep], "--ops=", 6) != 0 &&
        std::strcmp(argv[sep], "--pool-flags=no_iova_contig") != 0 &&
        std::strncmp(argv[sep], "--objects=", 10) != 0 &&
        std::strncmp(argv[sep], "--cache=", 8) != 0 &&
        std::strncmp(argv[sep], "--burst=", 8) != 0) {
      std::fprintf(stderr,
                   "stride_probe: unknown argument '%s'; write [--ops=NAME] "
                   "[--pool-flags=no_iova_contig] [--objects=N] [--cache=N] [--burst=N] -- "
                   "<EAL args>\n",
                   argv[sep]);
      return 2;
    }
    ++sep;
  }
  if (sep == argc) {
    std::fprintf(stderr, "stride_probe: write the EAL arguments after --\n");
    return 2;
  }
  const std::string ops = Flag(argc, argv, "--ops", "");
  const unsigned flags =
      std::strlen(Flag(argc, argv, "--pool-flags", "")) != 0 ? RTE_MEMPOOL_F_NO_IOVA_CONTIG : 0;
  const unsigned objects = static_cast<unsigned>(std::atoi(Flag(argc, argv, "--objects", "32768")));
  const unsigned cache = static_cast<unsigned>(std::atoi(Flag(argc, argv, "--cache", "250")));
  const unsigned burst = static_cast<unsigned>(std::atoi(Flag(argc, argv, "--burst", "32")));
  if (objects < burst || burst == 0 || burst > 512) {
    std::fprintf(stderr, "stride_probe: --burst in 1..512 and <= --objects\n");
    return 2;
  }

  std::vector<char*> eal = {argv[0]};
  for (int i = sep + 1; i < argc; ++i) eal.push_back(argv[i]);
  if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
    std::fprintf(stderr, "stride_probe: rte_eal_init: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  // As testpmd's mbuf_pool_create: default data room (2,048 + headroom), no private area.
  rte_mempool* mp =
      flags != 0 ? CreateWithFlags(ops.empty() ? rte_mbuf_best_mempool_ops() : ops.c_str(), objects,
                                   cache, flags)
      : ops.empty()
          ? rte_pktmbuf_pool_create("probe", objects, cache, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    SOCKET_ID_ANY)
          : rte_pktmbuf_pool_create_by_ops("probe", objects, cache, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                           SOCKET_ID_ANY, ops.c_str());
  if (mp == nullptr) {
    std::fprintf(stderr, "stride_probe: pool creation (ops '%s'): %s\n",
                 ops.empty() ? rte_mbuf_best_mempool_ops() : ops.c_str(), rte_strerror(rte_errno));
    rte_eal_cleanup();
    return 1;
  }

  std::vector<uintptr_t> all;
  rte_mempool_obj_iter(mp, CollectAddress, &all);
  std::sort(all.begin(), all.end());
  std::vector<uintptr_t> strides;
  for (size_t i = 1; i < all.size(); ++i) strides.push_back(all[i] - all[i - 1]);
  std::sort(strides.begin(), strides.end());
  std::set<uintptr_t> offsets;
  for (uintptr_t a : all) offsets.insert(a % 4096);

  // One burst as a PMD's RX refill sees it: allocated, freed (back to the lcore cache, or to
  // the ops' per-core layers), allocated again.
  std::vector<rte_mbuf*> b(burst);
  std::set<uintptr_t> burst_offsets, burst_lines;
  if (rte_pktmbuf_alloc_bulk(mp, b.data(), burst) != 0) {
    std::fprintf(stderr, "stride_probe: rte_pktmbuf_alloc_bulk of %u failed\n", burst);
    rte_mempool_free(mp);
    rte_eal_cleanup();
    return 1;
  }
  for (rte_mbuf* m : b) rte_pktmbuf_free(m);
  if (rte_pktmbuf_alloc_bulk(mp, b.data(), burst) != 0) {
    std::fprintf(stderr, "stride_probe: second rte_pktmbuf_alloc_bulk of %u failed\n", burst);
    rte_mempool_free(mp);
    rte_eal_cleanup();
    return 1;
  }
  for (rte_mbuf* m : b) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(m);
    burst_offsets.insert(a % 4096);
    burst_lines.insert((a % 4096) / 64);
    burst_lines.insert(((a + 64) % 4096) / 64);  // the mbuf's second cache line
  }
  for (rte_mbuf* m : b) rte_pktmbuf_free(m);

  std::printf(
      "ops,objects,elt_bytes,stride_min,stride_median,stride_max,distinct_page_offsets,burst,"
      "burst_distinct_page_offsets,burst_distinct_l1_lines_mod_4k\n");
  std::printf("%s,%zu,%u,%zu,%zu,%zu,%zu,%u,%zu,%zu\n",
              mp->ops_index >= 0 ? rte_mempool_get_ops(mp->ops_index)->name : "?", all.size(),
              mp->header_size + mp->elt_size + mp->trailer_size,
              strides.empty() ? 0 : static_cast<size_t>(strides.front()),
              strides.empty() ? 0 : static_cast<size_t>(strides[strides.size() / 2]),
              strides.empty() ? 0 : static_cast<size_t>(strides.back()), offsets.size(), burst,
              burst_offsets.size(), burst_lines.size());
  rte_mempool_free(mp);
  rte_eal_cleanup();
  return 0;
}
