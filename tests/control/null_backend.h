// SPDX-License-Identifier: BSD-3-Clause
// NullBackend: a Backend that has nothing and changes nothing, for tests that need one behaviour
// of a Backend (a clock, a hanging read) and nothing else: override that one method.
#ifndef SKBNF_TESTS_CONTROL_NULL_BACKEND_H_
#define SKBNF_TESTS_CONTROL_NULL_BACKEND_H_

#include <chrono>
#include <vector>

#include "server/core/backend.h"

namespace skbnf::control {

class NullBackend : public Backend {
 public:
  Info GetInfo() const override { return {}; }
  std::vector<PortInfo> ListPorts() const override { return {}; }
  pool::StrategySpec GetStrategy() const override { return {}; }
  uint64_t GetEpoch() const override { return 0; }
  StatsSnapshot GetStats() const override { return {}; }
  RouteTable ListRoutes() const override { return {}; }
  Health GetHealth() const override { return {}; }
  absl::Status ValidateStrategy(const pool::StrategySpec&) const override { return {}; }
  pool::SwapReport SwapStrategy(const pool::StrategySpec&, std::chrono::microseconds) override {
    return {};
  }
  absl::StatusOr<uint32_t> AddRoute(const Ipv4Prefix&, const NextHop&) override { return 0; }
  absl::Status DeleteRoute(const Ipv4Prefix&) override { return {}; }
  absl::Status PauseWorker(int) override { return {}; }
  absl::Status ResumeWorker(int) override { return {}; }
  absl::StatusOr<AuditResult> Audit() override { return AuditResult{}; }
};

}  // namespace skbnf::control

#endif  // SKBNF_TESTS_CONTROL_NULL_BACKEND_H_
