// SPDX-License-Identifier: BSD-3-Clause
// PCIDEVICE_<RESOURCE>_INFO: what the SR-IOV network device plugin says about each device it
// handed the pod, read as the plugin writes it.
//
// The shape, from the plugin's source (k8snetworkplumbingwg/sriov-network-device-plugin v3.6+):
// pkg/resources/pool_stub.go GetEnvs json.Marshal's a map[deviceID]map[provider]map[string]string
// (device ID = PCI address for PCI devices), one entry per info provider of the device,
// pkg/infoprovider/*.go GetName/GetEnvVal:
//
//   provider  keys (values are container paths or names)            when
//   generic   deviceID: "0000:3b:02.0"                              always
//   vfio      mount: "/dev/vfio/vfio", dev-mount: "/dev/vfio/71"    driver vfio-pci
//   uio       mount: "/dev/uio0"                                    driver igb_uio/uio_pci_generic
//   rdma      uverbs, umad, issm, rdma_cm: "/dev/infiniband/...",   isRdma: true (mlx5)
//             rdma_dev: "mlx5_2"
//   vhost     net-mount: "/dev/vhost-net", tun-mount: "/dev/net/tun"  needVhostNet: true
//   vdpa      mount: "/dev/vhost-vdpa-0"                            vdpaType set
//   extra     whatever the resource's additionalInfo says           additionalInfo set
//
// e.g. {"0000:3b:02.0":{"generic":{"deviceID":"0000:3b:02.0"},"vfio":{"dev-mount":"/dev/vfio/71",
// "mount":"/dev/vfio/vfio"}}}. (The plugin's README shows older keys, vfio-dev-mount/vfio-mount
// and extraInfo; the code above is what runs, and those spellings are read too.)
//
// The preflight uses it for what the plugin mounted: the vfio group node of each VF and, for
// mlx5, the RDMA device nodes. Information that cannot be read (not JSON, not this shape) is a
// warning and the checks fall back to sysfs: it never stops start-up.
//
// JSON: protobuf's JSON parser into google.protobuf.Value (already linked by skbnfd for gRPC,
// in every build and in the image), so no new package; the values read here are all strings.
#ifndef SKBNF_SERVER_OPS_DEVICE_INFO_H_
#define SKBNF_SERVER_OPS_DEVICE_INFO_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace google::protobuf {
class Value;
}  // namespace google::protobuf

namespace skbnf::preflight {

// `json` into `out` with protobuf's parser; the error ("not JSON: Unexpected end of string...")
// on one line (the parser's text-and-caret lines dropped). Shared with network_status.h.
absl::Status ParseJsonValue(absl::string_view json, google::protobuf::Value* out);

// One device's entry: provider -> key -> value.
struct DeviceInfo {
  std::map<std::string, std::map<std::string, std::string>> providers;

  // providers[provider][key], or nullopt.
  std::optional<std::string> Get(absl::string_view provider, absl::string_view key) const;
  // The vfio group node the plugin mounted ("/dev/vfio/71"), or nullopt.
  std::optional<std::string> VfioGroupNode() const;
  // The RDMA device nodes the plugin mounted (uverbs, umad, issm, rdma_cm), sorted; empty
  // without an rdma entry.
  std::vector<std::string> RdmaNodes() const;
  std::optional<std::string> RdmaUverbs() const;  // the one the mlx5 PMD opens
};

// Parses the value of one PCIDEVICE_<RESOURCE>_INFO: PCI address -> its information. An error
// says what is wrong with the text (not JSON, not an object of objects); an entry whose values
// are not strings keeps the string ones.
absl::StatusOr<std::map<std::string, DeviceInfo>> ParseDeviceInfoJson(absl::string_view json);

}  // namespace skbnf::preflight

#endif  // SKBNF_SERVER_OPS_DEVICE_INFO_H_
