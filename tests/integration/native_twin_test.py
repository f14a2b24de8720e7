#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd --native-twin (issue 33 item 1): skbnf's pool and DPDK's cached ring_mp_mc pool in one
process, the workers polling one side at a time (server/daemon/native_twin.h).

Shapes from DPDK 22.11: net_pcap makes one RX queue per rx_pcap argument, each replaying its
file for ever with infinite_rx=1 and allocating every received mbuf from that queue's mempool
(drivers/net/pcap/pcap_ethdev.c, eth_pcap_rx_infinite: rte_pktmbuf_alloc_bulk from
pcap_q->mb_pool); rte_eth_rx_queue_setup takes a mempool per queue (lib/ethdev/rte_ethdev.h).
So queue 0 (skbnf's pool) and its twin queue 1 (DPDK's) have the same traffic.

Run 1, io from net_pcap0 (the same pcap twice: two RX queues) to net_null0, --native-twin=FILE:
  - no file: the skbnf side; the skbnf pool's host_allocs grow with the packets received.
  - `native` written: skbnfd's log says the workers poll the native side (ring_mp_mc cache=256);
    then, over an interval in which the worker received >= 100,000 more packets, the skbnf
    pool's host_allocs and host_frees stood still (every RX refill came from DPDK's pool).
  - `bogus` written: the log names the file and says what to write; the side stays native (the
    skbnf pool still still over >= 100,000 more packets).
  - `skbnf` written: the log says so; host_allocs grow again.
  - a strategy swap on the skbnf side while traffic flows (SetStrategy headpool): applied.
  - SIGTERM: exit 0, the exact audit of both pools ("native twin: ring_mp_mc available N ==
    populated N").
Run 2, start-up refusals (exit 2, saying what to write): --native-twin with --pool-ops=ring_mp_mc;
with --rx-queues=2.
Usage: native_twin_test.py SKBNFD SKBNFCTL
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_env import Primary, fail, wait_for, write_udp_pcap  # noqa: E402

SKBNFD, SKBNFCTL = sys.argv[1], sys.argv[2]
GROW = 100000  # packets received between two reads of a side's counters


class Skbnfd(Primary):
    def __init__(self, side_file, pcap):
        super().__init__(SKBNFD, "twin", hugepages=False,
                         eal_extra=["--no-huge", "-m", "512", "--no-shconf"],
                         vdevs=[f"--vdev=net_pcap0,rx_pcap={pcap},rx_pcap={pcap},infinite_rx=1",
                                "--vdev=net_null0"],
                         flags=[f"--native-twin={side_file}"])

    def ctl(self, *args):
        out = subprocess.run([SKBNFCTL, f"--addr={self.addr}", *args], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            fail(f"skbnfctl {' '.join(args)}: rc {out.returncode}: {out.stdout} {out.stderr}",
                 self.log)
        return out

    def counters(self):
        """(received by worker 1, skbnf pool host_allocs, host_frees) on core 1."""
        r = json.loads(self.ctl("--json", "stats").stdout)
        (c,) = [c for c in r["cores"] if c["core"] == 1]
        rx = sum(int(p.get("rx_packets", 0)) for p in c["ports"])
        return rx, int(c["pool"]["host_allocs"]), int(c["pool"]["host_frees"])

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def across(self, grow=GROW):
        """Counters now and after the worker received `grow` more packets."""
        a = self.counters()
        b = wait_for(f"{grow} more packets", lambda: (lambda c: c if c[0] - a[0] >= grow
                                                       else None)(self.counters()),
                     seconds=60, log=self.log)
        return a, b


def side(path, word):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(word + "\n")
    os.replace(tmp, path)


def run1(d):
    pcap = os.path.join(d, "udp.pcap")
    write_udp_pcap(pcap)
    path = os.path.join(d, "side")
    with Skbnfd(path, pcap) as s:
        a, b = s.across()
        if b[1] - a[1] < GROW // 2:
            fail(f"skbnf side: host_allocs grew {b[1] - a[1]} over {b[0] - a[0]} packets",
                 s.log)
        side(path, "native")
        wait_for("the native side's log line",
                 lambda: "the workers poll the native side (ring_mp_mc cache=256)"
                 in s.log_text(), log=s.log)
        s.counters()  # a loop or two after the switch: the first read may still see the end
        a, b = s.across()
        if (a[1], a[2]) != (b[1], b[2]):
            fail(f"native side: the skbnf pool moved over {b[0] - a[0]} packets: allocs "
                 f"{a[1]} -> {b[1]}, frees {a[2]} -> {b[2]}", s.log)
        side(path, "bogus")
        wait_for("the refusal of 'bogus'",
                 lambda: re.search(r"--native-twin=\S+ says 'bogus': write `skbnf` or `native`",
                                   s.log_text()), log=s.log)
        a, b = s.across()
        if (a[1], a[2]) != (b[1], b[2]):
            fail("'bogus' moved the side: the skbnf pool moved", s.log)
        side(path, "skbnf")
        wait_for("the skbnf side's log line",
                 lambda: "the workers poll the skbnf side (magazine)" in s.log_text(), log=s.log)
        a, b = s.across()
        if b[1] - a[1] < GROW // 2:
            fail(f"back on the skbnf side: host_allocs grew only {b[1] - a[1]}", s.log)
        out = s.ctl("strategy", "set", "headpool")
        if "headpool" not in out.stdout:
            fail(f"swap on the skbnf side: {out.stdout}", s.log)
        rc = s.stop()
        log = s.log_text()
        if rc != 0:
            fail(f"skbnfd exited {rc}", s.log)
        m = re.search(r"native twin: ring_mp_mc available (\d+) == populated (\d+)", log)
        if not m or m.group(1) != m.group(2) or "audit OK" not in log:
            fail("no exact audit of both pools at stop", s.log)
        print(f"run 1: ok ({m.group(0)})")


def run2(d):
    for extra, want in (
            (["--pool-ops=ring_mp_mc"], "--native-twin puts DPDK's pool beside skbnf's: it needs "
                                        "--pool-ops=skbnf"),
            (["--rx-queues=2"], "they need pool_ops skbnf and rx_queues 1")):
        cmd = [SKBNFD, "--mode=io", "--listen=127.0.0.1:0", "--metrics-addr=off", "--stats=0",
               f"--native-twin={os.path.join(d, 'side')}", *extra, "--", "-l", "0,1",
               "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
               f"--file-prefix=skbnf-twin2-{os.getpid()}", "--vdev=net_null0", "--vdev=net_null1"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if out.returncode != 2 or want not in out.stderr:
            fail(f"{extra}: rc {out.returncode}, stderr {out.stderr[-2000:]!r}")
    print("run 2: ok")


def main():
    d = f"/run/skbnf-twin-test-{os.getpid()}"
    os.makedirs(d, exist_ok=True)
    try:
        run1(d)
        run2(d)
    finally:
        subprocess.run(["rm", "-rf", d], check=False)


if __name__ == "__main__":
    main()
