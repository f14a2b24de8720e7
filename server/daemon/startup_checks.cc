// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/startup_checks.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/dpdk/pool_sizing.h"
#include "dataplane/pool/layer_facts.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/daemon/test_hooks.h"
#include "server/ops/pci_env.h"
#include "server/ops/preflight_vdev.h"

ABSL_FLAG(bool, preflight, false,
          "Run the pod set-up checks (PCIDEVICE_* VFs and their drivers, /dev/vfio, mlx5 RDMA "
          "nodes and capabilities, memlock or CAP_IPC_LOCK, hugepages and the hugetlb cgroup "
          "limit, NUMA, the cgroup's cpuset and CPU quota, pool sizing), print the report and "
          "exit: 0 when "
          "no check errs, 1 otherwise. The normal start runs the same checks and refuses to start "
          "on an error.");
ABSL_FLAG(bool, skip_preflight, false,
          "Start without the pod set-up checks (for a node they misjudge; EAL's own errors are "
          "then all there is).");

namespace skbnf::control {
namespace {

// Bytes per mbuf in the pool: RTE_MBUF_DEFAULT_BUF_SIZE (2176) + struct rte_mbuf (128) + the
// mempool object header (64). An estimate for the memlock and hugepage checks.
constexpr uint64_t kMbufBytes = 2176 + 128 + 64;

// What skbnfd puts on hugepages (Request::hugepage_memory), an upper estimate checked against
// the heap EAL grows ("Heap on socket 0 was expanded by N MB", EAL debug log) on 2 MiB pages:
//   pool     skbnf: 64 KiB slabs of whole mbufs (27 per slab: 2.4% lost to the slab's tail,
//            dataplane/dpdk/skbnf_mempool.cc kSlabBytes); ring_mp_mc: the objects packed
//   l3       rte_lpm (DPDK 22.11 lib/lpm/rte_lpm.c rte_lpm_create): tbl24 2^24 x 4 B = 64 MiB,
//            rules max_rules x 8 B, tbl8 tbl8s x 256 x 4 B, plus 8 MiB of heap rounding
//   EAL      8 MiB: the heap's first pages, rings, the lcore-cache array, ethdev, memzones
// Measured (2 net_null ports, one worker): io, 14,464 mbufs: 38 MiB (estimate 41.5); io, 65,536:
// 156 MiB (160); l3, 8,192: 106 MiB (114).
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kEalHugeBytes = 8 * kMiB;
constexpr uint64_t kSlabBytes = 64 * 1024;

struct HugeEstimate {
  uint64_t bytes = 0;
  std::string parts;
};

HugeEstimate HugepageBytes(const dpdk::EngineConfig& c, uint64_t populated) {
  uint64_t pool = populated * kMbufBytes;
  if (c.pool_ops == dpdk::PoolOps::kSkbnf) {
    const uint64_t per_slab = kSlabBytes / kMbufBytes;
    pool = (populated + per_slab - 1) / per_slab * kSlabBytes;
  }
  HugeEstimate e;
  e.bytes = pool + kEalHugeBytes;
  e.parts = absl::StrCat("pool ", populated, " mbufs ", preflight::FormatMib(pool));
  if (c.mode == dpdk::ForwardingMode::kL3) {
    const uint64_t lpm = (uint64_t{1} << 24) * 4 + uint64_t{c.lpm_max_rules} * 8 +
                         uint64_t{c.lpm_tbl8s} * 256 * 4 + 8 * kMiB;
    e.bytes += lpm;
    absl::StrAppend(&e.parts, " + l3 tables ", preflight::FormatMib(lpm));
  }
  absl::StrAppend(&e.parts, " + EAL, rings and caches ", preflight::FormatMib(kEalHugeBytes));
  return e;
}

// The value of EAL option `name` ("-l", "--lcores", "--huge-dir") in any of its spellings:
// "-l 0-3", "-l0-3", "--lcores=0-3", "--lcores 0-3". The last one wins, as in EAL.
std::optional<std::string> EalOption(const std::vector<std::string>& args,
                                     const std::string& name) {
  std::optional<std::string> v;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == name && i + 1 < args.size()) {
      v = args[++i];
    } else if (name.size() == 2 && a.size() > 2 && absl::StartsWith(a, name)) {
      v = a.substr(2);
    } else if (absl::StartsWith(a, name + "=")) {
      v = a.substr(name.size() + 1);
    }
  }
  return v;
}

