#include "server/health.h"

#include <grpcpp/health_check_service_interface.h>

#include <iostream>

namespace skbnf::control {

HealthPublisher::HealthPublisher(const Backend& backend, grpc::Server& server)
    : backend_(backend), server_(server) {
  Update();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!cv_.wait_for(l, std::chrono::milliseconds(250), [this] { return stop_; })) {
      l.unlock();
      Update();
      l.lock();
    }
  });
}

HealthPublisher::~HealthPublisher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HealthPublisher::Update() {
  Health h = backend_.GetHealth();
  const bool serving = h.ports_up && h.workers_running;
  grpc::HealthCheckServiceInterface* hs = server_.GetHealthCheckService();
  if (hs != nullptr) {
    hs->SetServingStatus(serving);
    hs->SetServingStatus("skbnf.v1.Control", serving);
  }
  if (static_cast<int>(serving) != last_serving_) {
    std::cerr << "skbnf-control: health " << (serving ? "SERVING" : "NOT_SERVING")
              << (h.detail.empty() ? "" : " (") << h.detail << (h.detail.empty() ? "" : ")")
              << std::endl;
    last_serving_ = serving;
  }
}

}  // namespace skbnf::control
