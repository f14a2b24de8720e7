#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A DPDK application that keeps N mbufs, seen through the plugin (issue 32 item 3).

hold_mbufs loads libskbnf_mempool.so with -d (SKBNF_STRATEGY=headpool,track), makes a pool with
the skbnf ops and keeps N mbufs on worker lcore 1 until told to let go. Debian's
dpdk-telemetry.py asks the plugin's /skbnf/ages (dataplane/dpdk/plugin_telemetry.h); within
bounds, never by sleeping:
  - the site "application" core 1 holds exactly N objects, and its oldest one ages between two
    reads (a census is at most one per second per pool: the second read waits for a newer one);
  - after `release`, the application site holds 0 objects and nothing is in flight.
Usage: leak_plugin_test.py <hold_mbufs> <libskbnf_mempool.so>
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HOLD, PLUGIN = sys.argv[1], sys.argv[2]
N = 1000
TELEMETRY = "/usr/bin/dpdk-telemetry.py"


def fail(msg, *logs):
    print("FAIL: " + msg)
    for path in logs:
        if path and os.path.exists(path):
            with open(path, errors="replace") as f:
                print("---- " + path + "\n" + f.read()[-3000:])
    sys.exit(1)


def wait_for(what, pred, seconds, *logs):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    fail("not within %d s: %s" % (seconds, what), *logs)


def ages(prefix):
    """The plugin's /skbnf/ages reply (stdin not a terminal: one JSON reply per line)."""
    p = subprocess.run(["python3", TELEMETRY, "-f", prefix], input="/skbnf/ages\n",
                       capture_output=True, text=True, timeout=20)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line).get("/skbnf/ages")
    return None


def app_site(reply):
    """(pool facts, the application site on core 1 or None) of hold_mbufs' pool."""
    pool = (reply or {}).get("hold_pool")
    if not pool:
        return None, None
    for s in pool.get("sites", {}).values():
        if s["site"] == "application" and int(s["core"]) == 1:
            return pool, s
    return pool, None


def main():
    if not os.path.exists(TELEMETRY):
        fail(TELEMETRY + " missing (package dpdk)")
    t = tempfile.mkdtemp(prefix="skbnf-leak-plugin-", dir="/run")
    os.chmod(t, 0o700)
    # EAL refuses a plugin below a world-writable directory: load a copy from this private one.
    plugin = os.path.join(t, os.path.basename(PLUGIN))
    shutil.copy(PLUGIN, plugin)
    prefix = "skbnf-leak-plugin-%d" % os.getpid()
    log = os.path.join(t, "hold.log")
    env = dict(os.environ, SKBNF_STRATEGY="headpool,track")
    proc = subprocess.Popen(
        [HOLD, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", "--file-prefix=" + prefix,
         "-d", plugin, "--", str(N), t], env=env, stdout=open(log, "w"),
        stderr=subprocess.STDOUT)
    try:
        alive = lambda: proc.poll() is None or fail("hold_mbufs exited %s" % proc.returncode, log)
        wait_for("hold_mbufs holding %d mbufs" % N,
                 lambda: alive() and os.path.exists(os.path.join(t, "holding")), 30, log)
        wait_for("the telemetry socket", lambda: os.path.exists(
            "/var/run/dpdk/%s/dpdk_telemetry.v2" % prefix), 30, log)
        first = wait_for("/skbnf/ages: application core 1 holds %d" % N, lambda: (
            lambda ps: ps[1] if ps[1] and int(ps[1]["objects"]) == N else None)(
                app_site(ages(prefix))), 30, log)
        pool, _ = app_site(ages(prefix))
        if int(pool["tracking"]) != 1 or int(pool["in_flight"]) != N:
            fail("/skbnf/ages: tracking %s, in flight %s, want 1 and %d" % (
                pool["tracking"], pool["in_flight"], N))
        print("ok: /skbnf/ages: application core 1 holds %d objects (in flight %s of %s), oldest "
              "%s s" % (N, pool["in_flight"], pool["populated"], first["max_seconds"]))
        later = wait_for("the held mbufs ageing", lambda: (
            lambda ps: ps[1] if ps[1] and float(ps[1]["max_seconds"]) > float(
                first["max_seconds"]) and int(ps[1]["objects"]) == N else None)(
                    app_site(ages(prefix))), 30, log)
        print("ok: ageing: oldest %s s -> %s s, still %d objects" % (
            first["max_seconds"], later["max_seconds"], N))

        open(os.path.join(t, "release"), "w").close()
        wait_for("hold_mbufs released", lambda: alive() and os.path.exists(
            os.path.join(t, "released")), 30, log)

        def drained():
            pool, site = app_site(ages(prefix))
            if pool and int(pool["in_flight"]) == 0 and (site is None or int(
                    site["objects"]) == 0):
                return pool
            return None
        pool = wait_for("/skbnf/ages: nothing in flight after release", drained, 30, log)
        print("ok: released: in flight %s, the application site holds 0" % pool["in_flight"])

        open(os.path.join(t, "quit"), "w").close()
        rc = proc.wait(timeout=30)
        if rc != 0:
            fail("hold_mbufs exited %d" % rc, log)
        print("ok: hold_mbufs exited 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["rm", "-rf", t, "/var/run/dpdk/" + prefix])
    print("PASS")


if __name__ == "__main__":
    main()
