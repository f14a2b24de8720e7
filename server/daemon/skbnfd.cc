// SPDX-License-Identifier: BSD-3-Clause
// skbnfd: the skbnf network function. This file is its composition root, the one place that
// puts the data plane (dataplane/dpdk: EAL, the engine) and the control plane (server/: gRPC,
// /metrics, health) together:
//
//   flags (command_line.h checks them and answers --help; common/flags.h parses) ->
//   configuration (--config, then flags; or the demo) -> EAL ->
//   Engine::Create -> Engine::Start -> ControlPlane::Start over an EngineBackend ->
//   ConfigReloader (--config watched, SIGHUP) ->
//   console loop (stats lines, swap cycle) until SIGINT/SIGTERM or --duration ->
//   ControlPlane::Shutdown -> Engine::Stop (drain, final audit) -> summary line.
//
// Before EAL, the start-up checks (server/daemon/startup_checks.h: preflight of the pod's VFs,
// hugepages, cpuset, memlock, pool sizing) refuse a set-up EAL would fail on; `--preflight` runs
// only them.
//
// Signals: SIGINT/SIGTERM stop (drain, final audit, exit code below); SIGHUP re-reads --config
// (server/ops/config_reload.h) and, without --config, is ignored with one line per signal.
//
// Exit codes: 0 (and for --help, --helpfull), 1 when the final audit failed or the engine did not
// stop cleanly (a worker that did not leave its loop within 5 s, named; a port whose
// rte_eth_dev_stop/close failed), 2 when start-up was
// refused (bad flag, config, preflight error, EAL arguments, port set-up): the message says what
// to write instead.
// --preflight: 0 when no check errs, 1 otherwise, 2 for a bad flag or config.
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "dataplane/dpdk/eal.h"
#include "dataplane/dpdk/engine.h"
#include "server/control/control_plane.h"
#include "server/daemon/command_line.h"
#include "server/daemon/console.h"
#include "server/daemon/daemon_flags.h"
#include "server/daemon/demo.h"
#include "server/daemon/engine_backend.h"
#include "server/daemon/flag_help.h"
#include "server/daemon/heap_trim.h"
#include "server/daemon/mutex_checks.h"
#include "server/daemon/native_twin.h"
#include "server/daemon/startup_checks.h"
#include "server/daemon/test_hooks.h"
#include "server/daemon/unclean_stop.h"
#include "server/ops/config_reload.h"
#include "server/telemetry/multi_process.h"
#include "server/telemetry/telemetry_commands.h"

namespace skbnf::control {
namespace {

constexpr char kUsage[] =
    R"(skbnfd: a DPDK network function whose packet-buffer strategies are hot-swapped over gRPC.

usage: skbnfd [flags] [-- EAL arguments]

  With neither EAL arguments nor --config, skbnfd runs its demo (no NIC, no hugepages needed:
  net_pcap replays generated IPv4 traffic through 10,000 routes into net_null).
  EAL arguments go after `--`, exactly as for any DPDK application; they come after the `eal`
  line of a --config file. Flags are written --pool-ops or --pool_ops alike.

examples:
  skbnfd                                          # the demo; Ctrl-C stops it
  skbnfd --config=server/daemon/skbnfd.conf.example --duration=10
  skbnfd --mode=io --strategy=recycle+magazine -- -l 0-2 -a 0000:3b:02.0 -a 0000:3b:02.1
  skbnfd --pcidevice-env --mode=l3 --config=/etc/skbnf/skbnfd.conf   # Kubernetes SR-IOV pod
  skbnfd --preflight --pcidevice-env --config=/etc/skbnf/skbnfd.conf  # check the pod, exit
  skbnfctl strategy set headpool                  # swap while it runs (see skbnfctl --help)

The flags by topic follow (--helpfull: also the test suite's hooks and absl's flag files).)";

std::atomic<bool> g_quit{false};
void OnSignal(int) { g_quit.store(true); }
void OnHangUp(int) { ConfigReloader::RequestReload(); }

// SIGHUP means "re-read --config" (config_reload.h). Without --config there is nothing to
// re-read, and the default action (terminate, no drain, no final audit) would be the worst
// answer to an operator's `kill -HUP` or a supervisor that sends it to every service: the
// signal is ignored, one line per SIGHUP says so, and skbnfd keeps forwarding. write(2) is
// async-signal-safe; stdio is not.
constexpr char kHangUpIgnored[] =
    "skbnfd: SIGHUP ignored: skbnfd runs without --config, there is no file to reload "
    "(SIGINT/SIGTERM stop it)\n";
void OnHangUpWithoutConfig(int) {
  const int saved = errno;
  ssize_t n = ::write(STDERR_FILENO, kHangUpIgnored, sizeof(kHangUpIgnored) - 1);
  (void)n;  // nothing to do from a signal handler when stderr is gone
  errno = saved;
}
// Until the flags say whether there is a --config: a SIGHUP is remembered, then either the
// watcher's first reload or one "ignored" line.
std::atomic<bool> g_hangup_early{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set in a signal handler");
void OnHangUpEarly(int) { g_hangup_early.store(true); }

void InstallHangUpHandler(bool has_config) {
  std::signal(SIGHUP, has_config ? &OnHangUp : &OnHangUpWithoutConfig);
  if (g_hangup_early.exchange(false)) {
    if (has_config) {
      ConfigReloader::RequestReload();
    } else {
      OnHangUpWithoutConfig(SIGHUP);
    }
  }
}

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "skbnfd: %s\n", std::string(st.message()).c_str());
  return 2;
}

