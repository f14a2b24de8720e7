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

absl::Status NativePoolSwapRefusal(uint32_t lcore_cache) {
  return absl::FailedPreconditionError(absl::StrCat(
      "strategy swaps need the skbnf mempool; this engine runs on DPDK's native ring_mp_mc "
      "mempool (--pool-ops=ring_mp_mc, lcore cache ",
      lcore_cache,
      "), whose allocator cannot be changed while it runs: restart with --pool-ops=skbnf"));
}

}  // namespace skbnf::dpdk
