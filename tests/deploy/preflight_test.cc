// SPDX-License-Identifier: BSD-3-Clause
// Preflight against fake sysfs / procfs / /dev / cgroup trees and environments: each common
// pod set-up mistake gives an error (or a risk) whose message says what to change, and a
// correctly set-up SR-IOV pod passes clean.
#include "server/ops/preflight.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ops/network_status.h"

namespace skbnf::preflight {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// linux/capability.h
constexpr uint64_t kNetAdmin = 1ull << 12;
constexpr uint64_t kNetRaw = 1ull << 13;
constexpr uint64_t kIpcLock = 1ull << 14;

// A fixture file of tests/deploy/fixtures (the real shapes; see its README.md for the sources).
std::string Fixture(const std::string& name) {
  std::ifstream f(std::string(SKBNF_FIXTURES) + "/" + name);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// A fake machine under a temporary root.
class FakeHost {
 public:
  FakeHost() {
    root_ = fs::path(::testing::TempDir()) / absl::StrCat("preflight-", getpid(), "-", counter_++);
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeHost() { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Link(const std::string& path, const std::string& target) {
    fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    fs::create_symlink(target, p);
  }
  void Remove(const std::string& path) { fs::remove_all(root_ / path.substr(1)); }
  // The shared fake node (tests/deploy/fixtures/sriov-node, also preflight_daemon_test.py's).
  void CopyTree(const std::string& fixture_dir) {
    fs::copy(std::string(SKBNF_FIXTURES) + "/" + fixture_dir, root_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }

  // A VF at addr bound to driver, in IOMMU group, on NUMA node.
  void Vf(const std::string& addr, const std::string& driver, int group, int node) {
    const std::string dev = "/sys/bus/pci/devices/" + addr;
    Write(dev + "/numa_node", absl::StrCat(node, "\n"));
    if (!driver.empty()) Link(dev + "/driver", "../../../bus/pci/drivers/" + driver);
    if (group >= 0) {
      Link(dev + "/iommu_group", absl::StrCat("../../../kernel/iommu_groups/", group));
      Write(absl::StrCat("/dev/vfio/", group), "");
    }
    Write("/dev/vfio/vfio", "");
  }
  void Cpus(const std::string& cpuset, const std::vector<std::pair<int, int>>& cpu_node) {
    Write("/proc/self/cgroup", "0::/kubepods/podX/ctr\n");
    Write("/sys/fs/cgroup/kubepods/podX/ctr/cpuset.cpus.effective", cpuset + "\n");
    for (auto [cpu, node] : cpu_node) {
      Write(absl::StrCat("/sys/devices/system/cpu/cpu", cpu, "/node", node, "/.keep"), "");
    }
  }
  void Hugepages(const std::string& pagesize_opt, int node, int free_2m) {
    Write("/proc/meminfo", "MemTotal: 1000 kB\nHugepagesize:       2048 kB\n");
    Write("/proc/mounts", "proc /proc proc rw 0 0\nnodev /hugepages hugetlbfs rw,relatime" +
                              pagesize_opt + " 0 0\n");
    Write(absl::StrCat("/sys/devices/system/node/node", node,
                       "/hugepages/hugepages-2048kB/free_hugepages"),
          absl::StrCat(free_2m, "\n"));
  }

  // The effective capabilities as the kernel shows them (CapEff of /proc/self/status).
  void CapEff(uint64_t caps) {
    Write("/proc/self/status",
          absl::StrFormat("Name:\tskbnfd\nCapInh:\t0000000000000000\nCapPrm:\t%016x\n"
                          "CapEff:\t%016x\nCapBnd:\t%016x\n",
                          caps, caps, caps));
  }

  Host host() const {
    Host h;
    h.root = root_.string();
    return h;
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

// The pod set up right (fixtures/sriov-node, the tree the daemon test starts from too): two
// vfio-pci VFs on node 0 (IOMMU groups 71, 72), cpuset 2-3 on node 0 (cgroup v2), 2M hugepages
// mounted at /hugepages with 512 free pages (1 GiB) on node 0; memlock unlimited.
class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.CopyTree("sriov-node");
    host_ = fake_.host();
    host_.env = {{"PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK", "0000:3b:02.0,0000:3b:02.1"},
                 {"HOME", "/"}};
    req_.pci_devices_from_env = true;
    req_.pool_memory = 256u << 20;
  }
  Report Run() { return preflight::Run(host_, req_); }
  // The finding of that check and severity; a placeholder saying it is missing otherwise, so
  // the expectation on its message fails readably.
  static const Finding* Find(const Report& r, const std::string& check, Severity s) {
    for (const Finding& f : r.findings) {
      if (f.check == check && f.severity == s) return &f;
    }
    static Finding missing;
    missing = {s, check, "<no such finding in:\n" + r.ToText() + ">"};
    return &missing;
  }

  FakeHost fake_;
  Host host_;
  Request req_;
};

TEST_F(PreflightTest, CorrectSriovPodPassesClean) {
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_EQ(r.risks(), 0) << r.ToText();
  EXPECT_THAT(r.ToText(), AllOf(HasSubstr("0000:3b:02.0 bound to vfio-pci"),
                                HasSubstr("lcores from the cpuset: main 2, workers 3"),
                                HasSubstr("preflight: 0 error(s), 0 warning(s)")));
}

TEST_F(PreflightTest, NoVfHandedInIsAnError) {
  host_.env = {{"HOME", "/"}};
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "pci_devices", Severity::kError)->message,
              AllOf(HasSubstr("no PCIDEVICE_*"), HasSubstr("limits")));
}

TEST(PciDevicesFromEnv, AnyResourcePrefixSortedAndNormalised) {
  auto d =
      PciDevicesFromEnv({{"PCIDEVICE_NVIDIA_COM_MLX5_VF", "3b:00.2"},
                         {"PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE", " 0000:af:02.0 ,0000:af:02.1"},
                         {"PCI_DEVICE_OTHER", "zz"},
                         {"PATH", "/bin"}});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].variable, "PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE");
  EXPECT_EQ((*d)[0].address, "0000:af:02.0");
  EXPECT_EQ((*d)[1].address, "0000:af:02.1");
  EXPECT_EQ((*d)[2].address, "0000:3b:00.2");  // domain added
}

TEST(PciDevicesFromEnv, BadAddressNamesTheVariable) {
  auto d = PciDevicesFromEnv({{"PCIDEVICE_X_COM_Y", "0000:3b:02"}});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              AllOf(HasSubstr("PCIDEVICE_X_COM_Y"), HasSubstr("[dddd:]bb:dd.f")));
}

