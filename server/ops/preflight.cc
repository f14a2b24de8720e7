// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/preflight.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
#include "server/ops/pci_env.h"

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

std::string Mib(uint64_t bytes) { return FormatMib(bytes); }

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

// A cgroup directory the container's files may be in, most specific first.
struct CgroupDir {
  std::string dir;  // under the root
  std::string top;  // its hierarchy's mount point: parents are looked at up to here
  bool v2 = false;
};

// From <root>/proc/self/cgroup. v2 ("0::/kubepods/pod.../ctr"): /sys/fs/cgroup<path>, then
// /sys/fs/cgroup itself (a cgroup namespace shows the container's cgroup as the root). v1
// ("4:cpu,cpuacct:/kubepods/..."): /sys/fs/cgroup/<controllers><path> and
// /sys/fs/cgroup/<controller><path> (the mount and its usual symlink), then their roots.
std::vector<CgroupDir> CgroupDirs(const Host& h, absl::string_view controller) {
  std::vector<CgroupDir> out;
  auto cg = ReadFile(Path(h, "/proc/self/cgroup"));
  if (!cg) return out;
  std::vector<CgroupDir> v1;
  for (absl::string_view line : absl::StrSplit(*cg, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    std::string path = f[2] == "/" ? "" : f[2];
    if (f[0] == "0" && f[1].empty()) {
      const std::string top = Path(h, "/sys/fs/cgroup");
      out.push_back({top + path, top, true});
      if (!path.empty()) out.push_back({top, top, true});
      continue;
    }
    std::vector<absl::string_view> ctrls = absl::StrSplit(f[1], ',');
    if (std::find(ctrls.begin(), ctrls.end(), controller) == ctrls.end()) continue;
    for (const std::string& mount : {f[1], std::string(controller)}) {
      const std::string top = Path(h, absl::StrCat("/sys/fs/cgroup/", mount));
      v1.push_back({top + path, top, false});
      if (!path.empty()) v1.push_back({top, top, false});
    }
  }
  out.insert(out.end(), v1.begin(), v1.end());
  return out;
}

std::string CpuRanges(const std::vector<int>& cpus) {  // {0,1,2,5} -> "0-2,5"
  std::vector<std::string> parts;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

// The kernel's name for a huge page size in hugetlb cgroup files (mm/hugetlb_cgroup.c mem_fmt).
std::string HugetlbSizeName(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return absl::StrCat(bytes >> 30, "GB");
  if (bytes >= (1ull << 20)) return absl::StrCat(bytes >> 20, "MB");
  return absl::StrCat(bytes >> 10, "KB");
}

bool ReadWritable(const Host& h, const std::string& node) {
  const std::string p = Path(h, node);
  return fs::exists(p) && access(p.c_str(), R_OK | W_OK) == 0;
}

// linux/capability.h
constexpr int kCapNetAdmin = 12;
constexpr int kCapNetRaw = 13;
constexpr int kCapIpcLock = 14;

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

absl::StatusOr<PciDeviceEnv> ReadPciDeviceEnv(const std::map<std::string, std::string>& env) {
  PciDeviceEnv out;
  std::map<std::string, std::pair<std::string, DeviceInfo>> info;  // address -> (variable, info)
  for (const dpdk::PciDeviceVariable& v : dpdk::PciDeviceVariables(env)) {
    if (v.info) {
      absl::StatusOr<std::map<std::string, DeviceInfo>> parsed = ParseDeviceInfoJson(v.value);
      if (!parsed.ok()) {
        out.warnings.push_back(
            absl::StrCat(v.name, " (the device plugin's device information) is unreadable, ",
                         parsed.status().message(), ": ignored, the checks read sysfs instead"));
        continue;
      }
      for (auto& [address, i] : *parsed) info[address] = {v.name, std::move(i)};
      continue;
    }
    absl::StatusOr<std::vector<std::string>> addresses = dpdk::PciAddresses(v);
    if (!addresses.ok()) return addresses.status();
    for (const std::string& a : *addresses) out.devices.push_back({v.name, a, std::nullopt});
  }
  for (PciDevice& d : out.devices) {
    if (auto it = info.find(d.address); it != info.end()) d.info = it->second.second;
  }
  return out;
}

absl::StatusOr<std::vector<PciDevice>> PciDevicesFromEnv(
    const std::map<std::string, std::string>& env) {
  absl::StatusOr<PciDeviceEnv> e = ReadPciDeviceEnv(env);
  if (!e.ok()) return e.status();
  return e->devices;
}

std::optional<uint64_t> EffectiveCapabilities(const Host& h) {
  auto status = ReadFile(Path(h, "/proc/self/status"));
  if (!status) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (!absl::ConsumePrefix(&line, "CapEff:")) continue;
    uint64_t caps;
    if (absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &caps)) return caps;
  }
  return std::nullopt;
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
  for (const CgroupDir& d : CgroupDirs(h, "cpuset")) {
    const std::string p = absl::StrCat(d.dir, d.v2 ? "/cpuset.cpus.effective" : "/cpuset.cpus");
    auto t = ReadFile(p);
    if (t && !absl::StripAsciiWhitespace(*t).empty()) {
      auto cpus = ParseCpuList(*t);
      if (!cpus.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(p, ": ", cpus.status().message()));
      }
      return cpus;
    }
  }
  auto online = ReadFile(Path(h, "/sys/devices/system/cpu/online"));
  if (!online) return absl::NotFoundError("no cgroup cpuset and no /sys/devices/system/cpu/online");
  return ParseCpuList(*online);
}

