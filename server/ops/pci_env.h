// SPDX-License-Identifier: BSD-3-Clause
// The SR-IOV network device plugin's environment, as the plugin writes it: the one reader of
// PCIDEVICE_* variables (skbnfd's --pcidevice-env EAL arguments and the preflight both use it).
//
// For every resource it allocates, the plugin (k8snetworkplumbingwg/sriov-network-device-plugin,
// pkg/resources/pool_stub.go, GetEnvs; v3.6 and later) sets two variables:
//
//   PCIDEVICE_<PREFIX>_<NAME>=0000:3b:02.0,0000:3b:02.1           the device IDs: PCI addresses
//   PCIDEVICE_<PREFIX>_<NAME>_INFO={"0000:3b:02.0":{"generic":..}} device information, JSON
//
// (<PREFIX>_<NAME> is the resource name upper-cased, '.' and '/' as '_'.) Which is which: a
// variable is device information when its value is a JSON object (first non-blank character
// '{'), or when its name ends in _INFO and the variable without that suffix is set too (a
// malformed JSON value then stays device information: the preflight warns about it, nothing
// refuses it). Every other PCIDEVICE_* variable is a comma-separated list of addresses, each
// [dddd:]bb:dd.f in hex (a resource whose own name ends in _INFO, e.g. intel.com/nic_info, still
// reads as addresses: its information variable is then ..._INFO_INFO).
//
// No DPDK and no JSON here (server/ops/config.h and server/ link it); the JSON of the
// information variables is read by server/ops/device_info.h.
#ifndef SKBNF_SERVER_OPS_PCI_ENV_H_
#define SKBNF_SERVER_OPS_PCI_ENV_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::dpdk {

struct PciDeviceVariable {
  std::string name;   // PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK
  std::string value;  // as set
  bool info = false;  // the _INFO JSON (device information), not addresses
};

// The PCIDEVICE_* variables of `env` (name -> value), sorted by name, each classified as above.
std::vector<PciDeviceVariable> PciDeviceVariables(const std::map<std::string, std::string>& env);
// The same from "NAME=value" strings (environ).
std::map<std::string, std::string> EnvironmentMap(const std::vector<std::string>& environment);

// [dddd:]bb:dd.f, hex digits.
bool ValidPciAddress(absl::string_view address);
// 3b:02.0 -> 0000:3b:02.0 (the domain added; the form sysfs and the device plugin use).
std::string FullPciAddress(absl::string_view address);

// The addresses of an address variable, in its order, normalised (FullPciAddress). An error
// names the variable and the bad entry: "PCIDEVICE_X=eth0: 'eth0' is not a PCI address; expected
// [dddd:]bb:dd.f, e.g. 0000:3b:02.1".
absl::StatusOr<std::vector<std::string>> PciAddresses(const PciDeviceVariable& variable);

}  // namespace skbnf::dpdk

#endif  // SKBNF_SERVER_OPS_PCI_ENV_H_