TEST_F(PreflightTest, KernelDriverBoundVfIsAnErrorSayingVfioPci) {
  fake_.Remove("/sys/bus/pci/devices/0000:3b:02.1/driver");
  fake_.Link("/sys/bus/pci/devices/0000:3b:02.1/driver", "../../../bus/pci/drivers/iavf");
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(
      Find(r, "vf_driver", Severity::kError)->message,
      AllOf(HasSubstr("0000:3b:02.1"), HasSubstr("kernel driver iavf"), HasSubstr("vfio-pci")));
}

TEST_F(PreflightTest, UnboundVfIsAnError) {
  fake_.Remove("/sys/bus/pci/devices/0000:3b:02.1/driver");
  Report r = Run();
  EXPECT_THAT(Find(r, "vf_driver", Severity::kError)->message, HasSubstr("no driver"));
}

// mlx5 is bifurcated (no vfio) but needs what the device plugin mounts for an isRdma resource
// (the RDMA nodes its _INFO lists) and NET_RAW + NET_ADMIN (DPDK doc/guides/nics/mlx5.rst, "Run
// as non-root").
class Mlx5Test : public PreflightTest {
 protected:
  void SetUp() override {
    // The shared node (fixtures/sriov-node: cpuset 2-3, 2M hugepages on node 0) plus the
    // mlx5 VF, as preflight_daemon_test.py's mlx5_node(); no vfio: mlx5 does not use it.
    PreflightTest::SetUp();
    fake_.Vf("0000:5e:00.2", "mlx5_core", -1, 0);
    fake_.Remove("/dev/vfio");
    for (const char* n : {"issm4", "rdma_cm", "umad4", "uverbs4"}) {
      fake_.Write(absl::StrCat("/dev/infiniband/", n), "");
    }
    fake_.CapEff(kIpcLock | kNetRaw | kNetAdmin);
    host_ = fake_.host();
    host_.env = {{"PCIDEVICE_NVIDIA_COM_MLX5_VF", "0000:5e:00.2"},
                 {"PCIDEVICE_NVIDIA_COM_MLX5_VF_INFO", Fixture("pcidevice_info_mlx5.json")}};
  }
};

