// SPDX-License-Identifier: BSD-3-Clause
// PauseLeases: every PauseWorker is a lease (issue 31 item 4). A client that pauses a worker and
// dies (or forgets) would otherwise leave it parked for good: its RX queues unread, the pod still
// Ready. So each pause holds for `lease` (default 60 s, 1 s .. 1 h, PauseWorkerRequest.lease_ms)
// and the worker resumes by itself when it runs out, logged and audited as a change of source
// "lease"; PauseWorker on a paused core renews the lease from now (idempotent otherwise), and
// ResumeWorker ends it. While any lease holds, readiness is NOT_SERVING naming the core and who
// paused it (health.h): a parked worker forwards nothing, and Kubernetes should not send traffic
// to a pod that drops it.
//
// Grant and Release are called inside the Change of the PauseWorker/ResumeWorker that made the
// state (under the Mutations lock), and the expiry resumes inside a Change of its own after it
// checked, under the same lock, that the lease is still the one that ran out: a renewal that
// races the expiry either lands first (then nothing expires) or after (then it pauses the
// resumed worker again, as a fresh pause). Timing: checked every 100 ms, so a worker resumes at
// most about 100 ms after its lease ends.
#ifndef SKBNF_SERVER_CONTROL_PAUSE_LEASES_H_
#define SKBNF_SERVER_CONTROL_PAUSE_LEASES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/mutations.h"
#include "server/core/periodic.h"

namespace skbnf::control {

inline constexpr std::chrono::milliseconds kPauseLeaseDefault{60000};
inline constexpr std::chrono::milliseconds kPauseLeaseMin{1000};
inline constexpr std::chrono::milliseconds kPauseLeaseMax{3600000};

// The lease a PauseWorkerRequest asks for: 0 = the default; INVALID_ARGUMENT naming lease_ms
// outside [kPauseLeaseMin, kPauseLeaseMax].
absl::StatusOr<std::chrono::milliseconds> PauseLeaseFromRequest(uint32_t lease_ms);

class PauseLeases {
 public:
  explicit PauseLeases(Mutations& mutations,
                       std::chrono::milliseconds check_every = std::chrono::milliseconds(100));
  ~PauseLeases();  // stops the expiry thread; leases left are not resumed (skbnfd is stopping)

  // In the Change that paused (or found paused) `core`: the lease runs `lease` from now, held by
  // `who`. Returns its end (system clock, ms since the epoch).
  uint64_t Grant(int core, std::chrono::milliseconds lease, const std::string& who);
  // In the Change that resumed `core` (or found it running): no lease any more.
  void Release(int core);
  // One line per lease that holds, for readiness ("worker core 1: paused by PauseWorker ...").
  std::vector<std::string> NotReady() const;

  // Resumes the workers whose lease ran out (the expiry thread calls it; tests may).
  void ExpireNow();

 private:
  struct Lease {
    std::chrono::steady_clock::time_point until;
    uint64_t until_unix_ms = 0;
    std::chrono::milliseconds length{0};
    std::string who;
  };

  Mutations& mutations_;
  mutable absl::Mutex mu_;
  std::map<int, Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Periodic> thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_PAUSE_LEASES_H_
