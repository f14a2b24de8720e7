// SPDX-License-Identifier: BSD-3-Clause
// Preflight: the pod set-up mistakes DPDK users on SR-IOV nodes hit most, found before EAL
// runs, each with a message saying what to change.
//
// EAL's own errors for these ("Cannot set affinity", "No free hugepages reported", "VFIO group
// is not viable", "Cannot allocate memory" deep inside mempool creation) name the symptom, not
// the pod spec line that causes it. Preflight reads the same facts first:
//
//   check        reads                                             error when / risk when
//   pci_devices  PCIDEVICE_<PREFIX>_<NAME>=addr[,addr]  (any device  none set while ports are to
//                plugin prefix) and PCIDEVICE_<..>_INFO, the plugin's come from them / bad address;
//                device information (server/ops/device_info.h)           _INFO unreadable (a risk:
//                                                                    the checks use sysfs)
//   vf_driver    <sys>/bus/pci/devices/<addr>/driver -> vfio-pci     kernel netdev driver (iavf,
//                ok; mlx5_core ok (bifurcated, no vfio needed)       ixgbevf, ...) or none /
//                                                                    igb_uio, uio_pci_generic
//   vfio         /dev/vfio/vfio and the group node (_INFO's vfio     missing or not read-writable
//                dev-mount, else /dev/vfio/<iommu_group>) exist and
//                are read-writable, for every vfio-pci VF
//   rdma         mlx5_core VFs: the RDMA nodes _INFO's rdma entry    none listed (isRdma unset) /
//                lists (else <sys>/.../infiniband_verbs/uverbsN)     missing or not read-
//                exist and are read-writable; NET_RAW and NET_ADMIN  writable / capability
//                in the effective capabilities (DPDK mlx5 guide)     missing
//   memlock      CAP_IPC_LOCK in the effective capabilities (then    lower than needed and no
//                the limit does not apply), else RLIMIT_MEMLOCK      IPC_LOCK
//                against the pool's memory (VFIO maps it locked)
//   hugepages    /proc/mounts has hugetlbfs with the asked page      not mounted / the hugetlb
//                size; the pod's hugetlb cgroup limit for that size  cgroup limit or the free
//                (v2 hugetlb.<size>.max, v1 .limit_in_bytes, minus   pages on the node below
//                usage, the lowest of the cgroup and its parents);   what skbnfd needs
//                free pages on the workers' NUMA nodes; against      (Request::hugepage_memory:
//                what skbnfd puts on hugepages, the error naming it  pool + tables + EAL), in
//                in pages and the nr_hugepages command that gets     pages, with the command
//                them (sysfs, the node's file when one node counts)  and the pod's limit
//                Stale hugepage files (*map_* in the mount EAL uses, no process holding their
//                flock: left by a DPDK process that stopped, or was killed with its pages
//                still in them) count as free:
//                EAL removes them at start (DPDK 22.11 lib/eal/linux/eal_hugepage_info.c,
//                clear_hugedir, not with --in-memory); a warning names them.
//   numa         NIC numa_node vs worker cores' nodes vs pool socket  -            / they differ
//   cpuset       the cgroup's effective cpuset (v2 or v1): lcores     -l names a CPU outside it
//                from it when no list is given (first = main)        (error) / one CPU only
//   cpu_quota    the cgroup's CFS quota (v2 cpu.max "$MAX $PERIOD",  quota below the lcores
//                v1 cpu.cfs_quota_us / cpu.cfs_period_us)            (CPU manager not static)
//   pool_sizing  populated >= RX + TX descriptors + workers x per-   below: refusal naming
//                core layer capacity + workers x burst (in flight)   every number
//
// Capabilities are the CapEff line of <root>/proc/self/status: the kernel's rendering of the
// effective set capget(2) returns, read like every other fact so a fake node states them too.
// cgroup files as the kernel documents them: Documentation/admin-guide/cgroup-v2.rst (cpu.max,
// cpuset.cpus.effective, hugetlb.<hugepagesize>.max/.current: "max" = no limit),
// Documentation/admin-guide/cgroup-v1/hugetlb.rst (hugetlb.<hugepagesize>.limit_in_bytes /
// .usage_in_bytes; <hugepagesize> is "2MB", "1GB", "64KB"), Documentation/scheduler/sched-bwc.rst
// (cpu.cfs_quota_us, -1 = no limit, cpu.cfs_period_us).
//
// Everything is read under Host::root (default "/"), so tests run against fake sysfs, procfs,
// /dev and cgroup trees, and the environment is a map. MinPoolObjects is a pure function.
//
// Use from skbnfd's main (composition root):
//   skbnfd --preflight : Run(host, request) -> print report.ToText(), exit report.ok() ? 0 : 1
//   normal start       : same Run before rte_eal_init; refuse to start (exit 2, the text) on
//                        any error, print the risks as warnings and go on.
#ifndef SKBNF_SERVER_OPS_PREFLIGHT_H_
#define SKBNF_SERVER_OPS_PREFLIGHT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataplane/dpdk/pool_sizing.h"
#include "server/ops/device_info.h"

