// SPDX-License-Identifier: BSD-3-Clause
// The pod's Multus network-status: which PCI address belongs to which network, so the config
// names ports by network (`port net=access`) and the order of the device plugin's variables
// does not matter.
//
// Multus writes the pod annotation k8s.v1.cni.cncf.io/network-status after its CNI ADD: a JSON
// list, one entry per attachment, each json.MarshalIndent'ed with 4 spaces and joined with ","
// (k8snetworkplumbingwg/network-attachment-definition-client, pkg/utils/net-attach-def.go
// SetNetworkStatus; the type is pkg/apis/k8s.cni.cncf.io/v1/types.go NetworkStatus):
//
//   {"name": "skbnf/access",            <namespace>/<net-attach-def> (multus-cni
//                                        pkg/types/conf.go); the cluster default network has
//                                        its CNI config name ("k8s-pod-network", "cbr0")
//    "interface": "net1", "ips": [...], "mac": "...", "mtu": 1500, "default": true, "dns": {},
//    "gateway": [...],
//    "device-info": {"type": "pci", "version": "1.1.0",        NPWG device-info spec
//                    "pci": {"pci-address": "0000:3b:02.0",   (k8snetworkplumbingwg/
//                            "pf-pci-address": "...",           device-info-spec SPEC.md 3.1.3,
//                            "rdma-device": "...", "vhost-net": "...",          6.1)
//                            "representor-device": "..."}}}
//
// The pod sees it through a downward-API volume. Two forms are read: the annotation alone
// (fieldRef metadata.annotations['k8s.v1.cni.cncf.io/network-status']: the file is the JSON),
// and all annotations (fieldRef metadata.annotations: lines key="Go-quoted value").
//
// The annotation can land after the container starts (the kubelet refreshes downward-API files
// on its sync period): a file that is missing or empty is waited for, polled every 100 ms up to
// a timeout, then refused naming the file. A file that is there but not this shape is refused at
// once.
//
// Network names: `net=access` matches "access" and "<any namespace>/access"; `net=ns/access`
// only "ns/access"; `@net1` picks the attachment on interface net1 (a network attached twice
// has two entries of the same name). No match, two matches, or a network without a PCI device
// is an error that lists the networks the pod has.
#ifndef SKBNF_SERVER_OPS_NETWORK_STATUS_H_
#define SKBNF_SERVER_OPS_NETWORK_STATUS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace skbnf::preflight {

struct NetworkAttachment {
  std::string name;         // "skbnf/access"
  std::string interface;    // "net1"; may be empty (the default network)
  std::string device_type;  // device-info type: "pci", "vdpa", ...; empty without device-info
  std::string pci_address;  // device-info.pci.pci-address; empty when none
  bool is_default = false;
};

// The annotation's value (a JSON list), or the all-annotations file form.
absl::StatusOr<std::vector<NetworkAttachment>> ParseNetworkStatus(absl::string_view text);

// Reads `path`, waiting up to `timeout` while it is missing or empty (polling every 100 ms).
absl::StatusOr<std::vector<NetworkAttachment>> ReadNetworkStatusFile(const std::string& path,
                                                                     absl::Duration timeout);

// The PCI address of `network` ("access", "ns/access", "access@net1"); the error lists the
// networks in `status`.
absl::StatusOr<std::string> PciAddressOfNetwork(const std::vector<NetworkAttachment>& status,
                                                absl::string_view network);

}  // namespace skbnf::preflight

#endif  // SKBNF_SERVER_OPS_NETWORK_STATUS_H_