std::string FormatMib(uint64_t bytes) {
  if (bytes < (1u << 20)) return absl::StrCat(bytes >> 10, " KiB");
  if (bytes % (1u << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1u << 20));
}

Finding CheckPoolSizing(const PoolNeeds& n, uint64_t populated) {
  const uint64_t need = MinPoolObjects(n);
  const uint64_t xdp = std::min(n.af_xdp_ports, n.ports);
  std::string why = absl::StrCat(
      need, " needed = RX ", n.ports - xdp, " ports x ", n.rx_queues_per_port, " queues x ",
      n.rx_ring,
      xdp == 0 ? ""
               : absl::StrCat(" + AF_XDP RX ", xdp, " ports x ", n.rx_queues_per_port, " queues x ",
                              kAfXdpRxQueueMbufs, " (the PMD's fill-ring reserve)"),
      " + TX ", n.ports, " x ", n.tx_queues_per_port, " x ", n.tx_ring, " + ", n.workers,
      " workers x ", n.per_core_capacity, " per-core layers + ", n.workers, " workers x ", n.burst,
      " burst");
  if (populated < need) {
    return {Severity::kError, "pool_sizing",
            absl::StrCat("pool of ", populated, " objects < ", why, ": raise --mbufs to at least ",
                         need, " (or shrink the rings / the strategy's per-core layers)")};
  }
  return {Severity::kOk, "pool_sizing", absl::StrCat("pool of ", populated, " objects >= ", why)};
}

namespace {

// The checks of Run, one method each, in order: later ones use what earlier ones found (the
// devices, the vfio nodes, the lcores).
class Checks {
 public:
  Checks(const Host& h, const Request& req) : h_(h), req_(req), caps_(EffectiveCapabilities(h)) {}

  void PciDevices();
  void VfDrivers();
  void Vfio();
  void Rdma();
  void Memlock();
  void Cpuset();
  void CpuQuota();
  void Hugepages();
  void Numa();

  Report report;

 private:
  void Add(Severity s, const char* check, std::string msg) {
    report.findings.push_back({s, check, std::move(msg)});
  }
  bool HasCap(int cap) const { return caps_ && ((*caps_ >> cap) & 1) != 0; }
  // Hugepages' parts: the page size EAL will use and whether such a mount exists; the pod's
  // hugetlb cgroup room for that size; the free pages on the workers' nodes.
  std::pair<uint64_t, bool> HugeMount() const;
  void HugetlbLimit(uint64_t page_size);
  void FreeHugepages(uint64_t page_size);
  std::string HowToReserve(uint64_t page_size, const std::set<int>& nodes, uint64_t more);
  // Stale hugepage files in the mounts EAL will use for `page_size` (the --huge-dir, else every
  // mount of that size): bytes they hold and their paths. Filled by Hugepages, read by the
  // limit and free-page checks as reclaimable.
  void FindStaleHugepageFiles(uint64_t page_size);
  uint64_t stale_bytes_ = 0;
  std::vector<std::string> stale_files_;
  // Bytes the hugepage checks need: Request::hugepage_memory, else pool_memory.
  uint64_t HugepageNeed() const { return std::max(req_.hugepage_memory, req_.pool_memory); }

