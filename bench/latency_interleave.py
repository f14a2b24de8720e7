#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/latency_interleave.py: packet latency per strategy through skbnfd over vhost-user with a
live peer, the strategies rotated by hot swap inside ONE skbnfd (issue 33 item 4), every interval
labelled with the machine's speed mode.

  bench/latency_interleave.py [ARM ...] [--rounds N] [--interval S] [--settle S] [--warmup S]
                              [--sample-every N] [--cost-pairs N] [--ring N] [--out DIR]
  bench/latency_interleave.py headpool magazine recycle+magazine   # the defaults: 90 rounds
  bench/latency_interleave.py --quick      # tooling check (ctest bench_latency_interleave_quick)

Set-up: bench/run's vhost experiment, imported (VhostPeer, VhostRun.config_text): skbnfd l3, one
worker (lcore 1, CPU 1) polling net_virtio_user0, every route out net_virtio_user1, --ring
descriptors per virtio queue (default 1,024); the peer is dpdk-testpmd (net_vhost, DPDK's
vhost library, on CPU 0) replaying a pcap of 16,384 flows into skbnfd and dropping what comes
back. skbnfd runs through bench/interleave.py's Daemon (control API on a unix socket).

Peer rate: the peer's own maximum, not paced (testpmd's io forwarding has no rate limit). One
testpmd lcore copies every frame into skbnfd's ring and out of it again, so it, not the worker,
sets the rate: the worker is not saturated (busy_fraction per interval in samples.csv: the
worker's busy TSC ticks over the interval's ticks), so RX rings do not fill and the latency is
not a queueing artefact of an overloaded worker. A worker that is never idle would show in it.

