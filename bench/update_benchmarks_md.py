#!/usr/bin/python3
"""Refreshes the generated parts of BENCHMARKS.md from bench/results/E.md.

  bench/update_benchmarks_md.py [--results DIR] [BENCHMARKS.md]

Between `<!-- bench:E -->` and `<!-- /bench:E -->` it puts bench/results/E.md without its title
line (the table, the machine, the load, the command). Text outside the markers (the reading of
the results) is left alone: after a rerun, reread it against the new tables.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default=os.path.join(os.path.dirname(HERE), "BENCHMARKS.md"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    text = open(a.path).read()
    missing = []

    def fill(m):
        name = m.group(1)
        p = os.path.join(a.results, f"{name}.md")
        if not os.path.exists(p):
            missing.append(name)
            return m.group(0)
        body = open(p).read().split("\n", 1)[1].strip("\n")
        # Links to files next to the table: relative to BENCHMARKS.md.
        sub = os.path.dirname(name)  # huge/headline: bench/results/huge/headline.md
        where = f"bench/results/{sub}/" if sub else "bench/results/"
        body = re.sub(r"`(\w+(?:_\w+)?\.(?:csv|png))`", lambda f: f"`{where}{f.group(1)}`", body)
        return f"<!-- bench:{name} -->\n{body}\n<!-- /bench:{name} -->"

    text = re.sub(r"<!-- bench:([\w/]+) -->.*?<!-- /bench:\1 -->", fill, text, flags=re.S)
    open(a.path, "w").write(text)
    if missing:
        print("no results yet for: " + ", ".join(missing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
