// SPDX-License-Identifier: BSD-3-Clause
// --mutex-deadlock-detection (server/daemon/mutex_checks.h) against the abseil this machine links:
// Debian's abseil 20220623 is built without NDEBUG, so absl::Mutex checks lock order (its
// mutex.cc: DebugOnlyDeadlockCheck runs when kDebugMode and the mode is not kIgnore). The test
// takes two mutexes in both orders, a potential deadlock, and reads abseil's report on stderr
// ("Potential Mutex deadlock", ABSL_RAW_LOG): it is there with `report` (which proves the
// linked abseil does detect, and that skbnfd would pay for it) and absent with `off`, skbnfd's
// default. A bad value changes nothing and says what to write.
#include <gtest/gtest.h>

#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "server/daemon/mutex_checks.h"

ABSL_DECLARE_FLAG(std::string, mutex_deadlock_detection);

namespace skbnf::control {
namespace {

// Takes a then b, then b then a, on fresh mutexes: a cycle in the lock-order graph.
std::string StderrOfAnInversion() {
  testing::internal::CaptureStderr();
  {
    absl::Mutex a, b;
    a.Lock();
    b.Lock();
    b.Unlock();
    a.Unlock();
    b.Lock();
    a.Lock();
    a.Unlock();
    b.Unlock();
  }
  return testing::internal::GetCapturedStderr();
}

class MutexChecksTest : public ::testing::Test {
 protected:
  void TearDown() override {
    absl::SetFlag(&FLAGS_mutex_deadlock_detection, "off");
    ASSERT_TRUE(ApplyMutexDeadlockDetectionFlag().ok());
  }
};

TEST_F(MutexChecksTest, ReportFindsTheInversionOffDoesNot) {
  absl::SetFlag(&FLAGS_mutex_deadlock_detection, "report");
  ASSERT_TRUE(ApplyMutexDeadlockDetectionFlag().ok());
  EXPECT_TRUE(absl::StrContains(StderrOfAnInversion(), "Potential Mutex deadlock"))
      << "the linked abseil no longer checks lock order: mutex_checks.h's reason is gone";

  MutexDeadlockDetectionOff();
  EXPECT_FALSE(absl::StrContains(StderrOfAnInversion(), "Potential Mutex deadlock"));

  absl::SetFlag(&FLAGS_mutex_deadlock_detection, "off");
  ASSERT_TRUE(ApplyMutexDeadlockDetectionFlag().ok());
  EXPECT_FALSE(absl::StrContains(StderrOfAnInversion(), "Potential Mutex deadlock"));
}

TEST_F(MutexChecksTest, ABadValueIsRefusedAndChangesNothing) {
  absl::SetFlag(&FLAGS_mutex_deadlock_detection, "report");
  ASSERT_TRUE(ApplyMutexDeadlockDetectionFlag().ok());
  absl::SetFlag(&FLAGS_mutex_deadlock_detection, "on");
  const absl::Status st = ApplyMutexDeadlockDetectionFlag();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(st.message(), "write --mutex-deadlock-detection=off"))
      << st.message();
  EXPECT_TRUE(absl::StrContains(StderrOfAnInversion(), "Potential Mutex deadlock"))
      << "the refused value changed the mode";
}

}  // namespace
}  // namespace skbnf::control
