#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Packet latency and the poll loop's iterations in a running skbnfd (issue 32 item 4), read
through every reader: gRPC Stats (skbnfctl --json), /metrics (checked by Debian's promtool),
DPDK telemetry's /skbnf/latency (Debian's dpdk-telemetry.py), skbnfd's log.

Shapes: the RX stamp is an mbuf dynamic field (DPDK 22.11 lib/mbuf/rte_mbuf_dyn.h,
rte_mbuf_dynfield_register); the exposition follows Prometheus' histogram conventions
(cumulative `_bucket{le}` ending with le="+Inf" equal to `_count`, and `_sum`:
prometheus.io/docs/concepts/metric_types/#histogram, as prometheus-cpp 1.0.1 serialises
ClientMetric::Histogram); dpdk-telemetry.py (usertools/dpdk-telemetry.py) prints each reply as
one JSON line {"<cmd>": <data>}. The loop view follows OVS's pmd-perf-show
(lib/dpif-netdev-perf.h: histograms of cycles and packets per iteration, suspicious iterations
logged by the pmd thread itself).

Run 1, the production loop: io forwarding between two net_null ports (every RX burst full).
  - defaults: 1 in 256 RX bursts, slow iterations over 250 us.
  - N=1 between two parks of the worker: the latency samples grew by exactly the packets sent
    (every transmitted packet is a sample; run to completion: nothing is between RX and TX at a
    park); percentiles ordered p50 <= p99 <= p99.9 <= max, all > 0.
  - N=0: nothing recorded while packets flow. N=4: a quarter of the packets, within 5 %.
  - a bad N (skbnfctl latency set --sample-every=2000000): INVALID_ARGUMENT naming
    sample_every, exit 1, the settings unchanged.
  - /metrics: promtool check metrics accepts it; skbnf_packet_latency_seconds per (core, port)
    has cumulative buckets, +Inf == _count == the Stats samples (parked), le = 2^e / tsc_hz.
  - /skbnf/latency: the same samples per port and the settings.
  - iterations: by_packets sums to the iteration count; a net_null io worker's busy iterations
    receive two full bursts (33-64 packets).
Run 2, a worker loop with the test hook (--test-stall-lcore=1 --test-stall-ms=30: late by 30
ms to its quiescent point after each new strategy epoch), idle net_ring ports, the threshold at
10 ms (--slow-iteration-us):
  - a swap: the slow log has an iteration >= 30 ms with causes swap and test_hook, and skbnfd's
    log its line; with the threshold at 10 s (SetLatency) the next swap's stall is not slow.
  - an audit (AuditPool parks the worker) with the threshold at 5 us: its audit_park line.
