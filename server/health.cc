#include "server/health.h"

#include <grpcpp/health_check_service_interface.h>

#include <iostream>

namespace skbnf::control {

HealthPublisher::HealthPublisher(const Backend& backend, grpc::Server& server)
    : backend_(backend), server_(server) {
  Update();
  thread_ = std::make_unique<Periodic>(std::chrono::milliseconds(250), [this] { Update(); });
}

HealthPublisher::~HealthPublisher() { thread_.reset(); }

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