  const Host& h_;
  const Request& req_;
  const std::optional<uint64_t> caps_;
  std::vector<PciDevice> devices_;
  std::vector<std::string> vfio_nodes_;  // group nodes of the vfio-pci VFs
  std::vector<const PciDevice*> mlx5_;
  std::vector<int> lcores_;
  std::set<int> worker_nodes_;
};

void Checks::PciDevices() {
  if (!req_.pci_devices_from_env) return;
  auto d = ReadPciDeviceEnv(h_.env);
  if (!d.ok()) {
    Add(Severity::kError, "pci_devices", std::string(d.status().message()));
    return;
  }
  for (const std::string& w : d->warnings) Add(Severity::kRisk, "pci_devices", w);
  if (d->devices.empty()) {
    Add(Severity::kError, "pci_devices",
        "no PCIDEVICE_* variable: the pod got no VF. Request the device plugin's resource "
        "(e.g. intel.com/intel_sriov_dpdk: 2) in the container's limits, and check that the "
        "plugin's resourcePrefix/resourceName match it");
    return;
  }
  devices_ = d->devices;
  std::vector<std::string> names;
  for (const PciDevice& p : devices_) {
    names.push_back(absl::StrCat(p.address, " (", p.variable, p.info ? ", with _INFO" : "", ")"));
  }
  Add(Severity::kOk, "pci_devices", absl::StrJoin(names, ", "));
}

void Checks::VfDrivers() {
  for (const PciDevice& d : devices_) {
    const std::string dev = Path(h_, absl::StrCat("/sys/bus/pci/devices/", d.address));
    if (!fs::exists(dev)) {
      Add(Severity::kError, "vf_driver",
          absl::StrCat(d.address,
                       " is not in /sys/bus/pci/devices: the VF is not visible in the "
                       "container (is /sys mounted read-only from the host?)"));
      continue;
    }
    const std::string driver = LinkName(dev + "/driver");
    if (driver == "vfio-pci") {
      Add(Severity::kOk, "vf_driver", absl::StrCat(d.address, " bound to vfio-pci"));
      // What the plugin mounted (_INFO), else the IOMMU group's node.
      std::optional<std::string> node = d.info ? d.info->VfioGroupNode() : std::nullopt;
      if (!node) {
        const std::string group = LinkName(dev + "/iommu_group");
        if (!group.empty()) node = absl::StrCat("/dev/vfio/", group);
      }
      if (!node) {
        Add(Severity::kError, "vfio",
            absl::StrCat(d.address,
                         " has no IOMMU group: enable the IOMMU (intel_iommu=on "
                         "iommu=pt on the kernel command line)"));
      } else {
        vfio_nodes_.push_back(*node);
      }
    } else if (driver == "mlx5_core") {
      Add(Severity::kOk, "vf_driver",
          absl::StrCat(d.address, " bound to mlx5_core (bifurcated: no vfio needed)"));
      mlx5_.push_back(&d);
    } else if (driver == "igb_uio" || driver == "uio_pci_generic") {
      Add(Severity::kRisk, "vf_driver",
          absl::StrCat(d.address, " bound to ", driver,
                       ": works, but without IOMMU protection; bind VFs to vfio-pci"));
    } else if (driver.empty()) {
      Add(Severity::kError, "vf_driver",
          absl::StrCat(d.address,
                       " is bound to no driver: bind it to vfio-pci (the SR-IOV "
                       "device plugin's selector: drivers: [vfio-pci])"));
    } else {
      Add(Severity::kError, "vf_driver",
          absl::StrCat(d.address, " is bound to the kernel driver ", driver,
                       ": DPDK cannot drive it. Bind the VFs to vfio-pci and select them in the "
                       "device plugin's resource pool with drivers: [vfio-pci] (mlx5 VFs stay "
                       "on mlx5_core)"));
    }
  }
}

void Checks::Vfio() {
  if (vfio_nodes_.empty()) return;
  std::vector<std::string> nodes = {"/dev/vfio/vfio"};
  for (const std::string& n : vfio_nodes_) {
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  }
  std::vector<std::string> bad;
  for (const std::string& n : nodes) {
    if (!ReadWritable(h_, n)) bad.push_back(n);
  }
  if (bad.empty()) {
    Add(Severity::kOk, "vfio", absl::StrCat(absl::StrJoin(nodes, ", "), " read-writable"));
  } else {
    Add(Severity::kError, "vfio",
        absl::StrCat(absl::StrJoin(bad, ", "),
                     " missing or not read-writable: the device plugin adds them when the pod "
                     "requests its resource; a non-root user needs them owned by or shared "
                     "with its uid/gid"));
  }
}

// mlx5 (bifurcated): the PMD opens the VF's uverbs node through rdma-core and needs NET_RAW (raw
// Ethernet queues) and NET_ADMIN (device configuration): DPDK doc/guides/nics/mlx5.rst, "Run as
// non-root". The device plugin mounts the RDMA nodes only for isRdma: true resources and lists
// them in _INFO's rdma entry.
void Checks::Rdma() {
  if (mlx5_.empty()) return;
  for (const PciDevice* d : mlx5_) {
    std::vector<std::string> nodes = d->info ? d->info->RdmaNodes() : std::vector<std::string>{};
    bool has_uverbs = d->info && d->info->RdmaUverbs().has_value();
    if (nodes.empty()) {  // no _INFO rdma entry: the VF's uverbs device in sysfs
      std::error_code ec;
      const std::string dir =
          Path(h_, absl::StrCat("/sys/bus/pci/devices/", d->address, "/infiniband_verbs"));
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        nodes.push_back(absl::StrCat("/dev/infiniband/", e.path().filename().string()));
        has_uverbs = true;
      }
    }
    if (!has_uverbs) {
      Add(Severity::kError, "rdma",
          absl::StrCat(d->address,
                       " (mlx5): the device plugin mounted no RDMA device (no rdma entry in ",
                       d->variable,
                       "_INFO): the mlx5 PMD opens /dev/infiniband/uverbsN. Set isRdma: true in "
                       "the resource's selectors of the SR-IOV device plugin's config"));
      continue;
    }
    std::vector<std::string> bad;
    for (const std::string& n : nodes) {
      if (!ReadWritable(h_, n)) bad.push_back(n);
    }
    if (!bad.empty()) {
      Add(Severity::kError, "rdma",
          absl::StrCat(d->address, " (mlx5): ", absl::StrJoin(bad, ", "),
                       " missing or not read-writable: the device plugin mounts them for an "
                       "isRdma resource; do not mount /dev/infiniband from the host"));
    } else {
      Add(Severity::kOk, "rdma",
          absl::StrCat(d->address, " (mlx5): ", absl::StrJoin(nodes, ", "), " read-writable"));
    }
  }
  std::vector<std::string> missing;
  if (!HasCap(kCapNetRaw)) missing.push_back("NET_RAW");
  if (!HasCap(kCapNetAdmin)) missing.push_back("NET_ADMIN");
  if (!caps_) {
    Add(Severity::kRisk, "rdma",
        "cannot read the effective capabilities (/proc/self/status CapEff): the mlx5 PMD needs "
        "NET_RAW and NET_ADMIN");
  } else if (!missing.empty()) {
    Add(Severity::kError, "rdma",
        absl::StrCat("mlx5 needs the capabilities NET_RAW and NET_ADMIN (DPDK mlx5 guide, \"Run "
                     "as non-root\"); the effective set lacks ",
                     absl::StrJoin(missing, " and "),
                     ": add them to the container's securityContext.capabilities.add"));
  } else {
    Add(Severity::kOk, "rdma", "NET_RAW and NET_ADMIN in the effective capabilities");
  }
}

