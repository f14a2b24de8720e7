// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's configuration file: one directive per line, `#` starts a comment, words are
// separated by blanks. Flags given on the command line override the file.
//
//   mode l3                         io | mac | l3
//   strategy recycle+magazine       a strategy spec (see dataplane/pool/strategy_spec.h)
//   pool_ops skbnf                  skbnf | ring_mp_mc (the baseline)
//   mbuf_cache 256                  DPDK lcore cache of the ring_mp_mc baseline
//   mbufs 32768                     mbufs in the pool (default: sized from the rings)
//   burst 32
//   rx_ring 1024
//   tx_ring 1024
//   rx_queues 1                     RX queues per port
//   colour on                       slab colouring (on | off)
//   latency_sample_every 256        packet latency: 1 in N RX bursts timed, 0 off (at start;
//                                   `skbnfctl latency set` while running; a reload that changes
//                                   it says "needs restart": common/worker_perf.h)
//   slow_iteration_us 250           poll-loop iterations longer than this are logged
//   eal --no-huge -m 512 --vdev=net_null0 --vdev=net_null1   EAL arguments (appended; the
//                                   ones after `--` on the command line come after these)
//   port <name> [peer=<name>] [dst_mac=<mac>]
//                                   a port by ethdev name (vdev name, PCI address) or id; the
//                                   listed ports are the engine's, in order; without `peer`
//                                   they pair 0<->1, 2<->3, ... in that order
//   port net=<network> [peer=<name>] [dst_mac=<mac>]
//                                   a port by the Kubernetes network (Multus) its VF belongs
//                                   to: skbnfd looks the network up in the pod's
//                                   k8s.v1.cni.cncf.io/network-status annotation
//                                   (--network-status-file, server/ops/network_status.h) and uses
//                                   that network's device-info PCI address. <network> is
//                                   `name` or `namespace/name` (Multus writes the latter), with
//                                   `@<interface>` for one attachment of a network attached
//                                   twice (net=access@net2). Wherever a port is named (peer=,
//                                   worker, route) net=<network> names the same port, so the
//                                   file never needs a PCI address and the order of the
//                                   device plugin's variables does not matter.
//   worker <lcore> <port>[:<queue>] ...
//                                   a worker lcore and the RX queues it polls (default: every
//                                   non-main lcore, queues round-robin)
//   route <a.b.c.d/len> <port> <next-hop mac>
//                                   len 0..32; 0.0.0.0/0 is the default route
//   routes_random <count> <port> [seed=<n>] [min_len=<n>] [max_len=<n>]
//                                   <count> random prefixes inside 10.0.0.0/8 (the demo's
//                                   table), next hops 02:00:00:00:01:<00..0f> on <port>
//
// A complete example that runs here: server/daemon/skbnfd.conf.example.
#ifndef SKBNF_SERVER_OPS_CONFIG_H_
#define SKBNF_SERVER_OPS_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

struct DaemonConfig {
  EngineConfig engine;
  std::vector<std::string> eal;
};

// Parses the text of a config file; errors name the line.
absl::StatusOr<DaemonConfig> ParseConfig(absl::string_view text);
absl::StatusOr<DaemonConfig> LoadConfig(const std::string& path);

// EAL arguments for the devices a Kubernetes SR-IOV device plugin hands the pod: every
// environment variable PCIDEVICE_<RESOURCE>=<addr>[,<addr>...] becomes `-a <addr>` (sorted by
// variable name, then in the variable's order). Addresses must look like [dddd:]bb:dd.f. The
// plugin's PCIDEVICE_<RESOURCE>_INFO (device-information JSON, server/ops/pci_env.h) is
// not an address list and is skipped.
absl::StatusOr<std::vector<std::string>> EalArgsFromPciDeviceEnv(
    const std::vector<std::string>& environment);

// Ports named by network: "net=<network>" wherever a port is named.
inline constexpr absl::string_view kNetworkRefPrefix = "net=";
bool IsNetworkRef(absl::string_view port);
// Whether any port, peer, worker queue or route names its port by network.
bool UsesPortNetworks(const DaemonConfig& dc);
// Replaces every net=<network> with what `resolve(<network>)` gives (a PCI address); the error
// is resolve's, prefixed with where the reference is ("port net=access: ...").
absl::Status ResolvePortNetworks(
    DaemonConfig& dc,
    const std::function<absl::StatusOr<std::string>(absl::string_view network)>& resolve);

// `count` distinct random prefixes inside 10.0.0.0/8 with lengths in [min_len, max_len],
// next hops 02:00:00:00:01:<i % 16> on `port`. Deterministic for a seed.
std::vector<RouteSpec> RandomRoutes(uint32_t count, const std::string& port, uint64_t seed,
                                    uint8_t min_len = 16, uint8_t max_len = 24);

}  // namespace skbnf::dpdk

#endif  // SKBNF_SERVER_OPS_CONFIG_H_
