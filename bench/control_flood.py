#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Control-plane flood (issue 31 item 3): can a loopback client flood take skbnfd's control plane,
or its forwarding, away from an authorised operator?

skbnfd runs its demo (loopback TCP = admin there, so the flood is *authorised*: the worst case
for the limits; with --unauthorised it runs with --loopback-role=none and the flood is refused
at the door) plus a unix socket the operator uses (its own identity). For FLOOD_S seconds,
CONNS loopback connections (each its own HTTP/2 connection) keep UNARY calls each in flight
(GetStats, ListRoutes, SetStrategy{validate_only}, round robin) and one WatchStats stream.
Meanwhile the operator, a process of its own, runs `skbnfctl info` over the unix socket every
0.5 s (its latency) and samples skbnfd's threads and RSS (/proc/PID/status) and the worker's
forwarding rate (`skbnfctl stats --json`, rx_pps, before and during). The client is python3-grpcio 1.51
(grpc.aio), raw bytes on the wire (the requests are encoded by hand: proto field numbers of
proto/skbnf/v1/control.proto), so no generated code is needed.

Prints one JSON object: refusals by code, the operator's latencies (max, p50), threads and RSS
(before, max during, after), rx_pps before/during and their ratio, and whether skbnfd is
healthy after (a GetInfo over the unix socket and readiness SERVING). The acceptance (issue 31):
operator max <= 2 s, rx_pps during >= 0.8 x before, threads and memory bounded, healthy after,
refusals RESOURCE_EXHAUSTED (or PERMISSION_DENIED with --unauthorised).

