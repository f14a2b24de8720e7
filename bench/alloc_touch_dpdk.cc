// SPDX-License-Identifier: BSD-3-Clause
// rte_mempool adapter of alloc_touch_bench (see alloc_touch_dpdk.h).
#include "bench/alloc_touch_dpdk.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace skbnf::bench {
namespace {

rte_mempool* g_pool = nullptr;

struct DpdkPool {
  rte_mempool* mp;
  rte_mempool_cache* cache;
  bool Get(void** objs, unsigned n) { return rte_mempool_generic_get(mp, objs, n, cache) == 0; }
  void Put(void* const* objs, unsigned n) { rte_mempool_generic_put(mp, objs, n, cache); }
};

}  // namespace

std::string DpdkInit(const std::string& file_prefix, bool no_huge, unsigned objects,
                     unsigned elt_size, unsigned cache) {
  std::vector<std::string> args = {"alloc_touch_bench", "-l", "0", "-m", "256", "--no-pci"};
  if (no_huge) {
    args.insert(args.end(), {"--no-huge", "--no-shconf"});
  } else {
    args.push_back("--in-memory");  // hugepages, no files left behind (implies --no-shconf)
  }
  args.insert(args.end(), {"--file-prefix=" + file_prefix, "--log-level=error", "--no-telemetry"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    return std::string("rte_eal_init: ") + rte_strerror(rte_errno);
  }
  g_pool = rte_mempool_create("alloc_touch", objects, elt_size, cache, 0, nullptr, nullptr, nullptr,
                              nullptr, SOCKET_ID_ANY, 0);
  if (g_pool == nullptr) return std::string("rte_mempool_create: ") + rte_strerror(rte_errno);
  return "";
}

LoopResult DpdkRunLoop(unsigned n, unsigned inflight, double ms, uint64_t bursts) {
  DpdkPool p{g_pool, rte_mempool_default_cache(g_pool, rte_lcore_id())};
  return RunLoop(p, n, inflight, ms, bursts);
}

void DpdkFini() {
  rte_mempool_free(g_pool);
  g_pool = nullptr;
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  ::rmdir(runtime_dir.c_str());  // EAL leaves an empty directory per --file-prefix
}

}  // namespace skbnf::bench
