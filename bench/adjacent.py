#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/adjacent.py: testpmd native against testpmd with the plugin, short runs seconds apart,
every run labelled with the machine's speed mode (issue 33 item 2).

  bench/adjacent.py [--pairs N] [--seconds S] [--warmup S] [--strategy SPEC] [--no-huge]
                    [--mode-gap G] [--out DIR] [--build DIR]
  bench/adjacent.py                       # 30 pairs of 3 s runs, hugepages, plugin `headpool`
  bench/adjacent.py --quick               # tooling check (ctest bench_adjacent_quick)

Why: "any DPDK application" is the plugin inside an unchanged DPDK program, so this comparison
needs two processes (bench/interleave.py compares strategies inside one skbnfd). The machine
forwards at one of two speeds, switching every few seconds to minutes (BENCHMARKS.md "Speed
modes"); the headline's runs of A and B tens of seconds apart mix the modes. Here both
configurations are ready before the first run and each run is short, so A and B follow each
other within seconds, in the order A B B A A B B A ... (each arm first and second equally
often).

A: dpdk-testpmd io on two net_null ports, one forwarding lcore, DPDK's ring_mp_mc with testpmd's
lcore cache (250); B: the same testpmd with `-d libskbnf_mempool.so --mbuf-pool-ops-name=skbnf
--mbcache=0` and SKBNF_STRATEGY=SPEC (bench/run's TestpmdRun, the headline's two arms). A run's
figure is the median of its per-second Rx rates after the warm-up (testpmd --stats-period 1).

The machine's mode, from a reference the run measures itself: arm A's runs. A is one fixed
configuration, so its spread is the machine's: the medians of A's runs split into two clusters
at the widest gap of their sorted log values when that gap is wider than --mode-gap (default
15 %; the modes differ by about 1.6x), else the run saw one mode ("one"). An A run whose own
per-second samples span more than the gap changed mode while it ran: "straddle". A B run gets
the mode of its two neighbouring A runs when they agree and its own samples do not span the gap,
else "straddle" (kept in the CSV, in no ratio). A ratio is a B run's median over the mean of its
two A neighbours' medians; per mode: the median ratio, its 95 % percentile-bootstrap interval
(benchlib.bootstrap_ci, resampling the B runs) and the count.

Outputs in --out (default bench/results/adjacent/NAME): runs.csv (one row per run, its
per-second samples in a column), summary.json, summary.md, meta.json. `--quick` (one pair of
1 s runs, --no-huge) checks the tooling only; its numbers mean nothing.
"""
import argparse
import csv
import datetime
import json
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from interleave import a_neighbours, finish, mode_split, order  # noqa: E402  (as inside one skbnfd)
from update_benchmarks_md import load_run_module  # noqa: E402  (bench/run as a module)


def spans_gap(samples, gap):
    """Whether a run's per-second samples differ by more than the mode gap."""
    return bool(samples) and max(samples) > min(samples) * (1 + gap)


def label_runs(runs, gap):
    """Labels every run 'fast', 'slow', 'one' or 'straddle' (the module's text) and sets the B
    runs' ratios; returns the split (Mpps threshold, or None for one mode)."""
    threshold = mode_split([r["mpps"] for r in runs if r["arm"] == "A"], gap)
    for r in runs:
        if r["arm"] != "A":
            continue
        if spans_gap(r["samples"], gap):
            r["mode"] = "straddle"
        elif threshold is None:
            r["mode"] = "one"
        else:
            r["mode"] = "fast" if r["mpps"] > threshold else "slow"
    for i, r in enumerate(runs):
        if r["arm"] != "B":
            continue
        near = a_neighbours(runs, i)
        modes = {x["mode"] for x in near}
        one = modes.pop() if len(modes) == 1 else "straddle"
        r["mode"] = "straddle" if spans_gap(r["samples"], gap) else one
        r["ref_mpps"] = round(sum(x["mpps"] for x in near) / len(near), 4)
        if r["mode"] != "straddle":
            r["ratio"] = round(r["mpps"] / r["ref_mpps"], 5)
    return threshold


def summarise(runs, threshold):
    out = {"threshold_mpps": threshold, "modes": {}}
    for mode in ("fast", "slow", "one"):
        b = [r for r in runs if r["arm"] == "B" and r.get("mode") == mode]
        a = [r for r in runs if r["arm"] == "A" and r.get("mode") == mode]
        if not b:
            continue
        ratios = [r["ratio"] for r in b]
        lo, hi = benchlib.bootstrap_ci(ratios)
        med = benchlib._median(ratios)
        out["modes"][mode] = {
            "b_runs": len(b), "a_runs": len(a), "ratio_median": med, "ratio_ci95": [lo, hi],
            "ratio_ci95_halfwidth_pct": round(benchlib.halfwidth_pct(lo, hi, med), 3),
            "a_mpps_median": benchlib._median([r["mpps"] for r in a]) if a else None,
            "b_mpps_median": benchlib._median([r["mpps"] for r in b])}
    out["straddle_b"] = sum(1 for r in runs if r["arm"] == "B" and r["mode"] == "straddle")
    out["straddle_a"] = sum(1 for r in runs if r["arm"] == "A" and r["mode"] == "straddle")
    return out


def measure(run_mod, ctx, args):
    arms = {"A": run_mod.TestpmdRun(), "B": run_mod.TestpmdRun(strategy=args.strategy)}
    runs = []
    for i, arm in enumerate(order(args.pairs)):
        t0 = datetime.datetime.now(datetime.timezone.utc)
        res = arms[arm].run(ctx, args.seconds, args.warmup)
        t1 = datetime.datetime.now(datetime.timezone.utc)
        samples = [round(x, 4) for x in res["samples"]]
        runs.append({"index": i, "arm": arm, "config": "testpmd native" if arm == "A" else
                     f"testpmd + plugin `{args.strategy}`", "mpps": round(res["value"], 4),
                     "samples": samples,
                     "utc_start": t0.isoformat(timespec="milliseconds"),
                     "utc_end": t1.isoformat(timespec="milliseconds")})
        print(f"  run {i} {arm}: {res['value']:.2f} Mpps ({' '.join(f'{x:.1f}' for x in samples)})",
              file=sys.stderr, flush=True)
    return runs


def write(outdir, args, runs, summ, meta):
    os.makedirs(outdir, exist_ok=True)
    cols = ["index", "arm", "config", "mode", "utc_start", "utc_end", "mpps", "samples",
            "ref_mpps", "ratio"]
    with open(os.path.join(outdir, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            row = {c: r.get(c, "") for c in cols}
            row["samples"] = " ".join(str(x) for x in r["samples"])
            w.writerow(row)
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summ, f, indent=1, sort_keys=True)
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    lines = [f"# testpmd native (A) -> testpmd + plugin `{args.strategy}` (B), adjacent runs", "",
             f"{args.pairs} pairs of {args.seconds} s runs after {args.warmup} s warm-up, order "
             f"A B B A; {meta['memory']}; {benchlib.machine_line(meta['machine'], meta['eal'])}.",
             "", f"Command: `{meta['command']}`", "",
             "| mode | B runs | A runs | Mpps B/A (median) | 95 % interval | +- % | A Mpps | "
             "B Mpps |", "|---|---|---|---|---|---|---|---|"]
    for mode, m in summ["modes"].items():
        lines.append(f"| {mode} | {m['b_runs']} | {m['a_runs']} | {m['ratio_median']:.4f} | "
                     f"{m['ratio_ci95'][0]:.4f}-{m['ratio_ci95'][1]:.4f} | "
                     f"{m['ratio_ci95_halfwidth_pct']:.2f} | {m['a_mpps_median']} | "
                     f"{m['b_mpps_median']} |")
    lines += ["", f"Straddling runs (in no ratio): B {summ['straddle_b']}, A {summ['straddle_a']}."]
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def check_outputs(outdir, args):
    """What --quick (ctest bench_adjacent_quick) holds the outputs to: every run a row with its
    arm, mode and samples, in A B B A order; the summary's counts add up to the B runs."""
    problems = []
    with open(os.path.join(outdir, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    if [r["arm"] for r in rows] != order(args.pairs):
        problems.append("runs.csv: arms not in A B B A order")
    for r in rows:
        if r["mode"] not in ("fast", "slow", "one", "straddle"):
            problems.append(f"run {r['index']}: mode {r['mode']!r}")
        if float(r["mpps"]) <= 0 or not r["samples"].split():
            problems.append(f"run {r['index']}: no traffic")
    summ = json.load(open(os.path.join(outdir, "summary.json")))
    counted = sum(m["b_runs"] for m in summ["modes"].values()) + summ["straddle_b"]
    if counted != args.pairs:
        problems.append(f"summary counts {counted} B runs of {args.pairs}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--strategy", default="headpool")
    ap.add_argument("--mode-gap", type=float, default=0.15)
    ap.add_argument("--no-huge", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out")
    ap.add_argument("--name")
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.seconds, args.warmup, args.no_huge = 1, 1, 0, True
    if args.pairs < 1 or args.seconds < 1 or args.warmup < 0 or args.mode_gap <= 0:
        ap.error("--pairs and --seconds must be >= 1, --warmup >= 0, --mode-gap > 0")
    run_mod = load_run_module()
    run_mod.EAL_MEM[:] = run_mod.EAL_MEM_NO_HUGE if args.no_huge else run_mod.EAL_MEM_HUGE
    if not args.no_huge:
        err = run_mod.ensure_hugepages(600)
        if err:
            sys.exit(f"bench/adjacent.py: {err} (or pass --no-huge)")
    name = args.name or f"testpmd-native-vs-plugin-{args.strategy}".replace("+", "_")
    outdir = args.out or (os.path.join(args.build, "bench-quick", "adjacent", name)
                          if args.quick else os.path.join(HERE, "results", "adjacent", name))

    class Ctx:
        pass
    ctx = Ctx()
    ctx.runs = 0
    ctx.bins = benchlib.Binaries(args.build)
    ctx.workdir = tempfile.mkdtemp(prefix="skbnf-adj-", dir=os.path.expanduser("~"))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        runs = measure(run_mod, ctx, args)
    except run_mod.RunError as e:
        sys.exit(f"bench/adjacent.py: {e}")
    finally:
        shutil.rmtree(ctx.workdir, ignore_errors=True)
    threshold = label_runs(runs, args.mode_gap)
    summ = summarise(runs, threshold)
    meta = {"command": shlex.join(["bench/adjacent.py"] + sys.argv[1:]),
            "strategy": args.strategy, "pairs": args.pairs, "seconds": args.seconds,
            "warmup_s": args.warmup,
            "memory": "--no-huge (4 KiB pages)" if args.no_huge else "2 MiB hugepages",
            "eal": list(run_mod.EAL_MEM), "machine": benchlib.machine_info(),
            "started_utc": started,
            "ended_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "mode_reference": "arm A's runs (module text)",
            "mode_gap": args.mode_gap}
    write(outdir, args, runs, summ, meta)
    finish("bench/adjacent.py", outdir, check_outputs(outdir, args))


if __name__ == "__main__":
    main()
