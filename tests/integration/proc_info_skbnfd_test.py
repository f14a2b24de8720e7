#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""DPDK's own dpdk-proc-info against a running skbnfd (issue 32 item 7).

dpdk-proc-info (package dpdk; DPDK 22.11 app/proc-info/main.c) is a secondary process: it passes
its EAL arguments through with --proc-type=secondary, prints what it is asked (--stats: each
port's rte_eth_stats_get; --show-mempool[=NAME]: rte_mempool_dump, or for NAME the size, cache,
"Count: avail (A), in use (U)" from rte_mempool_avail_count/in_use_count and "ops_index I
ops_name N"), then closes every port (rte_eth_dev_close) and exits.

Attachable skbnfd (hugepages, shared config; capture_env.py), io between net_null0 and net_null1:
  - `dpdk-proc-info --file-prefix=P -- --stats` itself: exit 0, both ports' NIC statistics, RX
    packets counted;
  - server/telemetry/skbnf-proc-info (the wrapper that loads the plugin in the order that gives
    the secondary skbnfd's ops indices, README.md) `-- --show-mempool=NAME`: exit 0, ops_name
    skbnf, avail + in use == size; with the worker parked (skbnfctl worker pause) avail equals
    what the audit (skbnfctl --json audit) says is in the pool (populated - in flight) exactly:
    the secondary's count is the primary's, over EAL IPC;
  - `--show-mempool` without the plugin is refused by the wrapper (exit 2, naming --plugin);
  - skbnfd stays SERVING throughout (net_null's close in a secondary leaves the primary's port
    alone; net_pcap's does not: README.md) and exits 0 with an exact audit.
Not attachable skbnfd (--no-huge --no-shconf, what the other tests run):
  - the wrapper refuses (exit 2) with skbnfd's note naming --no-shconf and hugepages;
  - dpdk-proc-info itself fails (non-zero, its EAL cannot attach) and dpdk-dumpcap says "is
    primary process running?"; skbnfd runs on unharmed.
Usage: proc_info_skbnfd_test.py SKBNFD SKBNFCTL PLUGIN WRAPPER
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_env import Primary, fail  # noqa: E402

SKBNFD, SKBNFCTL, PLUGIN, WRAPPER = sys.argv[1:5]
NULLS = ["--vdev=net_null0", "--vdev=net_null1"]


def run(*args, timeout=60):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def ctl(p, *args):
    out = run(SKBNFCTL, f"--addr={p.addr}", *args)
    if out.returncode != 0:
        fail(f"skbnfctl {' '.join(args)}: {out.stdout} {out.stderr}", p.log)
    return out.stdout


def attachable(plugin):
    with Primary(SKBNFD, "pinfo", vdevs=NULLS) as p:
        out = run("/usr/bin/dpdk-proc-info", f"--file-prefix={p.prefix}", "--", "--stats")
        rx = [int(x) for x in re.findall(r"RX-packets:\s+(\d+)\s+RX-errors", out.stdout)]
        if (out.returncode != 0 or "NIC statistics for port 0" not in out.stdout
                or "NIC statistics for port 1" not in out.stdout or not rx or max(rx) == 0):
            fail(f"dpdk-proc-info --stats: rc {out.returncode}: {out.stdout[-1500:]} {out.stderr}")
        print(f"ok: dpdk-proc-info -- --stats: exit 0, ports 0 and 1, RX-packets {rx[:2]}")

        pool = json.loads(ctl(p, "--json", "info"))["pool"]["name"]
        out = run(WRAPPER, f"--file-prefix={p.prefix}", "--", f"--show-mempool={pool}")
        if out.returncode != 2 or "--plugin" not in out.stderr:
            fail(f"--show-mempool without the plugin: rc {out.returncode}: {out.stderr}")
        print("ok: skbnf-proc-info -- --show-mempool without --plugin: refused (exit 2)")

        ctl(p, "worker", "pause", "1")
        audit = json.loads(ctl(p, "--json", "audit"))
        out = run(WRAPPER, f"--file-prefix={p.prefix}", f"--plugin={plugin}", "--",
                  f"--show-mempool={pool}")
        m = re.search(r"Count: avail \((\d+)\), in use \((\d+)\)", out.stdout)
        size = re.search(r"- Size (\d+) Cache (\d+)", out.stdout)
        if out.returncode != 0 or not m or not size or "ops_name skbnf" not in out.stdout:
            fail(f"skbnf-proc-info --show-mempool: rc {out.returncode}: {out.stdout[-1500:]} "
                 f"{out.stderr[-1500:]}", p.log)
        avail, in_use = int(m.group(1)), int(m.group(2))
        want = int(audit["populated"]) - int(audit["in_flight"])
        if avail + in_use != int(size.group(1)) or avail != want:
            fail(f"--show-mempool avail {avail} in use {in_use} size {size.group(1)}; audit: "
                 f"populated {audit['populated']} in flight {audit['in_flight']}")
        ctl(p, "worker", "resume", "1")
        print(f"ok: skbnf-proc-info --plugin -- --show-mempool={pool}: ops_name skbnf, avail "
              f"{avail} == the audit's populated - in flight, avail + in use == size {size.group(1)}")

        rc = p.stop()
        with open(p.log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        last = text.strip().splitlines()[-1]
        # The test's own pause (for an exact audit) is NOT_SERVING by design while its lease
        # holds (server/control/pause_leases.h); any other reason is proc-info's doing.
        other = [x for x in text.splitlines() if "NOT_SERVING" in x and
                 not re.search(r"NOT_SERVING: worker core 1: paused by PauseWorker \([^)]*\), "
                               r"lease ends in \d+ s$", x)]
        if rc != 0 or "audit OK" not in last or other:
            fail(f"skbnfd after proc-info: rc {rc}, NOT_SERVING logged but for the test's own "
                 f"pause: {other}: {last}", p.log)
        print("ok: skbnfd stayed SERVING (but for the test's own pause) and exited 0 with an "
              "exact audit")


def not_attachable():
    eal = ["--no-huge", "-m", "512", "--no-shconf"]
    with Primary(SKBNFD, "pinfo-off", hugepages=False, eal_extra=eal, vdevs=NULLS) as p:
        out = run(WRAPPER, f"--file-prefix={p.prefix}", "--", "--stats")
        if out.returncode != 2 or "--no-shconf" not in out.stderr or "hugepages" not in out.stderr:
            fail(f"skbnf-proc-info against --no-shconf: rc {out.returncode}: {out.stderr}")
        print(f"ok: skbnf-proc-info refuses a --no-shconf skbnfd: {out.stderr.strip()}")
        out = run("/usr/bin/dpdk-proc-info", f"--file-prefix={p.prefix}", "--", "--stats")
        if out.returncode == 0:
            fail(f"dpdk-proc-info attached to a --no-shconf skbnfd: {out.stdout[-500:]}")
        out2 = run("/usr/bin/dpdk-dumpcap", f"--file-prefix={p.prefix}", "-i", "0", "-c", "1",
                   "-w", os.path.join(p.dir, "x.pcapng"))
        if out2.returncode == 0 or "is primary process running?" not in out2.stderr + out2.stdout:
            fail(f"dpdk-dumpcap against --no-shconf: rc {out2.returncode}: {out2.stderr}")
        if p.proc.poll() is not None:
            fail("skbnfd died under a refused secondary", p.log)
        ctl(p, "info")
        print(f"ok: dpdk-proc-info (rc {out.returncode}) and dpdk-dumpcap (rc {out2.returncode}, "
              "'is primary process running?') cannot attach; skbnfd runs on")


def main():
    for tool in ("/usr/bin/dpdk-proc-info", "/usr/bin/dpdk-dumpcap"):
        if not os.access(tool, os.X_OK):
            fail(f"{tool} missing: deploy/deps.sh installs package dpdk")
    # EAL refuses a -d plugin below a world-writable directory: a private copy.
    private = f"/run/skbnf-pinfo-plugin-{os.getpid()}"
    os.makedirs(private, mode=0o700, exist_ok=True)
    plugin = shutil.copy(PLUGIN, private)
    try:
        attachable(plugin)
        not_attachable()
    finally:
        shutil.rmtree(private, ignore_errors=True)


if __name__ == "__main__":
    main()
