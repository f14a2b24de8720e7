// SPDX-License-Identifier: BSD-3-Clause
// ConfigDrift: how skbnfd's running state differs from its --config file, computed in one place
// (server/ops/config_reload.h DriftOf, over the Backend's reads and the last applied file) and
// shown three ways from that one value:
//
//   skbnf_config_drift{part}      the gauge (ConfigReloader, every second and after each reload)
//   "config drift: ..." log line  when the summary changes
//   DiffConfig RPC                skbnfctl config diff: every differing route and the strategy
//
// The RPC (config_diff_service.cc: ControlService::DiffConfig) is a read: it takes no mutation lock (Reads never do:
// control_service.h), so during a reload or a route RPC it may show that change half-made, as
// ListRoutes would. The type lives here, below server/ops (which computes it) and beside the
// service (which serves it): arrows point down (server/README.md).
#ifndef SKBNF_SERVER_CONTROL_CONFIG_DIFF_H_
#define SKBNF_SERVER_CONTROL_CONFIG_DIFF_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"

namespace skbnf::control {

// One prefix whose route is not the file's: routed only in the running table (file unset),
// only in the file (running unset), or in both with different next hops.
struct RouteDrift {
  Ipv4Prefix prefix;
  std::optional<NextHop> running;
  std::optional<NextHop> file;
};

struct ConfigDrift {
  std::string path;  // the --config file compared with
  // The strategy in force against the file's (not on DPDK's native pool, which has none to swap).
  bool strategy = false;
  std::string running_strategy;
  std::string file_strategy;
  // l3 mode only: the live route table against the file's routes (as a reload would apply them),
  // sorted by prefix.
  std::vector<RouteDrift> routes;

  bool routes_differ() const { return !routes.empty(); }
  bool any() const { return strategy || routes_differ(); }
  // For the log: "strategy headpool (file: recycle+magazine); routes: 1 not in the file, 1 of
  // the file's missing or different"; "" when none.
  std::string Summary() const;
};

// What computes the drift now: the --config watcher's (ConfigReloader::Drift).
using ConfigDriftSource = std::function<ConfigDrift()>;

// Where the control service finds the drift source (ControlPlane::config_drift): the --config
// watcher sets it when it starts and clears it before it goes (Set waits for a Get in flight,
// so the source never outlives its owner). Without one, Get is FAILED_PRECONDITION.
class ConfigDriftSlot {
 public:
  void Set(ConfigDriftSource source) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<ConfigDrift> Get() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  ConfigDriftSource source_ ABSL_GUARDED_BY(mu_);
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_CONFIG_DIFF_H_