// VFIO pins DMA memory against RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK
// (drivers/vfio/vfio_iommu_type1.c: lock_cap); mlock(2) likewise. Kubernetes has no ulimit
// field: the capability is how a pod gets there.
void Checks::Memlock() {
  const std::string limit = h_.memlock_limit ? Mib(*h_.memlock_limit) : std::string("unlimited");
  if (HasCap(kCapIpcLock)) {
    Add(Severity::kOk, "memlock",
        absl::StrCat("CAP_IPC_LOCK in the effective capabilities: RLIMIT_MEMLOCK (", limit,
                     ") does not apply"));
    return;
  }
  const bool vfio = !vfio_nodes_.empty();
  if (h_.memlock_limit && req_.pool_memory > 0 && *h_.memlock_limit < req_.pool_memory) {
    Add(vfio ? Severity::kError : Severity::kRisk, "memlock",
        absl::StrCat("RLIMIT_MEMLOCK ", limit, " < ", Mib(req_.pool_memory), " the pool needs",
                     vfio ? " (VFIO maps it locked for DMA)" : "",
                     ": give the container the IPC_LOCK capability, or raise the memlock limit "
                     "(container runtime: LimitMEMLOCK=infinity / --ulimit memlock=-1)"));
  } else {
    Add(Severity::kOk, "memlock", absl::StrCat("RLIMIT_MEMLOCK ", limit));
  }
}

