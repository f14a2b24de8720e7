# SPDX-License-Identifier: BSD-3-Clause
"""A --config reload with traffic flowing (server/ops/config_reload.h, issue 31 item 5).

NoMisrouteTest: skbnfd in l3 mode (net_pcap replaying IPv4 frames to 10.1.<i>.<j>, two TX
ports net_null0 and net_null1) from a file with 10.1.0.0/16 and 4,000 generated routes inside
10.0.0.0/8 (`routes_random`), all on net_null0. The file is rewritten with the same prefixes on
net_null1 (other next-hop MACs): every route's next hop changes. A reload that deleted the
changed prefixes before adding them again left 10.1.0.0/16 unrouted for the whole batch (frames
dropped with reason no_route: this test, run against that order, failed with 10,677,760
no_route drops over one 4,001-route reload). The next
hops are replaced in place: DPDK 22.11's rte_lpm_add on an existing rule updates its next hop
(lib/lpm/rte_lpm.c, rule_add: "If rule already exists update next hop and return") and rewrites
each tbl24/tbl8 entry with one __atomic_store (add_depth_small/add_depth_big), so a lookup sees
the old or the new next hop, never none. Asserted from skbnfd's own counters: zero
skbnf_port_drops_total{reason="no_route"} from before the rewrite to after the reload, and the
frames move: net_null1's TX grows, net_null0's stops.

RetryTest: a refused reload (a bad file) is retried with a backoff (1 s, 2 s, ...; counted in
skbnf_config_reload_retries_total); the file, fixed where no inotify event reaches skbnfd (the
--config link points into another directory), is applied by a retry, not by an event.

ParseOutsideTheLockTest: skbnfd with --test-reload-gate holds each reload after its parse,
before it takes the mutation lock (the gate logs "test gate: parsed N routes"). With a file of
262,144 generated routes parsed and held there (the gate, not the size, makes the test
deterministic; routes_random's maximum, 1,048,576, took 19 s to parse on the loaded CI machine,
too long for the ASan stage), a read RPC
(strategy get) and a mutating one (strategy set, which takes the mutation lock) both answer:
the parse never held the lock. Then the reload completes and keeps the RPC's change.
"""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402
from config_reload_test import SkbnfdConfigCase, wait_for  # noqa: E402


def l3_config(pcap, prefix, port, mac, count):
    return "\n".join([
        "mode l3",
        "strategy magazine",
        "eal --no-huge -m 512 --no-pci --no-shconf --file-prefix=" + prefix + " -l 0,1",
        "eal --vdev=net_pcap0,rx_pcap=%s,infinite_rx=1 --vdev=net_null0 --vdev=net_null1" % pcap,
        "port net_pcap0 peer=net_null0",
        "port net_null0 peer=net_pcap0",
        "port net_null1 peer=net_pcap0",
        "worker 1 net_pcap0:0",
        "route 10.1.0.0/16 %s %s" % (port, mac),
        "routes_random %d %s seed=11 min_len=12 max_len=24" % (count, port),
    ]) + "\n"


class ReloadCase(SkbnfdConfigCase):
    PREFIX = "skbnf-rnm"

    def before_stop(self):
        open(os.path.join(self.dir, "gate"), "w").close()  # a reload held at a test gate

    def samples(self):
        _, s = h.parse_metrics(self.daemon.scrape())
        return s

    def total(self, name, **match):
        return h.total(self.samples(), name, **match)

    def start(self, conf, *extra):
        self.daemon = h.Daemon("--config=" + conf, *extra)

    def watched(self):
        wait_for(lambda: self.total("skbnf_config_watched") == 1, "the watcher to run")


class NoMisrouteTest(ReloadCase):
    COUNT = 4000

    def test_changed_next_hops_are_replaced_without_a_drop(self):
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(l3_config(self.pcap, self.prefix, "net_null0", "02:00:00:00:0a:01",
                              self.COUNT))
        self.start(conf)
        self.watched()

        def tx(port):  # by port id: net_pcap0 0, net_null0 1, net_null1 2 (the file's order)
            return self.total("skbnf_port_packets_total", port={"net_null0": "1",
                                                               "net_null1": "2"}[port],
                              direction="tx")

        def no_route():
            return self.total("skbnf_port_drops_total", reason="no_route")

        first = tx("net_null0")
        wait_for(lambda: tx("net_null0") > first + 1000, "traffic through net_null0")
        self.assertEqual(tx("net_null1"), 0)
        drops_before = no_route()
        self.assertEqual(drops_before, 0, "every frame is routed before the reload")
        with open(conf + ".tmp", "w") as f:
            f.write(l3_config(self.pcap, self.prefix, "net_null1", "02:00:00:00:0b:01",
                              self.COUNT))
        os.rename(conf + ".tmp", conf)
        wait_for(lambda: self.total("skbnf_config_reloads_total", result="ok") == 1,
                 "the reload", timeout=50)
        err = self.daemon.read_stderr()
        self.assertRegex(err, r"config reload \(inotify\): ok: .*routes: 0 added, \d+ replaced "
                              r"in place, 0 deleted")
        # frames moved to the new next hop: net_null1 forwards, net_null0 no more
        tx0, tx1 = tx("net_null0"), tx("net_null1")
        wait_for(lambda: tx("net_null1") > tx1 + 1000, "traffic through net_null1")
        self.assertEqual(tx("net_null0"), tx0, "nothing routed to the old next hop after it")
        self.assertEqual(no_route(), 0, "frames dropped for no route during the reload")
        rc, out, err = self.daemon.ctl("audit")
        self.assertEqual(rc, 0, err)


