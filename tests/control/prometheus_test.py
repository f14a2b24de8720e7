# SPDX-License-Identifier: BSD-3-Clause
"""A real Prometheus server (Debian's `prometheus`) on loopback scrapes the daemon every second;
rate() over the daemon's packet counters through Prometheus' HTTP API must return data.
The test starts both, with a temporary config and data directory, and stops both."""

import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prometheus_server import PrometheusServer  # noqa: E402


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


class PrometheusTest(unittest.TestCase):
    def setUp(self):
        self.d = h.Daemon()
        self.dir = tempfile.mkdtemp(prefix="skbnf-prometheus-")
        self.server = PrometheusServer(
            self.dir, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                      "scrape_configs:\n"
                      "  - job_name: skbnf\n"
                      "    static_configs:\n"
                      "      - targets: ['127.0.0.1:%d']\n" % self.d.metrics_port)
        self.prom, self.api = self.server.proc, self.server.api

    def tearDown(self):
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertEqual(self.d.stop(), 0)

    def prom_log(self):
        return self.server.log_text()

    def query(self, expr):
        url = self.api + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        r = get_json(url)
        self.assertEqual(r["status"], "success", r)
        return r["data"]["result"]

    def wait_for(self, what, fn, attempts=600):
        """Polls fn() every 100 ms (bounded at one minute: Prometheus needs a few scrapes)."""
        for _ in range(attempts):
            self.assertIsNone(self.prom.poll(), "prometheus exited:\n" + self.prom_log())
            try:
                v = fn()
                if v:
                    return v
            except OSError:
                pass  # not listening yet
            time.sleep(0.1)
        self.fail("%s: no result; prometheus log:\n%s" % (what, self.prom_log()))

    def test_rate_of_packet_counters_through_the_http_api(self):
        self.wait_for("ready", lambda: urllib.request.urlopen(self.api + "/-/ready",
                                                              timeout=5).status == 200)
        up = self.wait_for("up", lambda: [r for r in self.query('up{job="skbnf"}')
                                          if r["value"][1] == "1"])
        self.assertEqual(len(up), 1)
        rates = self.wait_for(
            "rate",
            lambda: [r for r in self.query(
                'rate(skbnf_port_packets_total{job="skbnf",direction="rx"}[5s])')
                if float(r["value"][1]) > 0])
        cores = {r["metric"]["core"] for r in rates}
        self.assertTrue(cores, rates)
        # a per-core sum over ports, as a dashboard would draw it
        per_core = self.query('sum by (core) (rate(skbnf_port_packets_total{direction="rx"}[5s]))')
        self.assertTrue(cores <= {r["metric"]["core"] for r in per_core
                                  if float(r["value"][1]) > 0}, per_core)
        info = self.query("skbnf_strategy_info")
        self.assertEqual(len(info), 1, info)
        self.assertIn("spec", info[0]["metric"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
