#include "server/preflight.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace skbnf::preflight {
namespace {

namespace fs = std::filesystem;

std::string Path(const Host& h, absl::string_view abs) {
  std::string r = h.root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  return absl::StrCat(r, abs);
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::optional<int64_t> ReadInt(const std::string& path) {
  auto t = ReadFile(path);
  int64_t v;
  if (!t || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*t), &v)) return std::nullopt;
  return v;
}

// Basename of a symlink's target ("" when it is not a symlink).
std::string LinkName(const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(path, ec);
  return ec ? std::string() : target.filename().string();
}

std::string Mib(uint64_t bytes) {
  if (bytes < (1u << 20)) return absl::StrCat(bytes >> 10, " KiB");
  if (bytes % (1u << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1u << 20));
}

std::string PageSizeName(uint64_t bytes) {
  return bytes >= (1u << 30) ? absl::StrCat(bytes >> 30, "G") : absl::StrCat(bytes >> 20, "M");
}

// hugetlbfs "pagesize=" option: 2M, 2048k, 1G, 1024M.
std::optional<uint64_t> ParseSize(absl::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t mult = 1;
  switch (absl::ascii_tolower(s.back())) {
    case 'k':
      mult = 1ull << 10;
      break;
    case 'm':
      mult = 1ull << 20;
      break;
    case 'g':
      mult = 1ull << 30;
      break;
    default:
      break;
  }
  if (mult != 1) s.remove_suffix(1);
  uint64_t v;
  if (!absl::SimpleAtoi(s, &v)) return std::nullopt;
  return v * mult;
}

bool ValidPciAddress(absl::string_view a) {
  // [dddd:]bb:dd.f, hex digits
  std::vector<absl::string_view> parts = absl::StrSplit(a, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0000");
  if (parts.size() != 3 || parts[0].size() != 4 || parts[1].size() != 2) return false;
  std::vector<absl::string_view> df = absl::StrSplit(parts[2], '.');
  if (df.size() != 2 || df[0].size() != 2 || df[1].size() != 1) return false;
  for (absl::string_view p : {parts[0], parts[1], df[0], df[1]}) {
    for (char c : p) {
      if (!absl::ascii_isxdigit(c)) return false;
    }
  }
  return true;
}

std::string FullPciAddress(absl::string_view a) {
  return std::count(a.begin(), a.end(), ':') == 1 ? absl::StrCat("0000:", a) : std::string(a);
}

std::set<int> NumaNodesOfCpus(const Host& h, const std::vector<int>& cpus) {
  std::set<int> nodes;
  for (int cpu : cpus) {
    std::error_code ec;
    for (const auto& e :
         fs::directory_iterator(Path(h, absl::StrCat("/sys/devices/system/cpu/cpu", cpu)), ec)) {
      const std::string n = e.path().filename().string();
      int node;
      if (n.rfind("node", 0) == 0 && absl::SimpleAtoi(n.substr(4), &node)) nodes.insert(node);
    }
  }
  return nodes;
}

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "ok";
    case Severity::kRisk:
      return "warn";
    default:
      return "error";
  }
}

bool Report::ok() const { return errors() == 0; }

int Report::errors() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::kError;
  }));
}

int Report::risks() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::kRisk;
  }));
}

std::string Report::ToText() const {
  std::string out;
  for (const Finding& f : findings) {
    absl::StrAppend(
        &out, SeverityName(f.severity), std::string(7 - std::strlen(SeverityName(f.severity)), ' '),
        f.check, std::string(f.check.size() < 12 ? 12 - f.check.size() : 1, ' '), f.message, "\n");
  }
  absl::StrAppend(&out, "preflight: ", errors(), " error(s), ", risks(), " warning(s)\n");
  return out;
}

Host Host::FromProcess() {
  Host h;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    absl::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq != absl::string_view::npos)
      h.env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    h.memlock_limit = rl.rlim_cur;
  }
  return h;
}