class RetryTest(ReloadCase):
    def test_refused_reload_is_retried_with_backoff(self):
        elsewhere = os.path.join(self.dir, "elsewhere")
        watched = os.path.join(self.dir, "watched")
        os.mkdir(elsewhere)
        os.mkdir(watched)
        real = os.path.join(elsewhere, "real.conf")
        good = l3_config(self.pcap, self.prefix, "net_null0", "02:00:00:00:0a:01", 10)
        with open(real, "w") as f:
            f.write(good)
        conf = os.path.join(watched, "skbnfd.conf")
        os.symlink(real, conf)
        self.start(conf)
        self.watched()

        def reloads(result):
            return self.total("skbnf_config_reloads_total", result=result)

        def retries():
            return self.total("skbnf_config_reload_retries_total")

        self.assertEqual(retries(), 0)
        with open(real, "w") as f:
            f.write(good + "frobnicate 1\n")
        self.daemon.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: reloads("error") >= 1, "the bad file to be refused")
        # retried after 1 s: refused again, counted
        wait_for(lambda: retries() >= 1 and reloads("error") >= 2, "the first retry")
        err = self.daemon.read_stderr()
        self.assertIn("config reload (SIGHUP): error:", err)
        self.assertIn("retrying %s in 1 s" % conf, err)
        self.assertIn("config reload (retry): error:", err)
        self.assertIn("retrying %s in 2 s" % conf, err)
        self.assertEqual(reloads("ok"), 0)
        # fixed where no event reaches the watched directory: only a retry can apply it
        with open(real, "w") as f:
            f.write(good.replace("strategy magazine", "strategy headpool"))
        wait_for(lambda: reloads("ok") == 1, "a retry to apply the fixed file")
        self.assertIn("config reload (retry): ok:", self.daemon.read_stderr())
        self.assertGreaterEqual(retries(), 2)
        rc, out, err = self.daemon.ctl("strategy", "get")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"(?m)^spec +headpool$")
        # applied: the series ended, no more retries
        n = retries()
        polls = self.total("skbnf_config_watch_polls_total")
        wait_for(lambda: self.total("skbnf_config_watch_polls_total") >= polls + 150,
                 "3 s of the watcher's polls")
        self.assertEqual(retries(), n, "retried after the file was applied")


class ParseOutsideTheLockTest(ReloadCase):
    def test_rpcs_answer_while_a_big_file_is_held_between_parse_and_apply(self):
        gate = os.path.join(self.dir, "gate")
        conf = os.path.join(self.dir, "skbnfd.conf")
        # io mode: the engine starts with no routes, and a reload parses routes but applies none
        base = "".join(line + "\n" for line in l3_config(
            self.pcap, self.prefix, "net_null0", "02:00:00:00:0a:01", 1).splitlines()
            if not line.startswith("route")).replace("mode l3", "mode io")
        with open(conf, "w") as f:
            f.write(base)
        self.start(conf, "--test-reload-gate=" + gate)
        held = "test gate: parsed"

        def held_count():
            return self.daemon.read_stderr().count(held)

        wait_for(lambda: held_count() == 1, "the watcher's first pass at the gate")
        open(gate, "w").close()
        self.watched()
        with open(conf + ".tmp", "w") as f:
            f.write(base + "routes_random 262144 net_null0 seed=3 min_len=28 max_len=32\n")
        os.rename(conf + ".tmp", conf)
        wait_for(lambda: held_count() == 2, "the big file parsed and held at the gate",
                 timeout=50)
        self.assertIn("test gate: parsed 262144 routes, the mutation lock not taken",
                      self.daemon.read_stderr())
        # held after its parse, before the lock: a read and a change both answer
        rc, out, err = self.daemon.ctl("strategy", "get", timeout=20)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.daemon.ctl("strategy", "set", "headpool", timeout=20)
        self.assertEqual(rc, 0, err)
        self.assertEqual(held_count(), 2)
        self.assertNotIn("config reload (inotify)", self.daemon.read_stderr(),
                         "the reload was still held while the RPCs answered")
        open(gate, "w").close()
        wait_for(lambda: "config reload (inotify)" in self.daemon.read_stderr(),
                 "the reload to complete", timeout=50)
        self.assertIn("routes changed but unused outside l3 mode", self.daemon.read_stderr())
        rc, out, err = self.daemon.ctl("strategy", "get")
        self.assertRegex(out, r"(?m)^spec +headpool$", "the reload kept the RPC's change")


if __name__ == "__main__":
    unittest.main(verbosity=2)
