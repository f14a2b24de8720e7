#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd's DPDK telemetry, asked with Debian's own client, dpdk-telemetry.py (issue 32 item 5).

skbnfd runs io forwarding between two net_null ports with telemetry on (DPDK 22.11's default:
its socket is <runtime dir>/dpdk_telemetry.v2, the runtime dir /var/run/dpdk/<file-prefix> for
root). The client is /usr/bin/dpdk-telemetry.py (package dpdk, usertools/dpdk-telemetry.py): with
stdin not a terminal it connects to get_dpdk_runtime_dir(-f PREFIX)/dpdk_telemetry.v2, reads the
{"version","pid","max_output_len"} greeting, sends "/" for the command list, then sends each
stdin line starting with '/' and prints each reply as one line of JSON ({"<cmd>": <data>}). A
command's parameters follow a comma (lib/telemetry/telemetry.c client_handler: strtok on ",").
A callback's error is answered {"<cmd>": null}.

Checks, each able to fail:
  - "/" lists /skbnf/info, /skbnf/strategy, /skbnf/stats, /skbnf/buffers, /skbnf/latency (its
    figures: integration.latency_skbnfd).
  - /skbnf/info agrees with gRPC's GetInfo (skbnfctl --json info): pool name, populated, mode,
    workers; multi_process 0 with a note saying how to enable it (--no-shconf here); its
    mempool_ops (this process's ops table) ends with skbnf, the index /mempool/info gives the
    pool (registered after EAL's drivers: server/telemetry/README.md, "Mempool ops indices").
  - /skbnf/stats: rx_packets grows while traffic flows; /skbnf/stats,CORE has the worker's ports;
    a core that is no worker and a parameter that is no number answer null.
  - /skbnf/strategy follows a swap made over gRPC (strategy, epoch + 1, swaps_ok + 1).
  - with the worker parked (skbnfctl worker pause): /skbnf/buffers' places (store, layers,
    depots, in flight) sum to populated and equal the audit's figures (skbnfctl --json audit)
    exactly; DPDK's rte_mempool_avail_count (dpdk_avail_count) equals skbnf's available;
    DPDK's /mempool/info has the pool with size == populated_size == populated and
    cache_size 0 on magazine (DPDK's lcore cache off), 1 on lcache+magazine (DPDK's caches host
    skbnf's lcache layer, README.md); the same again after a swap to lcache; DPDK's /ethdev/stats,P
    ipackets/opackets equal skbnfd's per-port counters (/skbnf/stats,CORE) exactly.
Usage: telemetry_skbnfd_test.py SKBNFD SKBNFCTL
"""
import json
import os
import shutil
import subprocess
import sys
import time

SKBNFD, SKBNFCTL = sys.argv[1], sys.argv[2]
PREFIX = f"skbnf-tel-{os.getpid()}"
CLIENT = "/usr/bin/dpdk-telemetry.py"
LCACHE = "lcache:size=128+magazine"  # canonical text (256 is the default size: not printed)


def fail(msg, log=None):
    print(f"FAIL: {msg}")
    if log:
        with open(log, encoding="utf-8", errors="replace") as f:
            print(f.read()[-4000:])
    sys.exit(1)


def telemetry(*cmds):
    """Sends `cmds` through dpdk-telemetry.py; returns {cmd: data} (the last reply per cmd)."""
    out = subprocess.run([sys.executable, CLIENT, "-f", PREFIX], input="\n".join(cmds) + "\n",
                         capture_output=True, text=True, timeout=30)
    replies = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            replies.update(json.loads(line))
    missing = [c.split(",")[0] for c in cmds if c.split(",")[0] not in replies]
    if missing:
        fail(f"dpdk-telemetry.py gave no reply to {missing}: {out.stdout!r} {out.stderr!r}")
    return replies


def ctl(addr, *args):
    out = subprocess.run([SKBNFCTL, f"--addr={addr}", *args], capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0:
        fail(f"skbnfctl {' '.join(args)}: rc {out.returncode}: {out.stdout} {out.stderr}")
    return out.stdout


def wait_for(what, pred, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    fail(f"timed out waiting for {what}")


def main():
    if not os.access(CLIENT, os.X_OK):
        fail(f"{CLIENT} missing: deploy/deps.sh installs package dpdk")
    tmp = f"/run/{PREFIX}"
    os.makedirs(tmp, exist_ok=True)
    log = os.path.join(tmp, "skbnfd.log")
    ready = os.path.join(tmp, "ready.json")
    proc = subprocess.Popen(
        [SKBNFD, "--mode=io", "--listen=127.0.0.1:0", "--loopback-role=admin", "--metrics-addr=127.0.0.1:0", "--stats=0",
         f"--ready-file={ready}", "--", "--lcores=0@0,1@1", "--no-huge", "-m", "512", "--no-pci",
         "--no-shconf", f"--file-prefix={PREFIX}", "--vdev=net_null0", "--vdev=net_null1"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        def started():
            if proc.poll() is not None:
                fail(f"skbnfd exited {proc.returncode}", log)
            return os.path.exists(ready) and os.path.getsize(ready) > 0
        wait_for("skbnfd's ready file", started)
        addr = json.load(open(ready))["grpc"]
        check(addr, log)
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(f"/var/run/dpdk/{PREFIX}", ignore_errors=True)
    if rc != 0:
        fail(f"skbnfd exited {rc} after SIGTERM")
    print("ok: skbnfd exited 0")


def check(addr, log):
    r = telemetry("/", "/skbnf/info")
    cmds = set(r["/"])
    for c in ("/skbnf/info", "/skbnf/strategy", "/skbnf/stats", "/skbnf/buffers",
              "/skbnf/latency", "/mempool/info", "/ethdev/stats"):
        if c not in cmds:
            fail(f"{c} not in the command list {sorted(cmds)}")
    info, grpc_info = r["/skbnf/info"], json.loads(ctl(addr, "--json", "info"))
    pool = info["pool"]
    if pool["name"] != grpc_info["pool"]["name"] or pool["ops"] != "skbnf":
        fail(f"/skbnf/info pool {pool} vs GetInfo {grpc_info['pool']}")
    if pool["populated"] != int(grpc_info["pool"]["populated"]):
        fail(f"populated {pool['populated']} vs GetInfo {grpc_info['pool']['populated']}")
    if info["mode"] != "io" or info["worker_lcores"] != [1] or info["ports"] != 2:
        fail(f"/skbnf/info: {info}")
    if info["multi_process"] != 0 or "--no-shconf" not in info.get("multi_process_note", ""):
        fail(f"/skbnf/info multi_process without a note naming --no-shconf: {info}")
    ops = info["mempool_ops"]
    if ops[-1] != "skbnf" or ops.count("skbnf") != 1 or "ring_mp_mc" not in ops:
        fail(f"/skbnf/info mempool_ops {ops}: want DPDK's ops first and skbnf once, last")
    mi = telemetry(f"/mempool/info,{pool['name']}")["/mempool/info"]
    if mi["ops_index"] != len(ops) - 1:
        fail(f"/mempool/info ops_index {mi['ops_index']} is not skbnf's {len(ops) - 1}")
    print(f"ok: skbnf's mempool ops are registered last ({len(ops) - 1}, after DPDK's "
          f"{len(ops) - 1}), the pool's ops_index")
    print(f"ok: command list has /skbnf/{{info,strategy,stats,buffers,latency}}; "
          f"/skbnf/info == GetInfo (pool {pool['name']}, {pool['populated']} objects)")

    rx0 = telemetry("/skbnf/stats")["/skbnf/stats"]["rx_packets"]
    wait_for("rx_packets to grow",
             lambda: telemetry("/skbnf/stats")["/skbnf/stats"]["rx_packets"] > rx0)
    r1 = telemetry("/skbnf/stats,1")["/skbnf/stats"]
    if r1["core"] != 1 or sorted(r1["ports"]) != ["0", "1"] or "magazine" not in r1["layers"]:
        fail(f"/skbnf/stats,1: {r1}")
    for bad in ("7", "x"):
        if telemetry(f"/skbnf/stats,{bad}")["/skbnf/stats"] is not None:
            fail(f"/skbnf/stats,{bad} (no such worker) did not answer null")
    print(f"ok: /skbnf/stats rx_packets grows ({rx0} ->), /skbnf/stats,1 has ports 0 and 1; "
          "/skbnf/stats,7 and ,x answer null")

    ctl(addr, "worker", "pause", "1")
    check_parked(addr, dpdk_cache_size=0)
    ctl(addr, "worker", "resume", "1")

    before = telemetry("/skbnf/strategy")["/skbnf/strategy"]
    ctl(addr, "strategy", "set", LCACHE)
    after = telemetry("/skbnf/strategy")["/skbnf/strategy"]
    if (after["strategy"] != LCACHE or after["epoch"] != before["epoch"] + 1
            or after["swaps_ok"] != before["swaps_ok"] + 1 or after["swappable"] != 1):
        fail(f"/skbnf/strategy after a swap: {before} -> {after}")
    print(f"ok: /skbnf/strategy follows a gRPC swap: {before['strategy']} epoch {before['epoch']}"
          f" -> {after['strategy']} epoch {after['epoch']}")

    # Traffic on the new strategy, then parked again: now DPDK's lcore caches host the lcache
    # layer (skbnf_mempool.h) and /mempool/info says cache_size 1 (README.md, "/mempool/info").
    rx0 = telemetry("/skbnf/stats")["/skbnf/stats"]["rx_packets"]
    wait_for("rx_packets to grow after the swap",
             lambda: telemetry("/skbnf/stats")["/skbnf/stats"]["rx_packets"] > rx0)
    ctl(addr, "worker", "pause", "1")
    check_parked(addr, dpdk_cache_size=1)
    ctl(addr, "worker", "resume", "1")


def check_parked(addr, dpdk_cache_size):
    audit = json.loads(ctl(addr, "--json", "audit"))
    r = telemetry("/skbnf/buffers", "/skbnf/stats,1", "/mempool/list")
    b = r["/skbnf/buffers"]
    places = b["in_store"] + b["in_layers"] + b["in_depots"] + b["in_flight"]
    if places != b["populated"] or b["populated"] != int(audit["populated"]):
        fail(f"/skbnf/buffers places sum {places} vs populated {b['populated']} / audit {audit}")
    layers = {x["layer"].removeprefix("LAYER_").lower(): int(x["objects"])
              for x in audit["in_layers"]}
    if (b["in_store"] != int(audit["in_store"]) or b["in_depots"] != int(audit["in_depots"])
            or b["in_flight"] != int(audit["in_flight"]) or b["layers"] != layers):
        fail(f"/skbnf/buffers {b} != audit {audit}")
    if b["dpdk_avail_count"] != b["available"]:
        fail(f"rte_mempool_avail_count {b['dpdk_avail_count']} != skbnf's {b['available']}")
    if b["pool"] not in r["/mempool/list"]:
        fail(f"{b['pool']} not in /mempool/list {r['/mempool/list']}")
    mi = telemetry(f"/mempool/info,{b['pool']}")["/mempool/info"]
    if (not (mi["size"] == mi["populated_size"] == b["populated"])
            or mi["cache_size"] != dpdk_cache_size):
        fail(f"/mempool/info {mi} vs populated {b['populated']} (want size == populated_size, "
             f"cache_size {dpdk_cache_size})")
    core = r["/skbnf/stats"]
    for p in ("0", "1"):
        eth = telemetry(f"/ethdev/stats,{p}")["/ethdev/stats"]
        ours = core["ports"][p]
        if eth["ipackets"] != ours["rx_packets"] or eth["opackets"] != ours["tx_packets"]:
            fail(f"/ethdev/stats,{p} {eth['ipackets']}/{eth['opackets']} != skbnfd's port {p} "
                 f"{ours['rx_packets']}/{ours['tx_packets']}")
    check_places(addr, b, audit)
    print(f"ok: parked: /skbnf/buffers == audit (store {b['in_store']}, layers {b['layers']}, "
          f"depots {b['in_depots']}, in flight {b['in_flight']}; sum {places} == populated); "
          f"rte_mempool_avail_count {b['dpdk_avail_count']} == available; /mempool/info size "
          f"{mi['size']} cache_size {dpdk_cache_size}; /ethdev/stats == skbnfd's port counters")


def check_places(addr, b, audit):
    """Where every buffer is (issue 32 item 1), the worker parked: the audit's places (AuditPool
    .buffers, exact) add up to its in_flight with nothing unaccounted and nothing in the worker's
    hands; /skbnf/buffers (read through dpdk-telemetry.py) and `skbnfctl buffers --exact` say
    the same. net_null holds nothing in its rings (its RX allocates what it returns, its TX
    frees at once: drivers/net/null/rte_eth_null.c eth_null_rx/eth_null_tx)."""
    ab = audit.get("buffers")
    if ab is None or not ab["exact"]:
        fail(f"AuditPool has no exact buffers: {audit}")
    rings = sum(int(p["rx_ring"]) + int(p["tx_ring"]) for p in ab["ports"])
    hands = sum(int(c["in_hands"]) for c in ab["cores"])
    if (int(ab["unaccounted"]) != 0 or hands != 0 or len(ab["ports"]) != 2
            or rings + hands + int(ab["other_threads"]) != int(audit["in_flight"])):
        fail(f"audit's places do not add up to in_flight {audit['in_flight']}: {ab}")
    if b["unaccounted"] != 0 or any(v != 0 for v in b["in_hands"].values()) or \
            sorted(b["ports"]) != ["0", "1"] or b["other_threads"] != int(ab["other_threads"]):
        fail(f"/skbnf/buffers' places {b} vs the audit's {ab}")
    ex = json.loads(ctl(addr, "--json", "buffers", "--exact"))
    if not ex["exact"] or int(ex["unaccounted"]) != 0 or int(ex["populated"]) != b["populated"]:
        fail(f"skbnfctl buffers --exact: {ex}")
    text = ctl(addr, "buffers")
    for want in ("read while the workers run", "rx ring", "tx ring", "worker's hands",
                 "other threads", "unaccounted"):
        if want not in text:
            fail(f"skbnfctl buffers: no '{want}' in\n{text}")
    print(f"ok: parked: places exact (rings {rings}, hands 0, other threads "
          f"{ab['other_threads']}, unaccounted 0) in AuditPool, /skbnf/buffers and skbnfctl buffers")


if __name__ == "__main__":
    main()