void Checks::Cpuset() {
  lcores_ = req_.lcores;
  auto allowed = AllowedCpus(h_);
  if (!allowed.ok()) {
    Add(Severity::kRisk, "cpuset",
        absl::StrCat("cannot read the CPU set: ", allowed.status().message()));
  } else if (!lcores_.empty()) {
    std::vector<int> outside;
    for (int c : lcores_) {
      if (!std::binary_search(allowed->begin(), allowed->end(), c)) outside.push_back(c);
    }
    if (!outside.empty()) {
      Add(Severity::kError, "cpuset",
          absl::StrCat("-l names CPU ", absl::StrJoin(outside, ","),
                       " but the container may run only on ", absl::StrJoin(*allowed, ","),
                       " (its cgroup cpuset; EAL would fail with \"Cannot set affinity\"): drop -l "
                       "so skbnfd takes the cpuset the CPU manager granted"));
    } else {
      Add(Severity::kOk, "cpuset",
          absl::StrCat("-l ", absl::StrJoin(lcores_, ","), " within ",
                       absl::StrJoin(*allowed, ",")));
    }
  } else {
    lcores_ = *allowed;
    if (lcores_.size() < 2) {
      Add(Severity::kRisk, "cpuset",
          absl::StrCat("only CPU ", absl::StrJoin(lcores_, ","),
                       " is allowed: no core is left for a worker besides the main lcore. Request "
                       "at least 2 whole CPUs with requests = limits (Guaranteed QoS)"));
    } else {
      Add(Severity::kOk, "cpuset",
          absl::StrCat("lcores from the cpuset: main ", lcores_[0], ", workers ",
                       absl::StrJoin(std::vector<int>(lcores_.begin() + 1, lcores_.end()), ",")));
    }
  }
  std::vector<int> workers =
      lcores_.size() > 1 ? std::vector<int>(lcores_.begin() + 1, lcores_.end()) : lcores_;
  worker_nodes_ = NumaNodesOfCpus(h_, workers);
}

// With the kubelet's CPU manager policy none a container's cpuset is the whole node and only a
// CFS quota holds it to its limit: skbnfd would start a polling worker per CPU of the set, all
// throttled every period. With static (Guaranteed, whole CPUs) the cpuset is the limit.
void Checks::CpuQuota() {
  if (lcores_.empty()) return;
  for (const CgroupDir& d : CgroupDirs(h_, "cpu")) {
    std::string text;
    double cpus = 0;
    if (d.v2) {
      auto max = ReadFile(d.dir + "/cpu.max");  // "$MAX $PERIOD", "max 100000" = no limit
      if (!max) continue;
      text = absl::StrCat("cpu.max \"", absl::StripAsciiWhitespace(*max), "\"");
      std::vector<absl::string_view> f =
          absl::StrSplit(absl::StripAsciiWhitespace(*max), ' ', absl::SkipEmpty());
      double quota, period;
      if (f.size() == 2 && f[0] == "max") {
        Add(Severity::kOk, "cpu_quota", absl::StrCat("no CPU quota (", text, ")"));
        return;
      }
      if (f.size() != 2) return;
      if (!absl::SimpleAtod(f[0], &quota) || !absl::SimpleAtod(f[1], &period) || period <= 0) {
        return;
      }
      cpus = quota / period;
    } else {
      auto quota = ReadInt(d.dir + "/cpu.cfs_quota_us");  // -1 = no limit
      auto period = ReadInt(d.dir + "/cpu.cfs_period_us");
      if (!quota || !period) continue;
      text = absl::StrCat("cpu.cfs_quota_us ", *quota, " / cpu.cfs_period_us ", *period);
      if (*quota < 0) {
        Add(Severity::kOk, "cpu_quota", absl::StrCat("no CPU quota (", text, ")"));
        return;
      }
      if (*period <= 0) return;
      cpus = static_cast<double>(*quota) / static_cast<double>(*period);
    }
    const std::string figure = absl::StrFormat("%g CPUs", cpus);
    if (cpus + 1e-9 < static_cast<double>(lcores_.size())) {
      Add(Severity::kError, "cpu_quota",
          absl::StrCat("CPU quota ", figure, " (", text, ") < the ", lcores_.size(),
                       " CPUs skbnfd would poll on (", req_.lcores.empty() ? "the cpuset " : "-l ",
                       CpuRanges(lcores_),
                       "): the kubelet's CPU manager is not static, so every polling lcore "
                       "would be throttled each period. Set cpuManagerPolicy: static on the node "
                       "and give the pod Guaranteed QoS with whole CPUs (requests = limits), or "
                       "pass -l with at most ",
                       static_cast<int>(cpus), " CPUs"));
    } else {
      Add(Severity::kOk, "cpu_quota",
          absl::StrCat("CPU quota ", figure, " (", text, ") >= ", lcores_.size(), " lcores"));
    }
    return;
  }
}

