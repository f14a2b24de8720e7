#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Instructions per packet by function, side by side, from callgrind files kept by
`bench/run ... --callgrind only --callgrind-keep DIR` (issue 11's breakdown; issue 23 item 5's
before/after table in BENCHMARKS.md is made by the same functions).

  bench/callgrind_breakdown.py NAME=FILE:PACKETS [NAME=FILE:PACKETS ...]

PACKETS: the packets the run counted (bench/run prints them; <exp>_callgrind.csv has them).
Functions under 0.05 instructions/packet in every column are summed into `other`.

The files are read here (self cost per function, the `Ir` event), not through
callgrind_annotate: the sum over functions is the file's own `summary:` line, checked."""
import os
import re
import sys


def self_costs(path):
    """({(object, function): self instructions}, summary) of one callgrind output file.

    The format (valgrind's docs/cl-format.html): `ob=`/`fn=` name the current object and
    function, `(id) name` defines a compressed name and `(id)` reuses it; a cost line is
    positions then events; the cost line right after `calls=` is the call's inclusive cost,
    which belongs to the callee, not to the caller's self cost."""
    names = {"ob": {}, "fn": {}}
    ob = fn = None
    skip_next = False
    costs = {}
    summary = None
    ir, npos = 0, 1
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                fields = line.split()
                if len(fields) > npos + ir:
                    costs[(ob, fn)] = costs.get((ob, fn), 0) + int(fields[npos + ir])
                continue
            m = re.match(r"^(c?ob|c?fn|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, ident, name = m.groups()
                table = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}.get(kind)
                if table and name is not None:
                    names[table][ident] = name
                if kind == "ob":
                    ob = names["ob"].get(ident)
                elif kind == "fn":
                    fn = names["fn"].get(ident)
            elif line.startswith("calls="):
                skip_next = True
            elif line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("events:"):
                ir = line.split()[1:].index("Ir")
            elif line.startswith("summary:") or line.startswith("totals:"):
                summary = int(line.split()[1 + ir])
    return costs, summary


def label(ob, fn):
    """A short name: namespaces and arguments dropped; a function without a symbol (DPDK's
    stripped PMDs) as library@address."""
    name = (fn or "???").replace("(anonymous namespace)::", "")
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    name = re.sub(r"\(.*\)\s*(const)?\s*", "()", name)
    name = re.sub(r"skbnf::|dpdk::|pool::", "", name).strip()
    if name.startswith("0x"):
        lib = os.path.basename(ob or "?").split(".so")[0]
        name = f"{lib}@{name[-5:]}"
    return name


def per_function(path):
    """{label: self instructions} of one file; the labels' sum is the file's summary."""
    costs, summary = self_costs(path)
    funcs = {}
    for (ob, fn), v in costs.items():
        k = label(ob, fn)
        funcs[k] = funcs.get(k, 0) + v
    if summary is not None and sum(funcs.values()) != summary:
        raise ValueError(f"{path}: functions sum to {sum(funcs.values())}, summary {summary}")
    return funcs


def table(cols, threshold=0.05):
    """Markdown rows for [(column name, {label: instructions}, packets)]: functions by their
    largest per-packet cost, those under `threshold` in every column summed as `other`."""
    names = sorted({f for _, fs, _ in cols for f in fs},
                   key=lambda f: (-max(fs.get(f, 0) / p for _, fs, p in cols), f))
    out = ["| function | " + " | ".join(c[0] for c in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    other = [0.0] * len(cols)
    for f in names:
        v = [fs.get(f, 0) / p for _, fs, p in cols]
        if max(v) < threshold:
            other = [a + b for a, b in zip(other, v)]
            continue
        out.append(f"| `{f}` | " + " | ".join(f"{x:.1f}" if x else "–" for x in v) + " |")
    out.append("| other | " + " | ".join(f"{x:.1f}" for x in other) + " |")
    out.append("| **total** | " + " | ".join(f"**{sum(fs.values()) / p:.1f}**"
                                           for _, fs, p in cols) + " |")
    return out


def main():
    cols = []
    for arg in sys.argv[1:]:
        name, rest = arg.split("=", 1)
        path, pkts = rest.rsplit(":", 1)
        cols.append((name, per_function(path), int(pkts)))
    print("\n".join(table(cols)))


if __name__ == "__main__":
    sys.exit(main())
