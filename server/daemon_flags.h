// skbnfd's data-plane flags (the "data plane" group of --help): the configuration file, then
// flags that override it, checked before anything starts. Every bad value is refused with what
// to write instead (the message names the flag).
#ifndef SKBNF_SERVER_DAEMON_FLAGS_H_
#define SKBNF_SERVER_DAEMON_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataplane/dpdk/config.h"

namespace skbnf::control {

// The --config file (dataplane/dpdk/config.h), or an empty configuration without one.
absl::StatusOr<dpdk::DaemonConfig> ConfigFromFlags();
bool HasConfigFile();
std::string ConfigPath();  // --config

// Applies --mode, --strategy, --pool-ops, ... to `c` (flags win over the file).
absl::Status ApplyEngineFlags(dpdk::EngineConfig& c);

// --pcidevice-env: `-a <addr>` EAL arguments from the PCIDEVICE_* environment variables of a
// Kubernetes SR-IOV device plugin; empty when the flag is off.
absl::StatusOr<std::vector<std::string>> PciDeviceEalArgs();
bool PciDeviceEnvFlag();  // --pcidevice-env

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_FLAGS_H_