TEST_F(Mlx5Test, RdmaNodesFromInfoAndCapabilitiesPass) {
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(r.ToText(), HasSubstr("mlx5_core (bifurcated: no vfio needed)"));
  EXPECT_THAT(Find(r, "vfio", Severity::kOk)->message, HasSubstr("<no such finding"));
  EXPECT_THAT(r.ToText(), AllOf(HasSubstr("/dev/infiniband/uverbs4"),
                                HasSubstr("NET_RAW and NET_ADMIN in the effective")));
}

TEST_F(Mlx5Test, NoRdmaEntryIsAnErrorSayingIsRdma) {  // today: passes without any RDMA node
  host_.env["PCIDEVICE_NVIDIA_COM_MLX5_VF_INFO"] =
      R"({"0000:5e:00.2":{"generic":{"deviceID":"0000:5e:00.2"}}})";
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "rdma", Severity::kError)->message,
              AllOf(HasSubstr("0000:5e:00.2"), HasSubstr("isRdma: true"), HasSubstr("uverbs")));
}

TEST_F(Mlx5Test, ListedRdmaNodeMissingIsAnError) {
  fake_.Remove("/dev/infiniband/uverbs4");
  EXPECT_THAT(Find(Run(), "rdma", Severity::kError)->message,
              AllOf(HasSubstr("/dev/infiniband/uverbs4"), HasSubstr("missing")));
}

TEST_F(Mlx5Test, WithoutInfoTheSysfsUverbsDeviceIsChecked) {
  host_.env.erase("PCIDEVICE_NVIDIA_COM_MLX5_VF_INFO");
  fake_.Write("/sys/bus/pci/devices/0000:5e:00.2/infiniband_verbs/uverbs4/dev", "231:196\n");
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(Find(r, "rdma", Severity::kOk)->message, HasSubstr("/dev/infiniband/uverbs4"));
}

TEST_F(Mlx5Test, NetRawAndNetAdminAreNeeded) {
  fake_.CapEff(kIpcLock);  // what the chart granted before
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "rdma", Severity::kError)->message,
              AllOf(HasSubstr("lacks NET_RAW and NET_ADMIN"),
                    HasSubstr("securityContext.capabilities.add")));
}

TEST_F(PreflightTest, UioDriverIsARisk) {
  fake_.Remove("/sys/bus/pci/devices/0000:3b:02.1/driver");
  fake_.Link("/sys/bus/pci/devices/0000:3b:02.1/driver", "../../../bus/pci/drivers/igb_uio");
  Report r = Run();
  EXPECT_TRUE(r.ok());
  EXPECT_THAT(Find(r, "vf_driver", Severity::kRisk)->message, HasSubstr("IOMMU"));
}

TEST_F(PreflightTest, MissingVfioGroupDeviceIsAnError) {
  fake_.Remove("/dev/vfio/72");
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "vfio", Severity::kError)->message,
              AllOf(HasSubstr("/dev/vfio/72"), HasSubstr("device plugin")));
}

TEST_F(PreflightTest, MemlockBelowThePoolIsAnErrorWithVfio) {
  host_.memlock_limit = 64u << 10;  // the usual 64 KiB default
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "memlock", Severity::kError)->message,
              AllOf(HasSubstr("RLIMIT_MEMLOCK 64 KiB < 256 MiB"), HasSubstr("VFIO"),
                    HasSubstr("IPC_LOCK")));
}

TEST_F(PreflightTest, MemlockBelowThePoolIsARiskWithoutVfio) {
  host_.memlock_limit = 8u << 20;
  req_.pci_devices_from_env = false;  // af_packet: no VFs
  req_.hugepages = false;
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(Find(r, "memlock", Severity::kRisk)->message,
              AllOf(HasSubstr("8 MiB < 256 MiB"), HasSubstr("IPC_LOCK")));
}

TEST_F(PreflightTest, HugetlbfsNotMountedSaysWhichEmptyDir) {
  fake_.Write("/proc/mounts", "proc /proc proc rw 0 0\n");
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message,
              AllOf(HasSubstr("no hugetlbfs mount with 2M pages"), HasSubstr("HugePages-2Mi"),
                    HasSubstr("--no-huge")));
}

