#!/usr/bin/env python3
"""Side-by-side forwarding benchmark on two net_null ports, one forwarding lcore (issue 3).

Configurations, run interleaved (round r runs every configuration once, in a shuffled order):
  testpmd native        dpdk-testpmd io, DPDK's ring_mp_mc mempool with its default lcore
                        cache (testpmd --mbcache default: 250)
  testpmd+plugin S      dpdk-testpmd io, -d libskbnf_mempool.so --mbuf-pool-ops-name=skbnf,
                        SKBNF_STRATEGY=S, --mbcache=0 (DPDK's cache off: our layers only)
  skbnfd S              skbnfd --mode=io --strategy=S (skbnf mempool, DPDK cache 0)
  skbnfd ring_mp_mc     skbnfd --mode=io --pool-ops=ring_mp_mc --mbuf-cache=250

Each run lasts --seconds; the per-second packet rates after the first --warmup seconds are
taken, and the run's figure is their median. A configuration's figure is the median over the
rounds. Mpps = packets received by the forwarding lcore per second over both ports (= packets
forwarded: net_null never refuses a TX). Ratio = configuration / testpmd native.

PMD behaviour this reflects: net_null RX allocates a whole burst with one
rte_pktmbuf_alloc_bulk (one mempool dequeue of 32), and net_null TX frees every mbuf with its
own rte_pktmbuf_free, i.e. one mempool enqueue of ONE object per packet. Real NIC PMDs
(iavf, mlx5, ixgbe) free in bursts (rte_mempool_put_bulk per TX-completion batch), where the
cost of one mempool-ops call is spread over the burst; net_null is the worst case for a mempool
driver that has no inline cache in front of it.

Writes a Markdown table (stdout, and --out) with the exact command line.
"""
import argparse
import os
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRATEGIES = ["slab", "magazine", "headpool", "recycle", "lcache", "recycle+headpool",
              "recycle+magazine", "headpool+magazine", "lcache+magazine"]


def eal(prefix, mem):
    return ["-l", "0,1", "--no-huge", "-m", str(mem), "--no-pci", "--no-shconf",
            f"--file-prefix={prefix}", "--vdev=net_null0", "--vdev=net_null1"]


def run_testpmd(args, seconds, warmup, strategy=None, plugin=None, mbufs=32768):
    env = dict(os.environ)
    cmd = ["dpdk-testpmd"] + eal(f"skbnf-bench-{os.getpid()}", 1024)
    tp = ["--forward-mode=io", "--auto-start", "--no-mlockall", "--stats-period=1",
          f"--total-num-mbufs={mbufs}"]
    if plugin:
        env["SKBNF_STRATEGY"] = strategy
        cmd[1:1] = ["-d", plugin, "--mbuf-pool-ops-name=skbnf"]
        tp.append("--mbcache=0")
    cmd += ["--"] + tp
    # With --stats-period testpmd prints rates every second until SIGINT (then it stops,
    # prints the totals and re-raises the signal). Count periods as they come: start-up time
    # varies with the machine's load.
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, text=True)
    lines, pps = [], []
    deadline = time.time() + 60 + seconds
    for line in p.stdout:
        lines.append(line)
        m = re.search(r"Rx-pps:\s+(\d+)", line)
        if m:
            pps.append(int(m.group(1)))
            if len(pps) >= 2 * (seconds + warmup):
                break
        if time.time() > deadline:
            break
    p.send_signal(signal.SIGINT)
    rest, _ = p.communicate(timeout=60)
    out = "".join(lines) + rest
    if p.returncode not in (0, -signal.SIGINT):
        raise RuntimeError(f"testpmd failed ({p.returncode}): {' '.join(cmd)}\n{out[-2000:]}")
    # With --stats-period each period prints one block per port: sum the two ports' Rx-pps.
    periods = [pps[i] + pps[i + 1] for i in range(0, len(pps) - 1, 2)]
    return periods[warmup:]


