// HealthPublisher: keeps grpc.health.v1 ("" and "skbnf.v1.Control") in step with the Backend's
// health (every link up, every worker loop running), checked every 250 ms on its own thread, and
// logs each change of state once.
#ifndef SKBNF_SERVER_HEALTH_H_
#define SKBNF_SERVER_HEALTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "server/backend.h"
#include "server/periodic.h"

namespace skbnf::control {

class HealthPublisher {
 public:
  // Publishes once before returning (so nobody is told "ready" before health is known), then
  // every 250 ms until destroyed. `server` must outlive this object.
  HealthPublisher(const Backend& backend, grpc::Server& server);
  ~HealthPublisher();
  HealthPublisher(const HealthPublisher&) = delete;
  HealthPublisher& operator=(const HealthPublisher&) = delete;

 private:
  void Update();

  const Backend& backend_;
  grpc::Server& server_;
  int last_serving_ = -1;  // touched by Update() only, on one thread at a time
  std::unique_ptr<Periodic> thread_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_HEALTH_H_
