#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a live strategy tune costs in forwarded packets (BENCHMARKS.md, "Live tuning").

  bench/tune_cost.py [--build DIR] [--tunes N] [TUNE ARGS ...]

Starts skbnfd's demo (l3 over 10,000 routes, net_pcap -> net_null: the worker is CPU-bound, so
a slower strategy forwards fewer packets), runs N dry-run tunes (`skbnfctl strategy tune`, the
default candidates and settings unless TUNE ARGS say otherwise) and, for each, prints what the
tune report counts: the packets forwarded from its first swap to its end, against what the
baseline rate (the incumbent, measured just before) would have forwarded in the same time, the
RX refills that found no buffer during its visits, and how many candidates were disqualified.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tunes", type=int, default=3)
    ap.add_argument("tune_args", nargs="*")
    a = ap.parse_args()
    skbnfd = os.path.join(a.build, "server", "skbnfd")
    ctl = os.path.join(a.build, "server", "skbnfctl")
    d = tempfile.mkdtemp(prefix="skbnf-tune-cost-")
    ready = os.path.join(d, "ready.json")
    log = open(os.path.join(d, "skbnfd.log"), "w")
    p = subprocess.Popen([skbnfd, "--stats=0", "--listen=127.0.0.1:0", "--metrics-addr=off",
                          "--ready-file=" + ready], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(3000):
            if os.path.exists(ready) or p.poll() is not None:
                break
            time.sleep(0.01)
        with open(ready) as f:
            addr = json.load(f)["grpc"]
        time.sleep(2)  # warm-up
        print("| tune | swaps | duration s | packets forwarded | at the baseline rate | cost | "
              "rx_nombuf | disqualified |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for i in range(a.tunes):
            r = subprocess.run([ctl, "--addr=" + addr, "--json", "strategy", "tune",
                                *a.tune_args], capture_output=True, text=True, timeout=3600)
            lines = r.stdout.splitlines()
            if not lines or "report" not in json.loads(lines[-1]):
                sys.exit("tune failed: " + r.stderr)
            rep = json.loads(lines[-1])["report"]  # also for FAILED / CANCELLED tunes
            got, ref = int(rep["packets"]), int(rep["baseline_rate_packets"])
            print(f"| {i + 1} ({rep['outcome'].replace('TUNE_OUTCOME_', '').lower()}, winner "
                  f"{rep['winner']}) | {rep['swaps']} | {int(rep['duration_ms']) / 1e3:.1f} | "
                  f"{got:,} | {ref:,} | {100 * (1 - got / ref):+.1f} % | "
                  f"{sum(int(c['rx_nombuf']) for c in rep['candidates'])} | "
                  f"{sum(1 for c in rep['candidates'] if c['disqualified'])} |", flush=True)
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
        log.close()


if __name__ == "__main__":
    main()