// Until SIGINT/SIGTERM or --duration: the console's lines, --swap-cycle's swaps and
// --heap-trim-every's trims (server/daemon/heap_trim.h) and --native-twin's side, every 20 ms.
void MainLoop(Console& console, ControlPlane& control, dpdk::Engine& engine,
              NativeTwinSwitch& twin) {
  SwapCycle cycle;
  HeapTrim heap_trim;
  while (!g_quit.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!console.Tick()) break;
    cycle.Tick(control);
    heap_trim.Tick();
    twin.Tick(engine);
  }
}

int Run(int argc, char** argv) {
  // First thing: a SIGINT/SIGTERM during start-up means "stop as soon as running" (and a
  // shell's background job would otherwise inherit SIGINT ignored).
  std::signal(SIGINT, &OnSignal);
  std::signal(SIGTERM, &OnSignal);
  std::signal(SIGHUP, &OnHangUpEarly);  // never the default termination (see OnHangUpWithoutConfig)
  // --help and bad flags before absl's parse, which would answer both with exit 1.
  absl::StatusOr<HelpRequest> help = CheckCommandLine(argc, argv);
  if (!help.ok()) return Fail(help.status());
  if (*help != HelpRequest::kNone) {
    std::fputs(FlagsHelp(kUsage, *help == HelpRequest::kFull).c_str(), stdout);
    return 0;
  }
  const std::vector<char*> rest = ParseFlags(argc, argv);
  // A SIGHUP: with --config the watcher's (first) reload, without it ignored with a line.
  InstallHangUpHandler(HasConfigFile());

  // Configuration: the file, then flags; bad flags stop start-up before anything else happens.
  absl::StatusOr<dpdk::DaemonConfig> dc = ConfigFromFlags();
  if (!dc.ok()) return Fail(dc.status());
  const dpdk::DaemonConfig from_file = *dc;  // what a reload of --config is compared with
  dpdk::EngineConfig check = dc->engine;  // the flags' effect checked on a copy
  if (absl::Status st = ApplyEngineFlags(check); !st.ok()) return Fail(st);
  // A --pcidevice-env without devices is the preflight's to explain (pci_devices).
  absl::StatusOr<std::vector<std::string>> pci_args = PciDeviceEalArgs();
  Demo demo;
  const bool is_demo = !HasConfigFile() && rest.size() <= 1 && pci_args.ok() && pci_args->empty();
  // Control flags (listeners, --roles, ...) are checked before EAL: a bad one is exit 2 at once.
  if (absl::Status st = CheckControlOptions(OptionsFromFlags(is_demo)); !st.ok()) return Fail(st);
  if (absl::Status st = CheckHeapTrimFlag(); !st.ok()) return Fail(st);
  if (absl::Status st = ApplyMutexDeadlockDetectionFlag(); !st.ok()) return Fail(st);
  if (is_demo) {
    if (absl::Status st = demo.SetUp(*dc); !st.ok()) return Fail(st);
  }
  if (absl::Status st = ApplyEngineFlags(dc->engine); !st.ok()) return Fail(st);

  std::vector<std::string> eal_args = {argv[0]};
  eal_args.insert(eal_args.end(), dc->eal.begin(), dc->eal.end());
  if (pci_args.ok()) eal_args.insert(eal_args.end(), pci_args->begin(), pci_args->end());
  for (size_t i = 1; i < rest.size(); ++i) eal_args.emplace_back(rest[i]);

  if (std::optional<int> exit_code = PreflightGate(dc->engine, eal_args, PciDeviceEnvFlag())) {
    return *exit_code;  // --preflight, or an error: EAL never runs
  }
  if (!pci_args.ok()) return Fail(pci_args.status());
  // A predecessor's control socket left by a kill: said before the listener replaces it.
  const std::optional<std::string> stale = StaleControlSocket();
  if (stale) std::fprintf(stderr, "skbnfd: %s\n", stale->c_str());
  demo.Finish(dc->engine);
  if (absl::Status st = dpdk::EalInit(eal_args); !st.ok()) return Fail(st);
  // Secondaries (dpdk-proc-info, dpdk-dumpcap) and capture: server/telemetry/multi_process.h.
  if (const auto& mp = telemetry::EnableMultiProcess(); !mp.note.empty()) {
    std::fprintf(stderr, "skbnfd: multi-process: %s\n", mp.note.c_str());
  }

  int rc = 2;
  {
    absl::StatusOr<std::unique_ptr<dpdk::Engine>> created = dpdk::Engine::Create(dc->engine);
    if (!created.ok()) {
      Fail(created.status());
      dpdk::EalCleanup();
      return 2;
    }
    dpdk::Engine& engine = **created;
    Console console(engine);
    console.PrintPorts();
    absl::StatusOr<std::unique_ptr<DepotHold>> depot_hold = ApplyTestHooks(engine);
    if (!depot_hold.ok()) return Fail(depot_hold.status());
    NativeTwinSwitch twin(engine);  // --native-twin's side in force from the first packet
    if (absl::Status st = engine.Start(); !st.ok()) return Fail(st);
    EngineBackend backend(engine, eal_args, dpdk::EalMainLcore());
    auto control = ControlPlane::Start(backend, OptionsFromFlags(is_demo));
    if (!control.ok()) {
      (void)engine.Stop();  // start-up already failed: that error is the one reported
      return Fail(control.status());
    }
    auto reload_metrics = std::make_shared<ConfigReloadMetrics>();  // also without --config
    (*control)->AddMetrics(reload_metrics);
    std::unique_ptr<ConfigReloader> reloader;  // --config watched; SIGHUP re-reads it
    if (HasConfigFile()) {
      auto started = ConfigReloader::Start(ConfigPath(), from_file, **control, backend,
                                           reload_metrics, ResolveNetworkPorts, ReloadTestGate());
      if (!started.ok()) {
        (*control)->Shutdown();
        (void)engine.Stop();  // start-up already failed: that error is the one reported
        return Fail(started.status());
      }
      reloader = std::move(*started);
      std::fprintf(
          stderr, "skbnfd: %s\n",
          ConfigStateLine(ConfigPath(), engine.strategy(), engine.Routes().size(), stale).c_str());
    }
    // DPDK telemetry's /skbnf/* (dpdk-telemetry.py): server/telemetry/telemetry_commands.h.
    auto tel_commands = telemetry::TelemetryCommands::Attach(backend);
    if (!tel_commands.ok()) Fail(tel_commands.status());  // reported; skbnfd runs without them
    console.PrintRunning();
    MainLoop(console, **control, engine, twin);
    // Telemetry detached before the backend's engine stops.
    if (tel_commands.ok()) tel_commands->reset();
    reloader.reset();        // before the control plane it mutates through
    depot_hold->reset();     // before the engine (and its pool) stops
    (*control)->Shutdown();  // before the engine stops
    const absl::Status stopped = engine.Stop();
    if (!stopped.ok()) {
      std::fprintf(stderr, "skbnfd: stopping the engine: %s\n",
                   std::string(stopped.message()).c_str());
    }
    rc = console.PrintSummary();
    if (!stopped.ok() && rc == 0) rc = 1;  // a port's stop/close failed (Engine::Stop)
    if (absl::IsDeadlineExceeded(stopped)) {
      // A worker is still in its loop (named above) and keeps what it uses: destructors, EAL's
      // clean-up and the exit handlers (LeakSanitizer's too) would run under it. Leave now.
      std::fflush(nullptr);
      std::_Exit(rc);
    }
  }
  telemetry::DisableMultiProcess();
  dpdk::EalCleanup();
  return rc;
}

}  // namespace
}  // namespace skbnf::control

// The heap's arenas: glibc gives each of up to 8 x cores threads an arena of its own, so the
// gRPC server's thread pool (up to --grpc-threads) spreads its short-lived requests over 16
// arenas on a 2-core node, each keeping its own freed pages: RSS crept up for an hour under
// control churn (bench/results/churn/loaded-nice19: +1.69 % after the warm-up) while the live
// heap stayed flat (heaptrack: 3.83-3.89 MB): freed chunks spread over many arenas. Five
// minutes of that churn at ten times its rates (bench/heap_arenas.sh) grew RSS +0.86 % with
// glibc's 16 arenas and +0.32 % with 2 (bench/results/churn/arenas). Nothing on the packet
// path allocates from the heap (DPDK's memory only), so two arenas cost the control plane
// nothing it can measure. MALLOC_ARENA_MAX in the environment still decides when set.
int main(int argc, char** argv) {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  skbnf::control::MutexDeadlockDetectionOff();  // server/daemon/mutex_checks.h
  return skbnf::control::Run(argc, argv);
}
