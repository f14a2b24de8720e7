#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns pool_bench JSON (with repetitions) into the BENCHMARKS.md table: median ns/object."""
import json
import sys


def main(path):
    data = json.load(open(path))
    rows = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        family, _, burst = name.rpartition("/burst:")
        rows.setdefault(family, {})[burst] = b["ns_per_obj"] * 1e9
    ctx = data["context"]
    print(f"Host: {ctx.get('num_cpus')} CPUs @ {ctx.get('mhz_per_cpu')} MHz, "
          f"load avg {', '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))}; "
          f"{data['benchmarks'][0].get('repetitions', '?')} repetitions, medians.\n")
    print("| strategy | alloc+free of 1 (ns/object) | bursts of 32 (ns/object) |")
    print("|---|---:|---:|")
    for family, v in rows.items():
        name = family.replace("pool/", "")
        print(f"| `{name}` | {v.get('1', float('nan')):.2f} | {v.get('32', float('nan')):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
