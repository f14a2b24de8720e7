// SPDX-License-Identifier: BSD-3-Clause
// PoolOps: which mempool ops back skbnfd's mbufs: skbnf's (the buffer core, strategies swap
// while workers forward) or DPDK's native ring_mp_mc with its lcore cache (the baseline). One
// enum for the engine (dataplane/dpdk: the pool it creates, the layout controls it accepts), the
// config file and flags (server/ops, server/daemon: parsed once, where the text arrives), and
// the control plane (its GetInfo name, the refusal of a swap). With it the one refusal text of a
// strategy swap on the native pool, which the engine, its Backend and the control tests' fake
// backend all return. DPDK-free, like ForwardingMode (forwarding_mode.h), and in the engine's
// namespace for the same reason.
#ifndef SKBNF_COMMON_POOL_OPS_H_
#define SKBNF_COMMON_POOL_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::dpdk {

enum class PoolOps { kSkbnf, kRingMpMc };

// "skbnf" or "ring_mp_mc"; InvalidArgument naming the accepted words otherwise.
absl::StatusOr<PoolOps> ParsePoolOps(absl::string_view text);
// The word ParsePoolOps accepts (DPDK's ops name: GetInfo, the console, config comparisons).
const char* PoolOpsName(PoolOps ops);

// FailedPrecondition: a strategy swap asked of a daemon on DPDK's native mempool (`ops_name`,
// e.g. "ring_mp_mc", with its lcore cache), whose allocator cannot change while it runs. The one
// text of that refusal, from every layer that refuses (Engine::SwapStrategy and CheckSwappable,
// the control plane's Mutations before any backend is asked, the tests' fake backend).
absl::Status NativePoolSwapRefusal(absl::string_view ops_name);

}  // namespace skbnf::dpdk

#endif  // SKBNF_COMMON_POOL_OPS_H_