def control_flags(binary):
    # With the control plane built in: kernel-chosen loopback port, no metrics endpoint.
    h = subprocess.run([binary, "--helpfull"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True).stdout
    return ["--listen=127.0.0.1:0", "--metrics-addr=off"] if "--listen" in h else []


def run_skbnfd(binary, seconds, warmup, strategy=None, ring=False):
    cmd = [binary] + control_flags(binary) + [
        "--mode=io", f"--duration={seconds + warmup + 0.5}", "--stats=1", "--mbufs=32768"]
    if ring:
        cmd += ["--pool-ops=ring_mp_mc", "--mbuf-cache=250"]
    else:
        cmd += [f"--strategy={strategy}"]
    cmd += ["--"] + eal(f"skbnf-bench-{os.getpid()}", 1024)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"skbnfd failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout[-2000:]}")
    rates = []
    for m in re.finditer(r"^lcore \d+: rx ([\d.]+)([Mk]?) pps", out.stdout, re.M):
        v = float(m.group(1)) * {"M": 1e6, "k": 1e3, "": 1}[m.group(2)]
        rates.append(v)
    return rates[warmup:]


def remove_runtime_dir():
    # EAL leaves an empty runtime directory per --file-prefix.
    try:
        os.rmdir(f"/var/run/dpdk/skbnf-bench-{os.getpid()}")
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help="';'-separated is also accepted when a spec contains ','")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    sep = ";" if ";" in a.strategies else ","
    strategies = [s for s in a.strategies.split(sep) if s]
    build = os.path.abspath(a.build)
    plugin = os.path.join(build, "dataplane/dpdk/libskbnf_mempool.so")
    skbnfd = os.path.join(build, "server/skbnfd")
    for f in (plugin, skbnfd):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: build first (cmake --build {a.build})")
    configs = [("testpmd native (ring_mp_mc, cache 250)",
                lambda: run_testpmd(None, a.seconds, a.warmup))]
    for s in strategies:
        configs.append((f"testpmd + plugin `{s}` (mbcache 0)",
                        lambda s=s: run_testpmd(None, a.seconds, a.warmup, s, plugin)))
    configs.append(("skbnfd ring_mp_mc (cache 250)",
                    lambda: run_skbnfd(skbnfd, a.seconds, a.warmup, ring=True)))
    for s in strategies:
        configs.append((f"skbnfd `{s}`", lambda s=s: run_skbnfd(skbnfd, a.seconds, a.warmup, s)))

    results = {name: [] for name, _ in configs}
    rng = random.Random(1)
    for r in range(a.rounds):
        order = list(configs)
        rng.shuffle(order)
        for name, fn in order:
            samples = fn()
            med = statistics.median(samples) if samples else 0.0
            results[name].append(med)
            remove_runtime_dir()
            print(f"round {r + 1}: {name}: {med / 1e6:.2f} Mpps (per-second samples: "
                  f"{' '.join(f'{x / 1e6:.1f}' for x in samples)})", file=sys.stderr, flush=True)

    base = statistics.median(results[configs[0][0]])
    load = open("/proc/loadavg").read().split()[:3]
    lines = [
        "| configuration | Mpps (median) | ratio to testpmd native | per-round medians |",
        "|---|---:|---:|---|",
    ]
    for name, _ in configs:
        med = statistics.median(results[name])
        rounds = " ".join(f"{x / 1e6:.1f}" for x in results[name])
        lines.append(f"| {name} | {med / 1e6:.2f} | {med / base:.2f}x | {rounds} |")
    cmd = "python3 bench/dpdk_bench.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    text = "\n".join(lines) + (
        f"\n\nCommand: `{cmd}` ({a.rounds} interleaved rounds, {a.seconds} s per run after "
        f"{a.warmup} s warm-up, median of per-second rates, then median over rounds). "
        f"Load average at the end: {' '.join(load)}.\n")
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
