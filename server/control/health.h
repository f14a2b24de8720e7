// SPDX-License-Identifier: BSD-3-Clause
// Health: what grpc.health.v1 tells the kubelet, the container's HEALTHCHECK and users, on the
// control listener and on the plaintext health-only listener (--health-listen).
//
// Kubernetes acts differently on the two probes: a failed liveness probe restarts the container
// (a DPDK restart: ports re-probed, hugepages re-mapped, seconds without forwarding), a failed
// readiness probe only takes the pod out of Service endpoints / rollout progress. So each
// question gets its own service name, and only a fault a restart can cure fails liveness:
//
//   service                      SERVING when                               fails on
//   "liveness"                   the health thread completed a read of the  the control plane
//                                data plane (ports, workers) within the     wedged (a backend
//                                last 10 s (HealthTiming::stale), and gRPC  read that never
//                                answered the probe                         returns), shutdown
//   "readiness"                  every port can forward: started (its       link down, a port
//   "" and "skbnf.v1.Control"    rte_eth_dev_start succeeded) AND its link  whose start failed,
//   (the same as "readiness":    up (a link the PMD cannot read counts as   a worker loop that
//   HEALTHCHECK, older probes)   down); and every worker loop running; and  returned; no port;
//                                no worker paused by a client (a           a worker paused by
//                                PauseWorker lease that holds:              PauseWorker
//                                pause_leases.h)
//
// A link flap therefore changes readiness and never liveness: restarting the pod would not
// bring a cable back, and would throw away a data plane that resumes by itself when it returns.
// Readiness is re-evaluated every 250 ms; each change is logged once, naming every port or
// worker that is not ready (e.g. "port 0 (net_tap0): link down"), so NOT_SERVING is explained in
// the pod's log rather than guessed at.
#ifndef SKBNF_SERVER_CONTROL_HEALTH_H_
#define SKBNF_SERVER_CONTROL_HEALTH_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"
#include "server/core/periodic.h"

namespace skbnf::control {

inline constexpr char kLivenessService[] = "liveness";
inline constexpr char kReadinessService[] = "readiness";

struct Readiness {
  bool ready = false;
  std::vector<std::string> not_ready;  // one line per port or worker that is not ready
};
// The readiness rule of the table above, on the backend's facts.
Readiness EvaluateReadiness(const Health& h);

struct HealthTiming {
  std::chrono::milliseconds period{250};   // readiness re-evaluated this often
  std::chrono::milliseconds stale{10000};  // liveness fails when no read completed this long
};

class HealthPublisher {
 public:
  // Publishes once before returning (so nobody is told "ready" before health is known), then
  // every `timing.period` until destroyed. Every server in `servers` (each built with the
  // default health service) gets the same statuses; they must outlive this object.
  // `more_not_ready` adds the control plane's own reasons (PauseWorker leases that hold:
  // pause_leases.h) to the backend's.
  HealthPublisher(const Backend& backend, std::vector<grpc::Server*> servers,
                  HealthTiming timing = {},
                  std::function<std::vector<std::string>()> more_not_ready = nullptr);
  ~HealthPublisher();
  HealthPublisher(const HealthPublisher&) = delete;
  HealthPublisher& operator=(const HealthPublisher&) = delete;

 private:
  void Update();    // on thread_: reads the backend, publishes readiness
  void Watchdog();  // on watchdog_: liveness from the age of the last completed read
  void Publish(const char* service, bool serving);

  const Backend& backend_;
  const std::vector<grpc::Server*> servers_;
  const HealthTiming timing_;
  const std::function<std::vector<std::string>()> more_not_ready_;
  std::atomic<int64_t> last_read_ns_{0};  // steady_clock of the last completed backend read
  std::string last_readiness_;            // Update() only: what was logged last
  absl::Mutex live_mu_;                   // orders Watchdog's liveness changes and their logs
  int live_ ABSL_GUARDED_BY(live_mu_) = -1;
  std::unique_ptr<Periodic> thread_;
  std::unique_ptr<Periodic> watchdog_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_HEALTH_H_
