// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/health.h"

#include <grpcpp/health_check_service_interface.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::control {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Readiness EvaluateReadiness(const Health& h) {
  Readiness r;
  if (h.ports.empty()) r.not_ready.push_back("no ports");
  for (const PortInfo& p : h.ports) {
    const std::string port = absl::StrCat("port ", p.id, " (", p.name, "): ");
    if (!p.started) {
      r.not_ready.push_back(port + "not started");
    } else if (!p.has_link) {
      r.not_ready.push_back(port + "link unknown (the PMD did not report it)");
    } else if (!p.link_up) {
      r.not_ready.push_back(port + "link down");
    }
  }
  if (h.workers.empty()) r.not_ready.push_back("no workers");
  for (const WorkerHealth& w : h.workers) {
    if (!w.running) {
      r.not_ready.push_back(
          absl::StrCat("worker core ", w.core, " (lcore ", w.lcore, "): loop not running"));
    }
  }
  r.ready = r.not_ready.empty();
  return r;
}

HealthPublisher::HealthPublisher(const Backend& backend, std::vector<grpc::Server*> servers,
                                 HealthTiming timing,
                                 std::function<std::vector<std::string>()> more_not_ready)
    : backend_(backend),
      servers_(std::move(servers)),
      timing_(timing),
      more_not_ready_(std::move(more_not_ready)) {
  Update();
  Watchdog();
  thread_ = std::make_unique<Periodic>(timing_.period, [this] { Update(); });
  watchdog_ = std::make_unique<Periodic>(timing_.period, [this] { Watchdog(); });
}

HealthPublisher::~HealthPublisher() {
  watchdog_.reset();
  thread_.reset();
}

void HealthPublisher::Publish(const char* service, bool serving) {
  for (grpc::Server* s : servers_) {
    grpc::HealthCheckServiceInterface* hs = s->GetHealthCheckService();
    if (hs != nullptr) hs->SetServingStatus(service, serving);
  }
}

void HealthPublisher::Update() {
  Readiness r = EvaluateReadiness(backend_.GetHealth());
  if (more_not_ready_ != nullptr) {
    for (std::string& line : more_not_ready_()) r.not_ready.push_back(std::move(line));
    r.ready = r.not_ready.empty();
  }
  last_read_ns_.store(NowNs());
  for (grpc::Server* s : servers_) {
    grpc::HealthCheckServiceInterface* hs = s->GetHealthCheckService();
    if (hs == nullptr) continue;
    // Never the one-argument SetServingStatus(bool): gRPC applies it to every service name,
    // liveness included.
    hs->SetServingStatus("", r.ready);
    hs->SetServingStatus("skbnf.v1.Control", r.ready);
    hs->SetServingStatus(kReadinessService, r.ready);
  }
  std::string now = r.ready ? "SERVING" : "NOT_SERVING: " + absl::StrJoin(r.not_ready, "; ");
  if (now != last_readiness_) {
    std::cerr << "skbnf-control: readiness " << now << std::endl;
    last_readiness_ = std::move(now);
  }
}

void HealthPublisher::Watchdog() {
  const int64_t age_ns = NowNs() - last_read_ns_.load();
  const bool live = age_ns <= std::chrono::nanoseconds(timing_.stale).count();
  absl::MutexLock l(&live_mu_);
  if (static_cast<int>(live) == live_) return;
  Publish(kLivenessService, live);
  if (live_ != -1 || !live) {
    std::cerr << "skbnf-control: liveness " << (live ? "SERVING" : "NOT_SERVING")
              << (live ? std::string()
                       : absl::StrCat(": no read of the data plane completed for ",
                                      age_ns / 1000000, " ms (health thread stuck)"))
              << std::endl;
  }
  live_ = live;
}

}  // namespace skbnf::control
