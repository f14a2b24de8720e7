#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What each side of bench/interleave.py's `native` comparison costs per packet, counted by
callgrind in the very configuration whose rate the interleaved runs measure (issue 33 item 8:
why skbnfd `headpool` forwards slower than skbnfd on DPDK's cached pool).

bench/interleave.py native STRATEGY times one skbnfd (l3, 10,000 routes, 4,096 destinations,
net_pcap -> net_null, one worker on lcore 1) with --native-twin: every polled RX queue has a twin
on DPDK's ring_mp_mc pool with its lcore cache, and a side file says which of the two the worker
polls. This runs that skbnfd (interleave.config_text, the same text) under callgrind twice, the
side file saying `skbnf` and then `native`, for --seconds of skbnfd's clock each (--duration;
under valgrind that is not wall time), and reports per forwarded packet of the worker's poll
loop (--toggle-collect=*WorkerMain*: forward.cc's RunWorker is entered by a tail jump, which
callgrind's toggle does not see): instructions, and with --cache-sim (valgrind --cache-sim=yes)
the simulated D1 read and write misses and last-level misses, with --branch-sim (valgrind
--branch-sim=yes) conditional branches and simulated mispredictions.

What it is not: callgrind simulates an L1 and a last level with no hardware prefetcher, no TLB
and no timing, on --no-huge (4 KiB pages) and under valgrind's serialised threads; it says where
the two sides differ in instructions and in the data they touch, not how long a miss costs.

  bench/twin_callgrind.py headpool --cache-sim --branch-sim --out bench/results/issue33/twin-l3-headpool
Outputs in --out: twin_callgrind.csv (one row a side), COMMAND, and the skbnfd logs.
"""
import argparse
import csv
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import interleave  # noqa: E402

FIELDS = ["side", "strategy", "mode", "seconds", "packets", "instructions",
          "instructions_per_packet", "d1_read_misses_per_packet", "d1_write_misses_per_packet",
          "ll_misses_per_packet", "cond_branches_per_packet", "cond_mispredicts_per_packet",
          "indirect_mispredicts_per_packet", "simulated_d1", "simulated_ll", "command"]


def count_side(bins, args, side, workdir):
    """skbnfd under callgrind polling `side`; the row of twin_callgrind.csv."""
    prefix = f"skbnf-tcg-{os.getpid()}-{side}"
    conf = os.path.join(workdir, f"skbnfd-{side}.conf")
    with open(conf, "w") as f:
        f.write(interleave.config_text(workdir, args.mode, args.strategy,
                                       interleave.EAL_MEM_NO_HUGE, prefix, twin=True))
    side_file = os.path.join(workdir, f"side-{side}")
    with open(side_file, "w") as f:
        f.write(side + "\n")
    cmd = [bins.skbnfd(), f"--config={conf}", f"--listen=unix:{workdir}/control-{side}.sock",
           "--metrics-addr=off", "--stats=0", f"--duration={args.seconds}",
           f"--native-twin={side_file}", f"--mbuf-cache={args.native_cache}",
           # Under valgrind most iterations last longer than the 250 us default: each would take
           # the slow-iteration path (its record, a log line a second), a cost per iteration
           # that only valgrind's slowness causes and that varied the counts by a few tenths
           # of a percent between runs. The maximum threshold keeps them out.
           "--slow-iteration-us=10000000"]
    # The worker's poll loop only (forward.cc's WorkerMain): not the thread's start-up, which
    # would weigh per packet unevenly between two runs that forward different packet counts.
    res = benchlib.callgrind_run(cmd, workers=1, extra=["--toggle-collect=*WorkerMain*"])
    with open(os.path.join(args.out, f"skbnfd-{side}.log"), "w") as f:
        f.write(res["output"])
    if f"the workers poll the {side} side" not in res["output"] and side != "skbnf":
        raise SystemExit(f"FAIL: skbnfd did not say it polls the {side} side:\n"
                         + res["output"][-1500:])
    counts = benchlib.skbnfd_rx_tx(res["output"])
    if counts is None or counts[1] == 0:
        raise SystemExit("FAIL: skbnfd forwarded nothing or printed no summary:\n"
                         + res["output"][-1500:])
    pkts = counts[1]
    ev = benchlib.CALLGRIND_LAST

    def per(*names):
        return round(sum(ev.get(n, 0) for n in names) / pkts, 3) if ev.get(names[0]) is not None \
            else ""
    return {"side": side, "strategy": args.strategy if side == "skbnf" else
            f"ring_mp_mc cache {args.native_cache}", "mode": args.mode, "seconds": args.seconds,
            "packets": pkts, "instructions": res["ir"],
            "instructions_per_packet": round(res["ir"] / pkts, 1),
            "d1_read_misses_per_packet": per("D1mr"), "d1_write_misses_per_packet": per("D1mw"),
            "ll_misses_per_packet": per("DLmr", "DLmw"),
            "cond_branches_per_packet": per("Bc"), "cond_mispredicts_per_packet": per("Bcm"),
            "indirect_mispredicts_per_packet": per("Bim"),
            "simulated_d1": benchlib.CALLGRIND_DESC.get("D1", ""),
            "simulated_ll": benchlib.CALLGRIND_DESC.get("LL", ""),
            "command": shlex.join(sys.argv)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("strategy", help="the skbnf side's strategy, e.g. headpool")
    ap.add_argument("--mode", default="l3", choices=["l3", "io"])
    ap.add_argument("--seconds", type=float, default=20,
                    help="forwarding time of each side (skbnfd --duration, under valgrind)")
    ap.add_argument("--native-cache", type=int, default=256)
    ap.add_argument("--cache-sim", action="store_true", help="valgrind --cache-sim=yes")
    ap.add_argument("--branch-sim", action="store_true",
                    help="valgrind --branch-sim=yes: conditional branches and simulated "
                         "mispredictions (conditional and indirect) per packet")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    benchlib.CALLGRIND_EXTRA[:] = (["--cache-sim=yes"] if args.cache_sim else []) + \
        (["--branch-sim=yes"] if args.branch_sim else [])
    bins = benchlib.Binaries(args.build)
    workdir = tempfile.mkdtemp(prefix="skbnf-tcg-", dir=os.path.expanduser("~"))
    try:
        rows = [count_side(bins, args, side, workdir) for side in ("skbnf", "native")]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    with open(os.path.join(args.out, "twin_callgrind.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "COMMAND"), "w") as f:
        f.write(shlex.join(["bench/twin_callgrind.py"] + sys.argv[1:]) + "\n")
    for r in rows:
        print(f"{r['side']:6} {r['strategy']:24} {r['instructions_per_packet']:7} instr/pkt, "
              f"D1 misses {r['d1_read_misses_per_packet']} read + "
              f"{r['d1_write_misses_per_packet']} write, LL {r['ll_misses_per_packet']}, "
              f"branches {r['cond_branches_per_packet']} mispredicted "
              f"{r['cond_mispredicts_per_packet']} + indirect "
              f"{r['indirect_mispredicts_per_packet']} per packet ({r['packets']} packets)")


if __name__ == "__main__":
    main()
