#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generates every number of BENCHMARKS.md and of the README's benchmark paragraph from the
committed raw files in bench/results/ (issue 23: a figure without a raw file is removed).

  bench/update_benchmarks_md.py [--results DIR] [--benchmarks FILE] [--readme FILE]
  bench/update_benchmarks_md.py --check [...]     regenerate in memory; exit 1 on any difference

Two kinds of generated block, each between an opening and a closing marker:
  <!-- bench:E -->  ... <!-- /bench:E -->   the table of experiment E (E may be a path under
                     bench/results, e.g. huge/headline), rebuilt from E.csv, E_callgrind.csv,
                     E_swaps.csv, E.meta.json and machine.json by benchlib.report (the same
                     code as bench/run's tables), not copied from E.md;
  <!-- gen:NAME --> ... <!-- /gen:NAME -->  a reading (text with numbers) made by one of the
                     functions in GENERATORS below from the raw files.
Outside the blocks the pages hold no measured number: --check also fails when a number appears
in the prose (fenced code and inline `code` excepted; the allowed shapes, such as "issue 23",
"Experiment 6", a seed's year or "2 MiB", are in ALLOWED). So a hand edit of a figure, inside a
block or outside, makes `ctest -R bench_benchmarks_md` fail.

Files: the README's checked part is its `## Benchmarks` section only (the rest of the README
belongs to others).
"""
import argparse
import csv
import datetime
import difflib
import glob
import importlib.machinery
import importlib.util
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402


def load_run_module():
    """bench/run (no .py suffix) as a module: its Experiment definitions name the tables."""
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class Results:
    """Reads (and caches) the summaries of the raw files under one results directory."""

    def __init__(self, root):
        self.root = root
        self.run = load_run_module()
        # Experiment `builds` names its A side by a baseline tree; only its label is needed here.
        self.run.BASELINE["build"] = os.path.join(root, "baseline-build")
        self._cache = {}

    def path(self, *p):
        return os.path.join(self.root, *p)

    def exists(self, *p):
        return os.path.exists(self.path(*p))

    def table(self, name):
        """(text, summary, meta) of bench/results/<name>, as benchlib.report makes them."""
        if name not in self._cache:
            sub, exp_name = os.path.split(name)
            outdir = self.path(sub) if sub else self.root
            exp = next((e for e in self.run.EXPERIMENTS if e.name == exp_name), None)
            if exp is None:
                raise SystemExit(f"update_benchmarks_md.py: no experiment '{exp_name}' in bench/run")
            machine = json.load(open(os.path.join(outdir, "machine.json")))
            self._cache[name] = benchlib.report(exp, outdir, machine, "", [], write=False)
        return self._cache[name]

    def comp(self, name, label_part):
        _, summ, _ = self.table(name)
        for s in summ:
            if label_part in s["comparison"]:
                return s
        raise KeyError(f"{name}: no comparison containing {label_part!r}")

    def csv(self, *p):
        with open(self.path(*p)) as f:
            return list(csv.DictReader(f))


# ------------------------------------------------------------------------------------------
# Formatting
# ------------------------------------------------------------------------------------------

def ratio(s, nd=3):
    lo, hi = s["ci95"]
    return f"{s['median_ratio']:.{nd}f}x ({lo:.{nd}f}–{hi:.{nd}f})"


def instr(s):
    return f"{s['instr_a']:.1f} -> {s['instr_b']:.1f}" if s["instr_a"] and s["instr_b"] else "–"


def instr_ratio(s):
    return s["instr_b"] / s["instr_a"] if s["instr_a"] and s["instr_b"] else float("nan")


def load_range(name, r):
    _, summ, _ = r.table(name)
    lo = min(s["load1"][0] for s in summ)
    hi = max(s["load1"][1] for s in summ)
    return f"{lo:.2f}–{hi:.2f}"


def shape(meta):
    """How a stored run was taken: with issue 23's load cap, or before it."""
    if "load_cap" not in meta:
        return "taken before issue 23's run shape and load cap"
    return (f"load cap {meta['load_cap']}" if meta["load_cap"] else "no load cap")


def builds(meta):
    """When a table's rates and its instruction counts come from different commits."""
    if meta.get("rates_commit") and meta.get("callgrind_commit") and \
            meta["rates_commit"] != meta["callgrind_commit"]:
        return (f" (rates measured at commit {meta['rates_commit']}, instructions counted at "
                f"{meta['callgrind_commit']} with `{meta.get('callgrind_command', '?')}`: the "
                f"rates predate the change between them)")
    return ""


def when(meta):
    return f"{meta.get('started', '?')} – {meta.get('ended', '?')} UTC"


# ------------------------------------------------------------------------------------------
# Generated readings: name -> function(Results) -> markdown text
# ------------------------------------------------------------------------------------------

def gen_protocol(r):
    p = benchlib.PROTOCOL
    cores = json.load(open(r.path("machine.json"))).get("cores", "?")
    return (f"* **Run shape of every headline figure** (bench/run's defaults, "
            f"`benchlib.PROTOCOL`): **{p['pairs']} pairs, {p['seconds']} s measured per run "
            f"after {p['warmup']} s of warm-up**; a run's figure is the median of its "
            f"per-second rates.\n"
            f"* **Load cap {p['load_cap']}** (1-minute load average, read at the start and at "
            f"the end of every run; both are in the CSV). On this {cores}-vCPU machine "
            f"(`bench/results/machine.json`) the benchmark's own busy-polling lcore holds the load at 1.0, so {p['load_cap']} allows half a CPU "
            f"of anything else. A pair above the cap is run again, at most {p['load_retries']} "
            f"times (`--load-cap`, `--load-retries`); the superseded runs stay in the CSV with "
            f"status `repeated`, a pair still above the cap after that is kept with status "
            f"`over_load_cap`, and every table says how many of each it has.")


def _huge(r):
    name = "huge/headline"
    return {k: r.comp(name, v) for k, v in {
        "headpool": "skbnfd `headpool`", "magazine": "skbnfd `magazine` vs testpmd",
        "lcache": "`lcache+headpool`", "ring": "`ring_mp_mc`", "plugin": "plugin",
        "slab": "`magazine` vs `slab`"}.items()}


def gen_readme(r):
    h = _huge(r)
    _, _, meta = r.table("huge/headline")
    same = native_interleave_headline(r)
    lead = ""
    if same:
        lead = ("**Against DPDK's own cached pool in the same process and speed mode** "
                "(`bench/interleave.py`: skbnfd alternates between its skbnf pool and a DPDK "
                "`ring_mp_mc` pool with its lcore cache every interval, l3, one worker, 2 MiB "
                "hugepages; the rate of B over its two neighbouring native intervals; issue 33 "
                "item 1): " + "; ".join(f"`{b}` {x['text']} (`bench/results/interleave/"
                                          f"{x['name']}/`, {x['meta']['alternations']} "
                                          f"alternations)" for b, x in same.items())
                + ".\n\nAcross processes, in runs minutes apart that mix the speed modes "
                "(issue 33's audit): ")
    return lead + (
        f"on **2 MiB hugepages** (production memory, bench/run's default since issue 23; "
        f"`bench/results/huge/`, {meta['pairs']} pairs of {meta['seconds']} s, {when(meta)}, "
        f"{shape(meta)}: load {load_range('huge/headline', r)}) skbnfd's "
        f"best strategy, `lcache+headpool` (DPDK's own lcore cache as skbnf's `lcache` layer "
        f"over skbnf's store), forwards at {ratio(h['lcache'])} testpmd native. skbnf's own "
        f"layers are slower: `headpool` {ratio(h['headpool'])}, `magazine` "
        f"{ratio(h['magazine'])}, and testpmd with the plugin (`--mbcache=0`, every free "
        f"through skbnf's ops) {ratio(h['plugin'])}. Instructions per packet (callgrind, "
        f"deterministic) are {instr_ratio(h['lcache']):.2f}x, {instr_ratio(h['headpool']):.2f}x, "
        f"{instr_ratio(h['magazine']):.2f}x and {instr_ratio(h['plugin']):.2f}x native's "
        f"{h['lcache']['instr_a']:.1f}{builds(meta)}. The older `--no-huge` headline (DPDK's mempool then "
        f"puts one mbuf per 4 KiB page) is in BENCHMARKS.md, labelled as such; it is not this "
        f"product's result on production memory.")


def gen_huge_reading(r):
    h = _huge(r)
    _, _, meta = r.table("huge/headline")
    return (
        f"Reading ({when(meta)}; {meta['pairs']} pairs of {meta['seconds']} s, {shape(meta)}; "
        f"load {load_range('huge/headline', r)}){builds(meta)}:\n\n"
        f"* skbnfd's best, `lcache+headpool`, is at {ratio(h['lcache'])} native; its "
        f"instructions per packet {instr(h['lcache'])}. skbnfd on DPDK's own pool "
        f"(`ring_mp_mc`): {ratio(h['ring'])}.\n"
        f"* skbnf's own layers: `headpool` {ratio(h['headpool'])} (instructions "
        f"{instr(h['headpool'])}), `magazine` {ratio(h['magazine'])} ({instr(h['magazine'])}), "
        f"the plugin {ratio(h['plugin'])} ({instr(h['plugin'])}).\n"
        f"* `magazine` vs `slab`: {ratio(h['slab'])}.\n"
        f"* Issue 23 item five's rate bounds: " + "; ".join(item5_rate_bounds(h)) + ".\n"
        + modes_reading(r, "huge/headline"))


def modes_reading(r, name):
    cut, mixed, npairs, same, configs = speed_modes(r, name)
    if not cut:
        return "* No configuration's runs fall into two speed modes of the machine."
    parts = [f"{c}: {statistics.median(v):.3f}x over {len(v)}" for c, v in sorted(same.items())]
    return (f"* The machine ran in two speed modes: the runs of {len(cut)} of the "
            f"{len(configs)} configurations split into a fast and a slow group (the split of "
            f"the configuration's sorted rates nearest to the two groups' means, kept when the "
            f"faster mean is more than 1.25 times the slower), and the mode changes between "
            f"runs, outside the benchmark. "
            f"At least {mixed} of the {npairs} pairs had their two runs in different modes (a "
            f"configuration whose runs all fell in one mode cannot tell); their ratios are the "
            f"outliers of the plot. Medians of the other pairs alone (not the headline "
            f"figures, which keep every pair): " + "; ".join(parts) + "."
            + per_mode_reading(name))


# Issue 23 item five's rate bounds, against testpmd native (paired, the headline's run shape).
ITEM5_RATE = {"own": 0.97, "own_low": 0.95, "best_own": 1.00}


def item5_rate_bounds(h):
    """Lines saying, for the stored hugepage headline, whether item five's rate bounds hold."""
    def met(ok):
        return "met" if ok else "**not met**"
    out = []
    for key, name in (("headpool", "skbnfd `headpool`"), ("plugin", "the plugin (`headpool`)")):
        c = h[key]
        ok = c["median_ratio"] >= ITEM5_RATE["own"] and c["ci95"][0] >= ITEM5_RATE["own_low"]
        out.append(f"{name} {ratio(c)}: bound ≥ {ITEM5_RATE['own']:.2f}x with the interval's "
                   f"lower end ≥ {ITEM5_RATE['own_low']:.2f}: {met(ok)}")
    own = {"skbnfd `headpool`": h["headpool"], "skbnfd `magazine`": h["magazine"],
           "the plugin": h["plugin"]}
    best_name, best = max(own.items(), key=lambda kv: kv[1]["median_ratio"])
    out.append(f"the best own strategy, {best_name}, {best['median_ratio']:.3f}x: bound "
               f"≥ {ITEM5_RATE['best_own']:.2f}x: {met(best['median_ratio'] >= ITEM5_RATE['best_own'])}")
    return out


def speed_modes(r, name, split=1.25):
    """The machine's speed modes in a stored run: each configuration's runs split in two
    groups when the faster group's mean is more than `split` times the slower's; a pair is
    mixed when its A and B runs fall on different sides. ({config: cut}, mixed pairs, pairs,
    {comparison: ratios of the other pairs}, configurations)."""
    sub, exp = os.path.split(name)
    rows = [x for x in r.csv(sub, f"{exp}.csv") if x["status"] != "repeated"]
    by_config = {}
    for x in rows:
        by_config.setdefault(x["config"], []).append(float(x["value"]))
    cut = {}
    for cfg, vals in by_config.items():
        # Two groups (1-D two-means: the split of the sorted rates with the least squared
        # distance to the groups' means), kept when the faster mean is more than `split`
        # times the slower.
        v = sorted(vals)
        best = None
        for i in range(1, len(v)):
            lo, hi = v[:i], v[i:]
            ml, mh = sum(lo) / len(lo), sum(hi) / len(hi)
            sse = sum((x - ml) ** 2 for x in lo) + sum((x - mh) ** 2 for x in hi)
            if best is None or sse < best[0]:
                best = (sse, i, ml, mh)
        if best and best[2] > 0 and best[3] / best[2] > split:
            i = best[1]
            cut[cfg] = (v[i - 1] + v[i]) / 2
    def fast(x):
        return float(x["value"]) > cut[x["config"]] if x["config"] in cut else None
    pairs = {}
    for x in rows:
        pairs.setdefault((x["comparison"], x["pair"]), {})[x["role"]] = x
    mixed, same = 0, {}
    per_mode = {}  # comparison -> {"fast": [ratios], "slow": [ratios]}: both runs in that mode
    for (comp, _), ab in pairs.items():
        if "A" not in ab or "B" not in ab:
            continue
        fa, fb = fast(ab["A"]), fast(ab["B"])
        if fa is not None and fb is not None and fa != fb:
            mixed += 1
        else:
            ratio_ab = float(ab["B"]["value"]) / float(ab["A"]["value"])
            same.setdefault(comp, []).append(ratio_ab)
            if fa is not None and fb is not None:
                per_mode.setdefault(comp, {"fast": [], "slow": []})[
                    "fast" if fa else "slow"].append(ratio_ab)
    SPEED_MODES_PER_MODE[name] = per_mode
    return cut, mixed, len(pairs), same, sorted(by_config)


# speed_modes' per-mode ratios of the last call per stored run (name -> comparison -> mode).
SPEED_MODES_PER_MODE = {}


def per_mode_reading(name):
    """Per comparison and mode: the median B/A over the pairs whose two runs both fell in that
    mode (each configuration's own split, as speed_modes makes it), its 95 % bootstrap interval
    and the count; a comparison one of whose configurations never split is in neither."""
    parts = []
    for comp, modes in sorted(SPEED_MODES_PER_MODE.get(name, {}).items()):
        cells = []
        for mode in ("fast", "slow"):
            v = modes[mode]
            if v:
                lo, hi = benchlib.bootstrap_ci(v)
                cells.append(f"{mode} {statistics.median(v):.3f}x ({lo:.3f}–{hi:.3f}) over {len(v)}")
            else:
                cells.append(f"{mode}: no pair")
        parts.append(f"{comp}: " + ", ".join(cells))
    if not parts:
        return ""
    return ("\n* Per mode (both runs of a pair in one mode; the two runs of a pair are tens of "
            "seconds apart in the headline's run shape, so few pairs fall wholly in one mode and the "
            "intervals are wide; bench/interleave.py measures inside one process): "
            + "; ".join(parts) + ".")


def gen_stride(r):
    rows = {(x["memory"], x["ops"]): x for x in r.csv("layout", "stride_probe.csv")}
    out = ["| memory | ops | element (bytes) | stride between neighbours (median, min–max) | "
           "distinct offsets in a 4 KiB page | one burst: distinct 64-byte lines mod 4 KiB |",
           "|---|---|---:|---|---:|---|"]
    for (mem, ops), x in rows.items():
        out.append(f"| {mem} | `{ops}` | {x['elt_bytes']} | {x['stride_median']} "
                   f"({x['stride_min']}–{x['stride_max']}) | {x['distinct_page_offsets']} | "
                   f"{x['burst_distinct_l1_lines_mod_4k']} (burst of {x['burst']}, two lines "
                   f"per mbuf) |")
    g = next(iter(rows.values()))
    kib = int(g["l1d_bytes"]) // 1024 if g["l1d_bytes"] else "?"
    out += ["", f"This host's L1 data cache ({g['l1d_source']}): {kib} KiB, {g['l1d_ways']}-way, "
            f"{g['l1d_line_bytes']}-byte lines, {g['l1d_sets']} sets, so the set of a line is "
            f"fixed by its offset in a 4 KiB page: lines with one page offset share one set of "
            f"{g['l1d_ways']} ways."]
    return "\n".join(out)


def _cachesim_rows(r, sub):
    p = ("cachesim", sub, "headline_callgrind.csv")
    if not r.exists(*p):
        return None
    return r.csv(*p)


def gen_cachesim(r):
    mems = [("no-huge", "`--no-huge`"), ("huge", "2 MiB hugepages")]
    data = {m: _cachesim_rows(r, m) for m, _ in mems}
    if not any(data.values()):
        return ("No cache-simulation run is committed yet: "
                "`bench/run headline --cache-sim --callgrind only --out "
                "bench/results/cachesim/huge` (and `--no-huge ... /no-huge`) writes it.")
    configs = []
    for m, _ in mems:
        for x in data[m] or []:
            if x["config"] not in configs:
                configs.append(x["config"])
    out = ["Simulated L1 data misses per forwarded packet, read + write (LL misses in "
           "brackets), callgrind `--cache-sim=yes`, the forwarding thread only:", "",
           "| configuration | " + " | ".join(label for _, label in mems) + " |",
           "|---|" + "---:|" * len(mems)]
    for c in configs:
        cells = []
        for m, _ in mems:
            x = next((y for y in data[m] or [] if y["config"] == c), None)
            if x is None or x.get("d1_read_misses_per_packet", "") == "":
                cells.append("(not run)")
            else:
                cells.append(f"{float(x['d1_read_misses_per_packet']):.2f} + "
                             f"{float(x['d1_write_misses_per_packet']):.2f} "
                             f"({float(x['ll_misses_per_packet']):.2f})")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    sims = {x.get("simulated_d1", "") for m, _ in mems for x in data[m] or []} - {""}
    cmds = {x.get("command", "") for m, _ in mems for x in data[m] or []} - {""}
    out += ["", f"Simulated D1: {', '.join(sorted(sims)) or 'not recorded'}. Raw: "
            f"`bench/results/cachesim/{{no-huge,huge}}/headline_callgrind.csv` "
            f"({'; '.join(f'`{c}`' for c in sorted(cmds))})."]
    return "\n".join(out)


def gen_nohuge_headline_reading(r):
    name = "headline"
    _, summ, meta = r.table(name)
    lines = [f"Reading ({when(meta)}, `--no-huge`, {meta['pairs']} pairs of {meta['seconds']} s, "
             f"{shape(meta)}; load {load_range(name, r)}): the "
             f"per-pair ratios, lowest to highest, beside the median and its interval:", ""]
    for s in summ:
        rs = sorted(s["ratios"])
        lines.append(f"* {s['comparison']}: {ratio(s)}; pairs {rs[0]:.2f}–{rs[-1]:.2f}")
    return "\n".join(lines)


def gen_exp7_reading(r, name="exp7"):
    _, summ, meta = r.table(name)
    sw = r.csv(f"{name}_swaps.csv")
    rows = benchlib.counted(r.csv(f"{name}.csv"))
    runs = len({(x["comparison"], x["pair"]) for x in sw})
    t = sorted(int(x["total_us"]) for x in sw)
    pct = lambda p: t[min(len(t) - 1, int(p * len(t)))]  # noqa: E731
    failed = sum(1 for x in sw if x["ok"] != "True")
    audits = [x["detail"] for x in rows if x["role"] == "B"]
    ok = all("audit OK" in d for d in audits)
    parts = [f"{s['comparison']}: {ratio(s)} (skbnfd TSC ticks per packet "
             f"{s['ticks_a']:.1f} -> {s['ticks_b']:.1f})" for s in summ]
    return (f"Reading (one stored run: {when(meta)}, {benchlib.memory_of(meta)}, "
            f"{meta['pairs']} pairs of {meta['seconds']} s, {shape(meta)}; "
            f"load {load_range(name, r)}):\n\n"
            f"* **Swaps:** {len(t)} swaps in {runs} swapping runs, {failed} failed; over all "
            f"of them p50 {pct(.5)} µs, p90 {pct(.9)} µs, p99 {pct(.99)} µs, max {t[-1]} µs "
            f"(per direction in the table). Exact pool audit at exit: "
            f"{'OK in every swapping run' if ok else 'NOT OK in some run'}.\n"
            f"* **Throughput while swapping** (half the time in each strategy vs staying in "
            f"the first): " + "; ".join(parts) + ".")


def gen_summary(r):
    h = _huge(r)
    lines = ["| figure | result | memory | raw file |", "|---|---|---|---|"]
    for b, x in native_interleave_headline(r).items():
        lines.append(f"| skbnfd `{b}` vs DPDK's cached pool, one skbnfd, interleaved (l3, one "
                     f"core; issue 33 item 1) | {x['text']} | {x['meta']['memory']} | "
                     f"`bench/results/interleave/{x['name']}/` |")
    best = max((h["lcache"], h["headpool"], h["magazine"]), key=lambda s: s["median_ratio"])
    lines.append(f"| skbnfd best strategy vs testpmd native (io, one core) | "
                 f"{best['b']}: {ratio(best)} | 2 MiB hugepages | "
                 f"`bench/results/huge/headline.csv` |")
    lines.append(f"| skbnf's own layers vs testpmd native | `headpool` {ratio(h['headpool'])}, "
                 f"`magazine` {ratio(h['magazine'])}, plugin {ratio(h['plugin'])} | "
                 f"2 MiB hugepages | `bench/results/huge/headline.csv` |")
    lines.append(f"| `magazine` vs `slab` (io) | {ratio(h['slab'])} | 2 MiB hugepages | "
                 f"`bench/results/huge/headline.csv` |")
    exp6 = "huge/exp6" if r.exists("huge", "exp6.csv") else "exp6"
    if r.exists(f"{exp6}.csv"):
        _, summ, meta = r.table(exp6)
        for burst in ("burst 32", "burst 1"):
            own = [s for s in summ if s["group"] == burst and not s["b"].startswith("malloc")]
            if own:
                b = min(own, key=lambda s: s["median_ratio"])
                lines.append(f"| alloc+free per object, {burst}: best layer vs `rte_mempool` "
                             f"(lower is better) | `{b['b']}` {ratio(b, 2)} | "
                             f"{benchlib.memory_of(meta)} | `bench/results/{exp6}.csv` |")
    exp1 = "huge/exp1" if r.exists("huge", "exp1.csv") else "exp1"
    if r.exists(f"{exp1}.csv"):
        _, summ, meta = r.table(exp1)
        ring = next(s for s in summ if "ring_mp_mc" in s["comparison"])
        lines.append(f"| experiment 1: DPDK's `ring_mp_mc` vs `slab` | {ratio(ring)} | "
                     f"{benchlib.memory_of(meta)} | `bench/results/{exp1}.csv` |")
    return "\n".join(lines)


# Issue 23 item 5: instructions per packet of skbnf's own layers before / after, by function.
ITEM5 = "issue23_item5"
ITEM5_ROWS = [  # (config in <exp>_callgrind.csv, bound on the ratio to native or None)
    ("skbnfd headpool", 1.10),
    ("testpmd+plugin headpool", 1.05),
    ("skbnfd magazine", None),
    ("skbnfd lcache+headpool", None),
    ("skbnfd ring_mp_mc", None),
]
ITEM5_COLUMNS = ["testpmd+plugin headpool", "skbnfd headpool", "skbnfd magazine"]


def _item5_runs(r, side):
    rows = {x["config"]: x for x in r.csv(ITEM5, side, "headline_callgrind.csv")}
    cmd = open(r.path(ITEM5, side, "COMMAND")).read().strip()
    return rows, cmd


def _item5_functions(r, side, row):
    import callgrind_breakdown  # bench/, on sys.path
    tag = re.sub(r"[^A-Za-z0-9_.+-]+", "_", row["key"])
    funcs = callgrind_breakdown.per_function(r.path(ITEM5, side, "callgrind",
                                                    f"{tag}.t0.callgrind"))
    return funcs, int(row["packets"])


def gen_item5(r):
    import callgrind_breakdown  # bench/, on sys.path
    runs = {side: _item5_runs(r, side) for side in ("before", "after")}
    ipp = {side: {c: int(x["instructions"]) / int(x["packets"])
                  for c, x in runs[side][0].items() if int(x["packets"])}
           for side in runs}
    out = ["Callgrind instructions per forwarded packet (the forwarding thread only; io, two "
           "net_null ports, one lcore, 2 MiB hugepages), each run's testpmd native beside it:",
           "",
           "| configuration | before | after | after / native | bound | met |",
           "|---|---:|---:|---:|---:|---|"]
    nat = {side: ipp[side]["testpmd native"] for side in ipp}
    out.append(f"| testpmd native | {nat['before']:.1f} | {nat['after']:.1f} | 1.000 | | |")
    for c, bound in ITEM5_ROWS:
        b, a = ipp["before"].get(c), ipp["after"].get(c)
        if a is None:
            continue
        q = a / nat["after"]
        met = "" if bound is None else ("yes" if q <= bound else "**no**")
        out.append(f"| {c} | {b:.1f} | {a:.1f} | {q:.3f} | "
                   f"{'' if bound is None else f'≤ {bound:.2f}'} | {met} |")
    out += ["", "By function, per packet (before -> after; `librte_net_null@…`: net_null's "
            "functions, stripped of their names in Debian's DPDK; the TX one frees each mbuf "
            "through the pool's enqueue, the RX one refills a burst through its dequeue):", ""]
    cols = [("native", *_item5_functions(r, "after", runs["after"][0]["testpmd native"]))]
    for c in ITEM5_COLUMNS:
        short = c.replace("testpmd+plugin ", "plugin ").replace("skbnfd ", "")
        for side in ("before", "after"):
            cols.append((f"{short} {side}", *_item5_functions(r, side, runs[side][0][c])))
    out += callgrind_breakdown.table(cols)
    m = json.load(open(r.path(ITEM5, "after", "machine.json")))
    out += ["", f"Machine: {m['cpu_model']}, {m['cores']} cores (VM), {m['distro']}, kernel "
            f"{m['kernel']}, DPDK {m['dpdk']}, {m['valgrind']}; callgrind counts do not depend "
            f"on the load. Raw: `bench/results/{ITEM5}/{{before,after}}/` "
            f"(`headline_callgrind.csv`, the kept callgrind files, `COMMAND`). Before: "
            f"`{runs['before'][1].splitlines()[-1]}`; after: `{runs['after'][1].splitlines()[-1]}`."]
    return "\n".join(out)


VHOST_SATURATED = 0.9  # skbnfd's worker busy share from which it, not its peer, set the rate


def gen_vhost_reading(r, name="vhost"):
    """Issue 23 item 6's reading, whatever it shows: per ring size, each strategy against
    `ring_mp_mc` (ratio, interval), the absolute rates, how busy skbnfd's worker was (near 1:
    skbnfd set the rate; lower: the peer did, and then TSC ticks per packet compare the
    strategies), and which strategies the intervals put above, below or level with DPDK's."""
    _, summ, meta = r.table(name)
    exp = next(e for e in r.run.EXPERIMENTS if e.name == os.path.basename(name))
    rows = benchlib.counted(r.csv(f"{name}.csv"))
    tsc = meta.get("tsc_mhz")
    lines = [f"Reading ({when(meta)}; {meta['pairs']} pairs of {meta['seconds']} s, "
             f"{shape(meta)}; load {load_range(name, r)}). {exp.caveat}", ""]
    for group in dict.fromkeys(s["group"] for s in summ):
        items = [s for s in summ if s["group"] == group]
        lines.append(f"* **{group}-descriptor rings** (A `ring_mp_mc` with its cache):")
        for s in items:
            busy = [statistics.median(v) if v else None for v in (
                [x for x in (benchlib.busy_share(q, tsc) for q in rows
                             if q["comparison"] == s["comparison"] and q["role"] == role)
                 if x is not None] for role in ("A", "B"))]
            ticks = (f"; skbnfd TSC ticks per packet {s['ticks_a']:.1f} -> {s['ticks_b']:.1f}"
                     if s["ticks_a"] and s["ticks_b"] else "")
            occupied = ""
            if None not in busy:
                # Busy 0.9 or more in both arms: skbnfd's worker set the rate; below it, the
                # peer (or the machine) did, and the rate ratio says less than the ticks.
                who = ("skbnfd's worker set the rate" if min(busy) >= VHOST_SATURATED else
                       "the peer or the machine set the rate, not skbnfd's worker: the ticks "
                       "per packet compare the strategies")
                occupied = f"; worker busy {busy[0]:.2f} -> {busy[1]:.2f} ({who})"
            lines.append(f"  * `{s['b']}`: {ratio(s)}; {s['median_a']:.2f} -> "
                         f"{s['median_b']:.2f} Mpps{occupied}{ticks}")
        # Fewer than 3 pairs: the bootstrap interval is no interval (one or two values).
        few = [s["b"] for s in items if s["pairs"] < 3]
        above = [s["b"] for s in items if s["ci95"][0] > 1 and s["b"] not in few]
        below = [s["b"] for s in items if s["ci95"][1] < 1 and s["b"] not in few]
        level = [s["b"] for s in items
                 if s["b"] not in few and s["ci95"][0] <= 1 <= s["ci95"][1]]
        name_list = lambda v: ", ".join(f"`{x}`" for x in v) or "none"  # noqa: E731
        lines.append(f"  * Faster than `ring_mp_mc` (whole interval above 1): "
                     f"{name_list(above)}; slower (whole interval below 1): {name_list(below)}; "
                     f"not distinguished: {name_list(level)}"
                     + (f"; too few pairs to tell: {name_list(few)}" if few else "") + ".")
    return "\n".join(lines)


def gen_layout(r):
    """Issue 23 item 2's reading: the four arms' simulated misses and instructions (callgrind,
    layout/layout_callgrind.csv) and, once the paired run exists (layout/layout.csv), what the
    four comparisons say about the `--no-huge` explanation."""
    p = ("layout", "layout_callgrind.csv")
    if not r.exists(*p):
        return ("No simulation of the four arms is committed yet: `bench/run layout --no-huge "
                "--cache-sim --callgrind only --out bench/results/layout` writes it.")
    rows = {x["config"]: x for x in r.csv(*p)}
    out = ["Simulated L1 data misses and instructions per forwarded packet of the four arms "
           "(callgrind `--cache-sim=yes`, the forwarding thread only, `--no-huge`):", "",
           "| arm | instructions / packet | D1 misses / packet, read + write | LL misses |",
           "|---|---:|---:|---:|"]
    for arm in ("DPDK page-per-mbuf", "DPDK packed", "skbnf page-per-mbuf", "skbnf packed"):
        x = rows.get(arm)
        if x is None:
            out.append(f"| {arm} | (not run) | (not run) | (not run) |")
            continue
        out.append(f"| {arm} | {float(x['instructions_per_packet']):.1f} | "
                   f"{float(x['d1_read_misses_per_packet']):.2f} + "
                   f"{float(x['d1_write_misses_per_packet']):.2f} | "
                   f"{float(x['ll_misses_per_packet']):.2f} |")
    cmds = sorted({x.get("command", "") for x in rows.values()} - {""})
    out += ["", f"Raw: `bench/results/layout/layout_callgrind.csv` "
            f"({'; '.join(f'`{c}`' for c in cmds)})."]
    if not r.exists("layout", "layout.csv"):
        out += ["", "The paired rate run of the four arms (`bench/run layout --no-huge --out "
                "bench/results/layout`) is not committed yet: the reading below waits for it."]
        return "\n".join(out)
    _, summ, meta = r.table("layout/layout")
    by = {s["group"]: s for s in summ}
    out += ["", f"Reading of the paired run ({when(meta)}; {meta['pairs']} pairs of "
            f"{meta['seconds']} s, {shape(meta)}; load {load_range('layout/layout', r)}):", ""]
    if "DPDK" in by:
        out.append(f"* DPDK's pool, packed vs one mbuf per 4 KiB page: {ratio(by['DPDK'])}.")
    if "skbnf" in by:
        out.append(f"* skbnf's store, packed vs one mbuf per 4 KiB page: {ratio(by['skbnf'])}.")
    if "packed" in by:
        out.append(f"* Both packed, skbnf vs DPDK: {ratio(by['packed'])}.")
    if "page" in by:
        out.append(f"* Both one mbuf per page, skbnf vs DPDK: {ratio(by['page'])}.")
    def verdict(k):
        lo, hi = by[k]["ci95"]
        return "faster" if lo > 1 else "slower" if hi < 1 else "not distinguished"
    layout_wins = [k for k in ("DPDK", "skbnf") if k in by and by[k]["ci95"][0] > 1]
    equal = {k: verdict(k) for k in ("packed", "page") if k in by}
    out.append("")
    out.append(
        f"Packing is faster for {' and '.join(layout_wins) or 'neither'} (whole interval above "
        f"1). At equal layout skbnf is "
        + "; ".join(f"{v} than DPDK ({'both packed' if k == 'packed' else 'both one mbuf per page'})"
                    if v != "not distinguished" else
                    f"not distinguished from DPDK ({'both packed' if k == 'packed' else 'both one mbuf per page'})"
                    for k, v in equal.items())
        + ". "
        + ("So the `--no-huge` advantage of skbnf over DPDK's pool is memory layout without "
           "hugepages (DPDK's page-per-mbuf layout, whose misses the simulation shows), not a "
           "property of skbnf's store: with the layout equalised skbnf is nowhere faster."
           if layout_wins and "faster" not in equal.values() else
           "Read the four ratios above: layout alone does not account for every difference."))
    return "\n".join(out)


ISSUE32 = "issue32"
# (label, item directory, before run, after run, budget or None); a run is a directory of
# bench/results/issue32/<item>/ holding one headline_callgrind.csv (its COMMAND says how).
ISSUE32_ROWS = [
    ("Where every buffer is (item 1: the worker books what each PMD call took; always on)",
     "item1", "before", "after-five", None),
    ("Latency and loop view (item 4), the always-on part (`--latency-sample-every=0`)",
     "item4", "before", "after-off", None),
    ("the same, sampling 1 in 256 (the default)", "item4", "before", "after-256", 2.0),
    ("the same, sampling 1 in 64", "item4", "before", "after-64", 2.0),
    ("`track` modifier (item 2), off", "item2", "before", "after7-off", 0.0),
    ("`track` modifier (item 2), on (`--strategy=<s>,track`)", "item2", "before",
     "after7-on-{s}", 3.0),
]


def _issue32_ipp(r, item, run, strategy):
    """Instructions per packet of skbnfd `strategy` in one run of issue 32's cost experiments."""
    for x in r.csv(ISSUE32, item, run.format(s=strategy), "headline_callgrind.csv"):
        if x["config"] == f"skbnfd {strategy}":
            return int(x["instructions"]) / int(x["packets"])
    return None


def gen_issue32_costs(r):
    """Issue 32's costs: callgrind instructions per packet before and after each item."""
    strategies = ("headpool", "magazine")
    out = ["| what | raw files | " + " | ".join(strategies) + " | budget | met |",
           "|---|---|" + "---:|" * len(strategies) + "---:|---|"]
    for label, item, before, after, budget in ISSUE32_ROWS:
        cells, ok = [], True
        for st in strategies:
            b, a = _issue32_ipp(r, item, before, st), _issue32_ipp(r, item, after, st)
            if b is None or a is None:
                cells.append("")
                continue
            d = a - b
            ok = ok and (budget is None or d <= budget + 0.005)
            cells.append(f"{b:.3f} -> {a:.3f} ({d:+.2f})")
        met = "" if budget is None else ("yes" if ok else "**no**")
        bud = "" if budget is None else (f"≤ {budget:+.0f}" if budget else "0")
        out.append(f"| {label} | `bench/results/{ISSUE32}/{item}/` | " + " | ".join(cells)
                   + f" | {bud} | {met} |")
    return "\n".join(out)


def gen_adjacent(r):
    """Issue 33 item 2: testpmd native vs testpmd + plugin, adjacent short runs, per run and
    mode (every stored run: bench/results/adjacent/*/)."""
    runs = sorted(((json.load(open(os.path.join(d, "meta.json"))), d)
                   for d in glob.glob(r.path("adjacent", "*")) if os.path.isdir(d)),
                  key=lambda x: _utc(x[0]["started_utc"]))
    out = ["| run (UTC start) | mode | B runs | A runs | testpmd + plugin / native (median of run "
           "ratios) | 95 % interval | +- % | native Mpps (median) | plugin Mpps (median) |",
           "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    notes = []
    for meta, d in runs:
        name = os.path.basename(d)
        summ = json.load(open(os.path.join(d, "summary.json")))
        rows = r.csv("adjacent", name, "runs.csv")
        for mode, m in summ["modes"].items():
            out.append(f"| `{name}` ({meta['started_utc']}) | {mode} | {m['b_runs']} | "
                       f"{m['a_runs']} | {m['ratio_median']:.3f} | "
                       f"{m['ratio_ci95'][0]:.3f}–{m['ratio_ci95'][1]:.3f} | "
                       f"{m['ratio_ci95_halfwidth_pct']:.1f} | {m['a_mpps_median']:.1f} | "
                       f"{m['b_mpps_median']:.1f} |")
        allv = [float(x) for row in rows for x in row["samples"].split()]
        th = summ["threshold_mpps"]
        notes.append(
            f"* `{name}`: {meta['pairs']} pairs of {meta['seconds']} s runs (after "
            f"{meta['warmup_s']} s warm-up each), {meta['memory']}, {meta['started_utc']} – "
            f"{meta['ended_utc']}; every per-second sample between {min(allv):.1f} and "
            f"{max(allv):.1f} Mpps; "
            + (f"the mode split at {th:.1f} Mpps" if th else "one mode (no gap wider than "
               f"{100 * meta['mode_gap']:.0f} % between A's runs)")
            + f"; straddling runs, in no ratio: B {summ['straddle_b']}, A {summ['straddle_a']}. "
            f"Command: `{meta['command']}`; raw: `bench/results/adjacent/{name}/` (runs.csv: "
            "every run with its per-second samples and mode).")
    return "\n".join(out + [""] + notes)


LATETX = "issue33/latetx"


def gen_latetx(r):
    """Issue 33 item 5: instructions and simulated cache misses per packet per strategy, with
    late TX completion (experiment latetx, --callgrind only --cache-sim)."""
    rows = r.csv(LATETX, "latetx_callgrind.csv")
    by = {x["config"]: x for x in rows if int(x["packets"] or 0)}
    ref = by.get("ring_mp_mc (cache 256)")
    f = lambda x, k: float(x[k])  # noqa: E731
    ipp = lambda x: int(x["instructions"]) / int(x["packets"])  # noqa: E731
    out = ["| configuration | packets counted | instructions / packet | L1d read misses / "
           "packet | L1d write misses / packet | L2-sized LL misses / packet | vs ring_mp_mc "
           "(L1d misses) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for c, x in by.items():
        d1 = f(x, "d1_read_misses_per_packet") + f(x, "d1_write_misses_per_packet")
        rel = ""
        if ref is not None:
            d1r = (f(ref, "d1_read_misses_per_packet") + f(ref, "d1_write_misses_per_packet"))
            rel = f"{d1 / d1r:.2f}x" if d1r else ""
        out.append(f"| {c} | {int(x['packets']):,} | {ipp(x):.1f} | "
                   f"{f(x, 'd1_read_misses_per_packet'):.3f} | "
                   f"{f(x, 'd1_write_misses_per_packet'):.3f} | "
                   f"{f(x, 'll_misses_per_packet'):.3f} | {rel} |")
    lines = ["", "Does recycle reduce them? (L1d misses per packet, read + write):"]
    for base in ("magazine", "headpool"):
        a, b = by.get(base), by.get(f"recycle+{base}")
        if a is None or b is None:
            continue
        ma = f(a, "d1_read_misses_per_packet") + f(a, "d1_write_misses_per_packet")
        mb = f(b, "d1_read_misses_per_packet") + f(b, "d1_write_misses_per_packet")
        la, lb = f(a, "ll_misses_per_packet"), f(b, "ll_misses_per_packet")
        verdict = "fewer" if mb < ma * 0.98 else ("more" if mb > ma * 1.02 else "about as many")
        lines.append(f"* `recycle+{base}` vs `{base}`: {mb:.3f} vs {ma:.3f} ({verdict}, "
                     f"{100 * (mb / ma - 1):+.1f} %); L2-sized LL {lb:.3f} vs {la:.3f} "
                     f"({100 * (lb / la - 1):+.1f} %); instructions {ipp(b):.1f} vs "
                     f"{ipp(a):.1f} ({100 * (ipp(b) / ipp(a) - 1):+.1f} %).")
    any_row = next(iter(by.values()), None)
    if any_row is not None:
        m = json.load(open(r.path(LATETX, "machine.json")))
        lines += ["", f"Simulated caches: L1d {any_row['simulated_d1']}, last level (set to the "
                  f"core's L2) {any_row['simulated_ll']}. Memory of the counted skbnfd: "
                  f"{any_row['memory']}. Machine: {m['cpu_model']}, {m['cores']} cores (VM), "
                  f"DPDK {m['dpdk']}, {m['valgrind']}; callgrind counts do not depend on the "
                  f"load, but the peer's speed sets how many packets a run counts. Command: "
                  f"`{any_row['command']}`; raw: `bench/results/{LATETX}/latetx_callgrind.csv` and the "
                  f"kept callgrind files beside it (`callgrind/`, by function: "
                  f"`breakdown.md`)."]
    return "\n".join(out + lines)


LATENCY = "issue33/latency"


def gen_issue33_latency(r):
    """Issue 33 item 4: latency per strategy, interleaved in one skbnfd over vhost-user, per
    machine mode (bench/latency_interleave.py's own table, from its summary.json)."""
    import latency_interleave  # noqa: E402  (its table, one definition)
    summ = json.load(open(r.path(LATENCY, "summary.json")))
    meta = json.load(open(r.path(LATENCY, "meta.json")))
    lines = latency_interleave.summary_md(summ, meta)
    lines += ["", f"Command: `{meta['command']}`; raw: `bench/results/{LATENCY}/` (samples.csv: "
              "every interval with its arm, mode and histogram delta; cost.csv: sampling off and "
              "on; COMMAND)."]
    return "\n".join(lines)


NATIVE_TWIN = "issue33/native_twin"


def _utc(text):
    return datetime.datetime.fromisoformat(text)


# Issue 33 item 1's acceptance: the same comparison run twice at least this far apart agrees
# within its per-mode intervals (they overlap), each interval within +-WIDTH %.
AGREE_APART_MIN, AGREE_WIDTH_PCT = 60, 1.5


def native_interleave_runs(r):
    """The stored runs of bench/interleave.py native X (bench/results/interleave/
    *-native-vs-*-run*), each (name, meta, summary), by start time."""
    runs = []
    for d in glob.glob(r.path("interleave", "*-native-vs-*-run*")):
        runs.append((os.path.basename(d), json.load(open(os.path.join(d, "meta.json"))),
                     json.load(open(os.path.join(d, "summary.json")))))
    return sorted(runs, key=lambda x: _utc(x[1]["started_utc"]))


def native_interleave_agreement(runs):
    """Per B and mode, every pair of runs at least AGREE_APART_MIN minutes apart: whether their
    rate intervals overlap and whether both are within +-AGREE_WIDTH_PCT %."""
    out = []
    for i, (na, ma, sa) in enumerate(runs):
        for nb, mb, sb in runs[i + 1:]:
            apart = (_utc(mb["started_utc"]) - _utc(ma["started_utc"])).total_seconds() / 60
            if mb["b"] != ma["b"] or apart < AGREE_APART_MIN:
                continue
            for mode in sorted(set(sa["modes"]) & set(sb["modes"])):
                x, y = sa["modes"][mode], sb["modes"][mode]
                (xl, xh), (yl, yh) = x["ratio_mpps_ci95"], y["ratio_mpps_ci95"]
                wx = benchlib.halfwidth_pct(xl, xh, x["ratio_mpps_median"])
                wy = benchlib.halfwidth_pct(yl, yh, y["ratio_mpps_median"])
                out.append(dict(b=ma["b"], mode=mode, a=na, z=nb, apart=apart,
                                agree=max(xl, yl) <= min(xh, yh), wx=wx, wy=wy,
                                narrow=max(wx, wy) <= AGREE_WIDTH_PCT))
    return out


def native_interleave_headline(r):
    """Issue 33 items 1 and 7: the headline, skbnf's `headpool` and its best strategy against
    DPDK's cached pool in one skbnfd: per B, the newest run's figure per mode, as text, with
    whether it agrees with the newest earlier run of the same B at least AGREE_APART_MIN
    minutes before it. {} when no run is stored."""
    runs = native_interleave_runs(r)
    pairs = native_interleave_agreement(runs)
    out = {}
    for b in sorted({m["b"] for _, m, _ in runs}):
        name, meta, summ = [x for x in runs if x[1]["b"] == b][-1]
        parts = []
        for mode, m in summ["modes"].items():
            lo, hi = m["ratio_mpps_ci95"]
            same = [p for p in pairs if p["z"] == name and p["mode"] == mode]
            text = (f"{m['ratio_mpps_median']:.3f}x ({lo:.3f}–{hi:.3f}, "
                    f"+-{benchlib.halfwidth_pct(lo, hi, m['ratio_mpps_median']):.1f} %) "
                    + ("with the machine in one mode" if mode == "one" else f"in the {mode} mode"))
            if same:
                text += (f", {'agreeing' if same[-1]['agree'] else 'not agreeing'} with "
                         f"`{same[-1]['a']}` {same[-1]['apart']:.0f} minutes before")
            parts.append(text)
        out[b] = dict(name=name, meta=meta, text="; ".join(parts))
    return out


def gen_native_interleave(r):
    """Issue 33 item 1: skbnf's strategies against DPDK's cached pool in ONE skbnfd
    (bench/interleave.py native X: runs bench/results/interleave/*-native-vs-*-run*), per run
    and mode, with the bound of item 8, the acceptance's agreement check; and the twin's sides
    counted (callgrind)."""
    runs = native_interleave_runs(r)
    out = ["| run (UTC start) | B | mode | alternations x interval | B samples | A samples | Mpps B/A "
           "(median) | 95 % interval | +- % | ticks/pkt B/A | +- % | ≥ 0.97 | ≥ 1.00 |",
           "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|"]
    for name, meta, summ in runs:
        for mode, m in summ["modes"].items():
            lo, hi = m["ratio_mpps_ci95"]
            met = " | ".join("yes" if lo >= bound else ("no" if hi < bound else "undecided")
                             for bound in (0.97, 1.00))
            out.append(f"| `{name}` ({meta['started_utc']}) | `{meta['b']}` | {mode} | "
                       f"{meta['alternations']} x {meta['interval_s']:g} s | {m['b_samples']} | "
                       f"{m['a_samples']} | "
                       f"{m['ratio_mpps_median']:.3f} | {lo:.3f}–{hi:.3f} | "
                       f"{benchlib.halfwidth_pct(lo, hi, m['ratio_mpps_median']):.1f} | "
                       f"{m['ratio_ticks_median']:.3f} | {m['ratio_ticks_ci95_halfwidth_pct']:.1f} "
                       f"| {met} |")
    if runs:
        meta = runs[0][1]
        out += ["", f"A is `native`: {meta['native']}. {meta['memory']}, settle "
                f"{meta['settle_s']:g} s after each switch (outside the interval); straddling B samples are in no ratio (summary.md of each "
                "run). Raw: `bench/results/interleave/<run>/` (samples.csv: every interval with "
                "its arm, mode, skbnf_allocs and the switch's time); command: each run's "
                "meta.json."]
    pairs = native_interleave_agreement(runs)
    if pairs:
        out += ["", f"Item 1's acceptance, per pair of runs of one comparison at least "
                f"{AGREE_APART_MIN} minutes apart and per mode both saw (rate intervals "
                f"overlapping; both within +-{AGREE_WIDTH_PCT} %):", ""]
        for p in pairs:
            out.append(f"* `{p['b']}`, mode {p['mode']}: `{p['a']}` and `{p['z']}`, "
                       f"{p['apart']:.0f} minutes apart: "
                       f"{'agree' if p['agree'] else '**disagree**'}; +-{p['wx']:.1f} % and "
                       f"+-{p['wy']:.1f} %: "
                       f"{'within' if p['narrow'] else '**wider than**'} +-{AGREE_WIDTH_PCT} %: "
                       f"{'**met**' if p['agree'] and p['narrow'] else '**not met**'}.")
    rows = {name: r.csv(NATIVE_TWIN, f"{name}.csv") for name in
            ("plain", "twin-skbnf", "twin-native", "ringmpmc")}

    def ipp(name):
        x = [row for row in rows[name] if row["config"].startswith("skbnfd")][0]
        return int(x["instructions"]) / int(x["packets"])
    out += ["", "| skbnfd, callgrind (worker loop) | instructions per packet |", "|---|---:|",
            f"| `headpool`, no twins | {ipp('plain'):.1f} |",
            f"| `headpool`, twins, skbnf side polled | {ipp('twin-skbnf'):.1f} |",
            f"| `headpool`, twins, native side polled | {ipp('twin-native'):.1f} |",
            f"| `--pool-ops=ring_mp_mc` (DPDK's pool alone) | {ipp('ringmpmc'):.1f} |", "",
            f"Raw: `bench/results/{NATIVE_TWIN}/` (COMMAND, README.md)."]
    return "\n".join(out)


def gen_twin_callgrind(r):
    """Issue 33 item 8: why the rate differs. Both sides of the interleaved comparison counted by
    callgrind in the interleaved runs' own configuration (bench/twin_callgrind.py: l3, net_pcap
    -> net_null, twins; bench/results/issue33/twin-l3-*/twin_callgrind.csv), with the simulated
    caches and branch predictor, per forwarded packet of the worker's poll loop."""
    dirs = sorted(glob.glob(r.path("issue33", "twin-l3-*")))
    if not dirs:
        return ("No count of the twin's sides in l3 is committed yet: "
                "`bench/twin_callgrind.py headpool --cache-sim --branch-sim --out "
                "bench/results/issue33/twin-l3-headpool` writes one.")
    out = ["| skbnf strategy | side polled | instructions | D1 read misses | D1 write misses | "
           "LL misses | conditional branches | mispredicted | indirect mispredicted | raw |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    desc = None
    for d in dirs:
        name = os.path.basename(d)
        rows = r.csv("issue33", name, "twin_callgrind.csv")
        strategy = [x["strategy"] for x in rows if x["side"] == "skbnf"][0]
        for row in rows:
            skbnf = row["side"] == "skbnf"
            side = f"skbnf: `{row['strategy']}`" if skbnf else f"native: {row['strategy']}"
            out.append(f"| `{strategy}` | {side} | {float(row['instructions_per_packet']):.1f} | "
                       + " | ".join(f"{float(row[k]):.2f}" if row[k] != "" else "–" for k in (
                           "d1_read_misses_per_packet", "d1_write_misses_per_packet",
                           "ll_misses_per_packet", "cond_branches_per_packet",
                           "cond_mispredicts_per_packet", "indirect_mispredicts_per_packet"))
                       + f" | `issue33/{name}` |")
            desc = desc or (row["simulated_d1"], row["simulated_ll"])
    out += ["", "Per forwarded packet of the worker's poll loop, callgrind with `--cache-sim=yes "
            "--branch-sim=yes`, `--no-huge`; the simulated D1: " + desc[0] + "; LL: " + desc[1]
            + ". Command: each directory's COMMAND."]
    return "\n".join(out)


MIN_POOL_GOAL_PCT = 20  # issue 33 item 3: skbnf's best needs >= 20 % less than DPDK's cached pool


def gen_min_pool(r):
    """Issue 33 item 3: the smallest pool at zero rx_nombuf per arm and case, from every stored
    slice (bench/results/issue33/min_pool-*/summary.csv, bench/min_pool.py), with skbnf's best
    against DPDK's ring_mp_mc with its default cache (256) per case, and the goal."""
    rows, slices = [], []
    for d in sorted(glob.glob(r.path("issue33", "min_pool-*"))):
        meta = json.load(open(os.path.join(d, "meta.json")))
        slices.append((os.path.basename(d), meta))
        for row in r.csv("issue33", os.path.basename(d), "summary.csv"):
            rows.append(dict(row, slice=os.path.basename(d), shift=meta["shift"]))
    out = ["| workers | ring | load shift | arm | smallest pool (mbufs) | largest failed | MiB "
           "(pool) | preflight's minimum | slice |", "|---:|---:|---|---|---:|---:|---:|---:|---|"]
    key = lambda x: (int(x["workers"]), int(x["ring"]), x["shift"])  # noqa: E731
    for x in sorted(rows, key=lambda x: (key(x), int(x["mbufs"] or 0))):
        got = x["mbufs"] if x["status"] == "converged" else f"{x['status']} ({x['mbufs']})"
        out.append(f"| {x['workers']} | {x['ring']} | {x['shift']} | `{x['arm']}` | {got} | "
                   f"{x['largest_failed']} | {x['mib_pool']} | {x['preflight_min']} | "
                   f"`{x['slice']}` |")
    out += ["", f"Per case, skbnf's best against DPDK's `ring_mp_mc` with its default cache (256) "
            f"(goal: at least {MIN_POOL_GOAL_PCT} % less memory):", ""]
    for case in sorted({key(x) for x in rows}):
        here = [x for x in rows if key(x) == case and x["status"] == "converged"]
        dpdk = [x for x in here if x["arm"] == "ring_mp_mc:256"]
        own = [x for x in here if not x["arm"].startswith("ring_mp_mc")]
        if not dpdk or not own:
            continue
        best = min(own, key=lambda x: float(x["mib_pool"]))
        d = dpdk[0]
        fewer = 100.0 * (1 - int(best["mbufs"]) / int(d["mbufs"]))
        less = 100.0 * (1 - float(best["mib_pool"]) / float(d["mib_pool"]))
        out.append(f"* {case[0]} worker(s), rings of {case[1]}, shift {case[2]}: `{best['arm']}` "
                   f"{best['mbufs']} mbufs ({best['mib_pool']} MiB) against {d['mbufs']} "
                   f"({d['mib_pool']} MiB): {fewer:.1f} % fewer mbufs, "
                   + (f"{less:.1f} % less" if less >= 0 else f"**{-less:.1f} % more**")
                   + f" pool memory: goal {'**met**' if less >= MIN_POOL_GOAL_PCT else '**not met**'} "
                   f"(of {len(own)} skbnf arm(s) run).")
    holds = sorted({f"{m['hold_s']:g}" for _, m in slices})
    out += ["", f"Each result is one bisection (a pass is one hold of {'/'.join(holds)} s; MiB of "
            "the pool by skbnfd's preflight rule: skbnf's slabs, ring_mp_mc's packed objects). Slices: "
            + "; ".join(f"`{n}`: `{m['command']}` ({m['started_utc']} – {m['ended_utc']}, git "
                        f"{m['git']})" for n, m in slices)
            + ". Raw: each slice's steps.csv (every step), summary.csv, meta.json, README.md."]
    return "\n".join(out)


GENERATORS = {
    "protocol": gen_protocol,
    "readme": gen_readme,
    "summary": gen_summary,
    "huge-reading": gen_huge_reading,
    "stride": gen_stride,
    "cachesim": gen_cachesim,
    "nohuge-headline-reading": gen_nohuge_headline_reading,
    "exp7-reading": gen_exp7_reading,
    "huge/exp7-reading": lambda r: gen_exp7_reading(r, "huge/exp7"),
    "issue23-item5": gen_item5,
    "vhost-reading": gen_vhost_reading,
    "vhost4096-reading": lambda r: gen_vhost_reading(r, "vhost4096/vhost"),
    "layout": gen_layout,
    "issue32-costs": gen_issue32_costs,
    "latetx": gen_latetx,
    "adjacent": gen_adjacent,
    "issue33-latency": gen_issue33_latency,
    "native-interleave": gen_native_interleave,
    "min-pool": gen_min_pool,
    "twin-callgrind": gen_twin_callgrind,
}


# ------------------------------------------------------------------------------------------
# Filling the blocks, and the no-number-in-prose rule
# ------------------------------------------------------------------------------------------

BLOCK = re.compile(r"<!-- (bench|gen):([\w/-]+) -->.*?<!-- /\1:\2 -->", re.S)

# Numbers the prose may hold (none is a measurement): references, a seed's year, page sizes,
# the interval's level, names with digits.
ALLOWED = [
    r"(?:[Ii]ssues?|Experiments?|experiments?|exp\.?|[Ss]eeds?|item|items|PR) \d+(?:[-–, ]+\d+)*",
    r"\b(?:19|20)\d\d\b",                   # a year (the seeds: Olsson 2003, Kleen 1998, ...)
    r"\b\d+ (?:MiB|KiB|GiB)\b",             # page and cache sizes named as such
    r"\b95 %",                              # the interval's level
    r"\b\d+(?:st|nd|rd|th)\b",
]


def fill(text, r, missing):
    def one(m):
        kind, name = m.group(1), m.group(2)
        try:
            if kind == "bench":
                if not r.exists(f"{name}.csv"):
                    missing.append(name)
                    return m.group(0)
                body, _, _ = r.table(name)
                body = body.split("\n", 1)[1].strip("\n")
                sub = os.path.dirname(name)
                where = f"bench/results/{sub}/" if sub else "bench/results/"
                body = re.sub(r"`(\w+(?:_\w+)?\.(?:csv|png))`",
                              lambda f: f"`{where}{f.group(1)}`", body)
            else:
                if name not in GENERATORS:
                    raise SystemExit(f"update_benchmarks_md.py: no generator for gen:{name}")
                body = GENERATORS[name](r).strip("\n")
        except FileNotFoundError as e:
            missing.append(f"{name} ({e.filename})")
            return m.group(0)
        return f"<!-- {kind}:{name} -->\n{body}\n<!-- /{kind}:{name} -->"
    return BLOCK.sub(one, text)


def prose_numbers(text, first_line=1):
    """(line, text) of every number outside generated blocks, code and ALLOWED shapes."""
    # Blank out what may hold numbers, keeping the line structure.
    keep_lines = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    t = BLOCK.sub(keep_lines, text)
    t = re.sub(r"```.*?```", keep_lines, t, flags=re.S)
    t = re.sub(r"`[^`\n]*`", keep_lines, t)
    t = re.sub(r"<!--.*?-->", keep_lines, t, flags=re.S)
    t = re.sub(r"\]\([^)]*\)", keep_lines, t)  # link targets
    for a in ALLOWED:
        t = re.sub(a, keep_lines, t)
    out = []
    for i, line in enumerate(t.split("\n")):
        for m in re.finditer(r"(?<![\w.])\d[\d,.]*", line):
            out.append((first_line + i, text.split("\n")[i].strip()[:100]))
            break
    return out


def readme_section(text):
    """(start, end) offsets of the README's `## Benchmarks` section."""
    m = re.search(r"^## Benchmarks\n", text, re.M)
    if not m:
        return None
    n = re.search(r"^## ", text[m.end():], re.M)
    return m.start(), (m.end() + n.start()) if n else len(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--benchmarks", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and exit 1 on any difference or on a number in "
                         "the prose")
    a = ap.parse_args()
    r = Results(a.results)
    problems, missing = [], []
    for path in (a.benchmarks, a.readme):
        if not os.path.exists(path):
            problems.append(f"{path}: missing")
            continue
        old = open(path).read()
        is_readme = os.path.abspath(path) == os.path.abspath(a.readme)
        if is_readme:
            sec = readme_section(old)
            if sec is None:
                problems.append(f"{path}: no `## Benchmarks` section")
                continue
            s, e = sec
            new = old[:s] + fill(old[s:e], r, missing) + old[e:]
            scope, first = new[s:e + len(new) - len(old)], old[:s].count("\n") + 1
        else:
            new = fill(old, r, missing)
            scope, first = new, 1
        for line, txt in prose_numbers(scope, first):
            problems.append(f"{os.path.relpath(path, ROOT)}:{line}: a number outside the "
                            f"generated blocks (generate it from a raw file, or remove it): {txt}")
        if new != old:
            if a.check:
                diff = difflib.unified_diff(old.splitlines(), new.splitlines(),
                                            f"{path} (committed)", f"{path} (from raw files)",
                                            lineterm="", n=1)
                problems.append(f"{os.path.relpath(path, ROOT)} differs from what its raw files "
                                f"generate (bench/update_benchmarks_md.py rewrites it):\n"
                                + "\n".join(list(diff)[:60]))
            else:
                with open(path, "w") as f:
                    f.write(new)
    if missing:
        problems.append("no raw files for: " + ", ".join(missing))
    for p in problems:
        print(("FAIL " if a.check else "") + p, file=sys.stderr)
    if problems and a.check:
        return 1
    if a.check:
        print("OK: BENCHMARKS.md and the README's benchmark section are what the raw files "
              "generate")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