uint64_t CountPorts(const std::vector<std::string>& args) {
  uint64_t n = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-a" || a == "--allow" || a == "-w" || a == "--vdev") {
      ++n;
      ++i;
    } else if (absl::StartsWith(a, "--vdev=") || absl::StartsWith(a, "--allow=") ||
               (a.size() > 2 && (absl::StartsWith(a, "-a") || absl::StartsWith(a, "-w")))) {
      ++n;
    }
  }
  return n;
}

// The most one worker's caches hold: DPDK's own lcore cache (its flush threshold, the lcache
// layer's formula) or the strategy's layers (pool::MaxHeld, the pool-share check's definition),
// a worker refilling one RX port of c.rx_ring descriptors.
// A port named by PCI address (or by network, resolved to one: `port net=access`) must be one of
// the VFs the device plugin handed the pod: --pcidevice-env allows only those to EAL, and the
// engine would fail after EAL with "no port".
void CheckPortsAreHandedIn(const preflight::Host& host, const dpdk::EngineConfig& c,
                           preflight::Report& r) {
  absl::StatusOr<std::vector<preflight::PciDevice>> devices =
      preflight::PciDevicesFromEnv(host.env);
  if (!devices.ok() || devices->empty()) return;  // pci_devices has said why
  std::vector<std::string> handed;
  for (const preflight::PciDevice& d : *devices) handed.push_back(d.address);
  for (const dpdk::PortSpec& p : c.ports) {
    if (!dpdk::ValidPciAddress(p.name)) continue;
    const std::string a = dpdk::FullPciAddress(p.name);
    if (std::find(handed.begin(), handed.end(), a) != handed.end()) {
      r.findings.push_back({preflight::Severity::kOk, "ports", absl::StrCat(a, " handed in")});
      continue;
    }
    r.findings.push_back(
        {preflight::Severity::kError, "ports",
         absl::StrCat("port ", a,
                      " (of the config, or of its network in the network-status) is not one of "
                      "the VFs the device plugin handed the pod (",
                      absl::StrJoin(handed, ", "),
                      "): request the network's resource in the container's limits, one VF per "
                      "network attachment")});
  }
}

}  // namespace

bool PreflightOnly() { return absl::GetFlag(FLAGS_preflight); }
bool SkipPreflight() { return absl::GetFlag(FLAGS_skip_preflight); }

uint64_t CountAfXdpPorts(const dpdk::EngineConfig& c, const std::vector<std::string>& eal) {
  constexpr absl::string_view kDriver = "net_af_xdp";  // the PMD's vdev name prefix
  uint64_t n = 0;
  if (!c.ports.empty()) {
    for (const dpdk::PortSpec& p : c.ports) n += absl::StartsWith(p.name, kDriver) ? 1 : 0;
    return n;
  }
  for (const std::string& v : preflight::VdevArgs(eal)) n += absl::StartsWith(v, kDriver) ? 1 : 0;
  return n;
}

preflight::PoolNeeds PoolNeedsOf(const dpdk::EngineConfig& c, uint64_t ports, uint64_t workers,
                                 uint64_t af_xdp_ports) {
  return dpdk::PoolNeedsOf(c, ports, workers, af_xdp_ports);
}

uint64_t PopulatedMbufs(const dpdk::EngineConfig& c, uint64_t ports, uint64_t workers,
                        uint64_t af_xdp_ports) {
  // As Engine::Impl::SetUpPool sizes it (dataplane/dpdk/pool_sizing.h).
  return dpdk::PoolMbufs(c, dpdk::PoolNeedsOf(c, ports, workers, af_xdp_ports));
}

