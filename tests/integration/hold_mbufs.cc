// SPDX-License-Identifier: BSD-3-Clause
// A DPDK application that keeps N mbufs: what leak_plugin_test.py watches through the plugin's
// /skbnf/ages (dataplane/dpdk/plugin_telemetry.h) and a real Prometheus.
//
//   hold_mbufs <EAL args, with -d libskbnf_mempool.so and -l 0,1> -- <N> <dir>
//
// Makes a pktmbuf pool with the `skbnf` ops (cache 0: DPDK's lcore cache hides nothing), whose
// strategy comes from SKBNF_STRATEGY (e.g. headpool,track); on worker lcore 1 allocates N mbufs,
// writes <dir>/holding, and keeps them until <dir>/release exists; then frees them and writes
// <dir>/released. Exits 0 when <dir>/quit exists. Errors: a line on stderr, exit 1.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Hold {
  rte_mempool* mp = nullptr;
  unsigned n = 0;
  std::string dir;
  int rc = 0;
};

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

void Touch(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

// Until `path` exists (the test's own bound kills this program otherwise).
void AwaitFile(const std::string& path) {
  while (!Exists(path)) usleep(10 * 1000);
}

int HoldOnLcore(void* arg) {
  auto* h = static_cast<Hold*>(arg);
  std::vector<rte_mbuf*> held;
  held.reserve(h->n);
  for (unsigned i = 0; i < h->n; ++i) {
    rte_mbuf* m = rte_pktmbuf_alloc(h->mp);
    if (m == nullptr) {
      std::fprintf(stderr, "hold_mbufs: allocation %u of %u failed\n", i, h->n);
      h->rc = 1;
      break;
    }
    held.push_back(m);
  }
  Touch(h->dir + "/holding");
  AwaitFile(h->dir + "/release");
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
  Touch(h->dir + "/released");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    std::fprintf(stderr, "hold_mbufs: rte_eal_init: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  argc -= eal;
  argv += eal;
  if (argc != 3 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: hold_mbufs <EAL args> -- <N> <dir>\n");
    return 1;
  }
  Hold h;
  h.n = static_cast<unsigned>(std::atoi(argv[1]));
  h.dir = argv[2];
  const unsigned worker = rte_get_next_lcore(-1, 1, 0);
  if (worker >= RTE_MAX_LCORE) {
    std::fprintf(stderr, "hold_mbufs: needs a worker lcore (-l 0,1)\n");
    return 1;
  }
  h.mp = rte_pktmbuf_pool_create_by_ops("hold_pool", 2 * h.n + 1024, /*cache_size=*/0, 0,
                                        RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY, "skbnf");
  if (h.mp == nullptr) {
    std::fprintf(stderr, "hold_mbufs: pool: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  if (rte_eal_remote_launch(HoldOnLcore, &h, worker) != 0) {
    std::fprintf(stderr, "hold_mbufs: cannot launch lcore %u\n", worker);
    return 1;
  }
  rte_eal_wait_lcore(worker);
  AwaitFile(h.dir + "/quit");
  rte_mempool_free(h.mp);
  rte_eal_cleanup();
  return h.rc;
}
