#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What skbnfd's per-worker busy-cycle counters cost the packet path, in instructions per packet.

  bench/busy_cycles_cost.py BEFORE_SKBNFD AFTER_SKBNFD [--seconds S] [--strategies a,b,...]

Runs each binary under callgrind exactly as `bench/run headline --callgrind only` runs skbnfd
(io, two net_null ports, one worker, --no-huge) and prints the forwarding thread's instructions
per forwarded packet for both, per strategy. Instruction counts are deterministic (the same
binary gives the same figure to +-0.1), so one run each is enough. BEFORE is a build without
the counters (e.g. the merge base), AFTER one with them.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

EAL = ["-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--no-shconf"]


def per_packet(skbnfd, strategy, seconds, tag):
    flags = (["--pool-ops=ring_mp_mc", "--mbuf-cache=256"] if strategy == "ring_mp_mc"
             else [f"--strategy={strategy}"])
    cmd = [skbnfd, "--listen=127.0.0.1:0", "--metrics-addr=off", "--mode=io", "--mbufs=32768",
           *flags, f"--duration={seconds}", "--stats=0", "--", *EAL,
           f"--file-prefix=cyc-cost-{os.getpid()}-{tag}", "--vdev=net_null0", "--vdev=net_null1"]
    res = benchlib.callgrind_run(cmd)
    counts = benchlib.skbnfd_rx_tx(res["output"])
    if counts is None or counts[1] == 0:
        sys.exit(f"skbnfd printed no summary or forwarded nothing:\n{res['output'][-1500:]}")
    return res["ir"] / counts[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--strategies", default="magazine,headpool,ring_mp_mc")
    a = ap.parse_args()
    print("| strategy | before | after | change |")
    print("|---|---:|---:|---:|")
    for s in a.strategies.split(","):
        b = per_packet(a.before, s, a.seconds, "b")
        c = per_packet(a.after, s, a.seconds, "a")
        print(f"| `{s}` | {b:.1f} | {c:.1f} | {c - b:+.1f} |", flush=True)


if __name__ == "__main__":
    main()