absl::StatusOr<std::vector<PciDevice>> PciDevicesFromEnv(
    const std::map<std::string, std::string>& env) {
  std::vector<PciDevice> out;
  for (const auto& [name, value] : env) {  // std::map: sorted by variable name
    if (name.rfind("PCIDEVICE_", 0) != 0) continue;
    for (absl::string_view a : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      a = absl::StripAsciiWhitespace(a);
      if (!ValidPciAddress(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "=", value, ": '", a, "' is not a PCI address ([dddd:]bb:dd.f)"));
      }
      out.push_back({name, FullPciAddress(a)});
    }
  }
  return out;
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::set<int> cpus;
  text = absl::StripAsciiWhitespace(text);
  for (absl::string_view r : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> ab = absl::StrSplit(r, '-');
    int a, b;
    if (ab.size() > 2 || !absl::SimpleAtoi(ab[0], &a) ||
        !absl::SimpleAtoi(ab.size() == 2 ? ab[1] : ab[0], &b) || a < 0 || b < a || b > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", text, "' at '", r, "'"));
    }
    for (int c = a; c <= b; ++c) cpus.insert(c);
  }
  if (cpus.empty()) return absl::InvalidArgumentError("empty CPU list");
  return std::vector<int>(cpus.begin(), cpus.end());
}

absl::StatusOr<std::vector<int>> AllowedCpus(const Host& h) {
  if (auto cg = ReadFile(Path(h, "/proc/self/cgroup"))) {
    // v2: "0::/kubepods/pod.../ctr"; v1: "4:cpuset:/kubepods/...".
    std::optional<std::string> v2, v1;
    for (absl::string_view line : absl::StrSplit(*cg, '\n', absl::SkipEmpty())) {
      std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (f.size() != 3) continue;
      if (f[0] == "0" && f[1].empty()) v2 = f[2];
      for (absl::string_view c : absl::StrSplit(f[1], ',')) {
        if (c == "cpuset") v1 = f[2];
      }
    }
    std::vector<std::string> candidates;
    if (v2) {
      candidates.push_back(Path(h, absl::StrCat("/sys/fs/cgroup", *v2, "/cpuset.cpus.effective")));
      candidates.push_back(Path(h, "/sys/fs/cgroup/cpuset.cpus.effective"));  // cgroupns root
    }
    if (v1) {
      candidates.push_back(Path(h, absl::StrCat("/sys/fs/cgroup/cpuset", *v1, "/cpuset.cpus")));
      candidates.push_back(Path(h, "/sys/fs/cgroup/cpuset/cpuset.cpus"));
    }
    for (const std::string& p : candidates) {
      auto t = ReadFile(p);
      if (t && !absl::StripAsciiWhitespace(*t).empty()) {
        auto cpus = ParseCpuList(*t);
        if (!cpus.ok())
          return absl::InvalidArgumentError(absl::StrCat(p, ": ", cpus.status().message()));
        return cpus;
      }
    }
  }
  auto online = ReadFile(Path(h, "/sys/devices/system/cpu/online"));
  if (!online) return absl::NotFoundError("no cgroup cpuset and no /sys/devices/system/cpu/online");
  return ParseCpuList(*online);
}

uint64_t MinPoolObjects(const PoolNeeds& n) {
  return n.ports * n.rx_queues_per_port * n.rx_ring + n.ports * n.tx_queues_per_port * n.tx_ring +
         n.workers * n.per_core_capacity + n.workers * n.burst;
}

Finding CheckPoolSizing(const PoolNeeds& n, uint64_t populated) {
  const uint64_t need = MinPoolObjects(n);
  std::string why =
      absl::StrCat(need, " needed = RX ", n.ports, " ports x ", n.rx_queues_per_port, " queues x ",
                   n.rx_ring, " + TX ", n.ports, " x ", n.tx_queues_per_port, " x ", n.tx_ring,
                   " + ", n.workers, " workers x ", n.per_core_capacity, " per-core layers + ",
                   n.workers, " workers x ", n.burst, " burst");
  if (populated < need) {
    return {Severity::kError, "pool_sizing",
            absl::StrCat("pool of ", populated, " objects < ", why, ": raise --mbufs to at least ",
                         need, " (or shrink the rings / the strategy's per-core layers)")};
  }
  return {Severity::kOk, "pool_sizing", absl::StrCat("pool of ", populated, " objects >= ", why)};
}

