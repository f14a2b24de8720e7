# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd's start-up checks (server/daemon/startup_checks.h) end to end: `skbnfd --preflight` prints the
report and exits 0/1; the normal start runs the same checks before EAL and refuses (exit 2) on
an error with what to change, prints warnings and goes on; the demo passes. Fake nodes (sysfs,
procfs, /dev, cgroup) come in through the hidden --test-preflight-root; PCIDEVICE_* through the
environment, as the SR-IOV device plugin sets it.
"""

import os
import resource
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

SKBNFD = os.environ["SKBNFD"]
FIXTURES = os.environ.get("SKBNF_FIXTURES",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
VF = "0000:3b:02.0"
VF2 = "0000:3b:02.1"
MLX = "0000:5e:00.2"
# linux/capability.h
CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK = 1 << 12, 1 << 13, 1 << 14


def fixture(name):
    """The real shapes (fixtures/README.md names each file's source): the device plugin's
    PCIDEVICE_<RES>_INFO value, Multus' network-status annotation."""
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def own_caps():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def memlock_4m():
    """A known RLIMIT_MEMLOCK (lowering needs no privilege): 4 MiB, enough for the small pools
    below (--mbufs=1024: ~2.3 MiB)."""
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    soft = 4 << 20 if hard == resource.RLIM_INFINITY else min(hard, 4 << 20)
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))


def skbnfd(*args, env=None, memlock=memlock_4m):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PCIDEVICE_")}
    e.update(env or {})
    p = subprocess.run([SKBNFD] + list(args), capture_output=True, text=True, env=e,
                       timeout=120, preexec_fn=memlock)
    return p.returncode, p.stdout, p.stderr