What is timed (common/worker_perf.h): 1 in --sample-every RX bursts (default 8), every packet of
it, from a TSC read after its rte_eth_rx_burst to one before the rte_eth_tx_burst that sends it
(the worker's own time for the packet: forwarding and TX batching). virtio_user's RX refill
runs inside rte_eth_rx_burst (before the stamp) and its TX completions inside rte_eth_tx_burst
(after it): a strategy's alloc and free are not inside the timed span; what a strategy changes
there is what it leaves in the caches (the mbufs the forwarding touches). The ring's and the
peer's time are not timed either.

Per interval (a sample): the swap to its arm (SetStrategy), --settle seconds, GetStats (t0),
--interval seconds, GetStats (t1). Latency: the difference of the two snapshots' histograms
(PortLatency.bins, the exact log-linear histogram: 16 sub-buckets per power of two; percentiles
cannot be differenced, bins can); its p50/p99/p99.9 are bucket upper bounds (at most 6.25 %
above the true value). Also ticks/pkt (busy_cycles / busy_packets), Mpps and busy_fraction, as
bench/interleave.py. The swap and settling lie outside [t0, t1].

Order: rounds of every arm, each round rotated by one (A B C, B C A, C A B, ...): every arm in
every position equally often. The machine's mode: interleave.py's, from the reference arm A's
own ticks/pkt (mode_split; the modes differ by about 1.6x); any other arm's interval takes the
label of its A neighbours (a_neighbours) when they agree, else "straddle" (in no per-mode row).
Per arm and mode: the pooled histogram's p50/p99/p99.9 with its sample count, and the spread
over intervals (median of the per-interval p99 and its 95 % bootstrap interval).

What sampling costs (--cost-pairs, before the rotation): arm A alone, sample_every 0 and N
alternating (off on on off ...), one interval each: ticks/pkt of every "on" interval over the
mean of its "off" neighbours, median with its bootstrap interval (cost.csv, summary.json).

DPDK's ring_mp_mc pool is not in the rotation: skbnfd on DPDK's native pool cannot swap
strategies (DESIGN.md), so it cannot take turns inside one process.

Outputs in --out (default bench/results/issue33/latency): samples.csv (one row per interval,
with its histogram delta in `bins`: "low_ns-high_ns:samples" separated by spaces), cost.csv,
summary.json, summary.md, meta.json; COMMAND is written by hand beside a committed run. `--quick`
(2 rounds of 0.3 s, one cost pair) checks the tooling only; its numbers mean nothing.
"""
import argparse
import csv
import datetime
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from interleave import (Daemon, Failure, a_neighbours, counters, finish, mode_split,  # noqa: E402
                        swap_to)
from update_benchmarks_md import load_run_module  # noqa: E402  (bench/run as a module)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import hugepages  # noqa: E402

QUANTILES = (("p50_ns", 0.50), ("p99_ns", 0.99), ("p999_ns", 0.999))
MODES = ("fast", "slow", "one", "all")  # "all": every interval of the arm, straddling included


def histogram(stats):
    """{(low_ns, high_ns): samples} over every worker and RX port of GetStats' latency bins
    (total since start), and total.samples summed (the bins must add up to it)."""
    h, total = {}, 0
    for core in stats.get("cores", []):
        for p in core.get("latency", []):
            total += int(p.get("total", {}).get("samples", 0))
            for b in p.get("bins", []):
                k = (int(b.get("low_ns", 0)), int(b.get("high_ns", 0)))
                h[k] = h.get(k, 0) + int(b.get("samples", 0))
    return h, total


def difference(h1, h0):
    """The histogram of the samples between two snapshots (bins only grow)."""
    out = {}
    for k, n in h1.items():
        d = n - h0.get(k, 0)
        if d < 0:
            raise Failure(f"latency bin {k} went down ({h0.get(k)} -> {n})")
        if d:
            out[k] = d
    return out


def quantile(h, q):
    """GetStats' rule (common/worker_perf.h LatencyQuantile): the upper bound of the bin holding
    the ceil(q * n)-th sample. None: empty."""
    n = sum(h.values())
    if n == 0:
        return None
    rank = min(max(int(q * n + 0.999999), 1), n)
    seen = 0
    for k in sorted(h):
        seen += h[k]
        if seen >= rank:
            return k[1]
    return None


def bins_text(h):
    return " ".join(f"{lo}-{hi}:{n}" for (lo, hi), n in sorted(h.items()))


def parse_bins(text):
    h = {}
    for part in text.split():
        rng, n = part.split(":")
        lo, hi = rng.split("-")
        h[(int(lo), int(hi))] = h.get((int(lo), int(hi)), 0) + int(n)
    return h


def order(arms, rounds):
    """Rounds of every arm, each rotated by one from the last: letters A, B, C, ..."""
    letters = [chr(ord("A") + i) for i in range(len(arms))]
    out = []
    for r in range(rounds):
        k = r % len(letters)
        out += letters[k:] + letters[:k]
    return out


def interval(d, seconds, retries=5):
    """GetStats, `seconds`, GetStats: the interval's figures and histogram delta. An interval in
    which the worker received nothing (the peer got no CPU: this VM's two vCPUs are shared) is
    measured again, at most `retries` times; `stalls` counts them."""
    for stalls in range(retries + 1):
        row = one_interval(d, seconds)
        if row is not None:
            row["stalls"] = stalls
            return row
    raise Failure(f"nothing received in {retries + 1} intervals in a row")


def one_interval(d, seconds):
    load1 = float(open("/proc/loadavg").read().split()[0])
    s0 = d.ctl("stats")
    t_start = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    time.sleep(seconds)
    s1 = d.ctl("stats")
    drx, dcyc, dpk, dns, _ = (b - a for a, b in zip(counters(s0), counters(s1)))
    if dns <= 0 or dpk <= 0:
        return None
    (h0, n0), (h1, n1) = histogram(s0), histogram(s1)
    h = difference(h1, h0)
    hz = max(int(c.get("tsc_hz", 0)) for c in s1.get("cores", [{}]))
    row = {"utc_start": t_start, "seconds": round(dns / 1e9, 6), "rx_packets": drx,
           "mpps": round(drx / dns * 1e3, 4), "ticks_per_packet": round(dcyc / dpk, 3),
           "busy_fraction": round(dcyc / (hz * dns / 1e9), 4) if hz else "",
           "lat_samples": n1 - n0, "load1": load1, "bins": bins_text(h)}
    for name, q in QUANTILES:
        row[name] = quantile(h, q) if h else ""
    return row


def set_sampling(d, every):
    r = d.ctl("latency", "set", f"--sample-every={every}")
    got = int(r.get("settings", {}).get("sample_every", 0))
    if got != every:
        raise Failure(f"latency set --sample-every={every}: in force {got}")


def measure_cost(d, args):
    """Arm A alone, sampling off and on alternating (interleave's A B B A with A = off)."""
    rows = []
    for i in range(2 * args.cost_pairs):
        on = i % 4 in (1, 2)
        set_sampling(d, args.sample_every if on else 0)
        time.sleep(args.settle)
        r = interval(d, args.interval)
        r.update({"index": i, "arm": "B" if on else "A",
                  "sample_every": args.sample_every if on else 0})
        rows.append(r)
    for i, r in enumerate(rows):
        if r["arm"] == "B":
            near = a_neighbours(rows, i)
            r["ratio_ticks"] = round(r["ticks_per_packet"] / (
                sum(x["ticks_per_packet"] for x in near) / len(near)), 5)
    set_sampling(d, args.sample_every)
    return rows


def measure(d, args, deadline):
    """The rotation; no round starts that would end after `deadline` (time.monotonic(), by the
    last round's length): args.rounds becomes the rounds measured."""
    specs = {chr(ord("A") + i): s for i, s in enumerate(args.arms)}
    rows, cur, k = [], args.arms[0], len(args.arms)
    t_round = time.monotonic()
    for i, arm in enumerate(order(args.arms, args.rounds)):
        if i and i % k == 0:
            now = time.monotonic()
            if now + (now - t_round) > deadline:
                args.rounds, args.ended_by = i // k, "budget"
                break
            t_round = now
        swap_us, failed = "", 0
        while specs[arm] != cur:
            try:
                swap_us = swap_to(d, specs[arm], f"interval {i}", args.quiesce_timeout_ms)
                cur = specs[arm]
            except Failure as e:  # rolled back: skbnfd still runs `cur`, consistent
                failed += 1
                if "rolled back" not in str(e):
                    raise
                if failed > args.swap_retries:  # the rounds so far stand; the run says why
                    args.rounds, args.ended_by = i // k, f"{failed} swap failures in a row " \
                        f"(interval {i}, to {specs[arm]})"
                    return rows[:args.rounds * k]
                time.sleep(1.0)
        time.sleep(args.settle)
        try:
            r = interval(d, args.interval)
        except Failure as e:  # the worker stopped receiving: the rounds so far stand
            args.rounds, args.ended_by = i // k, f"{e} (interval {i}, {specs[arm]})"
            return rows[:args.rounds * k]
        r.update({"index": i, "arm": arm, "spec": specs[arm], "swap_us": swap_us,
                  "swaps_failed": failed})
        rows.append(r)
    return rows


def label_modes(rows, gap):
    """interleave.py's labels for any number of arms: A's own ticks/pkt split into modes, every
    other arm's interval labelled by its A neighbours ('straddle' when they disagree)."""
    threshold = mode_split([r["ticks_per_packet"] for r in rows if r["arm"] == "A"], gap)
    for r in rows:
        if r["arm"] == "A":
            r["mode"] = ("one" if threshold is None else
                         "fast" if r["ticks_per_packet"] < threshold else "slow")
    for i, r in enumerate(rows):
        if r["arm"] != "A":
            modes = {x["mode"] for x in a_neighbours(rows, i)}
            r["mode"] = modes.pop() if len(modes) == 1 else "straddle"
    return threshold


def summarise(rows, cost, threshold, args):
    out = {"threshold_ticks_per_packet": threshold, "arms": {}, "sample_every": args.sample_every,
           "straddle": sum(1 for r in rows if r["mode"] == "straddle")}
    for spec in args.arms:
        per_mode = {}
        for mode in MODES:
            sel = [r for r in rows if r["spec"] == spec and (mode == "all" or r["mode"] == mode)]
            if not sel:
                continue
            h = {}
            for r in sel:
                for k, n in parse_bins(r["bins"]).items():
                    h[k] = h.get(k, 0) + n
            p99s = [int(r["p99_ns"]) for r in sel if r["p99_ns"] != ""]
            lo, hi = benchlib.bootstrap_ci(p99s)
            m = {"intervals": len(sel), "samples": sum(h.values()),
                 "interval_p99_median_ns": benchlib._median(p99s),
                 "interval_p99_ci95_ns": [lo, hi],
                 "interval_p99_range_ns": [min(p99s), max(p99s)],
                 "ticks_per_packet_median": benchlib._median(
                     [r["ticks_per_packet"] for r in sel]),
                 "mpps_median": benchlib._median([r["mpps"] for r in sel]),
                 "busy_fraction_median": benchlib._median(
                     [r["busy_fraction"] for r in sel if r["busy_fraction"] != ""])}
            for name, q in QUANTILES:
                m[name] = quantile(h, q)
            per_mode[mode] = m
        out["arms"][spec] = per_mode
    swaps = [r["swap_us"] for r in rows if r["swap_us"] != ""]
    out["swaps"], out["swap_us_median"] = len(swaps), benchlib._median(swaps) if swaps else None
    out["stalled_intervals"] = sum(r["stalls"] for r in rows + cost)
    out["swaps_failed"] = sum(r.get("swaps_failed", 0) for r in rows)
    ratios = [r["ratio_ticks"] for r in cost if "ratio_ticks" in r]
    out["cost"] = {"pairs": args.cost_pairs, "on_intervals": len(ratios),
                   "ratio_ticks_median": benchlib._median(ratios) if ratios else None,
                   "ratio_ticks_ci95": list(benchlib.bootstrap_ci(ratios)) if ratios else None}
    return out


COLS = ["index", "arm", "spec", "mode", "utc_start", "seconds", "rx_packets", "mpps",
        "ticks_per_packet", "busy_fraction", "lat_samples", "p50_ns", "p99_ns", "p999_ns",
        "swap_us", "swaps_failed", "stalls", "load1", "bins"]
COST_COLS = ["index", "sample_every", "utc_start", "seconds", "rx_packets", "mpps",
             "ticks_per_packet", "busy_fraction", "lat_samples", "stalls", "load1", "ratio_ticks"]


def summary_md(summ, meta):
    """The per-arm, per-mode table (also BENCHMARKS.md's gen:issue33-latency, from the files)."""
    lines = ["| arm | mode | intervals | samples | p50 ns | p99 ns | p99.9 ns |"
             " interval p99: median (95 % interval; range) | ticks/pkt | Mpps | busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec, modes in summ["arms"].items():
        for mode, m in modes.items():
            if mode == "all" and len(modes) == 2 and summ["straddle"] == 0:
                continue  # one label and nothing straddling: "all" is that row again
            lo, hi = m["interval_p99_ci95_ns"]
            lines.append(
                f"| `{spec}` | {mode} | {m['intervals']} | {m['samples']:,} | {m['p50_ns']} | "
                f"{m['p99_ns']} | {m['p999_ns']} | {m['interval_p99_median_ns']:g} ({lo:g}-"
                f"{hi:g}; {m['interval_p99_range_ns'][0]}-{m['interval_p99_range_ns'][1]}) | "
                f"{m['ticks_per_packet_median']:.1f} | {m['mpps_median']:.3f} | "
                f"{m['busy_fraction_median']:.2f} |")
    c = summ["cost"]
    cost = (f"sampling 1 in {summ['sample_every']} RX bursts costs ticks/pkt x "
            f"{c['ratio_ticks_median']:.4f} ({c['ratio_ticks_ci95'][0]:.4f}-"
            f"{c['ratio_ticks_ci95'][1]:.4f}) against off, over {c['on_intervals']} intervals"
            if c["ratio_ticks_median"] is not None else "sampling's cost not measured")
    mode_line = ("the reference arm's ticks/pkt show one mode (`one`)"
                 if summ["threshold_ticks_per_packet"] is None else
                 f"modes split at {summ['threshold_ticks_per_packet']:.1f} ticks/pkt of the "
                 f"reference arm; {summ['straddle']} intervals straddle (in `all` only)")
    loads = meta.get("load1_range")
    load = (f"1-minute load average {loads[0]:.2f}-{loads[1]:.2f} over the intervals (the "
            "machine's other work shares the two vCPUs); " if loads else "")
    lines += ["", f"Reference arm for the mode: `{meta['arms'][0]}`; {mode_line}; {cost}; {load}"
              f"{summ['swaps']} swaps, median {summ['swap_us_median']} us (outside every "
              f"interval), {summ.get('swaps_failed', 0)} more timed out, rolled back and were "
              f"tried again; intervals measured again because the worker received nothing: "
              f"{summ['stalled_intervals']}. {meta['rounds']} rounds of {meta['interval_s']} s, "
              f"rings {meta['ring']}, {meta['started_utc']} to {meta['ended_utc']}; the "
              f"rotation ended by {meta.get('ended_by', 'rounds')}."]
    return lines


def write(outdir, rows, cost, summ, meta):
    os.makedirs(outdir, exist_ok=True)
    benchlib.write_rows_csv(os.path.join(outdir, "samples.csv"), COLS, rows)
    benchlib.write_rows_csv(os.path.join(outdir, "cost.csv"), COST_COLS, cost)
    benchlib.write_json(os.path.join(outdir, "summary.json"), summ)
    benchlib.write_json(os.path.join(outdir, "meta.json"), meta)
    lines = ["# Latency per strategy, interleaved in one skbnfd over vhost-user (l3, live peer)",
             "", f"{benchlib.machine_line(meta['machine'], meta['eal'])}.", "",
             f"Command: `{meta['command']}`", ""] + summary_md(summ, meta)
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def check_outputs(outdir, args):
    """What --quick (ctest bench_latency_interleave_quick) holds the outputs to: the rotation;
    every interval with latency samples whose bins add up to total.samples' delta and give its
    percentiles; every arm with samples in `all`; the summary's counts add up to the rows."""
    problems = []
    with open(os.path.join(outdir, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    if [r["arm"] for r in rows] != order(args.arms, args.rounds):
        problems.append("samples.csv: arms not in rotated-round order")
    for r in rows:
        h = parse_bins(r["bins"])
        if r["mode"] not in ("fast", "slow", "one", "straddle"):
            problems.append(f"row {r['index']}: mode {r['mode']!r}")
        if int(r["lat_samples"]) <= 0 or sum(h.values()) != int(r["lat_samples"]):
            problems.append(f"row {r['index']}: bins sum {sum(h.values())}, total.samples "
                            f"delta {r['lat_samples']}")
        elif any(str(quantile(h, q)) != r[name] for name, q in QUANTILES):
            problems.append(f"row {r['index']}: percentiles do not follow from its bins")
        if float(r["ticks_per_packet"]) <= 0 or float(r["mpps"]) <= 0:
            problems.append(f"row {r['index']}: no traffic")
    summ = json.load(open(os.path.join(outdir, "summary.json")))
    for spec in args.arms:
        a = summ["arms"].get(spec, {}).get("all")
        n = sum(int(r["lat_samples"]) for r in rows if r["spec"] == spec)
        if not a or a["samples"] != n or a["intervals"] != args.rounds:
            problems.append(f"{spec}: summary's all-modes samples/intervals do not match the rows")
        else:
            moded = sum(m["intervals"] for k, m in summ["arms"][spec].items() if k != "all")
            strad = sum(1 for r in rows if r["spec"] == spec and r["mode"] == "straddle")
            if moded + strad != args.rounds:
                problems.append(f"{spec}: {moded} + {strad} labelled of {args.rounds}")
    with open(os.path.join(outdir, "cost.csv")) as f:
        if len(list(csv.DictReader(f))) != 2 * args.cost_pairs:
            problems.append("cost.csv: not one row per cost interval")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arms", nargs="*", default=["headpool", "magazine", "recycle+magazine"])
    ap.add_argument("--rounds", type=int, default=90)
    # Wall-time budget from the peer's start to the last round's end (the stop and the files
    # follow): fewer rounds when intervals take longer than planned (a loaded machine).
    ap.add_argument("--budget", type=float, default=540)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=0.2)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--sample-every", type=int, default=8)
    ap.add_argument("--cost-pairs", type=int, default=10)
    ap.add_argument("--ring", type=int, default=1024)
    ap.add_argument("--mode-gap", type=float, default=0.15)
    # Each worker's deadline to acknowledge a swap (the pool's default is 200 ms): the worker
    # shares this 2-vCPU VM with the peer's poller and everything else, and a preempted worker
    # acknowledges late.
    ap.add_argument("--quiesce-timeout-ms", type=int, default=2000)
    # A swap that timed out was rolled back (the worker runs the old strategy, consistent): it is
    # tried again, at most this many times, and counted (swaps_failed).
    ap.add_argument("--swap-retries", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.interval, args.settle, args.warmup = 2, 0.3, 0.05, 0.5
        args.cost_pairs = 1
    if (len(args.arms) < 2 or len(set(args.arms)) != len(args.arms) or args.rounds < 1
            or args.interval <= 0 or args.settle < 0 or not 1 <= args.sample_every <= 1 << 20):
        ap.error("two or more distinct arms, --rounds >= 1, --interval > 0, --settle >= 0, "
                 "--sample-every from 1 to 1048576")
    if "ring_mp_mc" in args.arms:
        ap.error("ring_mp_mc: skbnfd on DPDK's native pool cannot hot-swap (module text)")
    rounds_asked = args.rounds
    outdir = args.out or (os.path.join(args.build, "bench-quick", "latency-interleave")
                          if args.quick else os.path.join(HERE, "results", "issue33", "latency"))
    err, _ = hugepages.ensure(540)  # skbnfd's and the peer's 512 MiB (--in-memory: memfd)
    if err:
        print(f"bench/latency_interleave.py: {err}: skipped", file=sys.stderr)
        sys.exit(77)  # ctest's SKIP_RETURN_CODE
    run = load_run_module()  # bench/run: the vhost experiment's peer and skbnfd config
    bins = benchlib.Binaries(args.build)
    workdir = tempfile.mkdtemp(prefix="skbnf-lat-")
    ctx = types.SimpleNamespace(workdir=workdir, runs=0)  # what VhostPeer and _prefix read
    peer = run.VhostPeer(ctx)
    vhost = run.VhostRun(args.arms[0], args.ring)
    vhost.peer = peer
    d = Daemon(bins, workdir, args, make_config=lambda prefix: vhost.config_text(ctx, prefix))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    try:
        peer.start()
        d.start()
        rings = re.findall(r"^port \d+ net_virtio_user\d .* rings (\d+)/(\d+)$", d.tail(100000),
                           re.M)
        if len(rings) != 2 or any(r != (str(args.ring),) * 2 for r in rings):
            raise Failure(f"skbnfd's virtio rings are {rings}, not {args.ring} each")
        set_sampling(d, args.sample_every)
        time.sleep(args.warmup)
        cost = measure_cost(d, args)
        rows = measure(d, args, t0 + args.budget)
        final_stats = d.ctl("stats")  # the ports' and pool's counters as the rotation ended
        d.stop()
    except (Failure, run.RunError) as e:
        sys.exit(f"bench/latency_interleave.py: {e}\nskbnfd's log ends:\n{d.tail(3000)}\n"
                 f"the peer's log ends:\n{peer.output()[-1500:]}")
    finally:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
        peer.stop()
        peer.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    threshold = label_modes(rows, args.mode_gap)
    summ = summarise(rows, cost, threshold, args)
    meta = {"command": shlex.join(["bench/latency_interleave.py"] + sys.argv[1:]),
            "arms": args.arms, "rounds": args.rounds, "rounds_asked": rounds_asked,
            "budget_s": args.budget, "ended_by": getattr(args, "ended_by", "rounds"),
            "interval_s": args.interval,
            "settle_s": args.settle, "warmup_s": args.warmup, "sample_every": args.sample_every,
            "cost_pairs": args.cost_pairs, "ring": args.ring, "mode_gap": args.mode_gap,
            "memory": "2 MiB hugepages (--in-memory: memfd, shared with the peer)",
            "eal": run.VHOST_EAL, "peer": shlex.join(peer.command()),
            "peer_rate": "the peer's maximum, not paced (module text)",
            "machine": benchlib.machine_info(), "started_utc": started,
            "ended_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "mode_reference": f"arm A ({args.arms[0]})'s own ticks/pkt",
            "load1_range": [min(r["load1"] for r in rows + cost),
                            max(r["load1"] for r in rows + cost)]}
    write(outdir, rows, cost, summ, meta)
    with open(os.path.join(outdir, "final_stats.json"), "w") as f:
        json.dump(final_stats, f, indent=1, sort_keys=True)
    finish("bench/latency_interleave.py", outdir, check_outputs(outdir, args))


if __name__ == "__main__":
    main()
