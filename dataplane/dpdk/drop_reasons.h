// SPDX-License-Identifier: BSD-3-Clause
// Why a worker dropped a packet: the engine's five reasons, one counter each per worker and port
// (engine.h's counters), named by DropReasonName (modes.cc) in the API, the metrics' `reason`
// label and the console. Its own header so the per-packet checks (l3_packet.h, header-only and
// fuzzed) name them without the engine's API.
#ifndef SKBNF_DATAPLANE_DPDK_DROP_REASONS_H_
#define SKBNF_DATAPLANE_DPDK_DROP_REASONS_H_

namespace skbnf::dpdk {

enum DropReason : int {
  kDropNotIpv4 = 0,
  kDropBadHeader,
  kDropTtlExpired,
  kDropNoRoute,
  kDropTxFull,
  kNumDropReasons
};
const char* DropReasonName(int reason);

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_DROP_REASONS_H_