preflight::Report RunStartupChecks(const preflight::Host& host, const dpdk::EngineConfig& c,
                                   const std::vector<std::string>& eal, bool pci_devices_from_env) {
  preflight::Request req;
  req.pci_devices_from_env = pci_devices_from_env;
  req.hugepages = std::find(eal.begin(), eal.end(), "--no-huge") == eal.end();
  req.hugepage_size = 0;  // the --huge-dir mount's, else the default size
  req.huge_dir = EalOption(eal, "--huge-dir").value_or("");
  req.in_memory = std::find(eal.begin(), eal.end(), "--in-memory") != eal.end();
  std::optional<std::string> list = EalOption(eal, "-l");
  if (!list) list = EalOption(eal, "--lcores");
  if (list && list->find_first_of("@()") == std::string::npos) {
    if (auto l = preflight::ParseCpuList(*list); l.ok()) req.lcores = *l;
  }

  // Ports and workers as the engine will have them.
  uint64_t ports = !c.ports.empty() ? c.ports.size() : CountPorts(eal);
  uint64_t workers = c.workers.size();
  if (workers == 0) {
    std::vector<int> lcores = req.lcores;
    if (lcores.empty()) {
      if (auto a = preflight::AllowedCpus(host); a.ok()) lcores = *a;
    }
    workers = lcores.size() > 1 ? lcores.size() - 1 : 1;
  }
  const uint64_t af_xdp_ports = CountAfXdpPorts(c, eal);
  const uint64_t populated = PopulatedMbufs(c, ports, workers, af_xdp_ports);
  // Memory is locked for DMA only with hugepages (VFIO, mlx5); --no-huge runs vdevs.
  req.pool_memory = req.hugepages ? populated * kMbufBytes : 0;
  if (req.hugepages) {
    HugeEstimate huge = HugepageBytes(c, populated);
    // EAL's -m / --socket-mem is taken at start whatever skbnfd then uses.
    if (std::optional<std::string> m = EalOption(eal, "-m")) {
      uint64_t mb = 0;
      if (absl::SimpleAtoi(*m, &mb) && mb * kMiB > huge.bytes) {
        huge = {mb * kMiB, absl::StrCat("EAL -m ", mb)};
      }
    }
    req.hugepage_memory = huge.bytes;
    req.hugepage_memory_parts = huge.parts;
  }

  preflight::Report r = preflight::Run(host, req);
  if (pci_devices_from_env) CheckPortsAreHandedIn(host, c, r);
  for (preflight::Finding& f : preflight::CheckVdevs(eal)) r.findings.push_back(std::move(f));
  if (ports > 0) {
    r.findings.push_back(preflight::CheckPoolSizing(
        dpdk::PoolNeedsOf(c, ports, workers, af_xdp_ports), populated));
  }
  return r;
}

std::optional<int> PreflightGate(const dpdk::EngineConfig& c,
                                 const std::vector<std::string>& eal_args,
                                 bool pci_devices_from_env) {
  if (!PreflightOnly() && SkipPreflight()) return std::nullopt;
  preflight::Host host = preflight::Host::FromProcess();
  host.root = PreflightRoot();
  const preflight::Report report =
      RunStartupChecks(host, c, {eal_args.begin() + (eal_args.empty() ? 0 : 1), eal_args.end()},
                       pci_devices_from_env);
  if (PreflightOnly()) {
    std::fputs(report.ToText().c_str(), stdout);
    return report.ok() ? 0 : 1;
  }
  for (const preflight::Finding& f : report.findings) {
    if (f.severity == preflight::Severity::kRisk) {
      std::fprintf(stderr, "skbnfd: preflight warning: %s: %s\n", f.check.c_str(),
                   f.message.c_str());
    }
  }
  if (report.ok()) return std::nullopt;
  std::fprintf(stderr, "skbnfd: preflight: %d error(s), start-up refused:\n", report.errors());
  for (const preflight::Finding& f : report.findings) {
    if (f.severity == preflight::Severity::kError) {
      std::fprintf(stderr, "skbnfd: preflight error: %s: %s\n", f.check.c_str(), f.message.c_str());
    }
  }
  std::fprintf(stderr,
               "skbnfd: `skbnfd --preflight` (same flags) prints every check; --skip-preflight "
               "starts without them\n");
  return 2;
}

}  // namespace skbnf::control
