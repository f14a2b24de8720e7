#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.dashboard: the Grafana dashboard's queries work against a real skbnfd and Prometheus.

Starts skbnfd (the demo: l3 over 10,000 routes, net_pcap -> net_null, loopback ports the kernel
picks) and Debian's Prometheus on loopback with deploy/prometheus/prometheus.yml (compose's
configuration: job skbnf, skbnf-rules.yaml loaded; here 1 s scrapes and this daemon), swaps the strategy a few times with skbnfctl, runs a short tune, swaps to a
strategy with the `track` modifier last (the in-flight age histogram exists only while it is in
force) and waits until Prometheus has scraped it (skbnf_pool_tracking 1 and
skbnf_pool_inflight_age_seconds_count there), then:
  - runs EVERY query of deploy/grafana/skbnf-dashboard.json (panel targets, variable queries,
    annotations) through the HTTP API, as an instant and as a range query: each must parse and
    return at least one series (the strategy-change annotation must show the swaps);
  - checks that Prometheus loaded every rule and evaluates it without error;
  - renders the dashboard to a PNG (deploy/grafana/render_dashboard.py) and checks every
    panel drew data. The PNG is left in $SKBNF_ARTIFACT_DIR (default: the current directory,
    ctest's build/tests/deploy) as skbnf-dashboard.png.
Environment: SKBNFD, SKBNFCTL (ctest sets both), PROMETHEUS (default: `prometheus` on PATH).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "deploy", "grafana"))
import render_dashboard as rd  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from prometheus_server import PROMETHEUS, PrometheusServer  # noqa: E402

DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "skbnf-dashboard.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "skbnf-rules.yaml")
PROM_CONFIG = os.path.join(ROOT, "deploy", "prometheus", "prometheus.yml")
SKBNFD = os.environ.get("SKBNFD", "")
SKBNFCTL = os.environ.get("SKBNFCTL", "")
SCRAPE_S = 1
RATE_INTERVAL = "4s"  # Grafana's $__rate_interval is >= 4 x the scrape interval
# Swapped to in this order. The last carries `track`: skbnf_pool_inflight_age_seconds (the
# dashboard's buffer-age panels, SkbnfBuffersLeaking's recording rule) exists only while the
# strategy in force tracks. It is set after the tune, so it is the strategy in force when the
# queries run.
STRATEGIES = ["recycle+magazine", "headpool", "magazine:size=32,prefetch",
              "magazine:size=32,track"]
K8S_LABELS = {"namespace": "net", "pod": "nf-skbnf-x7k2p", "node": "worker-3"}