std::pair<uint64_t, bool> Checks::HugeMount() const {
  uint64_t default_size = 0;
  if (auto mi = ReadFile(Path(h_, "/proc/meminfo"))) {
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
  if (auto m = ReadFile(Path(h_, "/proc/mounts"))) {
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
  std::string dir = req_.huge_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  uint64_t page_size = req_.hugepage_size;
  bool mounted = false;
  for (const auto& [where, size] : mounts) {
    if (!dir.empty() && where != dir) continue;
    if (req_.hugepage_size == 0) {
      // Auto: the --huge-dir mount's size; without one, the default size's mount, else the first.
      if (!mounted || size == default_size) page_size = size;
      mounted = true;
    } else if (size == page_size) {
      mounted = true;
    }
  }
  if (page_size == 0) page_size = default_size != 0 ? default_size : (2u << 20);
  return {page_size, mounted};
}

// As EAL's walk_hugedir: files matching "*map_*" whose flock(LOCK_EX | LOCK_NB) succeeds belong
// to no running DPDK process (a running one holds a shared lock on each of its files); EAL's
// clear_hugedir unlinks them, and with them the pages they hold (st_blocks: allocated, a
// --single-file-segments file is sparse).
void Checks::FindStaleHugepageFiles(uint64_t page_size) {
  if (req_.in_memory) return;
  std::string dir = req_.huge_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::vector<std::string> dirs;
  if (auto m = ReadFile(Path(h_, "/proc/mounts"))) {
    for (absl::string_view line : absl::StrSplit(*m, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      if (f.size() < 4 || f[2] != "hugetlbfs" || (!dir.empty() && f[1] != dir)) continue;
      uint64_t size = 0;
      for (absl::string_view o : absl::StrSplit(f[3], ',')) {
        if (absl::ConsumePrefix(&o, "pagesize=")) size = ParseSize(o).value_or(0);
      }
      if (size == 0 || size == page_size) dirs.emplace_back(f[1]);
    }
  }
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(Path(h_, d), ec)) {
      const std::string name = e.path().filename().string();
      if (fnmatch("*map_*", name.c_str(), 0) != 0) continue;
      const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0) {
        stale_bytes_ += static_cast<uint64_t>(st.st_blocks) * 512;
        stale_files_.push_back(absl::StrCat(d, "/", name));
      }
      ::close(fd);  // drops the lock
    }
  }
  if (!stale_files_.empty()) {
    Add(Severity::kRisk, "hugepages",
        absl::StrCat(Mib(stale_bytes_), " of ", PageSizeName(page_size),
                     " pages in stale hugepage files (", absl::StrJoin(stale_files_, ", "),
                     "): no running process holds them (DPDK 22.11 leaves its page files when it "
                     "stops, and a killed one leaves all it had); EAL removes them at start, so "
                     "they count as free here"));
  }
}

void Checks::Hugepages() {
  if (!req_.hugepages) return;
  const auto [page_size, mounted] = HugeMount();
  const std::string want = PageSizeName(page_size);
  if (!mounted && !req_.huge_dir.empty()) {
    Add(Severity::kError, "hugepages",
        absl::StrCat("--huge-dir=", req_.huge_dir, " is not a hugetlbfs mount",
                     req_.hugepage_size != 0 ? absl::StrCat(" with ", want, " pages") : "",
                     ": mount an emptyDir with medium: HugePages-", want,
                     "i there and request hugepages-", want,
                     "i in the limits (or run with --no-huge)"));
    return;
  }
  if (!mounted) {
    Add(Severity::kError, "hugepages",
        absl::StrCat("no hugetlbfs mount with ", want,
                     " pages: mount an emptyDir with medium: HugePages-", want,
                     "i and request hugepages-", want, "i in the limits (or run with --no-huge)"));
    return;
  }
  FindStaleHugepageFiles(page_size);
  HugetlbLimit(page_size);
  FreeHugepages(page_size);
}

