#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that bench/run's outputs in a directory are well formed (not what the numbers are).

  bench/check_results.py [--quick] DIR [EXPERIMENT ...]

For every experiment (default: all of `bench/run --list`): E.csv has the raw-run columns, at
least one complete A/B pair per comparison, positive values, a load average at the start and
end of every run and a status (ok / repeated / over_load_cap); E.meta.json names the memory;
E.md has the table, its memory in the title, the machine and the command; the table never calls
TSC ticks cycles; E.json's medians lie inside their intervals; E.png is
a PNG. Exit status 1 with one line per problem.
"""
import csv
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIRED = ["experiment", "comparison", "group", "pair", "slot", "role", "config", "key",
            "value", "unit", "tsc_ticks_per_packet", "samples", "load1", "load1_end", "status",
            "attempt", "started_utc"]


def check(outdir, exp, quick, problems):
    def bad(msg):
        problems.append(f"{exp}: {msg}")
    p = os.path.join(outdir, f"{exp}.csv")
    if not os.path.exists(p):
        return bad(f"missing {p}")
    with open(p) as f:
        rd = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (rd.fieldnames or [])]
        if missing:
            return bad(f"{p}: missing columns {missing}")
        rows = list(rd)
    if not rows:
        return bad(f"{p}: no runs")
    comps = {}
    for i, r in enumerate(rows):
        try:
            v = float(r["value"])
            float(r["load1"])
            float(r["load1_end"])
            pair, slot = int(r["pair"]), int(r["slot"])
        except ValueError:
            bad(f"{p} row {i + 2}: value/load1/pair/slot not numbers")
            continue
        if not v > 0 or math.isinf(v):
            bad(f"{p} row {i + 2}: value {v} is not a positive number")
        if r["role"] not in ("A", "B") or slot not in (0, 1):
            bad(f"{p} row {i + 2}: role {r['role']!r} slot {slot}")
        if r["tsc_ticks_per_packet"] not in ("",) and not float(r["tsc_ticks_per_packet"]) > 0:
            bad(f"{p} row {i + 2}: tsc_ticks_per_packet {r['tsc_ticks_per_packet']}")
        if r["status"] not in ("ok", "repeated", "over_load_cap"):
            bad(f"{p} row {i + 2}: status {r['status']!r}")
        if r["key"].startswith("testpmd:") and r["tsc_ticks_per_packet"]:
            bad(f"{p} row {i + 2}: a testpmd rate run with a cycle figure "
                "(--record-core-cycles must not run in rate runs)")
        comps.setdefault(r["comparison"], {}).setdefault(pair, []).append(r["role"])
    for c, pairs in comps.items():
        full = [k for k, roles in pairs.items() if sorted(roles) == ["A", "B"]]
        if not full:
            bad(f"comparison {c!r} has no complete A/B pair")
        orders = {tuple(r["role"] for r in rows if r["comparison"] == c and int(r["pair"]) == k
                        and r["slot"] == "0") for k in full}
        if len(full) >= 2 and len(orders) < 2:
            bad(f"comparison {c!r}: the A/B order never alternates")
    md = os.path.join(outdir, f"{exp}.md")
    if not os.path.exists(md):
        bad(f"missing {md}")
    else:
        t = open(md).read()
        for needle in ("| comparison", "x** |", "Machine:", "Load average", "Command: `bench/run",
                       "Memory: "):
            if needle not in t:
                bad(f"{md}: no {needle!r}")
        if "cycles/pkt" in t:
            bad(f"{md}: a 'cycles/pkt' column (skbnfd's figure is TSC ticks per packet)")
        try:
            mem = json.load(open(os.path.join(outdir, f"{exp}.meta.json")))["memory"]
            if f"[{mem}]" not in t.split("\n", 1)[0]:
                bad(f"{md}: the title does not name the memory [{mem}]")
        except (OSError, ValueError, KeyError) as e:
            bad(f"{exp}.meta.json: no memory ({e})")
    js = os.path.join(outdir, f"{exp}.json")
    try:
        j = json.load(open(js))
        if len(j["comparisons"]) != len(comps):
            bad(f"{js}: {len(j['comparisons'])} comparisons, the CSV has {len(comps)}")
        for c in j["comparisons"]:
            lo, hi = c["ci95"]
            m = c["median_ratio"]
            if not (lo <= m <= hi):
                bad(f"{js}: {c['comparison']!r}: median {m} outside its interval [{lo}, {hi}]")
    except (OSError, ValueError, KeyError, TypeError) as e:
        bad(f"{js}: {e}")
    png = os.path.join(outdir, f"{exp}.png")
    try:
        with open(png, "rb") as f:
            head = f.read(8)
        if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(png) < 2000:
            bad(f"{png} is not a PNG plot")
    except OSError:
        bad(f"missing {png}")
    if exp == "exp7":
        sp = os.path.join(outdir, "exp7_swaps.csv")
        try:
            sw = list(csv.DictReader(open(sp)))
            if not sw or not all(int(r["total_us"]) >= 0 for r in sw):
                bad(f"{sp}: no swaps recorded")
        except (OSError, ValueError, KeyError) as e:
            bad(f"{sp}: {e}")


def no_huge_run(outdir):
    """Whether the runs in outdir were taken with --no-huge (any experiment's metadata)."""
    for f in os.listdir(outdir):
        if f.endswith(".meta.json"):
            try:
                if json.load(open(os.path.join(outdir, f))).get("memory", "").startswith(
                        "--no-huge (4 KiB pages)"):
                    return True
            except (OSError, ValueError):
                pass
    return False


def main():
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    outdir, exps = args[0], args[1:]
    if not exps:
        lst = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "run"), "--list"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        exps = [l.split()[0] for l in lst.splitlines() if l.strip()]
    problems = []
    m = os.path.join(outdir, "machine.json")
    try:
        mj = json.load(open(m))
        if not mj.get("cpu_model") or not mj.get("cores"):
            problems.append(f"{m}: no cpu_model/cores")
    except (OSError, ValueError) as e:
        problems.append(f"{m}: {e}")
    for e in exps:
        if e == "layout" and not os.path.exists(os.path.join(outdir, "layout.csv")):
            continue  # opt-in (bench/run layout --no-huge), never part of "all"
        if e == "vhost" and not os.path.exists(os.path.join(outdir, "vhost.csv")) \
                and no_huge_run(outdir):
            continue  # hugepages only: bench/run leaves it out of "all" with --no-huge
        check(outdir, e, quick, problems)
    for p in problems:
        print("FAIL", p)
    if problems:
        return 1
    print(f"OK: {len(exps)} experiments well formed in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