TEST_F(PreflightTest, WrongPageSizeMountedIsAnError) {
  req_.hugepage_size = 1u << 30;
  Report r = Run();
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message, HasSubstr("HugePages-1Gi"));
}

TEST_F(PreflightTest, MountWithoutPagesizeOptionUsesTheDefaultSize) {
  fake_.Hugepages("", 0, 512);
  EXPECT_TRUE(Run().ok()) << Run().ToText();
}

TEST_F(PreflightTest, TooFewFreePagesOnTheWorkersNodeNamesTheNumbers) {
  fake_.Write("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "100\n");
  fake_.Write("/sys/devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages", "4000\n");
  Report r = Run();  // node 1's pages do not help workers on node 0
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message,
              AllOf(HasSubstr("100 on node 0 = 200 MiB < 256 MiB"), HasSubstr("hugepages-2Mi")));
}

TEST_F(PreflightTest, LcoreOutsideTheCpusetIsAnErrorBeforeEalSaysCannotSetAffinity) {
  req_.lcores = {0, 1};
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "cpuset", Severity::kError)->message,
              AllOf(HasSubstr("CPU 0,1"), HasSubstr("only on 2,3"), HasSubstr("drop -l")));
}

TEST_F(PreflightTest, OneCpuLeavesNoWorkerIsARisk) {
  fake_.Cpus("5", {{5, 0}});
  Report r = Run();
  EXPECT_THAT(Find(r, "cpuset", Severity::kRisk)->message, HasSubstr("at least 2 whole CPUs"));
}

TEST_F(PreflightTest, NicOnAnotherNumaNodeThanTheWorkersIsARisk) {
  fake_.Write("/sys/bus/pci/devices/0000:3b:02.0/numa_node", "1\n");
  Report r = Run();
  EXPECT_TRUE(r.ok());
  EXPECT_THAT(Find(r, "numa", Severity::kRisk)->message,
              AllOf(HasSubstr("0000:3b:02.0 is on NUMA node 1"), HasSubstr("single-numa-node")));
}

TEST(AllowedCpus, CgroupV1CpusetAndOnlineFallback) {
  FakeHost f;
  f.Write("/proc/self/cgroup", "5:memory:/x\n4:cpuset,cpu:/kubepods/pod1/c\n");
  f.Write("/sys/fs/cgroup/cpuset/kubepods/pod1/c/cpuset.cpus", "4-5,9\n");
  auto c = AllowedCpus(f.host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, (std::vector<int>{4, 5, 9}));
  FakeHost g;
  g.Write("/sys/devices/system/cpu/online", "0-1\n");
  c = AllowedCpus(g.host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, (std::vector<int>{0, 1}));
}

TEST(ParseCpuList, RangesAndErrors) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("a").ok());
  EXPECT_FALSE(ParseCpuList("").ok());
}

TEST(PoolSizing, MinimumIsDescriptorsPlusPerCoreLayersPlusBursts) {
  PoolNeeds n{.ports = 2,
              .rx_queues_per_port = 1,
              .rx_ring = 1024,
              .tx_queues_per_port = 2,
              .tx_ring = 512,
              .workers = 2,
              .per_core_capacity = 1024,
              .burst = 32};
  EXPECT_EQ(MinPoolObjects(n), 2048u + 2048u + 2048u + 64u);
  Finding ok = CheckPoolSizing(n, 6208);
  EXPECT_EQ(ok.severity, Severity::kOk);
  Finding bad = CheckPoolSizing(n, 6207);
  EXPECT_EQ(bad.severity, Severity::kError);
  EXPECT_THAT(bad.message,
              AllOf(HasSubstr("pool of 6207 objects < 6208 needed"),
                    HasSubstr("RX 2 ports x 1 queues x 1024"), HasSubstr("TX 2 x 2 x 512"),
                    HasSubstr("2 workers x 1024 per-core layers"),
                    HasSubstr("2 workers x 32 burst"), HasSubstr("--mbufs to at least 6208")));
}

}  // namespace
}  // namespace skbnf::preflight

