// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/mutex_checks.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

ABSL_FLAG(std::string, mutex_deadlock_detection, "off",
          "abseil's lock-order checking on every absl::Mutex (gRPC's too): off, report (log a "
          "potential deadlock and go on) or abort. Costs a process-wide lock per Lock and memory "
          "that is never given back: for debugging only.");

namespace skbnf::control {

void MutexDeadlockDetectionOff() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

absl::Status ApplyMutexDeadlockDetectionFlag() {
  const std::string v = absl::GetFlag(FLAGS_mutex_deadlock_detection);
  absl::OnDeadlockCycle mode;
  if (v == "off") {
    mode = absl::OnDeadlockCycle::kIgnore;
  } else if (v == "report") {
    mode = absl::OnDeadlockCycle::kReport;
  } else if (v == "abort") {
    mode = absl::OnDeadlockCycle::kAbort;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--mutex-deadlock-detection=", v,
                     " is not a mode; write --mutex-deadlock-detection=off (the default), "
                     "=report or =abort"));
  }
  absl::SetMutexDeadlockDetectionMode(mode);
  return absl::OkStatus();
}

}  // namespace skbnf::control
