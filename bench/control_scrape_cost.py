#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cost of Prometheus scraping on forwarding: packets per second with /metrics scraped every
100 ms vs. not scraped (only at the start and end of each run), alternating runs.

  bench/control_scrape_cost.py --daemon PATH [--daemon-args "..."] [--seconds 10] [--runs 3]

The forwarding rate is read from the daemon's own counters (sum of skbnf_port_packets_total
{direction="tx"} over all cores and ports, delta over the run), so the two modes are measured
identically. Also prints the time one scrape takes (HTTP round trip, p50/p99/max).

The daemon must serve /metrics (skbnfd once its main starts server/'s ControlPlane; the fake
daemon meanwhile: its numbers say nothing about DPDK forwarding, only about CPU contention).
"""

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def scrape(port):
    t0 = time.perf_counter()
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    dt = time.perf_counter() - t0
    tx = 0.0
    for line in text.splitlines():
        if line.startswith("skbnf_port_packets_total{") and 'direction="tx"' in line:
            tx += float(line.rsplit(" ", 1)[1])
    return tx, dt


def run(port, seconds, interval):
    """Returns (packets per second, [scrape durations])."""
    tx0, _ = scrape(port)
    t0 = time.monotonic()
    times = []
    if interval > 0:
        nxt = t0 + interval
        while time.monotonic() < t0 + seconds:
            time.sleep(max(0.0, nxt - time.monotonic()))
            nxt += interval
            _, dt = scrape(port)
            times.append(dt)
    else:
        time.sleep(seconds)
    tx1, _ = scrape(port)
    return (tx1 - tx0) / (time.monotonic() - t0), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--daemon-args", default="")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.1)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="skbnf-scrape-")
    ready = os.path.join(d, "ready")
    extra = shlex.split(a.daemon_args)
    cut = extra.index("--") if "--" in extra else len(extra)  # EAL arguments after "--"
    proc = subprocess.Popen([a.daemon] + extra[:cut] +
                            ["--listen=127.0.0.1:0", "--metrics-addr=127.0.0.1:0",
                             "--ready-file=" + ready] + extra[cut:],
                            stderr=open(os.path.join(d, "err"), "w"))
    try:
        for _ in range(6000):
            if os.path.exists(ready) or proc.poll() is not None:
                break
            time.sleep(0.01)
        if not os.path.exists(ready):
            sys.exit("daemon did not start: " + open(os.path.join(d, "err")).read())
        port = json.load(open(ready))["metrics_port"]
        time.sleep(2)  # steady state
        base, loaded, times = [], [], []
        for i in range(a.runs):
            pps, _ = run(port, a.seconds, 0)
            base.append(pps)
            pps, t = run(port, a.seconds, a.interval)
            loaded.append(pps)
            times += t
            print("run %d: not scraped %.3f Mpps, scraped every %g s %.3f Mpps" %
                  (i + 1, base[-1] / 1e6, a.interval, loaded[-1] / 1e6), flush=True)
        b, l = statistics.median(base), statistics.median(loaded)
        times.sort()
        print("median: not scraped %.3f Mpps, scraped %.3f Mpps, loss %.2f%%" %
              (b / 1e6, l / 1e6, 100 * (b - l) / b if b else 0))
        print("scrape time: p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d scrapes" %
              (1e3 * times[len(times) // 2], 1e3 * times[int(0.99 * (len(times) - 1))],
               1e3 * times[-1], len(times)))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
