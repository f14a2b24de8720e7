# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd's declarative reconfiguration (server/ops/config_reload.h) against skbnfd itself.

skbnfd runs from a --config file (l3, net_pcap replaying IPv4 frames to 10.1.0.0/16 into
net_null), and the test changes the file the ways people and Kubernetes do: an edit in place
(inotify), a ConfigMap-style `..data` symlink swap, a file outside the watched directory plus
SIGHUP, a bad file (nothing applied, the error counted and the line logged), a restart-only
change. Each checks the strategy (GetStrategy), the route table (ListRoutes), the
skbnf_config_* metrics, that traffic keeps flowing, and that skbnfd exits 0 at stop (the final
conservation audit is exact).

HangUpWithoutConfigTest: SIGHUP to skbnfd without --config (the demo) is ignored with one line
per signal (signal(7): SIGHUP's default action is to terminate), skbnfd keeps forwarding and exits
0 at SIGTERM with its exact audit (issue 31 item 7).
"""

import hashlib
import json
import os
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402


def write_pcap(path, count=256):
    """IPv4/UDP frames to 10.1.<i>.<j>, valid checksums, TTL 64."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(count):
            payload = b"\0" * 18
            udp = struct.pack("!HHHH", 1024, 2048, 8 + len(payload), 0) + payload
            hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                              bytes([192, 168, 0, 1]), bytes([10, 1, i // 200, 1 + i % 200]))
            s = sum(struct.unpack("!10H", hdr))
            while s >> 16:
                s = (s & 0xFFFF) + (s >> 16)
            hdr = hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:]
            frame = (bytes.fromhex("020000000001") + bytes.fromhex("020000000002") +
                     b"\x08\x00" + hdr + udp)
            f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)


BASE_ROUTES = ["route 10.0.0.0/8 net_null0 02:00:00:00:01:01",
               "route 10.9.0.0/16 net_null0 02:00:00:00:01:09"]


def config_text(pcap, prefix, strategy="magazine", routes=None, extra=()):
    lines = ["# written by config_reload_test.py",
             "mode l3",
             "strategy " + strategy,
             "eal --no-huge -m 512 --no-pci --no-shconf --file-prefix=" + prefix + " -l 0,1",
             "eal --vdev=net_pcap0,rx_pcap=%s,infinite_rx=1 --vdev=net_null0" % pcap,
             "port net_pcap0 peer=net_null0",
             "port net_null0 peer=net_pcap0",
             "worker 1 net_pcap0:0"]
    lines += list(extra)
    lines += BASE_ROUTES if routes is None else routes
    return "\n".join(lines) + "\n"


# Polls a condition (guards a hang only: the watcher applies within its settle time).
wait_for = h.until


class SkbnfdConfigCase(unittest.TestCase):
    """The set-up of every test of skbnfd's --config (this file's, config_diff_test's,
    reload_no_misroute_test's): skbnfd only (the fake daemon has no --config), a temporary
    directory with a pcap of traffic (`self.pcap`), an EAL file prefix of the test's own
    (`self.prefix`: PREFIX, the pid, a hash of the test's id), and at the end skbnfd stopped with its exit
    code checked (1 = the final audit failed) and the directory removed. `before_stop` runs first
    (e.g. to open a test gate a reload waits at)."""
    PREFIX = "skbnf-config"

    def setUp(self):
        if h.daemon_is_fake() or "skbnfd" not in os.path.basename(h.DAEMON):
            self.skipTest("skbnfd's --config (the fake daemon has none)")
        self.dir = tempfile.mkdtemp(prefix=self.PREFIX + "-")
        self.pcap = os.path.join(self.dir, "traffic.pcap")
        write_pcap(self.pcap)
        # short: EAL's runtime directory is named after it, and its telemetry socket's path
        # there must fit a sockaddr_un (108 bytes)
        self.prefix = "%s-%d-%s" % (self.PREFIX, os.getpid(),
                                    hashlib.sha1(self.id().encode()).hexdigest()[:8])
        self.daemon = None

    def before_stop(self):
        pass

    def tearDown(self):
        if self.daemon is not None:
            self.before_stop()
            self.stop_checked()
        shutil.rmtree(self.dir, ignore_errors=True)

    def stop_checked(self):
        err = self.daemon.read_stderr()
        code = self.daemon.stop()
        self.daemon = None
        self.assertEqual(code, 0, "exit code (1 = the final audit failed); stderr:\n" + err)


class ConfigReloadTest(SkbnfdConfigCase):
    PREFIX = "skbnf-reload"

    def start(self, config_path):
        self.daemon = h.Daemon("--config=" + config_path)
        # the watcher's first pass (it catches changes made while skbnfd started) is done
        wait_for(lambda: self.gauge("skbnf_config_watched") == 1, "the watcher to run")
        return self.daemon

    # ---- reads

    def strategy(self):
        rc, out, err = self.daemon.ctl("--json", "strategy", "get")
        self.assertEqual(rc, 0, err)
        return json.loads(out)["spec"]

    def routes(self):
        rc, out, err = self.daemon.ctl("--json", "routes", "list")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        hops = {n["id"]: n["next_hop"] for n in r.get("next_hops", [])}
        return {x["prefix"]: hops[x["next_hop_id"]]["dst_mac"] for x in r.get("routes", [])}

    def metrics(self):
        _, samples = h.parse_metrics(self.daemon.scrape())
        return samples

    def reloads(self, result):
        return h.total(self.metrics(), "skbnf_config_reloads_total", result=result)

    def retries(self):
        return h.total(self.metrics(), "skbnf_config_reload_retries_total")

    def watch_polls(self, result=None):
        m = self.metrics()
        if result is None:
            return h.total(m, "skbnf_config_watch_polls_total")
        return h.total(m, "skbnf_config_watch_polls_total", result=result)

    def gauge(self, name):
        return h.total(self.metrics(), name)

    def rx(self):
        return h.total(self.metrics(), "skbnf_port_packets_total", direction="rx")

    def tx(self):
        return h.total(self.metrics(), "skbnf_port_packets_total", direction="tx")

    def assert_flowing(self):
        before_rx, before_tx = self.rx(), self.tx()
        wait_for(lambda: self.rx() > before_rx and self.tx() > before_tx, "traffic to flow")

    # ---- tests

    def test_edit_in_place_applies_strategy_and_routes(self):
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        self.start(conf)
        self.assertEqual(self.strategy(), "magazine")
        self.assertEqual(self.routes(), {"10.0.0.0/8": "02:00:00:00:01:01",
                                         "10.9.0.0/16": "02:00:00:00:01:09"})
        self.assertEqual(self.gauge("skbnf_config_last_reload_successful"), 1)
        self.assertGreater(self.gauge("skbnf_config_last_reload_success_timestamp_seconds"), 0)
        self.assert_flowing()
        swaps_before = h.total(self.metrics(), "skbnf_strategy_swaps_total", result="ok")

        # strategy swapped; 10.9/16 deleted, 10.0/8's next hop changed, 10.2/16 added
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="recycle+magazine", routes=[
                "route 10.0.0.0/8 net_null0 02:00:00:00:01:0a",
                "route 10.2.0.0/16 1 02:00:00:00:01:02"]))
        wait_for(lambda: self.reloads("ok") == 1, "the edit to be applied")
        self.assertEqual(self.strategy(), "recycle+magazine")
        self.assertEqual(self.routes(), {"10.0.0.0/8": "02:00:00:00:01:0a",
                                         "10.2.0.0/16": "02:00:00:00:01:02"})
        self.assertEqual(h.total(self.metrics(), "skbnf_strategy_swaps_total", result="ok"),
                         swaps_before + 1, "a config swap is counted like an API swap")
        # ... and is a change like any other: counted and logged with its source (Mutations)
        m = self.metrics()
        self.assertEqual(h.total(m, "skbnf_control_changes_total", rpc="SetStrategy",
                                 result="ok", source="config"), 1)
        # 10.2/16 added and 10/8's next hop replaced in place (AddRoute), then 10.9/16 deleted
        self.assertEqual(h.total(m, "skbnf_control_changes_total", rpc="AddRoute",
                                 result="ok", source="config"), 2)
        self.assertEqual(h.total(m, "skbnf_control_changes_total", rpc="DeleteRoute",
                                 result="ok", source="config"), 1)
        self.assertEqual(self.reloads("error"), 0)
        err = self.daemon.read_stderr()
        self.assertIn("config reload (inotify): ok", err)
        # the audit trail (server/core/change_log.h): JSON lines, begin before, end after
        self.assertRegex(err, r'"event":"begin","rpc":"SetStrategy","source":"config",'
                              r'"who":"local:config".*"what":"magazine -> recycle\+magazine"')
        self.assertRegex(err, r'"event":"end","rpc":"SetStrategy","source":"config",'
                              r'"who":"local:config".*"result":"ok",'
                              r'"what":"magazine -> recycle\+magazine"')
        self.assert_flowing()

        # a comment-only edit changes nothing
        with open(conf, "a") as f:
            f.write("# a comment\n")
        wait_for(lambda: self.reloads("unchanged") == 1, "the comment edit to be read")
        self.assertEqual(self.strategy(), "recycle+magazine")
        self.assertEqual(self.reloads("ok"), 1)
        self.stop_checked()

    def test_configmap_symlink_swap_applies(self):
        # The kubelet's layout: skbnfd.conf -> ..data/skbnfd.conf, ..data -> ..<timestamp>
        first = os.path.join(self.dir, "..2026_11_30_10_00_00.1")
        os.mkdir(first)
        with open(os.path.join(first, "skbnfd.conf"), "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        os.symlink(os.path.basename(first), os.path.join(self.dir, "..data"))
        conf = os.path.join(self.dir, "skbnfd.conf")
        os.symlink("..data/skbnfd.conf", conf)
        self.start(conf)
        self.assertEqual(self.strategy(), "magazine")

        # the update: a new directory, a new ..data link renamed over the old one, old removed
        second = os.path.join(self.dir, "..2026_11_30_10_05_00.2")
        os.mkdir(second)
        with open(os.path.join(second, "skbnfd.conf"), "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="headpool:hot_list_len=256",
                                routes=BASE_ROUTES + ["route 10.3.0.0/16 net_null0 "
                                                      "02:00:00:00:01:03"]))
        os.symlink(os.path.basename(second), os.path.join(self.dir, "..data_tmp"))
        os.rename(os.path.join(self.dir, "..data_tmp"), os.path.join(self.dir, "..data"))
        shutil.rmtree(first)
        wait_for(lambda: self.reloads("ok") == 1, "the symlink swap to be applied")
        self.assertEqual(self.strategy(), "headpool:hot_list_len=256")
        self.assertIn("10.3.0.0/16", self.routes())
        self.assert_flowing()
        self.stop_checked()

    def test_sighup_applies_a_file_outside_the_watched_directory(self):
        # --config is a link into another directory: edits there raise no event where skbnfd
        # watches, so only SIGHUP reloads it.
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.mkdir(elsewhere)
        real = os.path.join(elsewhere, "real.conf")
        with open(real, "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        watched = os.path.join(self.dir, "watched")
        os.mkdir(watched)
        conf = os.path.join(watched, "skbnfd.conf")
        os.symlink(real, conf)
        self.start(conf)
        events = self.watch_polls("events")
        with open(real, "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="lcache+magazine"))
        # The kernel queues an inotify event before write/close return; the watcher's polls
        # (skbnf_config_watch_polls_total) are its acknowledgement: two more polls than counted
        # now, and the second began after the write, so an event would be counted by then.
        polls = self.watch_polls()
        wait_for(lambda: self.watch_polls() >= polls + 2, "the watcher to poll past the edit")
        self.assertEqual(self.watch_polls("events"), events,
                         "no event reached the watched directory")
        self.assertEqual(self.strategy(), "magazine", "nothing applied without an event")
        self.assertEqual(self.reloads("ok"), 0)
        self.daemon.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.reloads("ok") == 1, "SIGHUP to apply the file")
        self.assertEqual(self.strategy(), "lcache+magazine")
        self.assertIn("config reload (SIGHUP): ok", self.daemon.read_stderr())
        # SIGHUP again, same file: re-read, nothing to do, counted as unchanged
        self.daemon.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.reloads("unchanged") == 1, "the second SIGHUP")
        self.assert_flowing()
        self.stop_checked()

    def test_bad_file_is_refused_whole(self):
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        self.start(conf)
        routes = self.routes()
        before_ts = self.gauge("skbnf_config_last_reload_success_timestamp_seconds")

        cases = [
            # (file text, what the log must name)
            (config_text(self.pcap, self.prefix, strategy="recycle+magazine",
                         routes=BASE_ROUTES + ["route 10.4.0.0/33 net_null0 02:00:00:00:01:04"]),
             "line 11: route prefix"),
            (config_text(self.pcap, self.prefix, strategy="magazine:size=5000",
                         routes=BASE_ROUTES + ["route 10.4.0.0/16 net_null0 02:00:00:00:01:04"]),
             "line 3: strategy magazine:size=5000"),
            (config_text(self.pcap, self.prefix, strategy="recycle+magazine",
                         routes=BASE_ROUTES + ["route 10.4.0.0/16 net_nope 02:00:00:00:01:04"]),
             "line 11: route 10.4.0.0/16: port 'net_nope' is not a port"),
            (config_text(self.pcap, self.prefix, strategy="recycle+magazine",
                         routes=BASE_ROUTES + ["route 10.4.0.0/16 net_null0 01:00:5e:00:00:01"]),
             "line 11: route 10.4.0.0/16: next-hop '01:00:5e:00:00:01' is a group"),
            (config_text(self.pcap, self.prefix, strategy="recycle+magazine") + "frobnicate 1\n",
             "line 11: unknown directive 'frobnicate'"),
        ]
        for n, (text, logged) in enumerate(cases, 1):
            with open(conf, "w") as f:
                f.write(text)
            # a refused file is retried (1 s, 2 s, ...): the refusals of the edits themselves
            wait_for(lambda: self.reloads("error") - self.retries() == n,
                     "bad file %d to be refused" % n)
            self.assertEqual(self.strategy(), "magazine", "case %d: nothing applied" % n)
            self.assertEqual(self.routes(), routes, "case %d: nothing applied" % n)
            err = self.daemon.read_stderr()
            self.assertIn(logged, err)
            self.assertIn("nothing applied", err)
            self.assertEqual(self.gauge("skbnf_config_last_reload_successful"), 0)
        self.assertEqual(self.reloads("ok"), 0)
        self.assertEqual(self.gauge("skbnf_config_last_reload_success_timestamp_seconds"),
                         before_ts)
        self.assert_flowing()

        # fixed: applied, success again
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="recycle+magazine",
                                routes=BASE_ROUTES + ["route 10.4.0.0/16 net_null0 "
                                                      "02:00:00:00:01:04"]))
        wait_for(lambda: self.reloads("ok") == 1, "the fixed file to be applied")
        self.assertEqual(self.strategy(), "recycle+magazine")
        self.assertIn("10.4.0.0/16", self.routes())
        self.assertEqual(self.gauge("skbnf_config_last_reload_successful"), 1)
        self.stop_checked()

    def test_a_change_while_starting_is_not_missed(self):
        # Rewritten while skbnfd starts (EAL, ports), before or after its watch begins: either
        # way it must end up applied.
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        done = threading.Event()

        def rewrite():
            time.sleep(0.05)
            with open(conf + ".tmp", "w") as f:
                f.write(config_text(self.pcap, self.prefix, strategy="headpool"))
            os.rename(conf + ".tmp", conf)
            done.set()
        t = threading.Thread(target=rewrite)
        t.start()
        self.start(conf)
        t.join()
        self.assertTrue(done.is_set())
        wait_for(lambda: self.strategy() == "headpool", "the start-up change to be applied")
        self.assert_flowing()
        self.stop_checked()

    def test_restart_only_changes_are_reported_not_applied(self):
        conf = os.path.join(self.dir, "skbnfd.conf")
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix))
        self.start(conf)
        rc, out, _ = self.daemon.ctl("--json", "info")
        populated = json.loads(out)["pool"]["populated"]
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="recycle+magazine",
                                extra=["mbufs 20000", "burst 64"]))
        wait_for(lambda: self.reloads("ok") == 1, "the reload")
        self.assertEqual(self.strategy(), "recycle+magazine", "the runtime part is applied")
        self.assertEqual(self.gauge("skbnf_config_restart_required"), 1)
        err = self.daemon.read_stderr()
        self.assertIn("needs restart, not applied: mbufs 0 -> 20000; burst 32 -> 64", err)
        rc, out, _ = self.daemon.ctl("--json", "info")
        self.assertEqual(json.loads(out)["pool"]["populated"], populated)
        # back to the started values: nothing pending any more
        with open(conf, "w") as f:
            f.write(config_text(self.pcap, self.prefix, strategy="recycle+magazine"))
        wait_for(lambda: self.reloads("unchanged") == 1, "the second reload")
        self.assertEqual(self.gauge("skbnf_config_restart_required"), 0)
        self.stop_checked()


