// SPDX-License-Identifier: BSD-3-Clause
// skbnf_fake_daemon: the control plane (gRPC + Prometheus) over FakeBackend. Takes every flag
// skbnfd takes for its control plane (server/control/control_flags.cc) plus --sim-* flags for the
// fake.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "absl/flags/flag.h"
#include "common/flags.h"
#include "dataplane/dpdk/drop_reasons.h"
#include "server/control/control_plane.h"
#include "tests/control/fake_backend.h"

ABSL_FLAG(int, sim_workers, 2, "fake: worker cores");
ABSL_FLAG(int, sim_ports, 2, "fake: ports");
ABSL_FLAG(std::string, sim_mode, "l3", "fake: forwarding mode io|mac|l3");
ABSL_FLAG(bool, sim_native, false, "fake: pretend to run on DPDK's native mempool");
ABSL_FLAG(std::string, sim_spec, "magazine", "fake: initial strategy");
ABSL_FLAG(int, sim_poll_pause_us, 100,
          "fake: microseconds each worker sleeps between polls; 0 = busy-poll (a core each)");
ABSL_FLAG(int, sim_stuck_core, -1,
          "fake: this worker core never reaches its quiescent point (swaps roll back)");
ABSL_FLAG(bool, sim_link_down, false, "fake: every port's link is down (readiness NOT_SERVING)");
ABSL_FLAG(std::string, sim_link_down_file, "",
          "fake: every port's link is down while this file exists (a link flap)");
ABSL_FLAG(int, sim_port_not_started, -1,
          "fake: this port's start failed (PortInfo::started false; readiness NOT_SERVING)");

namespace {
std::atomic<bool> g_signalled{false};
void OnSignal(int) { g_signalled.store(true); }

// Blocks until SIGINT or SIGTERM (the test harness stops the daemon with SIGTERM).
void WaitForSignal() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  while (!g_signalled.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = skbnf::control::ParseFlags(argc, argv);
  if (args.size() > 1) {
    std::cerr << "skbnf_fake_daemon: unexpected argument '" << args[1] << "'\n";
    return 2;
  }
  using skbnf::control::ForwardingMode;
  skbnf::control::testing::FakeOptions o;
  // The engine's drop reasons by the engine's names (its one list, dataplane/dpdk/modes.cc).
  for (int r = 0; r < skbnf::dpdk::kNumDropReasons; ++r) {
    o.drop_reasons.emplace_back(skbnf::dpdk::DropReasonName(r));
  }
  o.workers = absl::GetFlag(FLAGS_sim_workers);
  o.ports = absl::GetFlag(FLAGS_sim_ports);
  std::string mode = absl::GetFlag(FLAGS_sim_mode);
  if (mode == "io") {
    o.mode = ForwardingMode::kIo;
  } else if (mode == "mac") {
    o.mode = ForwardingMode::kMac;
  } else if (mode == "l3") {
    o.mode = ForwardingMode::kL3;
  } else {
    std::cerr << "skbnf_fake_daemon: --sim-mode must be io, mac or l3\n";
    return 2;
  }
  o.native = absl::GetFlag(FLAGS_sim_native);
  o.initial_spec = absl::GetFlag(FLAGS_sim_spec);
  o.link_up = !absl::GetFlag(FLAGS_sim_link_down);
  o.link_down_file = absl::GetFlag(FLAGS_sim_link_down_file);
  o.not_started_port = absl::GetFlag(FLAGS_sim_port_not_started);
  o.poll_pause_us = absl::GetFlag(FLAGS_sim_poll_pause_us);
  o.stuck_core = absl::GetFlag(FLAGS_sim_stuck_core);
  auto backend = skbnf::control::testing::FakeBackend::Create(o);
  if (!backend.ok()) {
    std::cerr << "skbnf_fake_daemon: " << backend.status() << "\n";
    return 1;
  }
  auto cp = skbnf::control::ControlPlane::Start(**backend, skbnf::control::OptionsFromFlags());
  if (!cp.ok()) {
    std::cerr << "skbnf_fake_daemon: " << cp.status().message() << "\n";
    return 1;
  }
  WaitForSignal();
  (*cp)->Shutdown();
  return 0;
}