namespace skbnf::preflight {
namespace {

// skbnfd passes EAL's --huge-dir and page size 0 (auto): the mount at that directory decides.
class HugeDirTest : public PreflightTest {
 protected:
  void SetUp() override {
    PreflightTest::SetUp();
    req_.hugepage_size = 0;
    req_.huge_dir = "/hugepages/";
  }
};

TEST_F(HugeDirTest, TheMountsPageSizeIsTheOneChecked) {
  fake_.Write("/proc/mounts",
              "nodev /dev/hugepages hugetlbfs rw 0 0\n"
              "nodev /hugepages hugetlbfs rw,pagesize=1024M 0 0\n");
  fake_.Write("/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/free_hugepages", "1\n");
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(Find(r, "hugepages", Severity::kOk)->message,
              AllOf(HasSubstr("1G mounted"), HasSubstr("1 on node 0")));
  req_.pool_memory = 2ull << 30;  // two 1G pages needed, one free
  EXPECT_THAT(Find(Run(), "hugepages", Severity::kError)->message,
              HasSubstr("free 1G pages: 1 on node 0 = 1024 MiB < 2048 MiB"));
}

TEST_F(HugeDirTest, HugeDirThatIsNotAMountIsAnError) {
  req_.huge_dir = "/mnt/huge";
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message,
              AllOf(HasSubstr("--huge-dir=/mnt/huge is not a hugetlbfs mount"),
                    HasSubstr("HugePages-2Mi")));
}

TEST_F(HugeDirTest, WithoutHugeDirAnyMountWillDoTheDefaultSizeFirst) {
  req_.huge_dir.clear();
  fake_.Write("/proc/mounts",
              "nodev /mnt/1g hugetlbfs rw,pagesize=1G 0 0\nnodev /mnt/2m hugetlbfs rw 0 0\n");
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(Find(r, "hugepages", Severity::kOk)->message, HasSubstr("2M mounted"));
}

}  // namespace
}  // namespace skbnf::preflight

// ---- The pod's environment as the real components write it (fixtures/README.md cites them).

namespace skbnf::preflight {
namespace {

// The SR-IOV network device plugin (v3.6+) sets PCIDEVICE_<RES>=<addrs> and, beside it,
// PCIDEVICE_<RES>_INFO=<device information JSON> (sriov-network-device-plugin
// pkg/resources/pool_stub.go GetEnvs). Before: the JSON was read as addresses and every
// start-up with the plugin's real environment was refused.
TEST_F(PreflightTest, DevicePluginInfoVariableIsInformationNotAddresses) {
  host_.env["PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO"] = Fixture("pcidevice_info_vfio.json");
  auto env = ReadPciDeviceEnv(host_.env);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->warnings.empty());
  ASSERT_EQ(env->devices.size(), 2u);
  EXPECT_EQ(env->devices[0].address, "0000:3b:02.0");
  EXPECT_EQ(env->devices[0].variable, "PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK");
  ASSERT_TRUE(env->devices[1].info.has_value());
  EXPECT_EQ(env->devices[1].info->VfioGroupNode(), "/dev/vfio/72");
  EXPECT_EQ(env->devices[1].info->Get("generic", "deviceID"), "0000:3b:02.1");
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_EQ(r.risks(), 0) << r.ToText();
  EXPECT_THAT(Find(r, "pci_devices", Severity::kOk)->message,
              HasSubstr("0000:3b:02.0 (PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK, with _INFO)"));
}

// What the plugin mounted is what is checked: the vfio group node of its _INFO.
TEST_F(PreflightTest, VfioGroupNodeComesFromInfo) {
  host_.env["PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO"] = Fixture("pcidevice_info_vfio.json");
  fake_.Remove("/sys/bus/pci/devices/0000:3b:02.1/iommu_group");  // _INFO still names 72
  EXPECT_TRUE(Run().ok()) << Run().ToText();
  fake_.Remove("/dev/vfio/72");
  EXPECT_THAT(Find(Run(), "vfio", Severity::kError)->message, HasSubstr("/dev/vfio/72"));
}

TEST_F(PreflightTest, UnreadableInfoIsAWarningNeverARefusal) {
  for (const std::string bad : {"{not json", "[1,2]", R"({"eth0":{}})", R"({"0000:3b:02.0":3})"}) {
    host_.env["PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO"] = bad;
    Report r = Run();
    EXPECT_TRUE(r.ok()) << bad << "\n" << r.ToText();
    EXPECT_THAT(Find(r, "pci_devices", Severity::kRisk)->message,
                AllOf(HasSubstr("PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO"),
                      HasSubstr("ignored, the checks read sysfs")))
        << bad;
  }
  // Not JSON at all, but the name says device information (its resource is set too).
  host_.env["PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO"] = "garbage";
  EXPECT_TRUE(Run().ok()) << Run().ToText();
}

TEST(PciDevicesFromEnv, AResourceNamedInfoIsStillAddresses) {
  // intel.com/nic_info: its addresses are PCIDEVICE_INTEL_COM_NIC_INFO (no
  // PCIDEVICE_INTEL_COM_NIC).
  auto d = PciDevicesFromEnv({{"PCIDEVICE_INTEL_COM_NIC_INFO", "0000:af:02.0"},
                              {"PCIDEVICE_INTEL_COM_NIC_INFO_INFO", "{}"}});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].address, "0000:af:02.0");
}