class HangUpWithoutConfigTest(unittest.TestCase):
    """SIGHUP means "re-read --config"; without --config (here: the demo) there is nothing to
    re-read, and signal(7)'s default action for SIGHUP (terminate) would stop skbnfd with no
    drain and no final audit. skbnfd ignores it with one line per signal and keeps forwarding."""

    HANGUP_LINE = ("skbnfd: SIGHUP ignored: skbnfd runs without --config, there is no file to "
                   "reload")

    def setUp(self):
        if h.daemon_is_fake() or "skbnfd" not in os.path.basename(h.DAEMON):
            self.skipTest("skbnfd's signal handling (the fake daemon is not skbnfd)")

    def test_sighup_is_ignored_with_a_line_and_skbnfd_keeps_forwarding(self):
        d = h.Daemon()
        try:
            def rx():
                _, samples = h.parse_metrics(d.scrape())
                return h.total(samples, "skbnf_port_packets_total", direction="rx")

            for n in range(1, 4):
                d.proc.send_signal(signal.SIGHUP)
                wait_for(lambda: d.read_stderr().count(self.HANGUP_LINE) == n,
                         "the line of SIGHUP %d" % n)
                self.assertIsNone(d.proc.poll(), "skbnfd still runs after SIGHUP %d" % n)
                before = rx()
                wait_for(lambda: rx() > before, "traffic to flow after SIGHUP %d" % n)
            rc, out, err = d.ctl("audit")
            self.assertEqual(rc, 0, err)
            self.assertTrue(out.startswith("audit ok: "), out)
            self.assertEqual(d.read_stderr().count(self.HANGUP_LINE), 3, "one line per SIGHUP")
        finally:
            err = d.read_stderr()
            code = d.stop()
        self.assertEqual(code, 0, "SIGTERM after the SIGHUPs: drained, the final audit exact "
                                  "(exit 1 when it is not, -1 when SIGHUP killed it); stderr:\n" +
                         err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
