# SPDX-License-Identifier: BSD-3-Clause
"""skbnfctl config diff against skbnfd (issue 34 item 3): the running state against the --config
file, from the DiffConfig RPC (server/control/config_diff.h), the same computation as the
skbnf_config_drift gauge (server/ops/config_reload.h DriftOf).

skbnfd runs in l3 mode from a file with two routes. Changed over the API (a route added, one
deleted, one's next hop replaced, the strategy swapped), `config diff` prints each difference as
`diff -u FILE RUNNING` would (file lines "-", running lines "+", in the file's syntax) and exits 1,
while the gauge says the same parts differ; --json gives the same content. The file rewritten to
the running state and reloaded: no drift, exit 0, gauge 0. Without --config (the demo): exit 2 and
FAILED_PRECONDITION, with the read role only (DiffConfig is a read: no PERMISSION_DENIED).
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402
from config_reload_test import SkbnfdConfigCase, wait_for  # noqa: E402

ROUTES = ["route 10.0.0.0/8 net_null0 02:00:00:00:01:01",
          "route 192.0.2.0/24 net_null0 02:00:00:00:01:02"]


def config_text(pcap, prefix, strategy, routes):
    return "\n".join([
        "mode l3",
        "strategy " + strategy,
        "eal --no-huge -m 512 --no-pci --no-shconf --file-prefix=" + prefix + " -l 0,1",
        "eal --vdev=net_pcap0,rx_pcap=%s,infinite_rx=1 --vdev=net_null0" % pcap,
        "port net_pcap0 peer=net_null0",
        "port net_null0 peer=net_pcap0",
        "worker 1 net_pcap0:0",
    ] + routes) + "\n"


class ConfigDiffTest(SkbnfdConfigCase):
    PREFIX = "skbnf-cdiff"

    def drift(self, part):
        _, s = h.parse_metrics(self.daemon.scrape())
        return h.total(s, "skbnf_config_drift", part=part)

    def ok(self, *args):
        rc, out, err = self.daemon.ctl(*args)
        self.assertEqual(rc, 0, "skbnfctl %s: %s" % (" ".join(args), err))
        return out

    def test_diff_shows_api_changes_and_is_empty_after_the_file_says_them(self):
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix, "magazine", ROUTES))
        self.daemon = h.Daemon("--config=" + conf)
        wait_for(lambda: self.drift("routes") == 0 and self.drift("strategy") == 0,
                 "the watcher's first drift check")
        rc, out, err = self.daemon.ctl("config", "diff")
        self.assertEqual((rc, out, err), (0, "no drift: the running state is %s's\n" % conf, ""))

        # changed over the API: net_null0 is port 1 (the file's order)
        self.ok("routes", "add", "10.9.0.0/16", "1", "02:00:00:00:09:09")
        self.ok("routes", "delete", "192.0.2.0/24")
        self.ok("routes", "delete", "10.0.0.0/8")
        self.ok("routes", "add", "10.0.0.0/8", "1", "02:00:00:00:01:0a")
        self.ok("strategy", "set", "headpool")
        rc, out, err = self.daemon.ctl("config", "diff")
        self.assertEqual(rc, 1, "drift is exit 1: " + err)
        self.assertEqual(err, "")
        self.assertEqual(out, "\n".join([
            "--- %s (the config file)" % conf,
            "+++ running (skbnfd now)",
            "-strategy magazine",
            "+strategy headpool",
            "-route 10.0.0.0/8 1 02:00:00:00:01:01",
            "+route 10.0.0.0/8 1 02:00:00:00:01:0a",
            "+route 10.9.0.0/16 1 02:00:00:00:09:09",
            "-route 192.0.2.0/24 1 02:00:00:00:01:02",
            "# strategy headpool (file: magazine); routes: 1 not in the file, 2 of the file's "
            "missing or different (a restart goes back to the file: put the change in the file, "
            "or reload it)",
        ]) + "\n")
        # the gauge is the same computation
        wait_for(lambda: self.drift("routes") == 1 and self.drift("strategy") == 1,
                 "skbnf_config_drift for both parts")
        rc, out, _ = self.daemon.ctl("--json", "config", "diff")
        self.assertEqual(rc, 1)
        j = json.loads(out)
        self.assertEqual(j["config_path"], conf)
        self.assertTrue(j["strategy_differs"])
        self.assertEqual((j["running_strategy"], j["file_strategy"]), ("headpool", "magazine"))
        by_prefix = {r["prefix"]: r for r in j["routes"]}
        self.assertEqual(sorted(by_prefix), ["10.0.0.0/8", "10.9.0.0/16", "192.0.2.0/24"])
        self.assertEqual(by_prefix["10.9.0.0/16"]["running"]["dst_mac"], "02:00:00:00:09:09")
        self.assertNotIn("file", by_prefix["10.9.0.0/16"])
        self.assertNotIn("running", by_prefix["192.0.2.0/24"])

        # the file made to say what runs, reloaded: no drift
        with open(conf + ".tmp", "w") as f:
            f.write(config_text(self.pcap, self.prefix, "headpool", [
                "route 10.0.0.0/8 net_null0 02:00:00:00:01:0a",
                "route 10.9.0.0/16 1 02:00:00:00:09:09"]))
        os.rename(conf + ".tmp", conf)
        _, s = h.parse_metrics(self.daemon.scrape())
        before = h.total(s, "skbnf_config_reloads_total")
        wait_for(lambda: h.total(h.parse_metrics(self.daemon.scrape())[1],
                                 "skbnf_config_reloads_total") > before, "the reload")
        rc, out, err = self.daemon.ctl("config", "diff")
        self.assertEqual((rc, out, err), (0, "no drift: the running state is %s's\n" % conf, ""))
        wait_for(lambda: self.drift("routes") == 0 and self.drift("strategy") == 0,
                 "skbnf_config_drift back to 0")

    def test_without_config_is_trouble_not_drift_with_the_read_role(self):
        self.daemon = h.Daemon("--loopback-role=read")
        rc, out, err = self.daemon.ctl("config", "diff")
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(out, "")
        self.assertIn("FAILED_PRECONDITION: skbnfd runs without --config", err)
        self.assertNotIn("PERMISSION_DENIED", err)
        # ... and a change is refused to that role, so the role really is read
        rc, _, err = self.daemon.ctl("routes", "add", "10.9.0.0/16", "1", "02:00:00:00:09:09")
        self.assertIn("PERMISSION_DENIED", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