// CAP_IPC_LOCK: VFIO's DMA pinning and mlock ignore RLIMIT_MEMLOCK (vfio_iommu_type1.c
// lock_cap). The chart grants it; Docker's default memlock is 8 MiB. Before: an error saying
// "give the container the IPC_LOCK capability" to a container that had it.
TEST_F(PreflightTest, IpcLockMakesTheMemlockLimitIrrelevant) {
  host_.memlock_limit = 8u << 20;
  fake_.CapEff(kIpcLock);
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(Find(r, "memlock", Severity::kOk)->message,
              AllOf(HasSubstr("CAP_IPC_LOCK"), HasSubstr("RLIMIT_MEMLOCK (8 MiB) does not apply")));
  fake_.CapEff(kNetRaw | kNetAdmin);  // no IPC_LOCK: the limit counts
  EXPECT_THAT(Find(Run(), "memlock", Severity::kError)->message,
              HasSubstr("RLIMIT_MEMLOCK 8 MiB < 256 MiB"));
}

// CPU manager policy none: the cpuset is the node, only the CFS quota holds the container.
// cgroup v2 cpu.max "$MAX $PERIOD" (Documentation/admin-guide/cgroup-v2.rst).
TEST_F(PreflightTest, CpuQuotaBelowTheCpusetIsAnErrorNamingBoth) {
  fake_.Cpus("0-63", {{1, 0}});
  fake_.Write("/sys/fs/cgroup/kubepods/podX/ctr/cpu.max", "200000 100000\n");
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "cpu_quota", Severity::kError)->message,
              AllOf(HasSubstr("CPU quota 2 CPUs (cpu.max \"200000 100000\") < the 64 CPUs"),
                    HasSubstr("the cpuset 0-63"), HasSubstr("cpuManagerPolicy: static")));
  fake_.Write("/sys/fs/cgroup/kubepods/podX/ctr/cpu.max", "max 100000\n");
  EXPECT_THAT(Find(Run(), "cpu_quota", Severity::kOk)->message,
              HasSubstr("no CPU quota (cpu.max \"max 100000\")"));
  fake_.Cpus("2-3", {{2, 0}, {3, 0}});  // static: cpuset = the limit
  fake_.Write("/sys/fs/cgroup/kubepods/podX/ctr/cpu.max", "200000 100000\n");
  Report ok = Run();
  EXPECT_TRUE(ok.ok()) << ok.ToText();
  EXPECT_THAT(Find(ok, "cpu_quota", Severity::kOk)->message, HasSubstr("2 CPUs"));
}

// cgroup v1: cpu,cpuacct controller, cpu.cfs_quota_us / cpu.cfs_period_us
// (Documentation/scheduler/sched-bwc.rst; -1 = no limit). The -l list is what is compared.
TEST_F(PreflightTest, CpuQuotaCgroupV1) {
  fake_.Remove("/proc/self/cgroup");
  fake_.Write("/proc/self/cgroup",
              "11:hugetlb:/kubepods/pod1/c\n5:cpu,cpuacct:/kubepods/pod1/c\n"
              "4:cpuset:/kubepods/pod1/c\n1:name=systemd:/kubepods/pod1/c\n");
  fake_.Write("/sys/fs/cgroup/cpuset/kubepods/pod1/c/cpuset.cpus", "0-7\n");
  fake_.Write("/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c/cpu.cfs_quota_us", "150000\n");
  fake_.Write("/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c/cpu.cfs_period_us", "100000\n");
  req_.lcores = {2, 3};
  EXPECT_THAT(Find(Run(), "cpu_quota", Severity::kError)->message,
              AllOf(HasSubstr("CPU quota 1.5 CPUs (cpu.cfs_quota_us 150000 / cpu.cfs_period_us "
                              "100000) < the 2 CPUs"),
                    HasSubstr("-l 2-3")));
  fake_.Write("/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c/cpu.cfs_quota_us", "-1\n");
  EXPECT_TRUE(Run().ok()) << Run().ToText();
}

