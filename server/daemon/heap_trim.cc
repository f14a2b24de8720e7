// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/heap_trim.h"

#include <malloc.h>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

ABSL_FLAG(absl::Duration, heap_trim_every, absl::Seconds(10),
          "Give the heap's free pages back to the kernel this often (malloc_trim; 0: never).");

namespace skbnf::control {

absl::Status CheckHeapTrimFlag() {
  const absl::Duration d = absl::GetFlag(FLAGS_heap_trim_every);
  if (d >= absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--heap-trim-every=", absl::FormatDuration(d),
      " is negative; write --heap-trim-every=10s (the default) or --heap-trim-every=0 (never)"));
}

HeapTrim::HeapTrim()
    : every_(absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_heap_trim_every))),
      next_(std::chrono::steady_clock::now() + every_) {}

void HeapTrim::Tick() {
  if (every_ <= std::chrono::steady_clock::duration::zero()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  malloc_trim(0);
  ++trims_;
  next_ = now + every_;
}

}  // namespace skbnf::control
