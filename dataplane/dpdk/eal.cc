// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/dpdk/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {
namespace {

std::string* g_runtime_dir = new std::string();  // EAL's, removed at exit when empty

// Registered before rte_eal_init, so it runs after EAL's own exit handlers (telemetry removes
// its sockets there): EAL leaves an empty runtime directory per --file-prefix otherwise.
void RemoveRuntimeDir() {
  if (!g_runtime_dir->empty()) ::rmdir(g_runtime_dir->c_str());
}

}  // namespace

absl::Status EalInit(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;  // EAL may permute argv
  std::vector<char*> argv;
  for (std::string& s : copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::atexit(&RemoveRuntimeDir);
  // A write to a peer that has gone must be an error the PMD handles, not a signal that kills
  // the process. DPDK 22.11's vhost-user and memif control channels send with
  // sendmsg(fd, &msgh, 0), no MSG_NOSIGNAL (drivers/net/virtio/virtio_user/vhost_user.c
  // vhost_user_write, drivers/net/memif/memif_socket.c memif_msg_send): net_virtio_user in
  // client mode keeps its socket to a vhost peer that was SIGKILLed (it never reconnects), so
  // the VHOST_USER_GET_VRING_BASE its stop sends killed skbnfd with SIGPIPE, exit 141, on the
  // SIGTERM after a testpmd restart (issue 34 item 2; tests/integration/vhost_restart_test.sh).
  std::signal(SIGPIPE, SIG_IGN);
  if (rte_eal_init(static_cast<int>(copy.size()), argv.data()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("EAL initialisation failed (",
                                                   rte_strerror(rte_errno),
                                                   "); check the EAL arguments after `--`"));
  }
  *g_runtime_dir = rte_eal_get_runtime_dir();
  return absl::OkStatus();
}

unsigned EalMainLcore() { return rte_get_main_lcore(); }

// rte_eal_cleanup unmaps EAL's memory (DPDK 22.11 lib/eal/linux/eal.c: "after this point, any
// DPDK pointers will become dangling", rte_eal_memory_detach): with a worker lcore still in its
// function (a worker Engine::Stop could not stop) that would turn a reported failure into a
// crash, so EAL is left as it is and the process's exit takes it down.
void EalCleanup() {
  unsigned lc;
  RTE_LCORE_FOREACH_WORKER(lc) {
    if (rte_eal_get_lcore_state(lc) != WAIT) {
      std::fprintf(stderr, "skbnfd: EAL not cleaned up: lcore %u is still running\n", lc);
      return;
    }
  }
  rte_eal_cleanup();
}

}  // namespace skbnf::dpdk