Run 3, a depot wait: `magazine:size=8` (each full RX burst of 32 exchanges magazines with the
depot) between two net_null ports, the test hook --test-depot-hold-gate/-ms holding the depot
lock 30 ms when the gate file appears (as another core's exchange would hold it), the
threshold at 10 ms:
  - the slow log has an iteration >= 30 ms with cause depot_wait, skbnfd's log its line;
  - the core's Stats depot_waits and depot_wait_ticks moved (>= 30 ms of ticks at tsc_hz), and
    /metrics' skbnf_pool_depot_lock_waits_total{core="1"} says the same count.
Usage: latency_skbnfd_test.py SKBNFD SKBNFCTL
"""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_env import Primary, fail, wait_for  # noqa: E402

SKBNFD, SKBNFCTL = sys.argv[1], sys.argv[2]
CLIENT = "/usr/bin/dpdk-telemetry.py"


class Skbnfd(Primary):
    """skbnfd in io mode between `vdevs` on --no-huge (capture_env.Primary), with what the checks
    ask it: skbnfctl, GetStats as JSON, dpdk-telemetry.py, /metrics."""

    def __init__(self, tag, vdevs, flags=()):
        super().__init__(SKBNFD, f"lat{tag}", hugepages=False,
                         eal_extra=["--no-huge", "-m", "512", "--no-shconf"],
                         vdevs=[f"--vdev={v}" for v in vdevs], flags=flags)

    def ctl(self, *args, ok=True):
        out = subprocess.run([SKBNFCTL, f"--addr={self.addr}", *args], capture_output=True,
                             text=True, timeout=30)
        if ok and out.returncode != 0:
            fail(f"skbnfctl {' '.join(args)}: rc {out.returncode}: {out.stdout} {out.stderr}",
                 self.log)
        return out

    def stats(self):
        return json.loads(self.ctl("--json", "stats").stdout)

    def telemetry(self, cmd):
        out = subprocess.run([sys.executable, CLIENT, "-f", self.prefix], input=cmd + "\n",
                             capture_output=True, text=True, timeout=30)
        for line in out.stdout.splitlines():
            if line.strip().startswith("{"):
                r = json.loads(line)
                if cmd in r:
                    return r[cmd]
        fail(f"dpdk-telemetry.py gave no reply to {cmd}: {out.stdout!r} {out.stderr!r}")

    def scrape(self):
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode()

    def __exit__(self, *exc):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            log = f.read()
        rc = self.stop()
        super().__exit__(*exc)
        if exc[0] is None and rc != 0:
            print(log[-4000:])
            fail(f"skbnfd exited {rc} after SIGTERM")
        return False


def core1(stats):
    (c,) = [c for c in stats["cores"] if c["core"] == 1]
    return c


def samples(c):
    return sum(int(p["total"]["samples"]) for p in c.get("latency", []))


def sent(c):
    return sum(int(p["tx_packets"]) for p in c["ports"])


def parked_window(d, every, grow=200000):
    """Parks worker 1, reads (samples, sent), sets sample_every, lets it forward `grow` more
    packets, parks it again and reads again; returns the deltas."""
    d.ctl("worker", "pause", "1")
    c0 = core1(d.stats())
    d.ctl("latency", "set", f"--sample-every={every}")
    d.ctl("worker", "resume", "1")
    wait_for(f"{grow} packets", lambda: sent(core1(d.stats())) > sent(c0) + grow)
    d.ctl("worker", "pause", "1")
    c1 = core1(d.stats())
    return samples(c1) - samples(c0), sent(c1) - sent(c0), c1


def check_percentiles(c):
    for p in c["latency"]:
        for which in ("total", "window"):
            q = p.get(which)
            if not q or int(q["samples"]) == 0:
                continue
            v = [int(q[k]) for k in ("p50_ns", "p99_ns", "p999_ns", "max_ns")]
            if not (0 < v[0] <= v[1] <= v[2] <= v[3]):
                fail(f"core 1 port {p['port']} {which} percentiles not ordered: {q}")
        # PortLatency.bins: the total's histogram; it adds up to total.samples and each total
        # percentile is the high_ns of the bin holding its rank (capped at max_ns)
        t, bins = p["total"], [(int(b["high_ns"]), int(b["samples"])) for b in p.get("bins", [])]
        n = sum(k for _, k in bins)
        if n != int(t["samples"]):
            fail(f"core 1 port {p['port']}: bins add up to {n}, total.samples {t['samples']}")
        for key, q in (("p50_ns", 0.5), ("p99_ns", 0.99), ("p999_ns", 0.999)):
            rank, seen = min(max(int(q * n + 0.999999), 1), n), 0
            at = next(hi for hi, k in bins if (seen := seen + k) >= rank)
            if min(at, int(t["max_ns"])) != int(t[key]):
                fail(f"core 1 port {p['port']}: {key} {t[key]}, from the bins {at}")
    print(f"ok: percentiles ordered and they follow from the bins, e.g. port "
          f"{c['latency'][0]['port']} {c['latency'][0]['total']}")


def check_metrics(d, parked):
    text = d.scrape()
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        fail(f"promtool check metrics: {p.stdout}{p.stderr}")
    hz = float(re.search(r"^skbnf_worker_tsc_hz (\S+)$", text, re.M).group(1))
    want = {str(p["port"]): int(p["total"]["samples"]) for p in parked["latency"]}
    buckets, counts = {}, {}
    for m in re.finditer(r'^skbnf_packet_latency_seconds_(bucket|count)\{(.*)\} (\S+)$', text,
                         re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = (labels["core"], labels["port"])
        if m.group(1) == "bucket":
            buckets.setdefault(key, []).append((labels["le"], float(m.group(3))))
        else:
            counts[key] = float(m.group(3))
    for port, n in want.items():
        b = buckets.get(("1", port))
        if not b or b[-1][0] != "+Inf" or b[-1][1] != n or counts.get(("1", port)) != n:
            fail(f"skbnf_packet_latency_seconds core 1 port {port}: buckets {b}, count "
                 f"{counts.get(('1', port))}, want {n} (Stats, parked)")
        cum = [v for _, v in b]
        if cum != sorted(cum):
            fail(f"buckets not cumulative: {b}")
        les = [float(le) for le, _ in b[:-1]]
        expect = [2.0 ** e / hz for e in range(7, 32)]
        if len(les) != len(expect) or any(abs(a - x) > 1e-12 + 1e-9 * x
                                          for a, x in zip(les, expect)):
            fail(f"le bounds {les[:3]}... are not 2^7..2^31 TSC cycles in seconds at {hz} Hz")
    if not re.search(r"^skbnf_worker_iteration_seconds_count\{core=\"1\"\} [1-9]", text, re.M):
        fail("no skbnf_worker_iteration_seconds for core 1")
    print(f"ok: promtool accepts /metrics; skbnf_packet_latency_seconds core 1 {want} "
          f"== Stats, cumulative, le = 2^7..2^31 cycles / {hz:.0f} Hz")


def run_forwarding():
    with Skbnfd("f", ["net_null0", "net_null1"]) as d:
        s = d.stats()
        ls = s.get("latency_settings", {})
        if int(ls.get("sample_every", 0)) != 256 or int(ls.get("slow_iteration_us", 0)) != 250:
            fail(f"default latency settings {ls}: want sample_every 256, slow_iteration_us 250")
        wait_for("default-sampled latency", lambda: samples(core1(d.stats())) > 0)
        print(f"ok: defaults 1 in 256 RX bursts, 250 us; samples recorded: "
              f"{samples(core1(d.stats()))}")

        ds, dt, c = parked_window(d, 1)
        if ds != dt or dt == 0:
            fail(f"N=1: {ds} samples for {dt} packets sent: want equal")
        print(f"ok: N=1: samples grew by {ds} == packets sent {dt}")
        check_percentiles(c)

        check_metrics(d, c)
        tel = d.telemetry("/skbnf/latency")
        tports = tel["cores"]["1"]["ports"]
        for p in c["latency"]:
            t = tports.get(str(p["port"]))
            if t is None or t["samples"] != int(p["total"]["samples"]):
                fail(f"/skbnf/latency port {p['port']} {t} != Stats {p['total']}")
            if not t["p50_ns"] <= t["p99_ns"] <= t["p999_ns"] <= t["max_ns"]:
                fail(f"/skbnf/latency percentiles not ordered: {t}")
        if tel["sample_every"] != 1 or tel["slow_iteration_us"] != 250:
            fail(f"/skbnf/latency settings: {tel}")
        it = c["iterations"]
        by = sum(int(b["iterations"]) for b in it["by_packets"])
        if by != int(it["iterations"]) or by == 0:
            fail(f"iterations {it['iterations']} vs by_packets sum {by}")
        if not any(int(b["low"]) == 33 and int(b["high"]) == 64 for b in it["by_packets"]):
            fail(f"no iteration with 33-64 packets (two full net_null bursts): {it['by_packets']}")
        print(f"ok: /skbnf/latency == Stats (parked); {by} iterations, by packets "
              f"{[(b['low'], b['high'], b['iterations']) for b in it['by_packets']][:4]}")
        d.ctl("worker", "resume", "1")

        ds, dt, _ = parked_window(d, 0)
        if ds != 0 or dt == 0:
            fail(f"N=0: {ds} samples recorded while {dt} packets were sent")
        print(f"ok: N=0: nothing recorded over {dt} packets")
        d.ctl("worker", "resume", "1")

        ds, dt, _ = parked_window(d, 4, grow=400000)
        if abs(4 * ds - dt) > 0.05 * dt:
            fail(f"N=4: {ds} samples for {dt} packets: want a quarter within 5 %")
        print(f"ok: N=4: {ds} samples for {dt} packets ({ds / dt:.3f})")
        d.ctl("worker", "resume", "1")

        bad = d.ctl("latency", "set", "--sample-every=2000000", ok=False)
        if bad.returncode != 1 or "INVALID_ARGUMENT" not in bad.stderr \
                or "sample_every" not in bad.stderr:
            fail(f"bad N: rc {bad.returncode}: {bad.stderr}")
        if int(d.stats()["latency_settings"]["sample_every"]) != 4:
            fail("a refused SetLatency changed the settings")
        print(f"ok: bad N refused: {bad.stderr.strip()}")


def slow_log(d):
    c = core1(d.stats())
    it = c["iterations"]
    return int(it.get("slow_iterations", 0)), it.get("slow", [])


def run_stalled():
    # --slow-iteration-us=10000: fewer preempted idle iterations in the slow log (the CPUs are
    # shared); their log lines are rate-limited apart from those with a named cause.
    with Skbnfd("s", ["net_ring0", "net_ring1"],
                ["--test-stall-lcore=1", "--test-stall-ms=30", "--slow-iteration-us=10000"]) as d:
        if int(d.stats()["latency_settings"]["slow_iteration_us"]) != 10000:
            fail(f"--slow-iteration-us=10000 not in force: {d.stats()['latency_settings']}")
        n0, _ = slow_log(d)
        d.ctl("strategy", "set", "headpool")

        def planted():
            n, slow = slow_log(d)
            hit = [s for s in slow if "swap" in s["causes"] and "test_hook" in s["causes"]
                   and int(s["duration_ns"]) >= 30_000_000]
            return hit if n > n0 else None
        hit = wait_for("the stalled swap's slow iteration", planted)
        print(f"ok: planted stall in the slow log: {hit[-1]}")
        wait_for("its log line", lambda: re.search(
            r"worker lcore 1: slow iteration: .* cause (\S*swap\S*test_hook|\S*test_hook\S*swap)",
            open(d.log).read()), log=d.log)
        print("ok: skbnfd logged it")

        d.ctl("latency", "set", "--slow-iteration-us=10000000")
        n1, _ = slow_log(d)
        d.ctl("strategy", "set", "magazine")
        # the stall ran (the worker acknowledged the swap: SetStrategy returned ok); its
        # iteration is closed at the next poll: wait until the loop went round twice more
        p0 = int(core1(d.stats())["polls"])
        wait_for("two more polls", lambda: int(core1(d.stats())["polls"]) > p0 + 2)
        n2, _ = slow_log(d)
        if n2 != n1:
            fail(f"threshold 10 s: the 30 ms stall still counted slow ({n1} -> {n2})")
        print(f"ok: threshold 10 s: the next stalled swap is not slow ({n2})")

        # An audit parks the worker for tens of microseconds, as long as a preempted idle
        # iteration on a shared CPU: the ring fills with those, but the log lines of iterations
        # with a named cause are rate-limited apart from them, so the audit's line is there.
        # (at most one such line a second: the planted one's second must be over first)
        planted_ns = int(hit[-1]["monotonic_ns"])
        wait_for("a second since the planted line",
                 lambda: int(d.stats()["monotonic_ns"]) > planted_ns + 1_200_000_000)
        d.ctl("latency", "set", "--slow-iteration-us=5")
        d.ctl("audit")
        wait_for("the audit park's log line", lambda: re.search(
            r"worker lcore 1: slow iteration: .* cause \S*audit_park", open(d.log).read()),
            log=d.log)
        print("ok: the audit's park logged as audit_park")
        out = d.ctl("latency").stdout
        if "slow iterations (last" not in out or "iterations," not in out:
            fail(f"skbnfctl latency does not show the iterations and the slow log: {out}")


def run_depot_wait():
    gate = f"/run/skbnf-latd-{os.getpid()}/hold-depot"  # in the run's directory (Primary.dir)
    with Skbnfd("d", ["net_null0", "net_null1"],
                ["--strategy=magazine:size=8", "--slow-iteration-us=10000",
                 f"--test-depot-hold-gate={gate}", "--test-depot-hold-ms=30"]) as d:
        if os.path.dirname(gate) != d.dir:
            fail(f"the gate {gate} is not in the run's directory {d.dir}")
        c0 = core1(d.stats())
        n0, _ = slow_log(d)
        w0 = int(c0["pool"].get("depot_waits", 0))
        open(gate, "w").close()
        wait_for("the hook to take the gate", lambda: not os.path.exists(gate), log=d.log)
        if "skbnfd: test: depot lock held 30 ms" not in open(d.log).read():
            fail("the hook did not hold the depot", d.log)

        def planted():
            n, slow = slow_log(d)
            hit = [s for s in slow if "depot_wait" in s["causes"]
                   and int(s["duration_ns"]) >= 30_000_000]
            return hit if n > n0 else None
        hit = wait_for("the depot wait's slow iteration", planted, log=d.log)
        print(f"ok: the held depot in the slow log: {hit[-1]}")
        wait_for("its log line", lambda: re.search(
            r"worker lcore 1: slow iteration: .* cause \S*depot_wait", open(d.log).read()),
            log=d.log)
        print("ok: skbnfd logged it")
        c1 = core1(d.stats())
        waits = int(c1["pool"].get("depot_waits", 0))
        ticks = int(c1["pool"].get("depot_wait_ticks", 0))
        hz = int(c1["tsc_hz"])
        # The worker's wait is the part of the 30 ms hold after it reached the lock: it
        # exchanges a magazine every few microseconds, but on a loaded machine it may arrive a
        # moment late (CI saw 29.8 ms counted), so the bound is two thirds of the hold.
        if waits <= w0 or ticks < 0.020 * hz:
            fail(f"Stats: depot_waits {w0} -> {waits}, depot_wait_ticks {ticks} at {hz} Hz: "
                 "the 30 ms wait is not counted")
        m = re.search(r'^skbnf_pool_depot_lock_waits_total\{core="1"\} (\S+)$', d.scrape(), re.M)
        if not m or int(float(m.group(1))) < waits:
            fail(f"/metrics: skbnf_pool_depot_lock_waits_total for core 1: {m and m.group(0)}, "
                 f"Stats said {waits}")
        print(f"ok: counted: {waits} waits, {ticks / hz * 1e3:.1f} ms spun; /metrics agrees")


def main():
    for tool in (CLIENT, shutil.which("promtool") or "/usr/bin/promtool"):
        if not os.access(tool, os.X_OK):
            fail(f"{tool} missing: deploy/deps.sh installs it")
    run_forwarding()
    run_stalled()
    run_depot_wait()
    print("ok: all")


if __name__ == "__main__":
    main()
