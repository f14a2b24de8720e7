#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.compose: deploy/compose.yaml wires what exists (no Docker Compose runs here).

Every bind-mounted file exists; the build context and Dockerfile exist; Prometheus loads its
rules from where compose mounts them and scrapes skbnfd's metrics port; Grafana's provisioning
points at the mounted dashboard and at the Prometheus service; `promtool check config` accepts
the Prometheus configuration (with the container paths mapped back to the repository). The
live behaviour of the same Prometheus configuration and dashboard is deploy.dashboard's job.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy")


class ComposeTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(DEPLOY, "compose.yaml")) as f:
            self.c = yaml.safe_load(f)
        self.mounts = {}  # container path -> repository path, per service
        for name, svc in self.c["services"].items():
            for v in svc.get("volumes", []):
                src, dst = v.split(":")[:2]
                self.mounts[(name, dst)] = os.path.normpath(os.path.join(DEPLOY, src))

    def test_mounted_files_and_build_exist(self):
        for (svc, dst), src in self.mounts.items():
            self.assertTrue(os.path.exists(src), "%s: %s -> %s missing" % (svc, dst, src))
        b = self.c["services"]["skbnfd"]["build"]
        ctx = os.path.normpath(os.path.join(DEPLOY, b["context"]))
        self.assertTrue(os.path.isfile(os.path.join(ctx, b["dockerfile"])))
        self.assertTrue(os.path.isfile(os.path.join(ctx, ".dockerignore")))

    def test_prometheus_config(self):
        cfg_src = self.mounts[("prometheus", "/etc/prometheus/prometheus.yml")]
        with open(cfg_src) as f:
            cfg = yaml.safe_load(f)
        (job,) = cfg["scrape_configs"]
        self.assertEqual(job["job_name"], "skbnf")  # SkbnfTargetDown matches it
        self.assertEqual(job["static_configs"][0]["targets"], ["skbnfd:9478"])
        self.assertIn("9478:9478", self.c["services"]["skbnfd"]["ports"][0])
        rules = []
        for r in cfg["rule_files"]:
            self.assertIn(("prometheus", r), self.mounts, "rule file %s not mounted" % r)
            rules.append(self.mounts[("prometheus", r)])
        d = tempfile.mkdtemp(prefix="skbnf-compose-")
        try:
            cfg["rule_files"] = rules
            path = os.path.join(d, "prometheus.yml")
            with open(path, "w") as f:
                yaml.safe_dump(cfg, f)
            p = subprocess.run([shutil.which("promtool") or "promtool", "check", "config", path],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("SUCCESS", p.stdout + p.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_grafana_provisioning(self):
        g = self.c["services"]["grafana"]
        ds_dir = self.mounts[("grafana", "/etc/grafana/provisioning/datasources")]
        (ds_file,) = os.listdir(ds_dir)
        with open(os.path.join(ds_dir, ds_file)) as f:
            (ds,) = yaml.safe_load(f)["datasources"]
        self.assertEqual(ds["type"], "prometheus")
        self.assertEqual(ds["url"], "http://prometheus:9090")
        db_dir = self.mounts[("grafana", "/etc/grafana/provisioning/dashboards")]
        (db_file,) = os.listdir(db_dir)
        with open(os.path.join(db_dir, db_file)) as f:
            (prov,) = yaml.safe_load(f)["providers"]
        path = prov["options"]["path"]
        mounted = [dst for (svc, dst) in self.mounts if svc == "grafana" and
                   os.path.dirname(dst) == path]
        self.assertEqual(len(mounted), 1, "no dashboard mounted under %s" % path)
        self.assertEqual(self.mounts[("grafana", mounted[0])],
                         os.path.join(DEPLOY, "grafana", "skbnf-dashboard.json"))
        self.assertEqual(g["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"],
                         mounted[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
