// SPDX-License-Identifier: BSD-3-Clause
// Names of the engine's drop reasons (drop_reasons.h). The forwarding modes' names and parser:
// common/forwarding_mode.cc.
#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

const char* DropReasonName(int reason) {
  static const char* const kNames[kNumDropReasons] = {"not_ipv4", "bad_header", "ttl_expired",
                                                      "no_route", "tx_full"};
  return reason >= 0 && reason < kNumDropReasons ? kNames[reason] : "?";
}

}  // namespace skbnf::dpdk