// The pod's share: hugetlb.<size>.max (v2) / .limit_in_bytes (v1) less what is in use, the
// lowest over the container's cgroup and its parents (the kubelet limits the pod and the
// container). EAL gets SIGBUS past it, not an error.
void Checks::HugetlbLimit(uint64_t page_size) {
  const std::string size = HugetlbSizeName(page_size);
  std::optional<uint64_t> room;
  std::string where;
  for (const CgroupDir& d : CgroupDirs(h_, "hugetlb")) {
    const std::string limit_file = d.v2 ? ".max" : ".limit_in_bytes";
    const std::string usage_file = d.v2 ? ".current" : ".usage_in_bytes";
    if (!fs::exists(absl::StrCat(d.dir, "/hugetlb.", size, limit_file))) continue;
    for (fs::path dir = d.dir; dir.string().size() >= d.top.size(); dir = dir.parent_path()) {
      auto limit_text = ReadFile(absl::StrCat(dir.string(), "/hugetlb.", size, limit_file));
      uint64_t limit;
      if (!limit_text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*limit_text), &limit)) {
        if (dir == dir.parent_path()) break;
        continue;  // "max" (v2) or absent: no limit here
      }
      const uint64_t used = static_cast<uint64_t>(std::max<int64_t>(
          0, ReadInt(absl::StrCat(dir.string(), "/hugetlb.", size, usage_file)).value_or(0)));
      const uint64_t free = limit > used ? limit - used : 0;
      if (!room || free < *room) {
        room = free;
        where =
            absl::StrCat("hugetlb.", size, limit_file, " ", limit,
                         used ? absl::StrCat(", ", used, " in use") : "", " in ",
                         dir.string().substr(std::min(dir.string().size(), Path(h_, "").size())));
      }
      if (dir == dir.parent_path()) break;
    }
    break;
  }
  if (!room) return;  // no hugetlb controller, or no limit anywhere
  *room += stale_bytes_;  // charged in the hierarchy until EAL unlinks them at start
  const std::string want = PageSizeName(page_size);
  const uint64_t need = HugepageNeed();
  if (need > 0 && *room < need) {
    Add(Severity::kError, "hugepages",
        absl::StrCat("the pod's hugetlb cgroup allows ", Mib(*room), " of ", want, " pages (",
                     where, ") < ", Mib(need),
                     " skbnfd needs (EAL would get SIGBUS past it): raise hugepages-", want,
                     "i to at least ", (need + page_size - 1) / page_size * (page_size >> 20),
                     "Mi in the container's limits (requests = limits), or lower --mbufs"));
  } else {
    Add(Severity::kOk, "hugepages",
        absl::StrCat("hugetlb cgroup: ", Mib(*room), " of ", want, " pages (", where, ")"));
  }
}

// How to reserve `more` pages of `page_size` where the free ones were counted: the sysfs file
// of the one node counted (the workers' or the pool's), else the machine-wide one (both are
// the kernel's: Documentation/admin-guide/mm/hugetlbpage.rst), with the value to write when
// the current reservation can be read.
std::string Checks::HowToReserve(uint64_t page_size, const std::set<int>& nodes, uint64_t more) {
  const uint64_t kb = page_size >> 10;
  std::string file = absl::StrCat("/sys/kernel/mm/hugepages/hugepages-", kb, "kB/nr_hugepages");
  if (nodes.size() == 1) {
    const std::string node_file = absl::StrCat("/sys/devices/system/node/node", *nodes.begin(),
                                               "/hugepages/hugepages-", kb, "kB/nr_hugepages");
    if (ReadInt(Path(h_, node_file))) file = node_file;
  }
  const std::optional<int64_t> now = ReadInt(Path(h_, file));
  if (!now) return absl::StrCat("raise ", file, " by ", more);
  return absl::StrCat("echo ", *now + static_cast<int64_t>(more), " > ", file, " (now ", *now, ")");
}

