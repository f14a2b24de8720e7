#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Capture a port's packets from a running skbnfd with DPDK's own dpdk-dumpcap (issue 32 item 6).

skbnfd runs as DPDK's primary on hugepages with shared config (capture_env.py says why), io
forwarding from net_pcap0 (replaying real Ethernet/IPv4/UDP frames) to net_null0; then it is
attachable and has called rte_pdump_init (server/telemetry/multi_process.h). dpdk-dumpcap
(package dpdk; DPDK 22.11 app/dumpcap/main.c) starts EAL itself as a secondary with fixed
arguments ("--proc-type secondary --log-level notice", plus --file-prefix from its own
--file-prefix option: no -d, so no plugin can be loaded there), creates a ring_mp_mc pool of its
own ("capture_<pid>") and asks the primary (rte_pdump_enable_bpf over EAL's IPC) to copy each
packet of the port into mbufs of that pool. The primary allocates them by the pool's ops *index*,
so DPDK's own ops must have the same indices in skbnfd as in dumpcap: skbnfd registers the skbnf
ops last (dataplane/dpdk/mempool_secondary.h, "Ops indices"). Before that fix, skbnfd's index of
ring_mp_mc was dumpcap's + 1 and the copies went to mempool/dpaa2's ops ("Failed to allocate IO
portal"; every packet dropped, 0 captured).

Checks:
  - bounded by count: `dpdk-dumpcap -i net_pcap0 -c 100 -w F.pcapng` exits 0 by itself; tcpdump
    -r reads the file (pcapng) and prints between 100 and 100 + 31 packets (dumpcap stops after
    the burst, BURST_SIZE 32, that reached the count: main.c process_ring), each one of our
    UDP frames (10.0.0.1.100x > 10.0.0.2.2000: UDP);
  - bounded by time: `-a duration:2` on port 1 (net_null0, what skbnfd transmits) stops by
    itself within 2..15 s; tcpdump reads the file and counts at least one packet;
  - five more `-c 100` captures, each stopped while the worker forwards at full rate: DPDK
    22.11's pdump removes its callbacks and answers, and dumpcap then frees the ring and pool
    they copy into, while a worker may still be inside one (fixed upstream only in DPDK 25.11,
    34536d08b0 "pdump: fix races in callbacks"); skbnfd waits for its workers to go round their
    loop after each removal (server/telemetry/multi_process.cc). Without that wait skbnfd died
    of SIGSEGV in rte_pcapng_copy at the end of nearly every capture here;
  - skbnfd forwards on and exits 0 with an exact audit after all captures;
  - /skbnf/info (dpdk-telemetry.py) says multi_process 1, capture 1.
The skbnfd of integration.telemetry_skbnfd (--no-shconf) says multi_process 0, capture 0: no
rte_pdump_init, nothing registered (no cost when off); proc_info_skbnfd_test.py has a dumpcap
refused by such a skbnfd.
Usage: capture_dumpcap_test.py SKBNFD
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_env import Primary, fail  # noqa: E402

DUMPCAP = "/usr/bin/dpdk-dumpcap"
TCPDUMP = "/usr/bin/tcpdump"


def dumpcap(p, *args, timeout=30):
    t0 = time.monotonic()
    out = subprocess.run([DUMPCAP, f"--file-prefix={p.prefix}", *args], capture_output=True,
                         text=True, timeout=timeout)
    return out, time.monotonic() - t0


def tcpdump(path):
    out = subprocess.run([TCPDUMP, "-nn", "-r", path], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        fail(f"tcpdump -r {path}: rc {out.returncode}: {out.stderr}")
    return [line for line in out.stdout.splitlines() if line.strip()]


def main():
    skbnfd = sys.argv[1]
    for tool in (DUMPCAP, TCPDUMP):
        if not os.access(tool, os.X_OK):
            fail(f"{tool} missing: deploy/deps.sh installs packages dpdk and tcpdump")
    with Primary(skbnfd, "cap") as p:
        tel = subprocess.run([sys.executable, "/usr/bin/dpdk-telemetry.py", "-f", p.prefix],
                             input="/skbnf/info\n", capture_output=True, text=True, timeout=30)
        if '"multi_process": 1' not in tel.stdout or '"capture": 1' not in tel.stdout:
            fail(f"/skbnf/info: {tel.stdout} {tel.stderr}", p.log)

        f1 = os.path.join(p.dir, "count.pcapng")
        out, took = dumpcap(p, "-i", "net_pcap0", "-c", "100", "-w", f1)
        if out.returncode != 0:
            fail(f"dumpcap -c 100: rc {out.returncode}: {out.stdout} {out.stderr}", p.log)
        lines = tcpdump(f1)
        udp = [x for x in lines if re.search(r"IP 10\.0\.0\.1\.1\d\d\d > 10\.0\.0\.2\.2000: UDP", x)]
        if not 100 <= len(lines) <= 131 or len(udp) != len(lines):
            fail(f"tcpdump -r {f1}: {len(lines)} packets, {len(udp)} of our UDP frames (want "
                 f"100..131, all ours): {lines[:3]} / dumpcap: {out.stderr}")
        print(f"ok: dpdk-dumpcap -i net_pcap0 -c 100: exited 0 in {took:.1f} s; tcpdump -r reads "
              f"{len(lines)} packets, all our UDP frames ({lines[0].split(' ', 1)[1]})")

        for i in range(5):
            out, _ = dumpcap(p, "-i", "net_pcap0", "-c", "100", "-w", f1)
            if out.returncode != 0 or p.proc.poll() is not None:
                fail(f"capture {i + 2}: dumpcap rc {out.returncode}, skbnfd "
                     f"{'exited ' + str(p.proc.returncode) if p.proc.poll() is not None else 'runs'}"
                     f"; dumpcap said: {out.stdout[-800:]} {out.stderr[-1500:]}", p.log)
        print("ok: five more dpdk-dumpcap -c 100 captures stopped under traffic; skbnfd runs on")

        f2 = os.path.join(p.dir, "duration.pcapng")
        out, took = dumpcap(p, "-i", "1", "-s", "64", "-a", "duration:2", "-w", f2)
        if out.returncode != 0 or not 2 <= took <= 15:
            fail(f"dumpcap -a duration:2: rc {out.returncode} after {took:.1f} s: {out.stderr}")
        lines = tcpdump(f2)
        if not lines:
            fail(f"tcpdump -r {f2}: no packet in 2 s of a forwarding port: {out.stderr}")
        print(f"ok: dpdk-dumpcap -i 1 -a duration:2: stopped by itself after {took:.1f} s; "
              f"tcpdump -r reads {len(lines)} packets")

        rc = p.stop()
        with open(p.log, encoding="utf-8", errors="replace") as f:
            last = f.read().strip().splitlines()[-1]
        if rc != 0 or "audit OK" not in last:
            fail(f"skbnfd exited {rc}: {last}", p.log)
        print(f"ok: skbnfd exited 0 after all captures: {last[last.index('audit'):][:90]}")


if __name__ == "__main__":
    main()
