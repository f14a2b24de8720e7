// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/dpdk/mempool_secondary.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mempool.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace skbnf::dpdk {

uint64_t SecondaryAvailable(const rte_mempool* mp) {
  rte_mp_msg req;
  std::memset(&req, 0, sizeof(req));
  std::snprintf(req.name, sizeof(req.name), "%s", kPoolCountAction);
  req.len_param =
      std::snprintf(reinterpret_cast<char*>(req.param), sizeof(req.param), "%s", mp->name) + 1;
  struct rte_mp_reply reply;  // "struct": rte_mp_reply is also a function
  std::memset(&reply, 0, sizeof(reply));
  timespec timeout = {1, 0};
  uint64_t populated = 0, available = 0;
  const bool answered = rte_mp_request_sync(&req, &reply, &timeout) == 0 &&
                        reply.nb_received == 1 &&
                        std::sscanf(reinterpret_cast<const char*>(reply.msgs[0].param),
                                    "%" SCNu64 " %" SCNu64, &populated, &available) == 2;
  std::free(reply.msgs);
  if (!answered) {
    std::fprintf(stderr,
                 "skbnf mempool '%s': the primary did not report its count (%s); is it skbnfd "
                 "with multi-process on?\n",
                 mp->name, rte_strerror(rte_errno));
    return 0;
  }
  return available;
}

}  // namespace skbnf::dpdk