Usage: bench/control_flood.py BUILD_DIR [--conns=300] [--unary=8] [--seconds=20] [--unauthorised]
"""

import argparse
import asyncio
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import grpc.aio

METHOD = "/skbnf.v1.Control/"
# SetStrategyRequest{spec = 1: "headpool", validate_only = 3: true}
VALIDATE = b"\x0a\x08headpool\x18\x01"


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Threads", "VmRSS"):
                out[k] = int(v.split()[0])
    return out  # VmRSS in kB


def ctl(build, addr, *args):
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(build, "server/skbnfctl"), "--addr=" + addr, "--timeout=10",
                        *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def rx_pps(build, sock):
    code, out, err, _ = ctl(build, "unix:" + sock, "stats", "--json")
    if code != 0:
        return None
    s = json.loads(out)
    return sum(c.get("rx_pps", 0.0) for c in s.get("cores", []))


ALL_CALLS = [("GetStats", b""), ("ListRoutes", b""), ("SetStrategy", VALIDATE)]


async def flood(target, conns, unary, seconds, codes, calls=ALL_CALLS, streams=True):
    stop = time.monotonic() + seconds

    async def unary_loop(ch, i):
        n = 0
        while time.monotonic() < stop:
            name, req = calls[(i + n) % len(calls)]
            n += 1
            try:
                await ch.unary_unary(METHOD + name, request_serializer=None,
                                     response_deserializer=None)(req, timeout=5)
                codes["OK"] += 1
            except grpc.aio.AioRpcError as e:
                codes[e.code().name] += 1
                await asyncio.sleep(0.01)

    async def stream_loop(ch):
        while time.monotonic() < stop:
            try:
                call = ch.unary_stream(METHOD + "WatchStats", request_serializer=None,
                                       response_deserializer=None)(b"", timeout=stop - time.monotonic() + 1)
                async for _ in call:
                    codes["stream_msg"] += 1
            except grpc.aio.AioRpcError as e:
                codes["stream_" + e.code().name] += 1
                await asyncio.sleep(0.2)

    chans = [grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1),
                                                         ("grpc.channel_id", i)])
             for i in range(conns)]
    tasks = []
    for i, ch in enumerate(chans):
        if streams:
            tasks.append(stream_loop(ch))
        tasks += [unary_loop(ch, i * unary + j) for j in range(unary)]
    await asyncio.gather(*tasks, return_exceptions=True)
    for ch in chans:
        await ch.close()


def thread_cpus(pid):
    """{thread name: allowed CPU list} of every thread of pid."""
    out = collections.defaultdict(set)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            for line in open(f"/proc/{pid}/task/{tid}/status"):
                if line.startswith("Cpus_allowed_list:"):
                    out[line.split(":", 1)[1].strip()].add(comm)
        except OSError:
            pass
    return {k: sorted(v) for k, v in out.items()}


def operator_loop(build, spec):
    """The operator (a process of its own until SIGTERM): every 0.5 s skbnfd's /proc status,
    a timed `skbnfctl info` and the forwarding rate over the unix socket, one JSON line each."""
    sock, pid, out = spec.split(",")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(out, "w") as f:
        while not stop.is_set():
            status = proc_status(int(pid))
            code, _, _, dt = ctl(build, "unix:" + sock, "info")
            f.write(json.dumps({"status": status, "info_ok": code == 0, "info_s": dt,
                                "rx_pps": rx_pps(build, sock)}) + "\n")
            f.flush()
            stop.wait(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--operator-loop", default="", help=argparse.SUPPRESS)
    ap.add_argument("--conns", type=int, default=300)
    ap.add_argument("--unary", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--unauthorised", action="store_true")
    ap.add_argument("--only", default="", help="one call only (GetStats, ListRoutes, SetStrategy, "
                    "WatchStats): which one costs forwarding")
    ap.add_argument("--client-cpu", type=int, default=0,
                    help="CPU the flood client and skbnfctl run on: the demo's main lcore, never "
                         "its worker's (lcore 1): a client on the worker's CPU would measure the "
                         "client, not skbnfd")
    a = ap.parse_args()
    if a.operator_loop:
        return operator_loop(a.build, a.operator_loop)
    os.sched_setaffinity(0, {a.client_cpu})  # inherited by skbnfctl; EAL pins skbnfd's lcores
    d = tempfile.mkdtemp(prefix="skbnf-flood-")
    sock, ready = os.path.join(d, "op.sock"), os.path.join(d, "ready.json")
    args = [os.path.join(a.build, "server/skbnfd"), "--stats=0", "--metrics-addr=off",
            f"--listen=127.0.0.1:0,unix:{sock}", "--ready-file=" + ready]
    if a.unauthorised:
        args.append("--loopback-role=none")
    err = open(os.path.join(d, "skbnfd.err"), "w")
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    for _ in range(600):
        if os.path.exists(ready):
            break
        time.sleep(0.05)
    tcp = json.load(open(ready))["grpc"]
    time.sleep(2)  # the stats window fills
    before_pps = statistics.median([rx_pps(a.build, sock) for _ in range(3)])
    before = proc_status(p.pid)

    codes = collections.Counter()
    # The operator is a process of its own (as a real one is): timed inside the flood's process,
    # its calls would wait for the flood's event loop to let go of the GIL, and the figure would
    # be the client's, not skbnfd's.
    op_out = os.path.join(d, "operator.jsonl")
    op = subprocess.Popen([sys.executable, os.path.abspath(__file__), a.build, "--operator-loop",
                           f"{sock},{p.pid},{op_out}"])
    cpus_during = {}

    def snap():
        time.sleep(a.seconds / 2)
        cpus_during.update(thread_cpus(p.pid))
    threading.Thread(target=snap, daemon=True).start()
    t0 = time.monotonic()
    calls = [c for c in ALL_CALLS if not a.only or c[0] == a.only]
    asyncio.run(flood(tcp, a.conns, a.unary if calls else 0, a.seconds, codes, calls or ALL_CALLS,
                      streams=not a.only or a.only == "WatchStats"))
    flood_s = time.monotonic() - t0
    op.terminate()
    op.wait(timeout=60)
    rows = [json.loads(line) for line in open(op_out)]
    samples = [r["status"] for r in rows]
    lat = [r["info_s"] if r["info_ok"] else float("inf") for r in rows]
    during_pps = [r["rx_pps"] for r in rows if r["rx_pps"] is not None]
    time.sleep(2)
    after = proc_status(p.pid)
    code, _, _, _ = ctl(a.build, "unix:" + sock, "info")
    health = subprocess.run([os.path.join(a.build, "server/skbnf_health"), "--addr=" + tcp],
                            capture_output=True, text=True) if os.path.exists(
        os.path.join(a.build, "server/skbnf_health")) else None
    p.terminate()
    rc = p.wait(timeout=30)
    during = statistics.median(during_pps) if during_pps else 0.0
    res = {
        "conns": a.conns, "unary_in_flight_per_conn": a.unary, "flood_s": round(flood_s, 1),
        "authorised_flood": not a.unauthorised,
        "results": dict(codes),
        "operator_info_s": {"max": round(max(lat), 3), "p50": round(statistics.median(lat), 3),
                            "n": len(lat), "slowest": [round(x, 3) for x in sorted(lat)[-3:]]},
        "threads": {"before": before["Threads"], "max": max(s["Threads"] for s in samples),
                    "after": after["Threads"]},
        "rss_mib": {"before": round(before["VmRSS"] / 1024, 1),
                    "max": round(max(s["VmRSS"] for s in samples) / 1024, 1),
                    "after": round(after["VmRSS"] / 1024, 1)},
        "rx_pps": {"before": round(before_pps), "during_median": round(during),
                   "ratio": round(during / before_pps, 3) if before_pps else None},
        "skbnfd_threads_by_allowed_cpus_mid_flood": cpus_during,
        "healthy_after": code == 0 and (health is None or health.returncode == 0),
        "skbnfd_exit": rc,
    }
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
