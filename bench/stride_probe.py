#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The stride probe of issue 23's layout control: where a pktmbuf pool puts its mbufs.

  bench/stride_probe.py [--build DIR] [--out FILE]   (default: bench/results/layout/stride_probe.csv)

  as recorded: cmake --build build --target stride_probe skbnf_mempool && bench/stride_probe.py

Runs build/bench/stride_probe (a pktmbuf pool as testpmd makes it: 32,768 mbufs, default data
room, lcore cache 250) on both memories, --no-huge and 2 MiB hugepages, for DPDK's default ops
(ring_mp_mc) and for skbnf's ops (the plugin, `-d libskbnf_mempool.so`, strategy `headpool`,
DPDK cache 0 as testpmd --mbcache=0 makes it), each in the two layouts of bench/run's `layout`
experiment (issue 23's four arms): as the memory lays it out, and in the other one, through the
same knobs as skbnfd's --pool-flags=no_iova_contig (ring_mp_mc made with
RTE_MEMPOOL_F_NO_IOVA_CONTIG: packed on any page) and --store-stride=4096 (the plugin's
SKBNF_STORE_STRIDE=4096: skbnf's store one mbuf per 4 KiB page). One CSV row per (memory, ops;
the ops column names the knob when one is set): the stride between neighbouring mbufs, how many
distinct offsets in a 4 KiB page the mbufs start at, and how many distinct 64-byte lines (mod
4 KiB) one 32-mbuf burst's headers (two lines each) touch, beside this host's L1 data cache
geometry (sysfs). Addresses, not time: the output does not
depend on the load, and BENCHMARKS.md's layout paragraph is generated from it
(bench/update_benchmarks_md.py).

Hugepages through tests/support/hugepages.py (the one helper shared with the tests; it only
ever raises the reservation). Without them the hugepage rows are left out and the script says
so (exit 0: the --no-huge rows still stand); without the plugin, the skbnf rows likewise.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import hugepages  # noqa: E402

# (ops, knob): the four arms of bench/run's `layout` experiment. The knob of ring_mp_mc is a
# stride_probe --pool-flags value, skbnf's the plugin's SKBNF_STORE_STRIDE (as stride=N).
ARMS = [("ring_mp_mc", ""), ("ring_mp_mc", "no_iova_contig"), ("skbnf", ""),
        ("skbnf", "stride=4096")]

MEMORIES = {
    "--no-huge": ["--no-huge", "--no-shconf"],
    "2 MiB hugepages": ["--in-memory"],
}


def l1d_geometry():
    """This host's L1 data cache: sysfs (cpu0), or glibc's cpuid reading (getconf) where the VM
    has no sysfs cache directory. Sets = size / (ways x line)."""
    geo = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    for idx in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        d = os.path.join(base, idx)
        rd = lambda f: open(os.path.join(d, f)).read().strip()  # noqa: E731
        try:
            if rd("level") == "1" and rd("type") == "Data":
                size = rd("size")
                size = int(size[:-1]) * 1024 if size.endswith("K") else int(size)
                geo = {"size": size, "ways": int(rd("ways_of_associativity")),
                       "line": int(rd("coherency_line_size")), "source": "sysfs"}
        except (OSError, ValueError):
            continue
    if not geo:
        def conf(name):
            r = subprocess.run(["getconf", name], capture_output=True, text=True)
            return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else 0
        geo = {"size": conf("LEVEL1_DCACHE_SIZE"), "ways": conf("LEVEL1_DCACHE_ASSOC"),
               "line": conf("LEVEL1_DCACHE_LINESIZE"), "source": "getconf (cpuid)"}
    ok = geo["size"] and geo["ways"] and geo["line"]
    return {"l1d_bytes": geo["size"] or "", "l1d_ways": geo["ways"] or "",
            "l1d_line_bytes": geo["line"] or "",
            "l1d_sets": geo["size"] // (geo["ways"] * geo["line"]) if ok else "",
            "l1d_source": geo["source"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "layout", "stride_probe.csv"))
    a = ap.parse_args()
    bins = benchlib.Binaries(os.path.abspath(a.build))
    try:
        probe = bins._find("stride_probe")
    except FileNotFoundError as e:
        sys.exit(f"stride_probe.py: {e}")
    try:
        plugin = bins.plugin()
    except FileNotFoundError:
        plugin = None
    err, _ = hugepages.ensure(300)  # -m 256 and slack; stays reserved (benchmarks reuse it)
    geo = l1d_geometry()
    rows = []
    for memory, eal_mem in MEMORIES.items():
        if memory != "--no-huge" and err:
            print(f"stride_probe.py: no hugepage rows: {err}", file=sys.stderr)
            continue
        for ops, knob in ARMS:
            cmd = [probe, "--objects=32768", "--burst=32"]
            env = dict(os.environ)
            env.pop("SKBNF_STORE_STRIDE", None)
            eal = ["-l", "0", "-m", "256", "--no-pci", *eal_mem,
                   f"--file-prefix=stride-probe-{os.getpid()}", "--log-level=error",
                   "--no-telemetry"]
            if ops == "skbnf":
                if not plugin:
                    print("stride_probe.py: no skbnf rows: libskbnf_mempool.so not built",
                          file=sys.stderr)
                    continue
                cmd += ["--ops=skbnf", "--cache=0"]
                eal = ["-d", plugin] + eal
                env["SKBNF_STRATEGY"] = "headpool"
                if knob:
                    env["SKBNF_STORE_STRIDE"] = knob.split("=")[1]
            else:
                cmd += ["--cache=250"] + ([f"--pool-flags={knob}"] if knob else [])
            full = cmd + ["--"] + eal
            r = subprocess.run(full, capture_output=True, text=True, env=env, timeout=120)
            if r.returncode != 0:
                sys.exit(f"stride_probe.py: {' '.join(full)} failed ({r.returncode}):\n"
                         f"{r.stderr[-1500:]}")
            got = list(csv.DictReader(io.StringIO(r.stdout[r.stdout.index("ops,"):])))[0]
            row = {"memory": memory, "ops": f"{ops} {knob}" if knob else ops}
            row.update({k: v for k, v in got.items() if k != "ops"})
            row.update(geo)
            # As recorded: paths relative to the checkout, the per-process prefix without its
            # pid (the output is then the same on every run).
            row["command"] = " ".join(os.path.relpath(x, ROOT) if x.startswith(ROOT) else x
                                      for x in full).replace(f"-{os.getpid()}", "")
            if "SKBNF_STORE_STRIDE" in env:
                row["command"] = f"SKBNF_STORE_STRIDE={env['SKBNF_STORE_STRIDE']} " + row["command"]
            rows.append(row)
            print(f"{memory:16} {row['ops']:26} stride {row['stride_median']} "
                  f"({row['stride_min']}-{row['stride_max']}), "
                  f"{row['distinct_page_offsets']} page offsets; a burst of {row['burst']}: "
                  f"{row['burst_distinct_l1_lines_mod_4k']} distinct lines mod 4 KiB",
                  file=sys.stderr)
    if not rows:
        sys.exit("stride_probe.py: nothing measured")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
