// Preflight against fake sysfs / procfs / /dev / cgroup trees and environments: each common
// pod set-up mistake gives an error (or a risk) whose message says what to change, and a
// correctly set-up SR-IOV pod passes clean.
#include "server/preflight.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace skbnf::preflight {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

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

  Host host() const {
    Host h;
    h.root = root_.string();
    return h;
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

// The pod set up right: two vfio-pci VFs on node 0, cpuset 2-3 on node 0, 2M hugepages with
// 512 free pages (1 GiB) on node 0, memlock unlimited.
class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.Vf("0000:3b:02.0", "vfio-pci", 71, 0);
    fake_.Vf("0000:3b:02.1", "vfio-pci", 72, 0);
    fake_.Cpus("2-3", {{2, 0}, {3, 0}});
    fake_.Hugepages(",pagesize=2M", 0, 512);
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

TEST_F(PreflightTest, Mlx5BifurcatedNeedsNoVfio) {
  FakeHost f;
  f.Vf("0000:5e:00.2", "mlx5_core", -1, 0);
  f.Remove("/dev/vfio");
  f.Cpus("2-3", {{2, 0}, {3, 0}});
  f.Hugepages(",pagesize=2M", 0, 512);
  host_ = f.host();
  host_.env = {{"PCIDEVICE_NVIDIA_COM_MLX5_VF", "0000:5e:00.2"}};
  Report r = Run();
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_THAT(r.ToText(), HasSubstr("mlx5_core (bifurcated: no vfio needed)"));
  EXPECT_THAT(Find(r, "vfio", Severity::kOk)->message, HasSubstr("<no such finding"));
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
