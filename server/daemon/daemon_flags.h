// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's data-plane flags (topics "config file", "ports and EAL" and "buffer pool" of --help,
// flag_help.h): the configuration file, then flags that override it, checked before anything
// starts. Every bad value is refused with what to write instead (the message names the flag).
#ifndef SKBNF_SERVER_DAEMON_DAEMON_FLAGS_H_
#define SKBNF_SERVER_DAEMON_DAEMON_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/ops/config.h"

namespace skbnf::control {

// The --config file (server/ops/config.h), or an empty configuration without one; ports
// named by network (net=<network>) resolved to PCI addresses (ResolveNetworkPorts).
absl::StatusOr<dpdk::DaemonConfig> ConfigFromFlags();
// Every net=<network> in `dc` replaced by its PCI address from --network-status-file (the
// Multus network-status, server/ops/network_status.h), read the first time a reference needs it:
// start-up waits up to --network-status-timeout for the file, later calls (config reloads) use
// what was read then. Nothing to do (and no file read) when no port is named by network; an
// error names the reference and lists the pod's networks.
absl::Status ResolveNetworkPorts(dpdk::DaemonConfig& dc);
bool HasConfigFile();
std::string ConfigPath();  // --config

// Applies --mode, --strategy, --pool-ops, ... to `c` (flags win over the file).
absl::Status ApplyEngineFlags(dpdk::EngineConfig& c);

// --pcidevice-env: `-a <addr>` EAL arguments from the PCIDEVICE_* environment variables of a
// Kubernetes SR-IOV device plugin; empty when the flag is off.
absl::StatusOr<std::vector<std::string>> PciDeviceEalArgs();
bool PciDeviceEnvFlag();  // --pcidevice-env

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_DAEMON_FLAGS_H_