namespace skbnf::preflight {

enum class Severity { kOk, kRisk, kError };
const char* SeverityName(Severity s);  // "ok", "warn" (a risk), "error"

struct Finding {
  Severity severity = Severity::kOk;
  std::string check;    // e.g. "vf_driver"
  std::string message;  // what was found and, for risks and errors, what to change
};

struct Report {
  std::vector<Finding> findings;
  bool ok() const;  // no error (risks allowed)
  int errors() const;
  int risks() const;
  // One line per finding: "error  vf_driver  0000:3b:02.0 is bound to iavf ...".
  std::string ToText() const;
};

// The machine as seen from inside the container.
struct Host {
  std::string root = "/";                  // prefix of /sys, /proc, /dev
  std::map<std::string, std::string> env;  // the process environment
  // RLIMIT_MEMLOCK soft limit in bytes; nullopt = unlimited.
  std::optional<uint64_t> memlock_limit;
  static Host FromProcess();  // root "/", environ, getrlimit
};

// What skbnfd is about to ask EAL for.
struct Request {
  bool pci_devices_from_env = false;  // --pcidevice-env: ports are the PCIDEVICE_* VFs
  bool hugepages = true;              // false with --no-huge
  uint64_t hugepage_size = 2u << 20;  // bytes; 0: the page size of the huge_dir mount, or
                                      // (no huge_dir) of any hugetlbfs mount, the default first
  std::string huge_dir;               // EAL --huge-dir: must be a hugetlbfs mount point
  uint64_t pool_memory = 0;           // bytes the mbuf pool and rings need
  // Bytes skbnfd puts on hugepages: the pool and what EAL, the rings, caches and l3 tables take
  // besides (skbnfd's estimate: server/daemon/startup_checks.cc), with its parts for the
  // message ("pool 14464 mbufs 33.5 MiB + EAL, rings and caches 8 MiB"); 0: pool_memory. The
  // hugepage checks (free pages, the hugetlb cgroup) need this much, and an error names it in
  // pages and how to get them.
  uint64_t hugepage_memory = 0;
  std::string hugepage_memory_parts;
  // EAL --in-memory: its pages are memfd, not files, and EAL leaves the mount's files alone
  // (so stale ones are not counted as reclaimable, see Hugepages in the table above).
  bool in_memory = false;
  std::vector<int> lcores;            // -l list; empty: EAL's default (the cpuset)
  int pool_socket = -1;               // NUMA node of the pool; -1: the workers' node
};

// One VF handed in by the device plugin.
struct PciDevice {
  std::string variable;            // PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK
  std::string address;             // 0000:3b:02.0
  std::optional<DeviceInfo> info;  // its entry in PCIDEVICE_..._INFO, when the plugin wrote one
};

// The device plugin's variables (server/ops/pci_env.h): the devices, sorted by variable then
// listed order, with their _INFO entries; `warnings` says which _INFO could not be read and why
// (never an error). Error naming the variable for an address that is not [dddd:]bb:dd.f.
struct PciDeviceEnv {
  std::vector<PciDevice> devices;
  std::vector<std::string> warnings;
};
absl::StatusOr<PciDeviceEnv> ReadPciDeviceEnv(const std::map<std::string, std::string>& env);
// ReadPciDeviceEnv's devices.
absl::StatusOr<std::vector<PciDevice>> PciDevicesFromEnv(
    const std::map<std::string, std::string>& env);

// Effective capabilities (CapEff of <root>/proc/self/status), nullopt when unreadable.
std::optional<uint64_t> EffectiveCapabilities(const Host& host);

// "0-3,8,10-11" (cpuset list format) -> {0,1,2,3,8,10,11}; error on malformed text.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// The CPUs the container may run on: the cgroup's effective cpuset (v2: cpuset.cpus.effective
// of the cgroup in <root>/proc/self/cgroup; v1: the cpuset controller's cpuset.cpus), else
// <root>/sys/devices/system/cpu/online.
absl::StatusOr<std::vector<int>> AllowedCpus(const Host& host);

// "512 KiB", "38 MiB", "2.3 MiB": how the checks print a size.
std::string FormatMib(uint64_t bytes);

// Pool sizing: the objects a pool needs so that RX refill never starves by construction. One
// definition, the engine's (dataplane/dpdk/pool_sizing.h: net_af_xdp's 2,048 per RX queue, the
// default pool size made from the same need), used here as it is.
using dpdk::kAfXdpRxQueueMbufs;
using dpdk::MinPoolObjects;
using dpdk::PoolNeeds;
// ok, or an error naming every number: "pool of 8192 objects < 10304 needed = RX 2 ports x 1
// queue x 1024 + TX 2 x 1 x 1024 + 2 workers x 1024 per-core layers + 2 workers x 32 burst"
// (with AF_XDP ports: "RX 0 ports x 1 queues x 1024 + AF_XDP RX 2 ports x 1 queues x 2048 (the
// PMD's fill-ring reserve) + TX ...").
Finding CheckPoolSizing(const PoolNeeds& n, uint64_t populated);

// Every check above except pool sizing (which needs the engine's numbers).
Report Run(const Host& host, const Request& request);

}  // namespace skbnf::preflight

#endif  // SKBNF_SERVER_OPS_PREFLIGHT_H_
