// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/test_hooks.h"

#include <algorithm>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(int32_t, test_stall_lcore, -1, "Tests only: the worker lcore --test-stall-ms stalls.");
ABSL_FLAG(int32_t, test_stall_ms, 0,
          "Tests only: how late that worker is to its quiescent point after each new epoch.");

ABSL_FLAG(std::string, test_preflight_root, "/",
          "Tests only: the start-up checks read /sys, /proc, /dev and cgroups under this "
          "directory.");

namespace skbnf::control {

std::string PreflightRoot() { return absl::GetFlag(FLAGS_test_preflight_root); }

absl::Status ApplyTestHooks(dpdk::Engine& engine) {
  const int lcore = absl::GetFlag(FLAGS_test_stall_lcore);
  const int ms = absl::GetFlag(FLAGS_test_stall_ms);
  if (lcore < 0 && ms == 0) return absl::OkStatus();
  const std::vector<unsigned> workers = engine.WorkerLcores();
  if (lcore < 0 || ms <= 0 ||
      std::find(workers.begin(), workers.end(), static_cast<unsigned>(lcore)) == workers.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--test-stall-lcore=", lcore, " --test-stall-ms=", ms,
                     ": write a worker lcore and a positive number of milliseconds"));
  }
  engine.SetTestStall(static_cast<unsigned>(lcore), std::chrono::milliseconds(ms));
  return absl::OkStatus();
}

}  // namespace skbnf::control