Report Run(const Host& h, const Request& req) {
  Report r;
  auto add = [&](Severity s, const char* check, std::string msg) {
    r.findings.push_back({s, check, std::move(msg)});
  };

  // Devices and their drivers.
  std::vector<PciDevice> devices;
  if (req.pci_devices_from_env) {
    auto d = PciDevicesFromEnv(h.env);
    if (!d.ok()) {
      add(Severity::kError, "pci_devices", std::string(d.status().message()));
    } else if (d->empty()) {
      add(Severity::kError, "pci_devices",
          "no PCIDEVICE_* variable: the pod got no VF. Request the device plugin's resource "
          "(e.g. intel.com/intel_sriov_dpdk: 2) in the container's limits, and check that the "
          "plugin's resourcePrefix/resourceName match it");
    } else {
      devices = *d;
      std::vector<std::string> names;
      for (const PciDevice& p : devices)
        names.push_back(absl::StrCat(p.address, " (", p.variable, ")"));
      add(Severity::kOk, "pci_devices", absl::StrJoin(names, ", "));
    }
  }
  std::vector<std::string> vfio_groups;
  for (const PciDevice& d : devices) {
    const std::string dev = Path(h, absl::StrCat("/sys/bus/pci/devices/", d.address));
    if (!fs::exists(dev)) {
      add(Severity::kError, "vf_driver",
          absl::StrCat(d.address,
                       " is not in /sys/bus/pci/devices: the VF is not visible in the "
                       "container (is /sys mounted read-only from the host?)"));
      continue;
    }
    const std::string driver = LinkName(dev + "/driver");
    if (driver == "vfio-pci") {
      add(Severity::kOk, "vf_driver", absl::StrCat(d.address, " bound to vfio-pci"));
      std::string group = LinkName(dev + "/iommu_group");
      if (group.empty()) {
        add(Severity::kError, "vfio",
            absl::StrCat(d.address,
                         " has no IOMMU group: enable the IOMMU (intel_iommu=on "
                         "iommu=pt on the kernel command line)"));
      } else {
        vfio_groups.push_back(group);
      }
    } else if (driver == "mlx5_core") {
      add(Severity::kOk, "vf_driver",
          absl::StrCat(d.address, " bound to mlx5_core (bifurcated: no vfio needed)"));
    } else if (driver == "igb_uio" || driver == "uio_pci_generic") {
      add(Severity::kRisk, "vf_driver",
          absl::StrCat(d.address, " bound to ", driver,
                       ": works, but without IOMMU protection; bind VFs to vfio-pci"));
    } else if (driver.empty()) {
      add(Severity::kError, "vf_driver",
          absl::StrCat(d.address,
                       " is bound to no driver: bind it to vfio-pci (the SR-IOV "
                       "device plugin's selector: drivers: [vfio-pci])"));
    } else {
      add(Severity::kError, "vf_driver",
          absl::StrCat(d.address, " is bound to the kernel driver ", driver,
                       ": DPDK cannot drive it. Bind the VFs to vfio-pci and select them in the "
                       "device plugin's resource pool with drivers: [vfio-pci] (mlx5 VFs stay "
                       "on mlx5_core)"));
    }
  }
  if (!vfio_groups.empty()) {
    std::vector<std::string> nodes = {"/dev/vfio/vfio"};
    for (const std::string& g : vfio_groups) nodes.push_back(absl::StrCat("/dev/vfio/", g));
    std::vector<std::string> bad;
    for (const std::string& n : nodes) {
      const std::string p = Path(h, n);
      if (!fs::exists(p) || access(p.c_str(), R_OK | W_OK) != 0) bad.push_back(n);
    }
    if (bad.empty()) {
      add(Severity::kOk, "vfio", absl::StrCat(absl::StrJoin(nodes, ", "), " read-writable"));
    } else {
      add(Severity::kError, "vfio",
          absl::StrCat(absl::StrJoin(bad, ", "),
                       " missing or not read-writable: the device plugin adds them when the pod "
                       "requests its resource; a non-root user needs them owned by or shared "
                       "with its uid/gid"));
    }
  }

  // Locked memory.
  if (h.memlock_limit && req.pool_memory > 0 && *h.memlock_limit < req.pool_memory) {
    add(vfio_groups.empty() ? Severity::kRisk : Severity::kError, "memlock",
        absl::StrCat("RLIMIT_MEMLOCK ", Mib(*h.memlock_limit), " < ", Mib(req.pool_memory),
                     " the pool needs", vfio_groups.empty() ? "" : " (VFIO maps it locked for DMA)",
                     ": give the container the IPC_LOCK capability, or raise the memlock limit "
                     "(container runtime: LimitMEMLOCK=infinity / --ulimit memlock=-1)"));
  } else {
    add(Severity::kOk, "memlock",
        h.memlock_limit ? absl::StrCat("RLIMIT_MEMLOCK ", Mib(*h.memlock_limit))
                        : std::string("RLIMIT_MEMLOCK unlimited"));
  }

  // CPUs: the cgroup's cpuset, the lcores, their NUMA nodes.
  std::vector<int> lcores = req.lcores;
  auto allowed = AllowedCpus(h);
  if (!allowed.ok()) {
    add(Severity::kRisk, "cpuset",
        absl::StrCat("cannot read the CPU set: ", allowed.status().message()));
  } else if (!lcores.empty()) {
    std::vector<int> outside;
    for (int c : lcores) {
      if (!std::binary_search(allowed->begin(), allowed->end(), c)) outside.push_back(c);
    }
    if (!outside.empty()) {
      add(Severity::kError, "cpuset",
          absl::StrCat("-l names CPU ", absl::StrJoin(outside, ","),
                       " but the container may run only on ", absl::StrJoin(*allowed, ","),
                       " (its cgroup cpuset; EAL would fail with \"Cannot set affinity\"): drop -l "
                       "so skbnfd takes the cpuset the CPU manager granted"));
    } else {
      add(Severity::kOk, "cpuset",
          absl::StrCat("-l ", absl::StrJoin(lcores, ","), " within ",
                       absl::StrJoin(*allowed, ",")));
    }
  } else {
    lcores = *allowed;
    if (lcores.size() < 2) {
      add(Severity::kRisk, "cpuset",
          absl::StrCat("only CPU ", absl::StrJoin(lcores, ","),
                       " is allowed: no core is left for a worker besides the main lcore. Request "
                       "at least 2 whole CPUs with requests = limits (Guaranteed QoS)"));
    } else {
      add(Severity::kOk, "cpuset",
          absl::StrCat("lcores from the cpuset: main ", lcores[0], ", workers ",
                       absl::StrJoin(std::vector<int>(lcores.begin() + 1, lcores.end()), ",")));
    }
  }
  std::vector<int> workers =
      lcores.size() > 1 ? std::vector<int>(lcores.begin() + 1, lcores.end()) : lcores;
  std::set<int> worker_nodes = NumaNodesOfCpus(h, workers);

  // Hugepages.
  if (req.hugepages) {
    uint64_t default_size = 0;
    if (auto mi = ReadFile(Path(h, "/proc/meminfo"))) {
      for (absl::string_view line : absl::StrSplit(*mi, '\n')) {
        if (absl::ConsumePrefix(&line, "Hugepagesize:")) {
          line = absl::StripAsciiWhitespace(line);
          absl::ConsumeSuffix(&line, " kB");
          uint64_t kb;
          if (absl::SimpleAtoi(line, &kb)) default_size = kb << 10;
        }
      }
    }
    std::vector<std::pair<std::string, uint64_t>> mounts;  // hugetlbfs: (mount point, size)
    if (auto m = ReadFile(Path(h, "/proc/mounts"))) {
      for (absl::string_view line : absl::StrSplit(*m, '\n', absl::SkipEmpty())) {
        std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
        if (f.size() < 4 || f[2] != "hugetlbfs") continue;
        uint64_t size = default_size;
        for (absl::string_view o : absl::StrSplit(f[3], ',')) {
          if (absl::ConsumePrefix(&o, "pagesize=")) size = ParseSize(o).value_or(0);
        }
        mounts.emplace_back(std::string(f[1]), size);
      }
    }
    std::string dir = req.huge_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    uint64_t page_size = req.hugepage_size;
    bool mounted = false;
    for (const auto& [where, size] : mounts) {
      if (!dir.empty() && where != dir) continue;
      if (req.hugepage_size == 0) {
        // Auto: the --huge-dir mount's size; without one, the default size's mount, else the
        // first.
        if (!mounted || size == default_size) page_size = size;
        mounted = true;
      } else if (size == page_size) {
        mounted = true;
      }
    }
    if (page_size == 0) page_size = default_size != 0 ? default_size : (2u << 20);
    const std::string want = PageSizeName(page_size);
    if (!mounted && !dir.empty()) {
      add(Severity::kError, "hugepages",
          absl::StrCat("--huge-dir=", req.huge_dir, " is not a hugetlbfs mount",
                       req.hugepage_size != 0 ? absl::StrCat(" with ", want, " pages") : "",
                       ": mount an emptyDir with medium: HugePages-", want,
                       "i there and request hugepages-", want,
                       "i in the limits (or run with --no-huge)"));
    } else if (!mounted) {
      add(Severity::kError, "hugepages",
          absl::StrCat(
              "no hugetlbfs mount with ", want, " pages: mount an emptyDir with medium: HugePages-",
              want, "i and request hugepages-", want, "i in the limits (or run with --no-huge)"));
    } else {
      const uint64_t kb = page_size >> 10;
      uint64_t free_pages = 0;
      std::vector<std::string> per_node;
      std::set<int> nodes = worker_nodes;
      if (req.pool_socket >= 0) nodes = {req.pool_socket};
      for (int n : nodes) {
        auto v = ReadInt(Path(h, absl::StrCat("/sys/devices/system/node/node", n,
                                              "/hugepages/hugepages-", kb, "kB/free_hugepages")));
        if (v) {
          free_pages += static_cast<uint64_t>(*v);
          per_node.push_back(absl::StrCat(*v, " on node ", n));
        }
      }
      if (per_node.empty()) {  // no NUMA information: the machine-wide count
        auto v = ReadInt(
            Path(h, absl::StrCat("/sys/kernel/mm/hugepages/hugepages-", kb, "kB/free_hugepages")));
        if (v) {
          free_pages = static_cast<uint64_t>(*v);
          per_node.push_back(absl::StrCat(*v, " machine-wide"));
        }
      }
      const uint64_t free_bytes = free_pages * page_size;
      if (req.pool_memory > 0 && free_bytes < req.pool_memory) {
        add(Severity::kError, "hugepages",
            absl::StrCat("free ", want, " pages: ", absl::StrJoin(per_node, ", "), " = ",
                         Mib(free_bytes), " < ", Mib(req.pool_memory),
                         " the pool needs on the workers' node: raise hugepages-", want,
                         "i in the pod's limits (and the node's reserved pages on that node), or "
                         "lower --mbufs"));
      } else {
        add(Severity::kOk, "hugepages",
            absl::StrCat(
                "hugetlbfs ", want, " mounted; free pages: ",
                per_node.empty() ? std::string("unknown") : absl::StrJoin(per_node, ", ")));
      }
    }
  }

  // NUMA: NIC vs workers vs pool.
  for (const PciDevice& d : devices) {
    auto node = ReadInt(Path(h, absl::StrCat("/sys/bus/pci/devices/", d.address, "/numa_node")));
    if (!node || *node < 0 || worker_nodes.empty()) continue;
    if (!worker_nodes.count(static_cast<int>(*node))) {
      add(Severity::kRisk, "numa",
          absl::StrCat(d.address, " is on NUMA node ", *node, ", the workers on node ",
                       absl::StrJoin(worker_nodes, ","),
                       ": every packet crosses the socket interconnect. Use the kubelet's "
                       "topology manager (policy single-numa-node) so VFs, CPUs and hugepages "
                       "come from one node"));
    } else if (req.pool_socket >= 0 && req.pool_socket != *node) {
      add(Severity::kRisk, "numa",
          absl::StrCat(d.address, " is on NUMA node ", *node, " but the pool is on socket ",
                       req.pool_socket, ": put the pool on the NIC's node"));
    } else {
      add(Severity::kOk, "numa", absl::StrCat(d.address, " and the workers on NUMA node ", *node));
    }
  }
  return r;
}

}  // namespace skbnf::preflight