// The pod's hugetlb limit, not only the node's free pages: v2 hugetlb.<size>.max/.current
// (cgroup-v2.rst), the lowest of the container and its parents (the kubelet sets both).
TEST_F(PreflightTest, HugetlbCgroupLimitV2) {
  const std::string ctr = "/sys/fs/cgroup/kubepods/podX/ctr";
  fake_.Write(ctr + "/hugetlb.2MB.max", "max\n");
  fake_.Write(ctr + "/hugetlb.2MB.current", "0\n");
  fake_.Write("/sys/fs/cgroup/kubepods/podX/hugetlb.2MB.max", "134217728\n");  // 64 pages
  fake_.Write("/sys/fs/cgroup/kubepods/podX/hugetlb.2MB.current", "0\n");
  fake_.Write(ctr + "/hugetlb.1GB.max", "0\n");
  Report r = Run();  // 512 free pages on the node: enough there
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message,
              AllOf(HasSubstr("hugetlb cgroup allows 128 MiB of 2M pages"),
                    HasSubstr("hugetlb.2MB.max 134217728 in /sys/fs/cgroup/kubepods/podX"),
                    HasSubstr("< 256 MiB"), HasSubstr("hugepages-2Mi")));
  fake_.Write("/sys/fs/cgroup/kubepods/podX/hugetlb.2MB.max", "536870912\n");
  Report ok = Run();
  EXPECT_TRUE(ok.ok()) << ok.ToText();
  EXPECT_THAT(ok.ToText(), HasSubstr("hugetlb cgroup: 512 MiB of 2M pages"));
}

// v1: hugetlb.<size>.limit_in_bytes / usage_in_bytes (cgroup-v1/hugetlb.rst), 1G pages here:
// the mount's page size picks the file.
TEST_F(PreflightTest, HugetlbCgroupLimitV1FollowsTheMountsPageSize) {
  fake_.Write("/proc/self/cgroup", "9:hugetlb:/kubepods/pod1/c\n4:cpuset:/kubepods/pod1/c\n");
  fake_.Write("/sys/fs/cgroup/cpuset/kubepods/pod1/c/cpuset.cpus", "2-3\n");
  fake_.Write("/proc/mounts", "nodev /hugepages hugetlbfs rw,pagesize=1G 0 0\n");
  fake_.Write("/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/free_hugepages", "8\n");
  fake_.Write("/sys/fs/cgroup/hugetlb/kubepods/pod1/c/hugetlb.2MB.limit_in_bytes", "1073741824\n");
  fake_.Write("/sys/fs/cgroup/hugetlb/kubepods/pod1/c/hugetlb.1GB.limit_in_bytes", "0\n");
  req_.hugepage_size = 0;
  Report r = Run();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(Find(r, "hugepages", Severity::kError)->message,
              AllOf(HasSubstr("allows 0 KiB of 1G pages"),
                    HasSubstr("hugetlb.1GB.limit_in_bytes 0"), HasSubstr("hugepages-1Gi")));
  fake_.Write("/sys/fs/cgroup/hugetlb/kubepods/pod1/c/hugetlb.1GB.limit_in_bytes", "2147483648\n");
  fake_.Write("/sys/fs/cgroup/hugetlb/kubepods/pod1/c/hugetlb.1GB.usage_in_bytes", "1073741824\n");
  EXPECT_THAT(Find(Run(), "hugepages", Severity::kOk)->message,
              AllOf(HasSubstr("1024 MiB of 1G pages"), HasSubstr("1073741824 in use")));
}

