"""skbnfd's start-up checks (server/startup_checks.h) end to end: `skbnfd --preflight` prints the
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
import unittest

SKBNFD = os.environ["SKBNFD"]
VF = "0000:3b:02.0"


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
    """An SR-IOV node as the container sees it, under a temporary root."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="skbnf-preflight-")

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
        self.write("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
        self.write("/sys/fs/cgroup/kubepods/pod1/ctr/cpuset.cpus.effective", cpus + "\n")
        for cpu in cpu_nodes:
            self.write("/sys/devices/system/cpu/cpu%d/node0/.keep" % cpu)

    def vf(self, driver, group=None):
        dev = "/sys/bus/pci/devices/" + VF
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
        self.node = FakeNode()
        self.node.cpuset("0-1", [0, 1])
        self.node.hugepages(512)
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
        self.assertRegex(out, r"ok +cpuset +lcores from the cpuset: main 0, workers 1")
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
        self.assertRegex(out, r"error +hugepages +free 2M pages: 1 on node 0 = 2 MiB < 2.3 MiB")
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
