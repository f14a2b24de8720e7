#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Instructions per packet by function, side by side, from callgrind files kept by
`bench/run ... --callgrind only --callgrind-keep DIR` (issue 11's breakdown).

  bench/callgrind_breakdown.py NAME=FILE:PACKETS [NAME=FILE:PACKETS ...]

PACKETS: the packets the run counted (bench/run prints them; <exp>_callgrind.csv has them).
Functions under 0.05 instructions/packet in every column are summed into `other`."""
import re
import subprocess
import sys


def per_function(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], check=True,
                         capture_output=True, text=True).stdout
    funcs = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2)
        name = re.sub(r"^\S*:(?=\S)", "", name, count=1) if not name.startswith("???") else name[4:]
        name = name.replace("(anonymous namespace)::", "")
        name = re.sub(r"\(.*\)\s*(const)?\s*", "() ", name)
        lib = re.search(r"\[(?:.*/)?([^/\]]+)\]$", name)
        name = re.sub(r"\s*\[.*\]$", "", name).strip()
        name = re.sub(r"skbnf::|dpdk::|pool::", "", name)
        if lib and name.startswith("0x"):
            name = f"{lib.group(1).split('.so')[0]}@{name[-5:]}"
        funcs[name] = funcs.get(name, 0) + int(m.group(1).replace(",", ""))
    return funcs


def main():
    cols = []
    for arg in sys.argv[1:]:
        name, rest = arg.split("=", 1)
        path, pkts = rest.rsplit(":", 1)
        cols.append((name, per_function(path), int(pkts)))
    names = sorted({f for _, fs, _ in cols for f in fs},
                   key=lambda f: -max(fs.get(f, 0) / p for _, fs, p in cols))
    print("| function | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    other = [0.0] * len(cols)
    for f in names:
        v = [fs.get(f, 0) / p for _, fs, p in cols]
        if max(v) < 0.05:
            other = [a + b for a, b in zip(other, v)]
            continue
        print(f"| `{f}` | " + " | ".join(f"{x:.1f}" if x else "–" for x in v) + " |")
    print("| other | " + " | ".join(f"{x:.1f}" for x in other) + " |")
    print("| **total** | " + " | ".join(f"**{sum(fs.values()) / p:.1f}**" for _, fs, p in cols)
          + " |")


if __name__ == "__main__":
    sys.exit(main())
