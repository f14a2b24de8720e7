// SPDX-License-Identifier: BSD-3-Clause
// --mutex-deadlock-detection: abseil's lock-order graph, off in skbnfd unless asked for.
//
// Why: Debian's abseil 20220623 is built without NDEBUG (debhelper's CMake build type "None"),
// so absl::Mutex runs its debug-mode deadlock detection (absl/synchronization/mutex.cc:
// DebugOnlyDeadlockCheck and ForgetDeadlockInfo act when kDebugMode and the mode is not
// kIgnore). Every Lock of every absl::Mutex (gRPC's grpc_core::Mutex is one) then takes the
// process-wide deadlock_graph_mu and keeps a node per mutex in a GraphCycles whose memory comes
// from absl's LowLevelAlloc: 64 KiB mmap'd regions that are never given back. Under the hour of
// control churn (bench/churn.sh) those regions were part of the steady anonymous-RSS creep that
// malloc_trim could not touch: `strace -f -k -e trace=mmap` on skbnfd caught the 64 KiB
// mmaps in GraphCycles::GetId <- Mutex::Lock <- grpc_core::MaxAgeFilter::PostInit on each new
// control connection (bench/results/churn/graphcycles/README.md); with the graph off the creep
// fell from 8.3 to 5.4 kB a minute (bench/results/churn/graphcycles-off/README.md).
//
// So skbnfd sets absl::SetMutexDeadlockDetectionMode(kIgnore) first thing in main (before any
// thread or gRPC mutex exists) and applies the flag after parsing: off (the default: what a
// release build of abseil does), report (log a potential deadlock with both stacks and go on)
// or abort (log and die): for a developer chasing a lock-order problem, at the memory and lock
// cost above. Test binaries other than skbnfd (unit, control) keep abseil's default (detection
// on); skbnfd, sanitizer builds included, runs with it off unless the flag says otherwise, and
// ThreadSanitizer reports lock-order inversions itself.
#ifndef SKBNF_SERVER_DAEMON_MUTEX_CHECKS_H_
#define SKBNF_SERVER_DAEMON_MUTEX_CHECKS_H_

#include "absl/status/status.h"

namespace skbnf::control {

// Sets abseil's deadlock detection off (main calls it before parsing the flags).
void MutexDeadlockDetectionOff();

// Applies --mutex-deadlock-detection (off|report|abort); anything else is INVALID_ARGUMENT
// saying what to write, and changes nothing.
absl::Status ApplyMutexDeadlockDetectionFlag();

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_MUTEX_CHECKS_H_