class FakeNode:
    """An SR-IOV node as the container sees it, under a temporary root. It starts as
    fixtures/sriov-node (shared with preflight_test.cc): two vfio-pci VFs 0000:3b:02.0/.1 on
    NUMA node 0 (IOMMU groups 71, 72), cgroup v2 cpuset 2-3, 2M hugetlbfs at /hugepages with
    512 free pages on node 0."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="skbnf-preflight-")
        shutil.copytree(os.path.join(FIXTURES, "sriov-node"), self.root, symlinks=True,
                        dirs_exist_ok=True)

    def write(self, path, text=""):
        p = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)

    def link(self, path, target):
        p = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.lexists(p):
            os.remove(p)
        os.symlink(target, p)

    def cpuset(self, cpus, cpu_nodes):
        self.write("/proc/self/cgroup", "0::/kubepods/podX/ctr\n")
        self.write("/sys/fs/cgroup/kubepods/podX/ctr/cpuset.cpus.effective", cpus + "\n")
        for cpu in cpu_nodes:
            self.write("/sys/devices/system/cpu/cpu%d/node0/.keep" % cpu)

    def vf(self, driver, group=None, addr=VF):
        dev = "/sys/bus/pci/devices/" + addr
        self.write(dev + "/numa_node", "0\n")
        self.link(dev + "/driver", "../../../bus/pci/drivers/" + driver)
        if group is not None:
            self.link(dev + "/iommu_group", "../../../kernel/iommu_groups/%d" % group)
            self.write("/dev/vfio/vfio")
            self.write("/dev/vfio/%d" % group)

    def hugepages(self, free_2m):
        self.write("/proc/meminfo", "MemTotal: 1000 kB\nHugepagesize:       2048 kB\n")
        self.write("/proc/mounts", "proc /proc proc rw 0 0\n"
                                   "nodev /hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
        self.write("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages",
                   "%d\n" % free_2m)

    def cap_eff(self, caps):
        """The effective capabilities as the kernel shows them (CapEff of /proc/self/status)."""
        self.write("/proc/self/status", "Name:\tskbnfd\nCapInh:\t%016x\nCapPrm:\t%016x\n"
                   "CapEff:\t%016x\n" % (0, caps, caps))

    def real_proc_status(self):
        """The process's own /proc/self/status: a real process's capabilities are checked."""
        self.link("/proc/self/status", "/proc/self/status")

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


class DemoTest(unittest.TestCase):
    def test_demo_passes_preflight(self):
        rc, out, err = skbnfd("--preflight")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("preflight: 0 error(s)", out)
        self.assertRegex(out, r"ok +pool_sizing +pool of \d+ objects >= \d+ needed")
        self.assertRegex(out, r"ok +cpuset +-l 0,1 within")
        self.assertNotIn("hugepages", out, "--no-huge: no hugepage check")
        self.assertNotIn("pci_devices", out, "no --pcidevice-env: no VF check")
        self.assertNotIn("EAL", out + err, "--preflight never initialises EAL")

    def test_pool_too_small_refuses_to_start_naming_the_numbers(self):
        rc, out, err = skbnfd("--mbufs=1024", "--duration=1")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("skbnfd: preflight error: pool_sizing: pool of 1024 objects < ", err)
        self.assertIn("raise --mbufs to at least", err)
        self.assertIn("skbnfd --preflight", err)
        self.assertNotIn("EAL", out + err, "refused before EAL")
        # the escape hatch: EAL and the engine run (and the pool is what was asked for)
        rc, out, err = skbnfd("--mbufs=1024", "--duration=1", "--stats=0", "--skip-preflight")
        self.assertNotIn("preflight", err)


class SriovNodeTest(unittest.TestCase):
    def setUp(self):
        self.node = FakeNode()  # cpuset 2-3, 512 free 2M pages
        self.args = ["--pcidevice-env", "--mode=io", "--test-preflight-root=" + self.node.root,
                     "--mbufs=1024", "--rx-ring=256", "--tx-ring=256",
                     "--", "--in-memory", "--huge-dir=/hugepages"]
        self.env = {"PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK": VF}

    def tearDown(self):
        self.node.remove()

    def test_vf_on_a_kernel_driver_is_refused_with_what_to_change(self):
        self.node.vf("iavf")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +vf_driver +%s is bound to the kernel driver iavf" % VF)
        self.assertIn("drivers: [vfio-pci]", out)
        self.assertRegex(out, r"ok +pci_devices +%s \(PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK\)" % VF)
        self.assertIn("preflight: 1 error(s)", out)

        rc, out, err = skbnfd(*self.args, env=self.env)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("skbnfd: preflight: 1 error(s), start-up refused", err)
        self.assertIn("skbnfd: preflight error: vf_driver: %s is bound to the kernel driver iavf"
                      % VF, err)
        self.assertNotIn("EAL", out + err, "refused before EAL")

    def test_vfio_pod_set_up_right_passes(self):
        self.node.vf("vfio-pci", group=71)
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +vf_driver +%s bound to vfio-pci" % VF)
        self.assertRegex(out, r"ok +vfio +/dev/vfio/vfio, /dev/vfio/71 read-writable")
        self.assertRegex(out, r"ok +hugepages +hugetlbfs 2M mounted; free pages: 512 on node 0")
        self.assertRegex(out, r"ok +cpuset +lcores from the cpuset: main 2, workers 3")
        self.assertIn("preflight: 0 error(s), 0 warning(s)", out)

    def test_memlock_below_the_pool_is_an_error_with_vfio(self):
        self.node.vf("vfio-pci", group=71)

        def low():
            _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, hard))
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env, memlock=low)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +memlock +RLIMIT_MEMLOCK 64 KiB < 2.3 MiB the pool needs "
                              r"\(VFIO maps it locked for DMA\): give the container the IPC_LOCK")

    def test_too_few_hugepages_and_no_mount(self):
        self.node.vf("vfio-pci", group=71)
        self.node.hugepages(1)
        rc, out, _ = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1)
        # what skbnfd puts on hugepages (the pool and EAL's own), in pages, and how to get them
        self.assertRegex(out, r"error +hugepages +free 2M pages: 1 on node 0 = 2 MiB < 10.4 MiB "
                              r"skbnfd needs = 6 pages \(pool 1024 mbufs 2.4 MiB \+ EAL, rings "
                              r"and caches 8 MiB\) on the workers' node: reserve 5 more: raise "
                              r"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages by 5; in a "
                              r"pod raise hugepages-2Mi to at least 12Mi")
        self.node.write("/proc/mounts", "proc /proc proc rw 0 0\n")
        rc, out, _ = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"error +hugepages +--huge-dir=/hugepages is not a hugetlbfs mount")

    def test_no_vf_handed_in(self):
        rc, out, err = skbnfd("--preflight", *self.args)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +pci_devices +no PCIDEVICE_\* variable")
        rc, out, err = skbnfd(*self.args)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("skbnfd: preflight error: pci_devices: no PCIDEVICE_* variable", err)

    def test_static_lcore_list_outside_the_cpuset(self):
        self.node.cpuset("2-3", [2, 3])
        rc, out, err = skbnfd("--preflight", "--mode=io",
                              "--test-preflight-root=" + self.node.root, "--", "--no-huge",
                              "-l", "0,1", "--vdev=net_null0", "--vdev=net_null1")
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +cpuset +-l names CPU 0,1 but the container may run only "
                              r"on 2,3 .*Cannot set affinity")

    def test_a_warning_is_printed_and_start_up_goes_on(self):
        # one CPU in the cpuset, no -l: a risk (no core for a worker), not an error
        self.node.cpuset("0", [0])
        rc, out, err = skbnfd("--mode=io", "--duration=1", "--stats=0",
                              "--test-preflight-root=" + self.node.root, "--", "--no-huge",
                              "-m", "512", "--no-pci", "--no-shconf",
                              "--file-prefix=skbnf-preflight-%d" % os.getpid(),
                              "--lcores=(0,1)@0", "--vdev=net_null0", "--vdev=net_null1")
        self.assertIn("skbnfd: preflight warning: cpuset: only CPU 0 is allowed", err)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("net_null0", out, "skbnfd started after the warning")


class RealNodeShapesTest(unittest.TestCase):
    """What a current SR-IOV node really hands the pod, each a case today's main got wrong: the
    device plugin's PCIDEVICE_<RES>_INFO, IPC_LOCK with Docker's 8 MiB memlock, CPU manager
    `none` (cpuset = node, CFS quota), the pod's hugetlb limit, mlx5 (isRdma, NET_RAW/NET_ADMIN),
    Multus' network-status."""

    def setUp(self):
        self.node = FakeNode()  # VF and VF2 on vfio-pci, cpuset 2-3, 512 free 2M pages
        self.root = "--test-preflight-root=" + self.node.root
        self.args = ["--pcidevice-env", "--mode=io", self.root, "--mbufs=1024",
                     "--rx-ring=128", "--tx-ring=128", "--", "--in-memory",
                     "--huge-dir=/hugepages"]
        # exactly as the plugin (v3.6+) sets them: sriov-network-device-plugin
        # pkg/resources/pool_stub.go GetEnvs; the _INFO value: fixtures/pcidevice_info_vfio.json
        self.env = {"PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK": VF + "," + VF2,
                    "PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO": fixture("pcidevice_info_vfio.json")}

    def tearDown(self):
        self.node.remove()

    def test_device_plugin_info_variable(self):
        # main: --preflight exit 1, start exit 2, --skip-preflight exit 2 ("..._INFO: '{...' is
        # not a PCI address")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +pci_devices +%s \(PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK, "
                              r"with _INFO\), %s" % (VF, VF2))
        self.assertRegex(out, r"ok +vfio +/dev/vfio/vfio, /dev/vfio/71, /dev/vfio/72 read-writable")
        # Started for real (no such device here): the failure is the device's, not the
        # environment parser's.
        eal = ["--", "--no-huge", "-m", "512", "--no-shconf",
               "--file-prefix=skbnf-preflight-info-%d" % os.getpid()]
        for extra in ([], ["--skip-preflight"]):
            rc, out, err = skbnfd("--pcidevice-env", "--mode=io", self.root, "--duration=1",
                                  *extra, *eal, env=self.env)
            self.assertEqual(rc, 2, out + err)
            self.assertNotIn("is not a PCI address", err)
            self.assertNotIn("preflight error", err)
            self.assertIn("skbnfd: no ports: give EAL a device", err, "refused by port set-up")

    def test_unreadable_info_is_a_warning(self):
        env = dict(self.env, PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO="{broken")
        rc, out, err = skbnfd("--preflight", *self.args, env=env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"warn +pci_devices +PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK_INFO \(the "
                              r"device plugin's device information\) is unreadable, not JSON")

    def test_ipc_lock_with_an_8mib_memlock_limit(self):
        # A real process: its own capabilities (the fake root's /proc/self/status is the real
        # one), RLIMIT_MEMLOCK 8 MiB (Docker's default), a pool of ~19 MiB. main: "error memlock
        # ... give the container the IPC_LOCK capability".
        if not own_caps() & CAP_IPC_LOCK:
            self.skipTest("this process has no CAP_IPC_LOCK to hand to skbnfd")
        self.node.real_proc_status()
        args = [a if a != "--mbufs=1024" else "--mbufs=8192" for a in self.args]

        def memlock_8m():
            _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
            soft = 8 << 20 if hard == resource.RLIM_INFINITY else min(hard, 8 << 20)
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
        rc, out, err = skbnfd("--preflight", *args, env=self.env, memlock=memlock_8m)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +memlock +CAP_IPC_LOCK in the effective capabilities: "
                              r"RLIMIT_MEMLOCK \(8 MiB\) does not apply")
        # The same process without the capability (dropped from the bounding set: root's
        # effective set after exec is the bounding set).
        p = subprocess.run(["setpriv", "--bounding-set=-ipc_lock", SKBNFD, "--preflight", *args],
                           capture_output=True, text=True, timeout=120, preexec_fn=memlock_8m,
                           env=dict({k: v for k, v in os.environ.items()
                                     if not k.startswith("PCIDEVICE_")}, **self.env))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"error +memlock +RLIMIT_MEMLOCK 8 MiB < 18.5 MiB the pool "
                                   r"needs \(VFIO maps it locked for DMA\): give the container the "
                                   r"IPC_LOCK capability")

    def test_cpu_manager_none_quota_below_the_cpuset(self):
        # cpuset = the node's 64 CPUs, cpu.max = 2 CPUs (cgroup-v2.rst "$MAX $PERIOD"). main: ok,
        # then 63 workers.
        self.node.cpuset("0-63", [1])
        self.node.write("/sys/fs/cgroup/kubepods/podX/ctr/cpu.max", "200000 100000\n")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r'error +cpu_quota +CPU quota 2 CPUs \(cpu.max "200000 100000"\) < '
                              r"the 64 CPUs skbnfd would poll on \(the cpuset 0-63\)")
        rc, out, err = skbnfd(*self.args, env=self.env)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("skbnfd: preflight error: cpu_quota: CPU quota 2 CPUs", err)

    def test_cpu_quota_cgroup_v1(self):
        self.node.write("/proc/self/cgroup", "5:cpu,cpuacct:/kubepods/pod1/c\n"
                                             "4:cpuset:/kubepods/pod1/c\n")
        self.node.write("/sys/fs/cgroup/cpuset/kubepods/pod1/c/cpuset.cpus", "0-7\n")
        self.node.write("/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c/cpu.cfs_quota_us", "400000\n")
        self.node.write("/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c/cpu.cfs_period_us", "100000\n")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +cpu_quota +CPU quota 4 CPUs \(cpu.cfs_quota_us 400000 / "
                              r"cpu.cfs_period_us 100000\) < the 8 CPUs")

    def test_hugetlb_cgroup_limit(self):
        # 512 free 2M pages on the node, but the pod may fault in 1 (hugetlb.2MB.max, v2). main: ok.
        self.node.write("/sys/fs/cgroup/kubepods/podX/ctr/hugetlb.2MB.max", "2097152\n")
        self.node.write("/sys/fs/cgroup/kubepods/podX/ctr/hugetlb.2MB.current", "0\n")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +hugepages +the pod's hugetlb cgroup allows 2 MiB of 2M "
                              r"pages \(hugetlb.2MB.max 2097152 in /sys/fs/cgroup/kubepods/podX/ctr\) "
                              r"< 10.4 MiB skbnfd needs .*: raise hugepages-2Mi to at least 12Mi")
        # v1: hugetlb.2MB.limit_in_bytes (cgroup-v1/hugetlb.rst)
        self.node.write("/proc/self/cgroup", "9:hugetlb:/kubepods/pod1/c\n4:cpuset:/kubepods/pod1/c\n")
        self.node.write("/sys/fs/cgroup/cpuset/kubepods/pod1/c/cpuset.cpus", "2-3\n")
        self.node.write("/sys/fs/cgroup/hugetlb/kubepods/pod1/c/hugetlb.2MB.limit_in_bytes",
                        "1073741824\n")
        rc, out, err = skbnfd("--preflight", *self.args, env=self.env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +hugepages +hugetlb cgroup: 1024 MiB of 2M pages")

    def mlx5_node(self):
        self.node.vf("mlx5_core", addr=MLX)
        for n in ("issm4", "rdma_cm", "umad4", "uverbs4"):
            self.node.write("/dev/infiniband/" + n)
        self.node.cap_eff(CAP_IPC_LOCK | CAP_NET_RAW | CAP_NET_ADMIN)
        # an isRdma resource: fixtures/pcidevice_info_mlx5.json (rdmaInfoProvider.go)
        return {"PCIDEVICE_NVIDIA_COM_MLX5_VF": MLX,
                "PCIDEVICE_NVIDIA_COM_MLX5_VF_INFO": fixture("pcidevice_info_mlx5.json")}

    def test_mlx5_rdma_nodes_and_capabilities(self):
        env = self.mlx5_node()
        rc, out, err = skbnfd("--preflight", *self.args, env=env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +rdma +%s \(mlx5\): /dev/infiniband/issm4, "
                              r"/dev/infiniband/rdma_cm, /dev/infiniband/umad4, "
                              r"/dev/infiniband/uverbs4 read-writable" % MLX)
        # the chart's old capabilities: IPC_LOCK only
        self.node.cap_eff(CAP_IPC_LOCK)
        rc, out, err = skbnfd("--preflight", *self.args, env=env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +rdma +mlx5 needs the capabilities NET_RAW and NET_ADMIN")
        # not an isRdma resource: no rdma entry, no /dev/infiniband. main: ok.
        self.node.cap_eff(CAP_IPC_LOCK | CAP_NET_RAW | CAP_NET_ADMIN)
        env["PCIDEVICE_NVIDIA_COM_MLX5_VF_INFO"] = '{"%s":{"generic":{"deviceID":"%s"}}}' % (MLX, MLX)
        shutil.rmtree(os.path.join(self.node.root, "dev/infiniband"))
        rc, out, err = skbnfd("--preflight", *self.args, env=env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +rdma +%s \(mlx5\): the device plugin mounted no RDMA "
                              r"device .*isRdma: true" % MLX)


class NetworkStatusTest(unittest.TestCase):
    """Ports named by Multus network: `port net=<network>` resolved through the pod's
    k8s.v1.cni.cncf.io/network-status (fixtures/network_status.json, as Multus writes it)."""

    def setUp(self):
        self.node = FakeNode()  # VF and VF2 on vfio-pci, cpuset 2-3, 512 free 2M pages
        self.dir = tempfile.mkdtemp(prefix="skbnf-netstatus-")
        self.status = os.path.join(self.dir, "network-status")
        self.conf = os.path.join(self.dir, "skbnfd.conf")
        with open(self.conf, "w") as f:
            f.write("port net=access peer=net=core\nport net=skbnf/core\n")
        self.args = ["--preflight", "--pcidevice-env", "--mode=io", "--config=" + self.conf,
                     "--network-status-file=" + self.status,
                     "--test-preflight-root=" + self.node.root, "--mbufs=1024", "--rx-ring=128",
                     "--tx-ring=128", "--", "--in-memory", "--huge-dir=/hugepages"]
        # two resources, their variables in the opposite order of the networks
        self.env = {"PCIDEVICE_INTEL_COM_A_CORE": VF2, "PCIDEVICE_INTEL_COM_B_ACCESS": VF,
                    "PCIDEVICE_INTEL_COM_A_CORE_INFO": '{"%s":{"generic":{"deviceID":"%s"}}}'
                                                       % (VF2, VF2)}

    def tearDown(self):
        self.node.remove()
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_status(self, text):
        with open(self.status + ".tmp", "w") as f:
            f.write(text)
        os.rename(self.status + ".tmp", self.status)  # as the kubelet's atomic writer does

    def test_ports_by_network(self):
        self.write_status(fixture("network_status.json"))
        rc, out, err = skbnfd(*self.args, env=self.env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"ok +pool_sizing +pool of 1024 objects >= \d+ needed = RX 2 ports")
        self.assertIn("skbnfd: port net=access is %s (network-status)" % VF, err)
        self.assertIn("skbnfd: port net=skbnf/core is %s (network-status)" % VF2, err)
        # the file's order (access, core), not the variables' (A_CORE, B_ACCESS)
        self.assertRegex(out, r"ok +ports +%s handed in\nok +ports +%s handed in" % (VF, VF2))

    def test_network_whose_vf_was_not_handed_in(self):
        # the pod requested one resource for two networks: access's VF is not in PCIDEVICE_*
        self.write_status(fixture("network_status.json").replace(VF, "0000:3b:02.5"))
        rc, out, err = skbnfd(*self.args, env=self.env)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"error +ports +port 0000:3b:02.5 \(of the config, or of its network "
                              r"in the network-status\) is not one of the VFs the device plugin "
                              r"handed the pod \(%s, %s\)" % (VF2, VF))

    def test_unknown_network_lists_the_pods_networks(self):
        self.write_status(fixture("network_status.json"))
        with open(self.conf, "w") as f:
            f.write("port net=acces\n")
        rc, out, err = skbnfd(*self.args, env=self.env)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("skbnfd: %s: port net=acces: no network 'acces' in the pod's network-status; "
                      "the pod has: k8s-pod-network (eth0, no PCI device), skbnf/core (net1, %s), "
                      "skbnf/access (net2, %s) (--network-status-file=%s)"
                      % (self.conf, VF2, VF, self.status), err)

    def test_missing_file_is_waited_for_then_refused_naming_it(self):
        t0 = time.monotonic()
        rc, out, err = skbnfd("--network-status-timeout=1s", *self.args, env=self.env)
        self.assertEqual(rc, 2, out + err)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertIn("--network-status-file=%s: not there after --network-status-timeout=1s"
                      % self.status, err)

    def test_annotation_landing_after_start(self):
        # The downward API file exists but is empty until Multus' annotation lands.
        self.write_status("")
        writer = threading.Timer(1.0, self.write_status, [fixture("network_status.json")])
        writer.start()
        try:
            rc, out, err = skbnfd("--network-status-timeout=60s", *self.args, env=self.env)
        finally:
            writer.join()
        self.assertEqual(rc, 0, out + err)

    def test_net_ports_need_the_flag(self):
        args = [a for a in self.args if not a.startswith("--network-status-file")]
        rc, out, err = skbnfd(*args, env=self.env)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--network-status-file=/etc/podnetinfo/network-status", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
