// SPDX-License-Identifier: BSD-3-Clause
// ControlPlane: the gRPC server (skbnf.v1.Control, grpc.health.v1, reflection), the optional
// plaintext health-only gRPC server (--health-listen: grpc.health.v1 and nothing else) and the
// Prometheus exposer over a Backend, started and stopped together. A daemon does:
//
//   std::vector<char*> rest = skbnf::control::ParseFlags(argc, argv);   // common/flags.h
//   ... bring up the data plane, which implements skbnf::control::Backend ...
//   auto cp = skbnf::control::ControlPlane::Start(backend, skbnf::control::OptionsFromFlags());
//   if (!cp.ok()) { std::cerr << cp.status() << "\n"; return 1; }
//   ... run ...
//   (*cp)->Shutdown();
//
// Its parts, one file each: control_flags.cc (flags), listener.h (where it may listen, TLS, who
// may mutate), control_service.h (the RPCs), metrics.h (/metrics), health.h (grpc.health.v1),
// stats_sampler.h (rates for readers).
#ifndef SKBNF_SERVER_CONTROL_CONTROL_PLANE_H_
#define SKBNF_SERVER_CONTROL_CONTROL_PLANE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"
#include "server/control/config_diff.h"
#include "server/control/listener.h"
#include "server/core/backend.h"
#include "server/core/mutations.h"
#include "server/core/swap_metrics.h"

namespace skbnf::control {

// The control-plane flags (control_flags.cc) as options. `demo`: skbnfd runs its demo (no EAL
// arguments, no --config): loopback admin unless --loopback-role, /metrics on :9478 unless
// --metrics-addr (ControlOptions::demo).
ControlOptions OptionsFromFlags(bool demo = false);

class ControlPlane {
 public:
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Start(Backend& backend,
                                                             const ControlOptions& options);
  ~ControlPlane();  // Shutdown()
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The first --listen address clients use (host:port with the chosen port, or unix:/path).
  const std::string& grpc_address() const;
  // Every --listen address, in order, TCP ones with their chosen ports.
  const std::vector<std::string>& addresses() const;
  int metrics_port() const;  // 0 when disabled
  // The health-only listener's host:port (--health-listen, with the chosen port); "" when off.
  const std::string& health_address() const;
  void Shutdown();

  // In-process changes (the config file reloader, --swap-cycle): `f` runs through Mutations
  // of every change (mutations.h): the lock of the mutating RPCs, the same validation, swap
  // metrics and change log, with `source` named.
  void Mutate(ChangeSource source, const std::function<void(Change&)>& f);
  // Where the DiffConfig RPC finds the running state's drift from --config (config_diff.h):
  // the config watcher sets it while it runs.
  ConfigDriftSlot& config_drift();
  // More families on /metrics (kept alive by the caller); nothing when /metrics is off.
  void AddMetrics(const std::weak_ptr<prometheus::Collectable>& c);

  struct Impl;

 private:
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_CONTROL_PLANE_H_
