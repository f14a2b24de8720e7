// SPDX-License-Identifier: BSD-3-Clause
#include "server/telemetry/multi_process.h"

#include <dlfcn.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_pdump.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/mempool_secondary.h"
#include "dataplane/dpdk/skbnf_mempool.h"
#include "server/telemetry/telemetry_commands.h"

namespace skbnf::telemetry {
namespace {

// The IPC action that also tells whether EAL's IPC is on: a secondary's get_count of a skbnf
// pool asks it (dataplane/dpdk/mempool_secondary.h).
using dpdk::kPoolCountAction;

MultiProcessState& State() {
  static MultiProcessState* s = new MultiProcessState();
  return *s;
}

int ReplyPoolCount(const rte_mp_msg* msg, const void* peer) {
  rte_mp_msg reply;
  std::memset(&reply, 0, sizeof(reply));
  std::snprintf(reply.name, sizeof(reply.name), "%s", kPoolCountAction);
  char name[RTE_MEMPOOL_NAMESIZE] = {};
  std::memcpy(name, msg->param, std::min<size_t>(msg->len_param, sizeof(name) - 1));
  const dpdk::MempoolCounts c = dpdk::CountsOf(rte_mempool_lookup(name));  // zero: no such pool
  reply.len_param = std::snprintf(reinterpret_cast<char*>(reply.param), sizeof(reply.param),
                                  "%llu %llu", static_cast<unsigned long long>(c.populated),
                                  static_cast<unsigned long long>(c.available)) +
                    1;
  return rte_mp_reply(&reply, static_cast<const char*>(peer));
}

// Short enough for a telemetry string (RTE_TEL_MAX_STRING_LEN 128, with the reason before it).
constexpr char kHowTo[] = "to attach, run on hugepages without --no-shconf, --in-memory, --no-huge";

}  // namespace

const MultiProcessState& EnableMultiProcess() {
  MultiProcessState& s = State();
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
    s.note = "not DPDK's primary process";
    return s;
  }
  const bool ipc = rte_mp_action_register(kPoolCountAction, &ReplyPoolCount) == 0;
  if (!ipc && rte_errno != ENOTSUP) {
    s.note = absl::StrCat("EAL's IPC refused skbnf's action (", rte_strerror(rte_errno), ")");
    return s;
  }
  if (!ipc || rte_eal_has_hugepages() == 0) {
    if (ipc) rte_mp_action_unregister(kPoolCountAction);
    s.note = absl::StrCat("secondaries cannot attach (",
                          ipc ? "--no-huge" : "--no-shconf/--in-memory", "): ", kHowTo);
    return s;
  }
  s.attachable = true;
  if (rte_pdump_init() != 0) {
    s.note =
        absl::StrCat("capture unavailable: rte_pdump_init failed (", rte_strerror(rte_errno), ")");
    return s;
  }
  s.pdump = true;
  return s;
}

const MultiProcessState& CurrentMultiProcess() { return State(); }

// pdump's disable race (see the header): ethdev's removal, then a grace period for the workers.
namespace {
using RemoveCallback = int(uint16_t, uint16_t, const rte_eth_rxtx_callback*);
int RemoveThenWait(RemoveCallback* real, const char* name, uint16_t port, uint16_t queue,
                   const rte_eth_rxtx_callback* cb) {
  if (real == nullptr) return -ENOTSUP;
  const int rc = real(port, queue, cb);
  if (rc == 0 && !WaitForEveryWorkerLoop(std::chrono::milliseconds(1000))) {
    std::fprintf(stderr,
                 "skbnfd: %s(port %u, queue %u): a worker did not go round its loop within 1 s; "
                 "a capture's buffers may be freed under it\n",
                 name, port, queue);
  }
  return rc;
}
RemoveCallback* Ethdev(const char* name) {
  return reinterpret_cast<RemoveCallback*>(dlsym(RTLD_NEXT, name));
}
}  // namespace

}  // namespace skbnf::telemetry

// Interposed on ethdev's (the executable's definition binds first for librte_pdump's calls).
extern "C" int rte_eth_remove_rx_callback(uint16_t port_id, uint16_t queue_id,
                                          const struct rte_eth_rxtx_callback* user_cb) {
  static auto* real = skbnf::telemetry::Ethdev("rte_eth_remove_rx_callback");
  return skbnf::telemetry::RemoveThenWait(real, "rte_eth_remove_rx_callback", port_id, queue_id,
                                          user_cb);
}
extern "C" int rte_eth_remove_tx_callback(uint16_t port_id, uint16_t queue_id,
                                          const struct rte_eth_rxtx_callback* user_cb) {
  static auto* real = skbnf::telemetry::Ethdev("rte_eth_remove_tx_callback");
  return skbnf::telemetry::RemoveThenWait(real, "rte_eth_remove_tx_callback", port_id, queue_id,
                                          user_cb);
}

namespace skbnf::telemetry {

void DisableMultiProcess() {
  MultiProcessState& s = State();
  if (s.pdump) rte_pdump_uninit();
  if (s.attachable) rte_mp_action_unregister(kPoolCountAction);
  s.pdump = false;
  s.attachable = false;
}

}  // namespace skbnf::telemetry
