#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/min_pool.py: the smallest mbuf pool that forwards HOLD seconds with zero rx_nombuf,
found by bisection, per arm and set-up (issue 33 item 3, "memory at zero loss").

  bench/min_pool.py [--arms A,B,...] [--workers 1,2] [--rings 1024,4096] [--hold S]
                    [--floor preflight|skip] [--step N] [--upper N] [--shift none|pause]
                    [--out DIR] [--build DIR]
  bench/min_pool.py                         # every arm x workers 1,2 x rings 1024,4096, 60 s
  bench/min_pool.py --quick                 # tooling check (ctest bench_min_pool_quick)

Arms: a skbnf strategy spec (`headpool`, `magazine`, `recycle+magazine`, `lcache+headpool`:
skbnfd --pool-ops=skbnf --strategy=SPEC) or `ring_mp_mc:C` (DPDK's pool, --pool-ops=ring_mp_mc
--mbuf-cache=C; default arms `ring_mp_mc:256`, skbnfd's default cache, and `ring_mp_mc:32`).

Set-up (per step, a fresh pair of processes): bench/run's `vhost` experiment, imported
(VhostPeer), widened to Q = workers queues: skbnfd l3, 2 ports (net_virtio_user0 receives,
every route out net_virtio_user1), `queues=Q,queue_size=R` on both vdevs and rx_ring/tx_ring R,
worker k polling net_virtio_user0 queue k-1; the peer dpdk-testpmd (net_vhost, DPDK's vhost
library, io forwarding, `--rxq=Q --txq=Q`) replays a pcap of 16,384 flows (net_pcap given it Q
times: Q RX queues) into skbnfd and drops what comes back. Hugepages (2 MiB), as `vhost`.

The load, and why it is not RSS: a vhost-user port has no RSS. The virtqueue a frame lands on is
the sender's TX queue: testpmd's io stream k copies pcap queue k into vhost queue k, so every
queue carries an equal, steady share, and testpmd (non-interactive) cannot move it while it
runs. `--shift pause` moves the *served* load instead: during the hold, the workers are paused
in turn (`skbnfctl worker pause CORE --lease`, --shift-every seconds each, one at a time), so
one queue goes unserved (its peer stream drops at the full virtqueue) while the others go on.
That is a shift skbnfd makes itself, not the traffic's: skbnfd flushes a paused worker's skbnf
layers back to the pool (dataplane/dpdk/README.md) and does not flush DPDK's lcore cache of a
paused lcore, so on `ring_mp_mc` the paused core's cache stays stranded. Default: `none`.

A step: the peer, then skbnfd with `--mbufs=N`, --warmup seconds, then the hold: GetStats and
ListPorts (skbnfctl --json stats / ports) at its start and end. rx_nombuf: the PMDs' own counter
(PmdStats.rx_nombuf, rte_eth_stats: virtio's RX refill failures, whatever the pool) summed over
the ports, and on the skbnf pool the pool's RX refill failures (GetStats' CorePoolStats
alloc_failures), both totals since start (warm-up included). A step passes when both are 0 at
the end and the workers are still receiving: a pool smaller than what the rings hold can wedge
the worker with no refill failure counted (every buffer parked in a ring, virtio's RX refill
never tried). One more GetStats halfway: when the second half received nothing, the step waits
up to --stall-probe seconds (3) for any packet; none: "wedged" (a wedge is permanent: nothing
transmits, so nothing completes), some: a stall of the loaded machine, noted. A step fails
("too small") on any rx_nombuf (the probe's included), on a wedge, or when skbnfd refuses to
start (preflight pool_sizing, or EAL/PMD). A step failed only by a wedge is run again
(--stall-retries, 1; 0 in --quick): every attempt is a row (purpose `stall_retry`), the last
one is the verdict. An error that is not a step's verdict (the peer not starting,
skbnfctl failing) stops the run after writing the steps so far.

The bisection, per (arm, workers, ring): the floor is what skbnfd accepts at start. skbnfd's
preflight refuses any pool below its own pool_sizing rule (`skbnfd --preflight --mbufs=1` says
"raise --mbufs to at least N": RX and TX rings of both ports, the strategy's or DPDK cache's
per-core bound, bursts), and that rule is what this table is to set, so by default (--floor
skip) skbnfd runs with --skip-preflight and the floor is --skip-floor (64 mbufs): EAL and the
PMDs are then all that can refuse. The preflight minimum is reported beside every result;
--floor preflight starts from it instead (the result is then at least the rule). First the
upper bound (--upper, default 3 x the preflight minimum) must pass, else the result is "above
upper"; then the floor: passing there, the result is the floor ("at floor"). Else lo (fails)
and hi (passes) close in on the midpoint, rounded up to a multiple of --step (64) while the gap
is 2 steps or more, until hi - lo <= --step. Result: hi, with lo the largest pool seen to fail.
The hold is read every --check-every seconds (5): a step that has failed stops there. One
hold per step: a pass is a single observation (an arm close to the edge may pass once and fail
the next time; --confirm runs the result's step again).

Memory (MiB): mbufs x 2,368 bytes (`mib_elements`: DPDK 22.11's pktmbuf element: 64-byte
mempool object header + 128-byte struct rte_mbuf + RTE_MBUF_DEFAULT_BUF_SIZE 2,176; the size
skbnfd checks at start), the same for both pools; and the pool's hugepage footprint
(`mib_pool`): skbnf's 64 KiB slabs of 27 whole mbufs (ceil(N/27) x 64 KiB), ring_mp_mc's
packed objects (N x 2,368; its ring and cache arrays not counted): the rule of skbnfd's
preflight hugepage estimate (server/daemon/startup_checks.cc).

Machine mode: each step's worker TSC ticks per packet and Mpps are kept; within one
(arm, workers, ring) case the steps' ticks/pkt are split as interleave.py's mode_split does
(two clusters at the widest gap of the log values when wider than --mode-gap, else `one`). The
steps differ in pool size, so this label is indicative only; the peer sets the rate.

Outputs in --out (default bench/results/issue33/min_pool): steps.csv (one row per step),
summary.csv, summary.md, summary.json, meta.json, COMMAND. `--quick` runs one case
(headpool, 1 worker, ring 1,024, --floor skip, 2 s holds, 3 steps: the upper bound = the
preflight minimum, a planted floor of 256 mbufs, one midpoint) and checks that the planted
pool is reported too small, that the bisection converged, that its result forwarded with zero
rx_nombuf and that the largest failed pool, within one step below it, was seen failing.
"""
import argparse
import datetime
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from interleave import Daemon, Failure, mode_split  # noqa: E402

ELT_BYTES = 64 + 128 + 2176  # mempool object header + struct rte_mbuf + default data room
SLAB_BYTES, PER_SLAB = 64 * 1024, (64 * 1024) // ELT_BYTES  # skbnf's store: 27 per slab
DEFAULT_ARMS = ["headpool", "magazine", "recycle+magazine", "lcache+headpool", "ring_mp_mc:256",
                "ring_mp_mc:32"]
MIB = 1 << 20
QUICK_PLANTED = 256  # --quick's floor: a quarter of one RX ring, skbnfd must starve on it


# ---------------------------------------------------------------------------------------------
# The bisection (pure: min_pool_test.py drives it with a planted oracle)

def round_up(n, step):
    return -(-n // step) * step


def bisect(trial, floor, upper, step):
    """Smallest passing pool in [floor, upper] to within `step`. trial(n) -> True (passes) or
    False (too small); a pool that fails is assumed to fail at every smaller size. Returns
    {"result": n or None, "lo": largest failed or None, "status": ..., "trials": [(n, ok)]}.
    status: "converged" (lo fails, hi = lo + <= step passes), "at_floor" (the floor passes),
    "above_upper" (the upper bound fails: no result)."""
    trials = []

    def t(n):
        ok = bool(trial(n))
        trials.append((n, ok))
        return ok
    if floor > upper:
        raise ValueError(f"floor {floor} above upper {upper}")
    if not t(upper):
        return {"result": None, "lo": upper, "status": "above_upper", "trials": trials}
    if floor == upper or t(floor):
        return {"result": floor, "lo": None, "status": "at_floor", "trials": trials}
    lo, hi = floor, upper
    while hi - lo > step:
        mid = (lo + hi) // 2
        if hi - lo >= 2 * step and lo < round_up(mid, step) < hi:
            mid = round_up(mid, step)  # on the grid of `step` while the gap is 2 steps or more
        if t(mid):
            hi = mid
        else:
            lo = mid
    return {"result": hi, "lo": lo, "status": "converged", "trials": trials}


def mib_elements(n):
    return round(n * ELT_BYTES / MIB, 2)


def mib_pool(n, arm):
    if is_native(arm):
        return round(n * ELT_BYTES / MIB, 2)
    return round(-(-n // PER_SLAB) * SLAB_BYTES / MIB, 2)


def is_native(arm):
    return arm.startswith("ring_mp_mc")


def native_cache(arm):
    _, _, c = arm.partition(":")
    return int(c) if c else 256


# ---------------------------------------------------------------------------------------------
# One step: the peer and skbnfd with N mbufs


def make_peer(run, ctx, queues, nice=10):
    """bench/run's VhostPeer with Q queues on the vhost ports and Q RX queues on the pcap, under
    `nice -n NICE` (the machine is shared)."""
    class Peer(run.VhostPeer):
        def command(self):
            cmd = super().command()
            out = ["nice", "-n", str(nice)]
            for a in cmd:
                if a.startswith("--vdev=net_pcap0,"):
                    a = "--vdev=net_pcap0," + f"rx_pcap={self.pcap}," * queues + "infinite_rx=1"
                elif a.startswith("--vdev=net_vhost"):
                    a = a.replace("queues=1", f"queues={queues}")
                out.append(a)
            if queues > 1:
                out += [f"--rxq={queues}", f"--txq={queues}"]
            return out
    return Peer(ctx)


def eal_mem(run, mbufs):
    """The vhost experiment's EAL memory flags, -m raised from its 512 MiB when the pool needs
    it (pool + l3 tables 72 MiB + EAL and margin 136 MiB, the pool counted 15 % high)."""
    need = int(mbufs * ELT_BYTES * 1.15 / MIB) + 208
    mib = max(512, -(-need // 64) * 64)
    eal = list(run.VHOST_EAL)
    eal[eal.index("-m") + 1] = str(mib)
    return eal


def config_text(run, peer, arm, workers, ring, mbufs, prefix):
    lines = ["mode l3", f"mbufs {mbufs}", "burst 32", f"rx_ring {ring}", f"tx_ring {ring}",
             f"rx_queues {workers}"]
    if is_native(arm):
        lines += ["pool_ops ring_mp_mc", f"mbuf_cache {native_cache(arm)}"]
    else:
        lines += [f"strategy {arm}"]
    # main lcore on CPU 0 (beside the peer's poller), the workers on CPU 1
    lcores = ",".join(["0@0"] + [f"{k}@1" for k in range(1, workers + 1)])
    lines += [f"eal --lcores={lcores} " + " ".join(eal_mem(run, mbufs)) +
              f" --file-prefix={prefix}"]
    lines += [f"eal --vdev=net_virtio_user{i},path={peer.socks[i]},queues={workers},"
              f"queue_size={ring},mac={run.VHOST_MACS[i]}" for i in (0, 1)]
    lines += ["port net_virtio_user0 peer=net_virtio_user1",
              "port net_virtio_user1 peer=net_virtio_user0"]
    lines += [f"worker {k} net_virtio_user0:{k - 1}" for k in range(1, workers + 1)]
    lines += benchlib.single_routes(run.VHOST_ROUTES, "net_virtio_user1")
    return "\n".join(lines) + "\n"


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def totals(stats, ports):
    """(received, busy ticks, busy packets, monotonic ns, pool RX refill failures, PMD rx_nombuf
    summed over ports, transmitted)."""
    rx = tx = cyc = pk = fails = 0
    for core in stats.get("cores", []):
        cyc += int(core.get("busy_cycles", 0))
        pk += int(core.get("busy_packets", 0))
        fails += int(core.get("pool", {}).get("alloc_failures", 0))
        for p in core.get("ports", []):
            rx += int(p.get("rx_packets", 0))
            tx += int(p.get("tx_packets", 0))
    pmd = sum(int(p.get("pmd", {}).get("rx_nombuf", 0)) for p in ports.get("ports", []))
    return rx, cyc, pk, int(stats.get("monotonic_ns", 0)), fails, pmd, tx


def verdict(rx_nombuf, received, halves, wedged):
    """(passes, note) of a step. Zero rx_nombuf is not enough: a pool smaller than what the rings
    hold can wedge the worker with no refill failure counted (every buffer parked in a ring), so
    it must also have received and still be receiving."""
    if rx_nombuf:
        return False, "rx_nombuf"
    if received == 0:
        return False, "wedged: no packets in the hold nor the probe"
    if wedged:
        return False, "wedged: stopped receiving"
    return True, "stalled, then received again" if min(halves) == 0 else ""


def rx_per_worker(stats):
    """{lcore: received} (to show where the load went during the hold)."""
    return {int(c.get("lcore", i)): sum(int(p.get("rx_packets", 0)) for p in c.get("ports", []))
            for i, c in enumerate(stats.get("cores", []))}


def skbnfd_flags(args, mbufs):
    flags = [f"--mbufs={mbufs}"]
    if args.floor == "skip":
        flags.append("--skip-preflight")
    return flags


def preflight_minimum(bins, run, args, arm, workers, ring):
    """skbnfd's pool_sizing minimum for this set-up: `--preflight --mbufs=1` says "raise --mbufs
    to at least N" (no EAL, no peer needed)."""
    work = tempfile.mkdtemp(prefix="skbnf-mp-pf-")
    try:
        ctx = types.SimpleNamespace(workdir=work, runs=0)
        peer = make_peer(run, ctx, workers)
        conf = os.path.join(work, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(run, peer, arm, workers, ring, 1, "skbnf-mp-pf"))
        out = subprocess.run([bins.skbnfd(), f"--config={conf}", "--preflight", "--mbufs=1"],
                             capture_output=True, text=True, timeout=120)
        text = out.stdout + out.stderr
        m = re.search(r"raise --mbufs to at least (\d+)", text)
        if not m:
            raise Failure(f"no pool_sizing minimum in skbnfd --preflight's report:\n{text[-1500:]}")
        return int(m.group(1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


class Hold:
    """The hold, in slices of at most --check-every seconds with rx_nombuf read after each (a
    step that already failed stops there: its verdict cannot change), with the served load moved
    between workers when --shift pause (module text): worker k paused for --shift-every seconds,
    then resumed, in turn, across the slices."""

    def __init__(self, d, args, workers):
        self.d, self.args, self.workers = d, args, workers
        self.k = self.pauses = self.pause_failures = 0

    def run(self, seconds):
        """Holds `seconds`; returns (totals at the end, True if it stopped on rx_nombuf)."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left > 0:
                self.sleep(min(left, self.args.check_every))
            t = totals(self.d.ctl("stats"), self.d.ctl("ports"))
            if t[4] + t[5] > 0:
                return t, True
            if left <= self.args.check_every:
                return t, False

    def sleep(self, seconds):
        if self.args.shift == "none" or self.workers < 2:
            time.sleep(seconds)
            return
        end = time.monotonic() + seconds
        while end - time.monotonic() > 0.05:
            core = 1 + self.k % self.workers
            lease = max(1, math.ceil(self.args.shift_every + 2))
            paused = False
            try:
                self.d.ctl("worker", "pause", str(core), f"--lease={lease}s")
                self.pauses, paused = self.pauses + 1, True
            except Failure as e:  # a worker slow to reach its quiescent point (shared CPU):
                if "DEADLINE_EXCEEDED" not in str(e):  # this slice goes unshifted, counted
                    raise          # (should the pause land late, its lease ends it)
                self.pause_failures += 1
            time.sleep(min(self.args.shift_every, max(0.0, end - time.monotonic())))
            if paused:
                resume(self.d, core, lease)
            self.k += 1


def resume(d, core, lease):
    """ResumeWorker, tried again while the worker is slow to leave its park (it shares its CPU
    on this 2-vCPU VM); the lease resumes it anyway, so after `lease` seconds it is left to it."""
    t0 = time.monotonic()
    while True:
        try:
            d.ctl("worker", "resume", str(core))
            return
        except Failure as e:
            if "DEADLINE_EXCEEDED" not in str(e) or time.monotonic() - t0 > lease:
                raise
            time.sleep(0.2)


def step(bins, run, args, arm, workers, ring, mbufs, hold, base=None):
    """One run at `mbufs`: a row (ok True: zero rx_nombuf and traffic; False: too small). `base`:
    a directory kept across steps (the pcap is made once)."""
    t_begin = time.monotonic()
    row = {"arm": arm, "workers": workers, "ring": ring, "mbufs": mbufs, "hold_s": hold,
           "floor": args.floor, "shift": args.shift if workers > 1 else "none",
           "utc_start": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "load1_start": load1()}
    work = tempfile.mkdtemp(prefix="skbnf-mp-", dir=base)
    ctx = types.SimpleNamespace(workdir=base or work, runs=0)
    peer = make_peer(run, ctx, workers, args.nice)
    sargs = types.SimpleNamespace(a=None, b=None)
    d = Daemon(bins, work, sargs, make_config=lambda prefix: config_text(
        run, peer, arm, workers, ring, mbufs, prefix))
    d.cmd += skbnfd_flags(args, mbufs)
    try:
        peer.start()
        d.proc = subprocess.Popen(["nice", "-n", str(args.nice)] + d.cmd, stdout=d.log,
                                  stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not os.path.exists(d.ready):
            if d.proc.poll() is not None or time.monotonic() > deadline:
                if d.proc.poll() is None:
                    d.proc.kill()
                    d.proc.wait()
                text = d.tail(1500)
                m = re.search(r"raise --mbufs to at least (\d+)", text)
                row.update({"status": "refused", "ok": False,
                            "note": (f"preflight: at least {m.group(1)}" if m else
                                     "skbnfd did not start: " + " ".join(
                                         text.strip().splitlines()[-1:])[:200])})
                return row
            time.sleep(0.05)
        row["start_s"] = round(time.monotonic() - t_begin, 2)
        time.sleep(args.warmup)
        st0 = d.ctl("stats")
        s0 = totals(st0, d.ctl("ports"))
        h = Hold(d, args, workers)
        early = s0[4] + s0[5] > 0  # failed in the warm-up: no hold
        sm = s0
        if not early:
            sm, early = h.run(hold / 2)
        if not early:
            _, early = h.run(hold / 2)
        pauses = h.pauses
        row["pause_failures"] = h.pause_failures
        st1 = d.ctl("stats")
        s1 = totals(st1, d.ctl("ports"))
        row["stopped_early"] = early
        w0, w1 = rx_per_worker(st0), rx_per_worker(st1)
        row["rx_per_worker"] = " ".join(f"{k}:{w1[k] - w0.get(k, 0)}" for k in sorted(w1))
        drx, dcyc, dpk, dns, _, _, dtx = (b - a for a, b in zip(s0, s1))
        halves = (sm[0] - s0[0], s1[0] - sm[0])
        wedged, probe, probe_rx = False, 0.0, 0
        if halves[1] == 0 and s1[4] + s1[5] == 0 and not early:
            # stopped receiving, no rx_nombuf yet: a wedge stays stopped, a stall does not
            wedged, t_probe = True, time.monotonic()
            while time.monotonic() - t_probe < args.stall_probe:
                time.sleep(0.25)
                probe_rx = totals(d.ctl("stats"), {})[0] - s1[0]
                if probe_rx > 0:
                    wedged = False
                    break
            probe = round(time.monotonic() - t_probe, 2)
            s1 = s1[:4] + totals(d.ctl("stats"), d.ctl("ports"))[4:6] + s1[6:]
        row.update({"rx_packets": drx, "tx_packets": dtx, "rx_first_half": halves[0],
                    "rx_second_half": halves[1], "stall_probe_s": probe,
                    "rx_probe": probe_rx, "pool_rx_fail": s1[4],
                    "pmd_rx_nombuf": s1[5], "rx_nombuf": s1[4] + s1[5],
                    "rx_nombuf_hold": (s1[4] - s0[4]) + (s1[5] - s0[5]),
                    "seconds": round(dns / 1e9, 3), "pauses": pauses,
                    "mpps": round(drx / dns * 1e3, 4) if dns > 0 else 0,
                    "ticks_per_packet": round(dcyc / dpk, 2) if dpk > 0 else ""})
        t_stop = time.monotonic()
        try:
            d.stop()
            row["exit"] = "audit OK"
        except Failure as e:
            row["exit"] = str(e).splitlines()[0][:120]
        row["stop_s"] = round(time.monotonic() - t_stop, 2)
        ok, note = verdict(row["rx_nombuf"], drx + probe_rx, halves, wedged)
        row.update({"status": "pass" if ok else "too_small", "ok": ok, "note": note})
        return row
    finally:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        t_peer = time.monotonic()
        peer.stop()
        peer.cleanup()
        row["peer_stop_s"] = round(time.monotonic() - t_peer, 2)
        row["load1_end"] = load1()
        row["step_s"] = round(time.monotonic() - t_begin, 2)
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Outputs

STEP_COLS = ["case", "arm", "workers", "ring", "mbufs", "mib_elements", "mib_pool", "hold_s",
             "status", "rx_nombuf", "pmd_rx_nombuf", "pool_rx_fail", "rx_nombuf_hold",
             "rx_packets", "rx_first_half", "rx_second_half", "stall_probe_s", "rx_probe",
             "rx_per_worker", "tx_packets", "seconds", "mpps", "ticks_per_packet", "mode",
             "load1_start", "load1_end", "start_s", "stop_s", "peer_stop_s", "step_s", "floor",
             "shift", "pauses", "pause_failures", "stopped_early", "purpose", "utc_start",
             "exit", "note"]
SUM_COLS = ["arm", "workers", "ring", "status", "mbufs", "mib_elements", "mib_pool",
            "largest_failed", "floor_mbufs", "preflight_min", "upper", "step", "steps",
            "confirmed"]


def label_modes(rows, gap):
    """interleave.py's mode_split within each case (indicative: the steps differ in pool size)."""
    for case in sorted({r["case"] for r in rows}):
        sel = [r for r in rows if r["case"] == case and r.get("ticks_per_packet") not in ("", None)]
        th = mode_split([float(r["ticks_per_packet"]) for r in sel], gap) if len(sel) > 1 else None
        for r in sel:
            r["mode"] = "one" if th is None else (
                "fast" if float(r["ticks_per_packet"]) < th else "slow")


def summary_md(summ, meta):
    lines = ["# Smallest pool at zero rx_nombuf (issue 33 item 3)", "",
             f"{meta['memory']}; {benchlib.machine_line(meta['machine'], meta['eal'])}.", "",
             f"Command: `{meta['command']}`", "",
             f"Hold {meta['hold_s']} s per step after {meta['warmup_s']} s warm-up; floor "
             f"{meta['floor']}; step {meta['step']} mbufs; shift {meta['shift']}; "
             f"{meta['started_utc']} to {meta['ended_utc']}. MiB: mbufs x {ELT_BYTES} B "
             "(elements); pool: skbnf 64 KiB slabs of 27, ring_mp_mc packed (module text).", "",
             "| arm | workers | ring | result | mbufs | MiB (elements) | MiB (pool) | largest "
             "failed | floor | preflight min | steps |", "|---" * 11 + "|"]
    for s in summ:
        lines.append(f"| `{s['arm']}` | {s['workers']} | {s['ring']} | {s['status']} | "
                     f"{s['mbufs'] if s['mbufs'] is not None else '> ' + str(s['upper'])} | "
                     f"{s['mib_elements']} | {s['mib_pool']} | "
                     f"{s['largest_failed'] if s['largest_failed'] is not None else '-'} | "
                     f"{s['floor_mbufs']} | {s['preflight_min']} | {s['steps']} |")
    return "\n".join(lines) + "\n"


def write(outdir, rows, summ, meta):
    os.makedirs(outdir, exist_ok=True)
    benchlib.write_rows_csv(os.path.join(outdir, "steps.csv"), STEP_COLS, rows)
    benchlib.write_rows_csv(os.path.join(outdir, "summary.csv"), SUM_COLS, summ)
    benchlib.write_json(os.path.join(outdir, "summary.json"), summ)
    benchlib.write_json(os.path.join(outdir, "meta.json"), meta)
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(summary_md(summ, meta))
    with open(os.path.join(outdir, "COMMAND"), "w") as f:
        f.write(f"# issue 33 item 3: smallest pool at zero rx_nombuf (bench/min_pool.py's module "
                f"text says how). Run from the repository root:\n{meta['command']}\n"
                f"# {meta['started_utc']} to {meta['ended_utc']}, git {meta['git']}; 1-minute "
                f"load average {meta['load1_range'][0]}-{meta['load1_range'][1]} over the steps "
                f"(steps.csv load1_start/load1_end)\n")


def check_quick(rows, summ):
    """--quick's assertions (ctest bench_min_pool_quick): the planted tiny pool is too small; the
    case converged (or passed at its floor); its result passed with zero rx_nombuf and traffic;
    the largest failed pool is within one step below it and failed."""
    problems = []
    planted = [r for r in rows if r["mbufs"] == QUICK_PLANTED]
    if not planted or any(r["ok"] for r in planted):
        problems.append(f"the planted tiny pool was not reported too small: {planted}")
    for s in summ:
        if s["status"] not in ("converged", "at_floor"):
            problems.append(f"{s['arm']}: bisection status {s['status']}")
            continue
        # the verdict at a size: its last attempt (a stall retry follows the stalled one)
        verdict = {r["mbufs"]: r for r in rows if r["case"] == s["case"]}
        at = verdict.get(s["mbufs"])
        if not at or not (at["ok"] and at["rx_nombuf"] == 0 and at["rx_packets"] > 0):
            problems.append(f"{s['arm']}: the result {s['mbufs']} did not pass cleanly: {at}")
        if s["status"] == "converged":
            below = verdict.get(s["largest_failed"])
            if not below or below["ok"]:
                problems.append(f"{s['arm']}: {s['largest_failed']} not seen failing")
            if not 0 < s["mbufs"] - s["largest_failed"] <= s["step"]:
                problems.append(f"{s['arm']}: not converged to within {s['step']}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", default=",".join(DEFAULT_ARMS))
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rings", default="1024,4096")
    ap.add_argument("--hold", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--floor", choices=("preflight", "skip"), default="skip")
    ap.add_argument("--skip-floor", type=int, default=64,
                    help="with --floor skip: the bisection's floor (skbnfd --skip-preflight)")
    ap.add_argument("--upper", type=int, default=0,
                    help="the largest pool tried (default 3 x the preflight minimum)")
    ap.add_argument("--step", type=int, default=64, help="the bisection's resolution, mbufs")
    ap.add_argument("--shift", choices=("none", "pause"), default="none")
    ap.add_argument("--shift-every", type=float, default=5.0)
    ap.add_argument("--confirm", action="store_true", help="run each result's step again")
    ap.add_argument("--stall-retries", type=int, default=1,
                    help="a step failed only by a wedge (no rx_nombuf) is run again this many "
                    "times")
    ap.add_argument("--check-every", type=float, default=5.0,
                    help="seconds between rx_nombuf readings in the hold (a failed step stops)")
    ap.add_argument("--stall-probe", type=float, default=3.0,
                    help="seconds to wait for packets when the hold's second half had none")
    ap.add_argument("--mode-gap", type=float, default=0.15)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out")
    args = ap.parse_args()
    planted = None
    if args.quick:
        args.arms, args.workers, args.rings = "headpool", "1", "1024"
        args.hold, args.warmup, args.floor, args.check_every = 2.0, 0.3, "skip", 1.0
        args.stall_retries = 0
        planted = QUICK_PLANTED
    arms = [a for a in args.arms.split(",") if a]
    workers = [int(w) for w in args.workers.split(",")]
    rings = [int(r) for r in args.rings.split(",")]
    if not arms or any(w < 1 for w in workers) or any(r < 64 for r in rings) or args.step < 1 \
            or args.hold <= 0:
        ap.error("arms, workers >= 1, rings >= 64, --step >= 1, --hold > 0")
    outdir = args.out or (os.path.join(args.build, "bench-quick", "min-pool") if args.quick
                          else os.path.join(HERE, "results", "issue33", "min_pool"))
    from update_benchmarks_md import load_run_module  # noqa: E402
    run = load_run_module()
    sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
    import hugepages  # noqa: E402
    if args.quick:
        pages = 540  # skbnfd's and the peer's 512 MiB each (bench_latency_interleave_quick's)
    else:  # the peer's 512 MiB and skbnfd's at the largest upper bound, in 2 MiB pages
        w, r = max(workers), max(rings)  # 3 x the preflight minimum, per-core bound <= R + 600
        biggest = args.upper or 3 * (4 * w * r + w * (r + 600))
        pages = (512 + int(eal_mem(run, biggest)[1])) // 2 + 28
    err, _ = hugepages.ensure(pages)
    if err:
        print(f"bench/min_pool.py: {err}: skipped", file=sys.stderr)
        sys.exit(77)
    bins = benchlib.Binaries(args.build)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    rows, summ, error = [], [], None
    base = tempfile.mkdtemp(prefix="skbnf-mp-base-")
    try:
        for w in workers:
            for ring in rings:
                for arm in arms:
                    case = f"{arm}/w{w}/r{ring}"
                    pmin = preflight_minimum(bins, run, args, arm, w, ring)
                    floor = pmin if args.floor == "preflight" else args.skip_floor
                    upper = args.upper or 3 * pmin
                    if args.quick:  # 3 trials: upper, the planted floor, one mid
                        upper, floor = pmin, planted
                        args.step = max(args.step, round_up((upper - floor) // 2 + 1, 64))
                    purpose = ["bisect"]

                    def trial(n, case=case, arm=arm, w=w, ring=ring):
                        for attempt in range(1 + args.stall_retries):
                            r = step(bins, run, args, arm, w, ring, n, args.hold, base)
                            r.update({"case": case, "purpose": purpose[0] if not attempt
                                      else "stall_retry", "mib_elements": mib_elements(n),
                                      "mib_pool": mib_pool(n, arm)})
                            rows.append(r)
                            print(f"min_pool: {case} {n} mbufs: {r['status']} (rx_nombuf "
                                  f"{r.get('rx_nombuf', '-')}, rx {r.get('rx_packets', '-')}, "
                                  f"load {r['load1_start']}) {r.get('note', '')}", flush=True)
                            # wedged without rx_nombuf: a wedge comes back, a long stall of
                            # the loaded machine (beyond the probe) may not
                            if r["ok"] or r.get("rx_nombuf") != 0:
                                break
                        return r["ok"]
                    b = bisect(trial, floor, upper, args.step)
                    confirmed = ""
                    if args.confirm and b["result"] is not None:
                        purpose[0] = "confirm"
                        confirmed = trial(b["result"])
                    n = b["result"]
                    summ.append({"case": case, "arm": arm, "workers": w, "ring": ring,
                                 "status": b["status"], "mbufs": n,
                                 "mib_elements": mib_elements(n) if n else None,
                                 "mib_pool": mib_pool(n, arm) if n else None,
                                 "largest_failed": b["lo"], "floor_mbufs": floor,
                                 "preflight_min": pmin, "upper": upper, "step": args.step,
                                 "steps": len(b["trials"]), "confirmed": confirmed})
    except (Failure, run.RunError, subprocess.TimeoutExpired) as e:
        error = f"{e}"  # the steps so far are written, then the run fails
    finally:
        shutil.rmtree(base, ignore_errors=True)
    label_modes(rows, args.mode_gap)
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    loads = [r[k] for r in rows for k in ("load1_start", "load1_end") if k in r]
    meta = {"command": shlex.join(["bench/min_pool.py"] + sys.argv[1:]), "arms": arms,
            "workers": workers, "rings": rings, "hold_s": args.hold, "warmup_s": args.warmup,
            "floor": args.floor, "step": args.step, "shift": args.shift,
            "shift_every_s": args.shift_every, "elt_bytes": ELT_BYTES,
            "memory": "2 MiB hugepages (--in-memory: memfd, shared with the peer)",
            "eal": eal_mem(run, max([r["mbufs"] for r in rows] or [0])),
            "machine": benchlib.machine_info(), "git": git,
            "started_utc": started, "load1_range": [min(loads), max(loads)] if loads else [0, 0],
            "ended_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "mode_reference": "per case, the steps' ticks/pkt",
            "stall_retries": args.stall_retries, "error": error}
    write(outdir, rows, summ, meta)
    print(summary_md(summ, meta))
    print(f"bench/min_pool.py: wrote {outdir}")
    if error:
        sys.exit(f"bench/min_pool.py: stopped by an error after {len(rows)} steps (written): "
                 f"{error}")
    if args.quick:
        problems = check_quick(rows, summ)
        if problems:
            sys.exit("bench/min_pool.py --quick: " + "; ".join(problems))


if __name__ == "__main__":
    main()
