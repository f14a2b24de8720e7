// SPDX-License-Identifier: BSD-3-Clause
#include "common/pool_ops.h"

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {

absl::StatusOr<PoolOps> ParsePoolOps(absl::string_view text) {
  if (text == "skbnf") return PoolOps::kSkbnf;
  if (text == "ring_mp_mc") return PoolOps::kRingMpMc;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pool ops '", text, "'; write skbnf or ring_mp_mc"));
}

const char* PoolOpsName(PoolOps ops) {
  switch (ops) {
    case PoolOps::kSkbnf:
      return "skbnf";
    case PoolOps::kRingMpMc:
      return "ring_mp_mc";
  }
  return "?";
}

absl::Status NativePoolSwapRefusal(absl::string_view ops_name) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the daemon runs on DPDK's native mempool (", ops_name,
      " + lcore cache): strategies cannot be swapped; restart it with --pool-ops=skbnf"));
}

}  // namespace skbnf::dpdk
