// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/pause_leases.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace skbnf::control {

absl::StatusOr<std::chrono::milliseconds> PauseLeaseFromRequest(uint32_t lease_ms) {
  if (lease_ms == 0) return kPauseLeaseDefault;
  const std::chrono::milliseconds l(lease_ms);
  if (l < kPauseLeaseMin || l > kPauseLeaseMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease_ms: ", lease_ms, " is out of range [", kPauseLeaseMin.count(), ", ",
        kPauseLeaseMax.count(), "] (0 = ", kPauseLeaseDefault.count(),
        "): a paused worker resumes by itself when its lease runs out; renew it by pausing "
        "again"));
  }
  return l;
}

PauseLeases::PauseLeases(Mutations& mutations, std::chrono::milliseconds check_every)
    : mutations_(mutations),
      thread_(std::make_unique<Periodic>(check_every, [this] { ExpireNow(); })) {}

PauseLeases::~PauseLeases() { thread_.reset(); }

uint64_t PauseLeases::Grant(int core, std::chrono::milliseconds lease, const std::string& who) {
  Lease l;
  l.until = std::chrono::steady_clock::now() + lease;
  l.until_unix_ms = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())) +
                    static_cast<uint64_t>(lease.count());
  l.length = lease;
  l.who = who;
  absl::MutexLock lock(&mu_);
  leases_[core] = l;
  return l.until_unix_ms;
}

void PauseLeases::Release(int core) {
  absl::MutexLock lock(&mu_);
  leases_.erase(core);
}

std::vector<std::string> PauseLeases::NotReady() const {
  std::vector<std::string> out;
  const uint64_t now = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  absl::MutexLock lock(&mu_);
  for (const auto& [core, l] : leases_) {
    out.push_back(absl::StrCat("worker core ", core, ": paused by PauseWorker (", l.who,
                               "), lease ends in ",
                               l.until_unix_ms > now ? (l.until_unix_ms - now + 999) / 1000 : 0,
                               " s"));
  }
  return out;
}

void PauseLeases::ExpireNow() {
  std::vector<int> due;
  {
    absl::MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [core, l] : leases_) {
      if (l.until <= now) due.push_back(core);
    }
  }
  for (int core : due) {
    mutations_.Run(ChangeSource::kLease, [&](Change& c) {
      Lease l;
      {
        absl::MutexLock lock(&mu_);
        auto it = leases_.find(core);
        // renewed or resumed since: not due any more
        if (it == leases_.end() || it->second.until > std::chrono::steady_clock::now()) return;
        l = it->second;
        leases_.erase(it);
      }
      absl::StatusOr<bool> was = c.ResumeWorker(core);
      std::cerr << "skbnf-control: PauseWorker lease of core " << core << " (" << l.who << ", "
                << l.length.count() / 1000.0 << " s) ran out: "
                << (!was.ok() ? absl::StrCat("resume failed: ", was.status().message())
                    : *was    ? std::string("worker resumed")
                              : std::string("the worker was running already"))
                << std::endl;
    });
  }
}

}  // namespace skbnf::control
