// SPDX-License-Identifier: BSD-3-Clause
// Preflight of EAL `--vdev` arguments: the virtual-device mistakes EAL and the PMD do not report
// at start-up (server/daemon/startup_checks.cc adds this finding to the preflight report).
//
//   check             reads                          risk when
//   vdev_memory       --vdev net_virtio_user*,path=  a vhost-user virtio_user port without
//                     (not /dev/vhost-*: vhost-user)  --single-file-segments or --legacy-mem, or
//                                                     with --no-huge
//   vdev_queue_size   the same vdevs                  no queue_size=: virtio_user's rings are
//                                                     then 256 descriptors whatever --rx-ring
//                                                     says (VIRTIO_USER_DEF_Q_SZ,
//                                                     virtio_user_ethdev.c), and the vhost-user
//                                                     peer (OVS) counts ovs_tx_failure_drops
//                                                     whenever the worker falls 256 frames behind
//   vdev_memif        --vdev net_memif*               zero-copy=yes: memif's rings keep mbufs of
//                     (only when given)               the pool after close (DPDK 22.11
//                                                     rte_eth_memif.c frees none), the exit audit
//                                                     fails: write zero-copy=no (copy mode)
//
// Why a warning here and a refusal in the engine: EAL's memory layout is only known after EAL
// runs (dataplane/dpdk/port_setup.cc, Engine::Impl::CheckStartable, counts the regions exactly
// and refuses to start the port); the warning says it before EAL, where the flag is written.
// Without the flag, DPDK 22.11's virtio_user logs "Too many memory regions" / "Failed to start
// device", reports link up and forwards nothing (issue 22).
#ifndef SKBNF_SERVER_OPS_PREFLIGHT_VDEV_H_
#define SKBNF_SERVER_OPS_PREFLIGHT_VDEV_H_

#include <string>
#include <vector>

#include "server/ops/preflight.h"

namespace skbnf::preflight {

// `eal` without the program name. vdev_memory: kOk when no vhost-user virtio_user vdev is given
// or the memory flags fit it, kRisk naming the vdev and the flag to add otherwise.
// vdev_queue_size (only when such vdevs are given): kRisk naming those without queue_size=.
// vdev_memif (only when net_memif vdevs are given): kRisk naming those with zero-copy=yes.
std::vector<Finding> CheckVdevs(const std::vector<std::string>& eal);

// The argument of every --vdev in `eal` (both spellings, `--vdev X` and `--vdev=X`), in order:
// "net_af_xdp0,iface=xa".
std::vector<std::string> VdevArgs(const std::vector<std::string>& eal);

}  // namespace skbnf::preflight

#endif  // SKBNF_SERVER_OPS_PREFLIGHT_VDEV_H_