void Checks::FreeHugepages(uint64_t page_size) {
  const std::string want = PageSizeName(page_size);
  const uint64_t kb = page_size >> 10;
  uint64_t free_pages = 0;
  std::vector<std::string> per_node;
  std::set<int> nodes = worker_nodes_;
  if (req_.pool_socket >= 0) nodes = {req_.pool_socket};
  std::set<int> counted;
  for (int n : nodes) {
    auto v = ReadInt(Path(h_, absl::StrCat("/sys/devices/system/node/node", n,
                                           "/hugepages/hugepages-", kb, "kB/free_hugepages")));
    if (v) {
      free_pages += static_cast<uint64_t>(*v);
      per_node.push_back(absl::StrCat(*v, " on node ", n));
      counted.insert(n);
    }
  }
  if (per_node.empty()) {  // no NUMA information: the machine-wide count
    auto v = ReadInt(
        Path(h_, absl::StrCat("/sys/kernel/mm/hugepages/hugepages-", kb, "kB/free_hugepages")));
    if (v) {
      free_pages = static_cast<uint64_t>(*v);
      per_node.push_back(absl::StrCat(*v, " machine-wide"));
    }
  }
  if (stale_bytes_ > 0) {
    const uint64_t stale_pages = stale_bytes_ / page_size;
    free_pages += stale_pages;
    per_node.push_back(absl::StrCat(stale_pages, " in stale files EAL removes"));
  }
  const uint64_t free_bytes = free_pages * page_size;
  const uint64_t need = HugepageNeed();
  if (need > 0 && free_bytes < need) {
    const uint64_t need_pages = (need + page_size - 1) / page_size;
    Add(Severity::kError, "hugepages",
        absl::StrCat("free ", want, " pages: ", absl::StrJoin(per_node, ", "), " = ",
                     Mib(free_bytes), " < ", Mib(need), " skbnfd needs = ", need_pages, " pages",
                     req_.hugepage_memory_parts.empty()
                         ? std::string()
                         : absl::StrCat(" (", req_.hugepage_memory_parts, ")"),
                     " on the workers' node: reserve ", need_pages - free_pages,
                     " more: ", HowToReserve(page_size, counted, need_pages - free_pages),
                     "; in a pod raise hugepages-", want, "i to at least ",
                     need_pages * (page_size >> 20),
                     "Mi in the container's limits (requests = "
                     "limits; the node must have them reserved); or lower --mbufs"));
  } else {
    Add(Severity::kOk, "hugepages",
        absl::StrCat("hugetlbfs ", want, " mounted; free pages: ",
                     per_node.empty() ? std::string("unknown") : absl::StrJoin(per_node, ", "),
                     need > 0 ? absl::StrCat(" (", (need + page_size - 1) / page_size, " needed)")
                              : std::string()));
  }
}

void Checks::Numa() {
  for (const PciDevice& d : devices_) {
    auto node = ReadInt(Path(h_, absl::StrCat("/sys/bus/pci/devices/", d.address, "/numa_node")));
    if (!node || *node < 0 || worker_nodes_.empty()) continue;
    if (!worker_nodes_.count(static_cast<int>(*node))) {
      Add(Severity::kRisk, "numa",
          absl::StrCat(d.address, " is on NUMA node ", *node, ", the workers on node ",
                       absl::StrJoin(worker_nodes_, ","),
                       ": every packet crosses the socket interconnect. Use the kubelet's "
                       "topology manager (policy single-numa-node) so VFs, CPUs and hugepages "
                       "come from one node"));
    } else if (req_.pool_socket >= 0 && req_.pool_socket != *node) {
      Add(Severity::kRisk, "numa",
          absl::StrCat(d.address, " is on NUMA node ", *node, " but the pool is on socket ",
                       req_.pool_socket, ": put the pool on the NIC's node"));
    } else {
      Add(Severity::kOk, "numa", absl::StrCat(d.address, " and the workers on NUMA node ", *node));
    }
  }
}

}  // namespace

Report Run(const Host& h, const Request& req) {
  Checks c(h, req);
  c.PciDevices();
  c.VfDrivers();
  c.Vfio();
  c.Rdma();
  c.Memlock();
  c.Cpuset();
  c.CpuQuota();
  c.Hugepages();
  c.Numa();
  return std::move(c.report);
}

}  // namespace skbnf::preflight
