#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Before/after table of callgrind instructions per packet for issue 21 (the layer refactor).

  python3 bench/results/issue21/compare.py   (from the repository root)

Reads before/headline_callgrind.csv (+ before/headline_callgrind_plugin_rerun.csv for the plugin
row, which the first baseline run could not load from /tmp) and after/headline_callgrind.csv;
prints a Markdown table and exits 1 if any row is more than 1 % above its baseline.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(*names):
    rows = {}
    for name in names:
        path = os.path.join(HERE, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["instructions_per_packet"] != "nan":
                    rows[r["config"]] = float(r["instructions_per_packet"])
    return rows


def main():
    before = load("before/headline_callgrind.csv", "before/headline_callgrind_plugin_rerun.csv")
    after = load("after/headline_callgrind.csv")
    print("| row | before (instr/pkt) | after (instr/pkt) | change |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for cfg in before:
        if cfg not in after:
            print(f"| {cfg} | {before[cfg]:.1f} | missing | |")
            worst = float("inf")
            continue
        ch = after[cfg] / before[cfg] - 1
        worst = max(worst, ch)
        print(f"| {cfg} | {before[cfg]:.1f} | {after[cfg]:.1f} | {ch * 100:+.2f} % |")
    print(f"\nworst change {worst * 100:+.2f} % (limit +1 %)")
    # The slab row moves between runs of one binary (SlabStore::SlabOf's cost follows the
    # hugepage layout of the run): slab_rerun/ has both builds run side by side.
    b = load("slab_rerun/before_headline_callgrind.csv")
    a = load("slab_rerun/after_headline_callgrind.csv")
    print("\nslab, both builds rerun side by side (slab_rerun/):")
    print("| row | before (instr/pkt) | after (instr/pkt) | change |")
    print("|---|---:|---:|---:|")
    for cfg in b:
        ch = a[cfg] / b[cfg] - 1
        print(f"| {cfg} | {b[cfg]:.1f} | {a[cfg]:.1f} | {ch * 100:+.2f} % |")
    return 0 if worst <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
