# SPDX-License-Identifier: BSD-3-Clause
"""What the multi-process tests (capture_dumpcap_test.py, proc_info_skbnfd_test.py) share: 2 MiB
hugepages and a hugetlbfs mount of the test's own, skbnfd started on them as DPDK's primary, a
pcap of real IPv4/UDP frames for net_pcap to replay, and the clean-up of all of it.

Why hugepages: a DPDK 22.11 secondary maps the primary's memory from its hugepage files; a
--no-huge primary writes no hugepage_info, and the secondary stops at "EAL: FATAL: Cannot get
hugepage information" (tried: dpdk-proc-info against a --no-huge dpdk-testpmd). --no-shconf and
--in-memory switch EAL's IPC off (lib/eal/common/eal_common_proc.c rte_mp_action_register:
ENOTSUP), so secondaries cannot attach either. The pages and the mount come from
tests/support/hugepages.py (the suite's one helper: raises the reservation by what is missing,
mounts only when no 2 MiB hugetlbfs exists, gives back exactly what it added); this module
removes the rtemap files its skbnfd leaves in the mount (a shared-config primary does not
unlink them) and the runtime directory /var/run/dpdk/<prefix>.
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hugepages  # noqa: E402  tests/support/hugepages.py

PAGES = 144  # 288 MiB: skbnfd's -m 256 and the secondary's own pool


def fail(msg, log=None):
    print(f"FAIL: {msg}")
    if log and os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as f:
            print(f.read()[-4000:])
    sys.exit(1)


def wait_for(what, pred, seconds=20, log=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    fail(f"timed out waiting for {what}", log)


def write_udp_pcap(path, frames=64):
    """A classic pcap (tcpdump's format) of `frames` Ethernet/IPv4/UDP frames, 10.0.0.1 -> 10.0.0.2,
    UDP ports 1000+i -> 2000, each with a valid IPv4 header checksum."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(frames):
            payload = b"skbnf-capture-%04d" % i
            udp = struct.pack("!HHHH", 1000 + i, 2000, 8 + len(payload), 0) + payload
            ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
            s = sum(struct.unpack("!10H", ip))
            s = (s & 0xFFFF) + (s >> 16)
            ip[10:12] = struct.pack("!H", ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF)
            frame = (bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + b"\x08\x00"
                     + bytes(ip) + udp)
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)) + frame)


class Primary:
    """skbnfd on hugepages with shared config (attachable), io mode: net_pcap0 (replaying a UDP
    pcap forever) -> net_null0. Use as a context manager; `eal_extra` replaces the hugepage
    arguments (e.g. ["--no-huge", "--no-shconf"] for the not-attachable case), `vdevs` the ports,
    `flags` more skbnfd flags (before `--`)."""

    def __init__(self, skbnfd, name, hugepages=True, eal_extra=None, vdevs=None, flags=()):
        self.skbnfd = skbnfd
        self.prefix = f"skbnf-{name}-{os.getpid()}"
        self.dir = f"/run/{self.prefix}"
        self.huge = None
        self.pages_state = None
        self.log = os.path.join(self.dir, "skbnfd.log")
        self.hugepages = hugepages
        self.eal_extra = eal_extra
        self.vdevs = vdevs
        self.flags = list(flags)
        self.proc = None
        self.addr = None
        self.metrics_port = None

    def __enter__(self):
        try:
            return self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _start(self):
        os.makedirs(self.dir, exist_ok=True)
        if self.hugepages:
            err, self.pages_state = hugepages.ensure(PAGES)
            if err and self.pages_state["added_pages"]:
                # Surplus pages in use (another test's, after someone lowered nr_hugepages) are
                # made persistent by the raise, so the first one falls short by them: once more.
                err, more = hugepages.ensure(PAGES)
                self.pages_state["added_pages"] += more["added_pages"]
            if err:
                fail(f"hugepages: {err}")
            self.huge = hugepages.mount_point()
        pcap = os.path.join(self.dir, "udp.pcap")
        write_udp_pcap(pcap)
        ready = os.path.join(self.dir, "ready.json")
        # --base-virtaddr: DPDK maps a secondary's memory at the primary's addresses ("Attempt to
        # use a different starting address for all memory maps of the primary DPDK process. This
        # can be helpful if secondary processes cannot start due to conflicts in address map",
        # doc/guides/linux_gsg/eal_args.include.rst, DPDK 22.11). EAL's default hint, 0x100000000, lies
        # in ASan's shadow, so an ASan-built skbnfd got its 16 GiB reservation at a random
        # 0x7f.. address instead, where dpdk-dumpcap's own libraries sometimes sit: "Cannot get
        # a virtual area at requested address", then a SIGSEGV on its way out (1 capture in 23
        # of the ASan stage). 0x200000000000 is above ASan's HighShadow (which ends at
        # 0x10007fff7fff) and below where Linux puts mmaps and libraries (0x7f..): free in both.
        mem = (["-m", "256", f"--huge-dir={self.huge}", "--base-virtaddr=0x200000000000"]
               if self.hugepages else [])
        eal = self.eal_extra if self.eal_extra is not None else mem
        self.proc = subprocess.Popen(
            [self.skbnfd, "--mode=io", "--listen=127.0.0.1:0", "--loopback-role=admin", "--metrics-addr=127.0.0.1:0",
             "--stats=0", f"--ready-file={ready}", *self.flags, "--", "--lcores=0@0,1@1", "--no-pci",
             *eal,
             f"--file-prefix={self.prefix}",
             *(self.vdevs or [f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1", "--vdev=net_null0"])],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT)

        def started():
            if self.proc.poll() is not None:
                fail(f"skbnfd exited {self.proc.returncode}", self.log)
            return os.path.exists(ready) and os.path.getsize(ready) > 0
        wait_for("skbnfd's ready file", started, seconds=60)
        r = json.load(open(ready))
        self.addr, self.metrics_port = r["grpc"], r["metrics_port"]
        return self

    def stop(self):
        """SIGTERM; returns skbnfd's exit code (its last line has the audit)."""
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def __exit__(self, *exc):
        self.stop()
        if self.huge:
            for f in glob.glob(os.path.join(self.huge, f"{self.prefix}map_*")):
                os.unlink(f)
        if self.pages_state is not None:
            hugepages.release(self.pages_state)
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)
        return False
