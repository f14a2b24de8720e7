#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every strategy a running skbnfd can swap to, from the daemon itself, and a hot swap through
each of them: for the attachment tests' "swaps through every strategy while traffic flows".

Why from `skbnfctl --json strategy list` and not a list written here: the daemon says which
layers exist, their stacking order ("position") and each tunable's range, so a layer added
later is swapped through without editing the tests. The specs are the same set as the unit
tests' testing::AllSpecs() (tests/unit/test_pool.h): every subset of the layers (the empty one
is `slab`), each with and without every modifier, with small tunables (within the advertised
ranges) so that bounds are reached quickly under test traffic.

As a library:  specs = every_spec(skbnfctl, addr); results = swap_through(skbnfctl, addr, specs)
As a command:  strategy_specs.py SKBNFCTL ADDR [--swap]   (prints the specs; --swap swaps
                                                          through them, one JSON line each)
"""
import argparse
import itertools
import json
import subprocess
import sys

# Small tunables by (layer, key), as AllSpecs: (without modifiers, with).
SMALL = {
    ("lcache", "size"): (8, 16),
    ("headpool", "hot_list_len"): (16, 64),
    ("magazine", "size"): (4, 16),
    ("recycle", "limit"): (0, 24),
}


def ctl(skbnfctl, addr, *args, timeout=30):
    r = subprocess.run([skbnfctl, f"--addr={addr}", "--json", *args], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"skbnfctl {' '.join(args)}: exit {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()}")
    return json.loads(r.stdout)


def specs_from_list(listing):
    """Every spec from a `strategy list` answer (layers, modifiers, tunable ranges)."""
    layers = sorted(listing["layers"], key=lambda l: l.get("position", 0))
    modifiers = [m["name"] for m in listing.get("modifiers", [])]
    out = []
    for n in range(len(layers) + 1):
        for stack in itertools.combinations(layers, n):
            for mods in itertools.chain.from_iterable(
                    itertools.combinations(modifiers, k) for k in range(len(modifiers) + 1)):
                big = 1 if mods else 0
                parts = []
                for layer in stack:
                    kv = []
                    for t in layer.get("tunables", []):
                        small = SMALL.get((layer["name"], t["key"]))
                        if small is None:
                            continue
                        v = min(max(small[big], int(t.get("min", 0))), int(t.get("max", 1 << 30)))
                        kv.append(f"{t['key']}={v}")
                    parts.append(layer["name"] + (":" + ",".join(kv) if kv else ""))
                out.append(",".join(["+".join(parts) if parts else "slab", *mods]))
    return out


def every_spec(skbnfctl, addr):
    listing = ctl(skbnfctl, addr, "strategy", "list")
    if not listing.get("swappable", False):
        raise RuntimeError("the daemon says its pool cannot be swapped (--pool-ops is not skbnf)")
    return specs_from_list(listing)


def swap_through(skbnfctl, addr, specs, still_flowing=lambda: True):
    """Swaps to each spec in turn. Returns [(spec, ok, detail)]; stops early (and says so in the
    last entry) when still_flowing() turns false, so a caller can require every swap to have
    happened under traffic."""
    results = []
    for spec in specs:
        if not still_flowing():
            results.append((spec, False, "traffic had stopped before this swap"))
            break
        try:
            r = ctl(skbnfctl, addr, "strategy", "set", spec)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            results.append((spec, False, str(e)))
            continue
        rep = r.get("report", {})
        ok = bool(r.get("applied")) and bool(rep.get("ok")) and not rep.get("rolled_back")
        results.append((spec, ok, rep.get("error", "") or r.get("canonical_spec", "")))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("skbnfctl")
    ap.add_argument("addr")
    ap.add_argument("--swap", action="store_true")
    a = ap.parse_args()
    specs = every_spec(a.skbnfctl, a.addr)
    if not a.swap:
        print("\n".join(specs))
        return 0
    bad = 0
    for spec, ok, detail in swap_through(a.skbnfctl, a.addr, specs):
        print(json.dumps({"spec": spec, "ok": ok, "detail": detail}))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
