#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A DPDK application that keeps N mbufs, seen through the plugin (issue 32 item 3).

hold_mbufs loads libskbnf_mempool.so with -d (SKBNF_STRATEGY=headpool,track), makes a pool with
the skbnf ops and keeps N mbufs on worker lcore 1 until told to let go. Debian's
dpdk-telemetry.py asks the plugin's /skbnf/ages (dataplane/dpdk/plugin_telemetry.h); within
bounds, never by sleeping:
  - the site "application" core 1 holds exactly N objects, and its oldest one ages between two
    reads (a census is at most one per second per pool: the second read waits for a newer one);
  - deploy/skbnf-telemetry-exporter.py serves those ages as skbnfd's metrics, and a real
    Prometheus (Debian's) scraping it every second with the deployed SkbnfBuffersLeaking rules,
    their times divided by 30 (tests/support/leak_rules.py: 300 s -> 10 s, 10m -> 20s, 5m ->
    10s), fires the alert while the mbufs are held (older than 10 s: a step of N old objects on
    a target without RX ring figures);
  - after `release`, the application site holds 0 objects and nothing is in flight; in
    Prometheus the old-object count goes to 0 and the alert resolves.
Usage: leak_plugin_test.py <hold_mbufs> <libskbnf_mempool.so>
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from leak_rules import OLD, alerts, query, start_prometheus  # noqa: E402
from bounded import fail, wait_for  # noqa: E402

HOLD, PLUGIN = sys.argv[1], sys.argv[2]
N = 1000
TELEMETRY = "/usr/bin/dpdk-telemetry.py"
EXPORTER = os.path.join(ROOT, "deploy", "skbnf-telemetry-exporter.py")
RULES = os.path.join(ROOT, "deploy", "prometheus", "skbnf-rules.yaml")


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


def old_in_prometheus(prom):
    """instance:skbnf_pool_inflight_objects_older_than_300s:sum (scaled: older than OLD s)."""
    res = query(prom, "instance:skbnf_pool_inflight_objects_older_than_300s:sum")
    return None if not res else float(res[0]["value"][1])


def start_exporter(t, prefix):
    """The exporter on a free loopback port: (process, port, log path)."""
    log = os.path.join(t, "exporter.log")
    p = subprocess.Popen(["/usr/bin/python3", EXPORTER, "--listen", "127.0.0.1:0",
                          "--file-prefix", prefix], stdout=subprocess.PIPE,
                         stderr=open(log, "w"), text=True)
    line = p.stdout.readline()  # "serving http://127.0.0.1:PORT/metrics from ..."
    if not line.startswith("serving http://"):
        fail("exporter: %r" % line, log)
    return p, int(line.split(":")[2].split("/")[0]), log


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
    procs, prom = [], None
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

        exporter, eport, elog = start_exporter(t, prefix)
        procs.append(exporter)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % eport, timeout=20) as r:
            text = r.read().decode()
        want = ('skbnf_pool_inflight_age_seconds_count{pool="hold_pool",site="application",'
                'core="1",port=""} %d' % N)
        if want not in text or 'skbnf_pool_tracking{pool="hold_pool"} 1' not in text:
            fail("exporter's /metrics lacks %r:\n%s" % (want, text), elog)
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=30)
        if lint.returncode != 0:
            fail("promtool check metrics on the exporter's /metrics: " + lint.stdout + lint.stderr)
        print("ok: exporter (promtool check metrics clean): " + want)
        prom = start_prometheus(t, RULES, "skbnf-plugin", eport)
        wait_for("Prometheus up", lambda: prom.alive() and alerts(prom) is not None, 30,
                 prom.log_path)
        n_old = wait_for("%d objects older than %d s in Prometheus" % (N, OLD),
                         lambda: old_in_prometheus(prom) == N and N, 60, prom.log_path, elog)
        print("ok: Prometheus: %d objects older than %d s (the rules' 300 s / 30)" % (n_old, OLD))
        wait_for("SkbnfBuffersLeaking firing in Prometheus",
                 lambda: "firing" in (alerts(prom) or ()), 60, prom.log_path, elog)
        print("ok: SkbnfBuffersLeaking fires while hold_mbufs holds %d mbufs" % N)

        open(os.path.join(t, "release"), "w").close()
        wait_for("hold_mbufs released", lambda: alive() and os.path.exists(
            os.path.join(t, "released")), 30, log)

        def drained():
            pool, site = app_site(ages(prefix))
            # The site stays listed (a standing site) and reads 0.
            if pool and int(pool["in_flight"]) == 0 and site and int(site["objects"]) == 0:
                return pool
            return None
        pool = wait_for("/skbnf/ages: nothing in flight after release", drained, 30, log)
        print("ok: released: in flight %s, the application site holds 0" % pool["in_flight"])
        wait_for("no old object in Prometheus", lambda: old_in_prometheus(prom) == 0, 30,
                 prom.log_path, elog)
        wait_for("SkbnfBuffersLeaking resolved", lambda: alerts(prom) is not None and (
            "firing" not in alerts(prom)), 60, prom.log_path)
        print("ok: Prometheus: 0 objects older than %d s; SkbnfBuffersLeaking resolved" % OLD)

        open(os.path.join(t, "quit"), "w").close()
        rc = proc.wait(timeout=30)
        if rc != 0:
            fail("hold_mbufs exited %d" % rc, log)
        print("ok: hold_mbufs exited 0")
    finally:
        for p in [proc] + procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if prom is not None:
            prom.stop()
        subprocess.run(["rm", "-rf", t, "/var/run/dpdk/" + prefix])
    print("PASS")


if __name__ == "__main__":
    main()
