// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's start-up checks (the "preflight" topic of --help): server/ops/preflight.h run on what
// skbnfd is about to ask EAL and the engine for, before EAL initialises.
//
//   skbnfd --preflight [flags] [-- EAL arguments]   prints the report (one line per check: ok,
//                                                   warn or error, with what to change) and
//                                                   exits 0 when no check errs, 1 otherwise;
//                                                   EAL never runs.
//   skbnfd [flags]                                  runs the same checks first: an error stops
//                                                   start-up (exit 2, the errors and what to
//                                                   change), a warning is printed and start-up
//                                                   goes on.
//   --skip-preflight                                the escape hatch for a node the checks
//                                                   misjudge (then EAL's own errors are all
//                                                   there is).
//
// What is checked comes from the EAL arguments and the engine configuration:
//   --no-huge             no hugepage check, no memlock need (no DMA to a device)
//   --huge-dir=D          D must be a hugetlbfs mount; its page size is the one checked
//   -l / --lcores <list>  must lie inside the cgroup's cpuset (a list with '@' or '(' is
//                         left to EAL); without one, the cpuset gives main + workers
//   --pcidevice-env       the PCIDEVICE_* VFs (and the plugin's PCIDEVICE_*_INFO): drivers,
//                         /dev/vfio, mlx5's RDMA nodes and capabilities, NUMA; and every
//                         config port named by PCI address or by network (port net=...,
//                         resolved through --network-status-file) one of them ("ports")
//   mbufs, rings, burst, queues, workers, strategy   pool sizing (PoolNeeds): populated >=
//                         RX + TX descriptors + workers x what the strategy's per-core layers
//                         hold + workers x burst. The layers' capacity per core: lcache 1.5 x
//                         size (DPDK flushes above that), recycle its limit (0: the RX ring),
//                         headpool its hot list, magazine 2 x size (loaded + previous); the
//                         ring_mp_mc baseline 1.5 x --mbuf-cache. An RX queue of a net_af_xdp
//                         port (a config `port net_af_xdp*`, else a --vdev=net_af_xdp*) counts
//                         the 2,048 mbufs the PMD takes per queue (preflight.h,
//                         kAfXdpRxQueueMbufs), not its ring size.
// Checks that do not apply (no VF, --no-huge) report nothing or ok, so the demo and vdev
// set-ups start as before.
#ifndef SKBNF_SERVER_DAEMON_STARTUP_CHECKS_H_
#define SKBNF_SERVER_DAEMON_STARTUP_CHECKS_H_

#include <optional>
#include <string>
#include <vector>

#include "dataplane/dpdk/engine.h"
#include "server/ops/preflight.h"

namespace skbnf::control {

bool PreflightOnly();  // --preflight
bool SkipPreflight();  // --skip-preflight

// The pool sizing inputs for `c` (after flags) with `ports` ports and `workers` workers, of which
// ports `af_xdp_ports` are net_af_xdp (preflight::kAfXdpRxQueueMbufs per RX queue).
preflight::PoolNeeds PoolNeedsOf(const dpdk::EngineConfig& c, uint64_t ports, uint64_t workers,
                                 uint64_t af_xdp_ports = 0);
// The net_af_xdp ports among the engine's: the config's `port` lines when it has some, else
// every --vdev=net_af_xdp* of `eal`.
uint64_t CountAfXdpPorts(const dpdk::EngineConfig& c, const std::vector<std::string>& eal);
// The mbufs the engine creates for `c` (dataplane/dpdk/pool_sizing.h: --mbufs, or sized from
// the same needs as the pool_sizing check, `af_xdp_ports` of the ports on net_af_xdp).
uint64_t PopulatedMbufs(const dpdk::EngineConfig& c, uint64_t ports, uint64_t workers,
                        uint64_t af_xdp_ports = 0);

// Every check for an engine configured as `c` started with `eal_args` (argv[0] excluded).
// `host`: the process's (preflight::Host::FromProcess(), root from the tests' hidden
// --test-preflight-root).
preflight::Report RunStartupChecks(const preflight::Host& host, const dpdk::EngineConfig& c,
                                   const std::vector<std::string>& eal_args,
                                   bool pci_devices_from_env);

// skbnfd's gate before EAL (nothing with --skip-preflight): runs the checks on the process's
// host (root from the hidden --test-preflight-root). --preflight: prints the report on stdout
// and returns the exit code (0 no error, 1 errors). Otherwise prints warnings and errors on
// stderr ("skbnfd: preflight error: <check>: <what to change>") and returns 2 on an error,
// nullopt to go on. `eal_args` with argv[0] first, as for EalInit.
std::optional<int> PreflightGate(const dpdk::EngineConfig& c,
                                 const std::vector<std::string>& eal_args,
                                 bool pci_devices_from_env);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_STARTUP_CHECKS_H_