def stop(proc, timeout=30):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("SKBNFD", SKBNFD), ("SKBNFCTL", SKBNFCTL), ("PROMETHEUS", PROMETHEUS)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s is not an executable: %r" % (name, path))
        cls.dir = tempfile.mkdtemp(prefix="skbnf-dashboard-")
        ready = os.path.join(cls.dir, "ready.json")
        cls.d_log = open(os.path.join(cls.dir, "skbnfd.log"), "w+")
        cls.daemon = subprocess.Popen(
            [SKBNFD, "--stats=0", "--listen=127.0.0.1:0", "--loopback-role=admin", "--metrics-addr=127.0.0.1:0",
             "--ready-file=" + ready], stdout=cls.d_log, stderr=subprocess.STDOUT)
        for _ in range(3000):
            if os.path.exists(ready):
                break
            if cls.daemon.poll() is not None:
                break
            time.sleep(0.01)
        if not os.path.exists(ready):
            stop(cls.daemon)
            cls.d_log.seek(0)
            raise RuntimeError("skbnfd did not start:\n" + cls.d_log.read())
        with open(ready) as f:
            r = json.load(f)
        cls.grpc, metrics_port = r["grpc"], r["metrics_port"]

        # deploy/compose.yaml's Prometheus configuration, pointed at this daemon and the rules
        # in the repository, scraping every second.
        with open(PROM_CONFIG) as f:
            cfg = yaml.safe_load(f)
        cfg["global"].update(scrape_interval="%ds" % SCRAPE_S,
                             evaluation_interval="%ds" % SCRAPE_S)
        cfg["rule_files"] = [RULES]
        # The labels the chart's ServiceMonitor attaches (namespace, pod, node), as Kubernetes
        # service discovery would give them: the dashboard's variables list them.
        cfg["scrape_configs"][0]["static_configs"] = [
            {"targets": ["127.0.0.1:%d" % metrics_port], "labels": K8S_LABELS}]
        cls.server = PrometheusServer(cls.dir, yaml.safe_dump(cfg))
        cls.prom = rd.Prometheus(cls.server.api)
        cls.started = time.time()
        try:
            cls._wait(lambda: cls.prom.query('up{job="skbnf"} == 1')["result"], "first scrape")
            # Strategy swaps through the API, a few scrapes apart, so the swap counters, the
            # latency histogram and the strategy-change annotation all have data.
            for spec in STRATEGIES[:-1]:
                time.sleep(2.5 * SCRAPE_S)  # each strategy seen by two scrapes
                cls._set_strategy(spec)
            cls._wait(lambda: cls.prom.query(
                'skbnf_strategy_epoch >= %d' % len(STRATEGIES))["result"], "swaps scraped")
            # One short live tune (a dry run: nothing stays changed) for the tune annotations.
            cls.tune_start = time.time()
            p = subprocess.run([SKBNFCTL, "--addr=" + cls.grpc, "strategy", "tune", "headpool",
                                "--dwell=1s", "--settle=100ms", "--rounds=1", "--dry-run",
                                "--quiesce-timeout-ms=5000"],
                               capture_output=True, text=True, timeout=120)
            cls.tune_end = time.time()
            if p.returncode != 0:
                raise RuntimeError("skbnfctl strategy tune: %s%s" % (p.stdout, p.stderr))
            cls._wait(lambda: cls.prom.query(
                'skbnf_tune_last_end_timestamp_seconds > 0')["result"], "tune scraped")
            # The tracked strategy last: its census (at most every 10 s) makes the age
            # histogram, which the buffer-age panels and the rules need.
            tracked = STRATEGIES[-1]
            cls._set_strategy(tracked)
            cls._wait(lambda: cls.prom.query('skbnf_pool_tracking{job="skbnf"} == 1')["result"],
                      "skbnf_pool_tracking == 1 after 'strategy set %s'" % tracked)
            cls._wait(lambda: cls.prom.query(
                'skbnf_pool_inflight_age_seconds_count{job="skbnf"}')["result"],
                "skbnf_pool_inflight_age_seconds_count after 'strategy set %s' (the census runs "
                "at most every 10 s while the strategy tracks)" % tracked)
            time.sleep(4 * SCRAPE_S)  # a full rate window after the last swap
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def _set_strategy(cls, spec):
        p = subprocess.run([SKBNFCTL, "--addr=" + cls.grpc, "strategy", "set", spec],
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("skbnfctl strategy set %s: %s%s" % (spec, p.stdout, p.stderr))

    @classmethod
    def _wait(cls, fn, what, seconds=60):
        deadline = time.time() + seconds  # guards a hang only
        while time.time() < deadline:
            if not cls.server.alive():
                raise RuntimeError("prometheus exited:\n" + cls.server.log_text())
            try:
                if fn():
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError("timed out waiting for " + what)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        code = stop(cls.daemon)
        cls.d_log.close()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if code != 0:
            raise RuntimeError("skbnfd exited with %s" % code)

    def setUp(self):
        with open(DASHBOARD) as f:
            self.dash = json.load(f)

    def test_every_query_parses_and_returns_data(self):
        qs = rd.queries(self.dash)
        panel_targets = sum(len(p.get("targets", [])) for p in rd.panels(self.dash))
        self.assertEqual(len([q for q in qs if q[0] == "panel"]), panel_targets)
        self.assertGreaterEqual(panel_targets, 20)
        now = time.time()
        for kind, name, expr, _ in qs:
            e = rd.expand(expr, rd.all_values(self.dash), rate_interval=RATE_INTERVAL,
                          interval="1s", range_s=60)
            with self.subTest(kind=kind, name=name):
                self.assertNotIn("$", e, "unexpanded variable")
                if kind == "annotation":
                    # Grafana evaluates an annotation over the dashboard's time range: the
                    # tune's marks lie in the past (test_tune_annotations_mark_the_tune)
                    rng = self.prom.query_range(e, self.started, now, 1)
                    self.assertTrue(rng["result"], "%s %r: range query returned nothing: %s"
                                    % (kind, name, e))
                    continue
                inst = self.prom.query(e, now)
                rng = self.prom.query_range(e, now - 10, now, 1)
                self.assertTrue(inst["result"], "%s %r: instant query returned nothing: %s"
                                % (kind, name, e))
                self.assertTrue(rng["result"], "%s %r: range query returned nothing: %s"
                                % (kind, name, e))

    def test_strategy_annotation_marks_the_swaps(self):
        (ann,) = [q for q in rd.queries(self.dash)
                  if q[0] == "annotation" and q[1] == "Strategy changes"]
        e = rd.expand(ann[2], rd.all_values(self.dash))
        now = time.time()
        r = self.prom.query_range(e, self.started, now, 1)["result"]
        specs = {s["metric"]["spec"] for s in r}
        # every strategy set through the API shows up as an annotation with its spec
        for spec in STRATEGIES:
            self.assertTrue(any(spec.split(":")[0] in s for s in specs), (spec, specs))
        self.assertTrue(any("track" in s for s in specs), ("the tracked strategy", specs))

    def test_tune_annotations_mark_the_tune(self):
        anns = {q[1]: rd.expand(q[2], rd.all_values(self.dash))
                for q in rd.queries(self.dash) if q[0] == "annotation"}
        now = time.time()
        running = self.prom.query_range(anns["Strategy tunes"], self.started, now, 1)["result"]
        self.assertTrue(running, "no tune window marked")
        # the window lies inside the tune: marked samples only while it ran
        stamps = [float(t) for s in running for t, _ in s["values"]]
        self.assertLessEqual(min(stamps), self.tune_end + SCRAPE_S)
        self.assertGreaterEqual(max(stamps), self.tune_start - SCRAPE_S)
        results = self.prom.query_range(anns["Strategy tune results"], self.started, now,
                                        1)["result"]
        outcomes = {s["metric"].get("outcome") for s in results}
        self.assertTrue(outcomes and None not in outcomes, results)

    def test_variables_list_the_daemon(self):
        got = {}
        for kind, name, expr, _ in rd.queries(self.dash):
            if kind == "variable":
                res = self.prom.query(rd.expand(expr, rd.all_values(self.dash)))["result"]
                got[name] = {v for r in res for k, v in r["metric"].items()}
        self.assertIn("1", got["core"])
        self.assertEqual({"0", "1"}, got["port"])
        self.assertEqual(1, len(got["instance"]))
        for label, value in K8S_LABELS.items():
            self.assertEqual({value}, got[label], label)

    def test_namespace_pod_node_select(self):
        # every panel query with the variables set to this pod's labels returns data; set to
        # another namespace/node, nothing (the filters are really in every query)
        for sel, want in ((K8S_LABELS, True), ({"namespace": "other"}, False),
                          ({"node": "worker-9"}, False)):
            variables = {**rd.all_values(self.dash), **sel}
            for kind, name, expr, _ in rd.queries(self.dash):
                if kind != "panel":
                    continue
                e = rd.expand(expr, variables, rate_interval=RATE_INTERVAL)
                with self.subTest(sel=sel, name=name):
                    got = bool(self.prom.query(e)["result"])
                    self.assertEqual(got, want, e)
        # "All" is ".*", which also matches series without the label (compose, no Kubernetes)
        self.assertTrue(self.prom.query('skbnf_build_info{no_such_label=~".*"}')["result"])

    def test_line_rate_panel(self):
        (p,) = [p for p in rd.panels(self.dash) if p["title"] == "% of line rate per port"]
        self.assertEqual(p["fieldConfig"]["defaults"]["unit"], "percentunit")
        for t in p["targets"]:
            self.assertIn("skbnf_port_link_speed_bytes_per_second", t["expr"])
            res = self.prom.query(rd.expand(t["expr"], rd.all_values(self.dash),
                                            rate_interval=RATE_INTERVAL))["result"]
            self.assertEqual({"0", "1"} & {r["metric"]["port"] for r in res}, {
                r["metric"]["port"] for r in res})
            self.assertTrue(res, t["expr"])
            # A utilisation: on-wire bytes over the link's bytes per second. The demo's virtual
            # PMDs report a nominal speed (net_null: 10 Gbps) that they can exceed (no wire), so
            # the figure is checked against its own definition, not against 1.
            for r in res:
                self.assertGreaterEqual(float(r["value"][1]), 0.0)
            # the demo forwards port 0 (rx) -> port 1 (tx): each direction has a busy port
            self.assertTrue([r for r in res if float(r["value"][1]) > 0], res)

    def test_rules_load_and_evaluate(self):
        groups = self.prom._get("/api/v1/rules", {})["groups"]
        rules = [r for g in groups for r in g["rules"]]
        with open(RULES) as f:
            n = sum(1 for line in f if line.lstrip().startswith(("- alert:", "- record:")))
        self.assertGreater(n, 0, RULES)
        self.assertEqual(len(rules), n)
        for r in rules:
            with self.subTest(rule=r["name"]):
                self.assertEqual(r["health"], "ok", r.get("lastError"))
        # the recording rules produce data from the live daemon; the old-objects one only if
        # its le="300" matcher meets the bucket as skbnfd spells it
        for rec in ("instance:skbnf_rx_packets:rate5m", "instance:skbnf_pool_free:ratio",
                    "instance:skbnf_pool_inflight_objects_older_than_300s:sum"):
            self._wait(lambda: self.prom.query(rec)["result"], rec)

    def test_render_png_every_panel_has_data(self):
        out_dir = os.environ.get("SKBNF_ARTIFACT_DIR", os.getcwd())
        out = os.path.join(out_dir, "skbnf-dashboard.png")
        minutes = (time.time() - self.started + 2) / 60.0
        result = rd.render(self.dash, self.prom, out, minutes=minutes)
        drawable = [p for p in rd.panels(self.dash) if p["type"] != "row"]
        self.assertEqual(len(result), len(drawable))
        empty = [t for t, n in result.items() if n == 0]
        self.assertEqual(empty, [], "panels without data in the PNG")
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(out), 50_000)
        print("dashboard picture: " + out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