// Multus' network-status annotation (fixtures/network_status.json, as Multus writes it).
TEST(NetworkStatus, RealAnnotationMapsNetworksToPciAddresses) {
  auto st = ParseNetworkStatus(Fixture("network_status.json"));
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_EQ(st->size(), 3u);
  EXPECT_TRUE((*st)[0].is_default);
  EXPECT_EQ((*st)[1].name, "skbnf/core");
  EXPECT_EQ((*st)[1].device_type, "pci");
  EXPECT_EQ(*PciAddressOfNetwork(*st, "access"), "0000:3b:02.0");
  EXPECT_EQ(*PciAddressOfNetwork(*st, "skbnf/access"), "0000:3b:02.0");
  EXPECT_EQ(*PciAddressOfNetwork(*st, "core@net1"), "0000:3b:02.1");
  auto none = PciAddressOfNetwork(*st, "other/access");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), AllOf(HasSubstr("no network 'other/access'"),
                                             HasSubstr("skbnf/access (net2, 0000:3b:02.0)"),
                                             HasSubstr("k8s-pod-network (eth0, no PCI device)")));
  auto nopci = PciAddressOfNetwork(*st, "k8s-pod-network");
  ASSERT_FALSE(nopci.ok());
  EXPECT_THAT(nopci.status().message(), HasSubstr("has no PCI device in its device-info"));
}

TEST(NetworkStatus, SameNetworkTwiceNeedsTheInterface) {
  auto st = ParseNetworkStatus(R"([{"name":"ns/a","interface":"net1","device-info":{"type":"pci",
      "version":"1.1.0","pci":{"pci-address":"0000:3b:02.0"}}},{"name":"ns/a","interface":"net2",
      "device-info":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:3b:02.1"}}}])");
  ASSERT_TRUE(st.ok()) << st.status();
  auto amb = PciAddressOfNetwork(*st, "a");
  ASSERT_FALSE(amb.ok());
  EXPECT_THAT(amb.status().message(), HasSubstr("write one of net=a@net1, net=a@net2"));
  EXPECT_EQ(*PciAddressOfNetwork(*st, "a@net2"), "0000:3b:02.1");
}

// The downward API's all-annotations form: key="Go-quoted value" lines.
TEST(NetworkStatus, AllAnnotationsFileForm) {
  auto st = ParseNetworkStatus(
      "k8s.v1.cni.cncf.io/network-status=\"[{\\n    \\\"name\\\": \\\"skbnf/access\\\",\\n    "
      "\\\"device-info\\\": {\\\"type\\\": \\\"pci\\\", \\\"pci\\\": {\\\"pci-address\\\": "
      "\\\"0000:3b:02.0\\\"}}\\n}]\"\nk8s.v1.cni.cncf.io/networks=\"access\"\n");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(*PciAddressOfNetwork(*st, "access"), "0000:3b:02.0");
}

TEST(NetworkStatus, BadTextIsRefusedSayingWhy) {
  EXPECT_THAT(ParseNetworkStatus("[{").status().message(), HasSubstr("not JSON"));
  EXPECT_THAT(ParseNetworkStatus("{}").status().message(), HasSubstr("neither a JSON list"));
  EXPECT_THAT(ParseNetworkStatus(R"([{"interface":"net1"}])").status().message(),
              HasSubstr("entry 0 is not an object with a \"name\""));
  EXPECT_THAT(ParseNetworkStatus(R"([{"name":"a","device-info":{"pci":{"pci-address":"x"}}}])")
                  .status()
                  .message(),
              HasSubstr("'x' is not a PCI address"));
}

// Missing or empty: waited for (bounded), then refused naming the file.
TEST(NetworkStatus, FileIsWaitedForThenRefusedNamingIt) {
  const std::string path = ::testing::TempDir() + "/network-status-" + std::to_string(getpid());
  std::filesystem::remove(path);
  auto missing = ReadNetworkStatusFile(path, absl::Milliseconds(300));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              AllOf(HasSubstr("--network-status-file=" + path +
                              ": not there after "
                              "--network-status-timeout=300ms"),
                    HasSubstr("metadata.annotations['k8s.v1.cni.cncf.io/network-status']")));
  std::ofstream(path) << "";  // the downward API writes an empty file for a missing annotation
  EXPECT_THAT(ReadNetworkStatusFile(path, absl::Milliseconds(100)).status().message(),
              HasSubstr("still empty"));
  std::thread late([&] {  // the annotation lands while skbnfd waits
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::ofstream(path + ".tmp") << Fixture("network_status.json");
    std::filesystem::rename(path + ".tmp", path);
  });
  auto st = ReadNetworkStatusFile(path, absl::Seconds(20));
  late.join();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->size(), 3u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace skbnf::preflight
