# SPDX-License-Identifier: BSD-3-Clause
"""Clients that vanish (issue 34 item 5): a client SIGKILLed in the middle of TuneStrategy,
WatchStats, SetStrategy and AuditPool leaves no worker paused, no lock held, no tune running, no
watch slot taken and no buffer stranded, and the next call works. Against skbnfd's demo
(control_skbnfd.vanish_test) and the fake daemon (control.vanish_test).

A SIGKILLed client sends no RST_STREAM: its kernel closes the TCP connection (FIN, or RST for
unread data) and gRPC's server transport fails every stream on it, which cancels the handlers'
ServerContext (grpc/src/core/ext/transport/chttp2/transport/chttp2_transport.cc, "Endpoint read
failed" -> close_transport_locked; include/grpcpp/server_context.h, IsCancelled()). What each
handler then does is the daemon's behaviour under test. Every wait here is for an event, bounded.

PauseWorker: the client that paused a worker is killed; the worker resumes when its lease runs
out (server/control/pause_leases.h; lease_test.py tests the lease itself).
"""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402
from tune_test import Tune  # noqa: E402  (a `skbnfctl --json strategy tune` in the background)

Q = "--quiesce-timeout-ms=5000"


def first_line(proc, timeout=30):
    """The first line the client printed: the call is in flight (a hang guard bounds it)."""
    deadline = time.monotonic() + timeout
    line = proc.stdout.readline()
    if not line or time.monotonic() > deadline:
        raise AssertionError("client printed nothing: " + proc.stderr.read())
    return line




class ClientsThatVanish(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Two watch streams per client, four in all: a slot a dead client kept would show at once.
        cls.d = h.Daemon("--watch-streams-per-client=2", "--watch-streams-total=4")

    @classmethod
    def tearDownClass(cls):
        code = cls.d.stop()  # skbnfd exits 1 when its final (exact) audit fails
        assert code == 0, "daemon exit code %r" % code

    def ctl(self, *args, timeout=30):
        return self.d.ctl(*args, timeout=timeout)

    def popen(self, *args):
        return subprocess.Popen([h.SKBNFCTL, "--addr=" + self.d.grpc] + list(args),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def kill(proc):
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()

    def strategy(self):
        code, out, err = self.ctl("--json", "strategy", "get")
        self.assertEqual(code, 0, err)
        return json.loads(out)["spec"]

    def set_strategy(self, spec):
        code, out, err = self.ctl("strategy", "set", spec, Q)
        self.assertEqual(code, 0, err + out)

    def no_worker_paused(self):
        code, out, err = self.ctl("--json", "stats")
        self.assertEqual(code, 0, err)
        cores = json.loads(out)["cores"]
        self.assertTrue(cores, out)
        return not any(c.get("paused") for c in cores)

    def received(self):
        code, out, err = self.ctl("--json", "stats")
        self.assertEqual(code, 0, err)
        return sum(int(p.get("rx_packets", 0)) for c in json.loads(out)["cores"]
                   for p in c.get("ports", []))

    def assert_forwarding_and_exact(self):
        """No worker parked, traffic still received, and the conservation audit exact."""
        self.assertTrue(self.no_worker_paused())
        before = self.received()
        h.until(lambda: self.received() > before, "workers receive again")
        code, out, err = self.ctl("audit")
        self.assertEqual(code, 0, err + out)
        self.assertTrue(out.startswith("audit ok: "), out)

    def watch_streams(self):
        return h.total(h.parse_metrics(self.d.scrape())[1], "skbnf_control_watch_streams")

    def test_watch_stats_client_killed_frees_its_slot(self):
        for _ in range(6):  # more than the per-client (2) and total (4) limits together
            p = self.popen("top", "--interval=50")
            first_line(p)
            self.kill(p)
            h.until(lambda: self.watch_streams() == 0, "the dead client's stream released")
        # Slots are free: two streams of one client at once are accepted and run to the end.
        a = self.popen("top", "--interval=50", "--count=3")
        b = self.popen("top", "--interval=50", "--count=3")
        for p in (a, b):
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        self.assert_forwarding_and_exact()

    def test_tune_client_killed_restores_the_incumbent_and_frees_the_tuner(self):
        self.set_strategy("magazine")
        t = Tune(self.d, "headpool", "lcache", "--dwell=1s", "--settle=5s", "--rounds=3",
                 "--apply")
        t.wait_for(lambda m: m["phase"] == "PHASE_SETTLING" and m["candidate"] != "magazine")
        self.assertNotEqual(self.strategy(), "magazine")  # a candidate is in force now
        t.proc.send_signal(signal.SIGKILL)
        t.proc.wait(timeout=10)
        h.until(lambda: h.total(h.parse_metrics(self.d.scrape())[1], "skbnf_tune_running") == 0,
              "the server's tune ended")
        self.assertEqual(self.strategy(), "magazine")  # the incumbent, restored
        # The tuner is free: a new tune runs to its end.
        code, out, err = self.ctl("strategy", "tune", "headpool", "--dwell=100ms",
                                  "--settle=30ms", "--rounds=1", Q, timeout=120)
        self.assertEqual(code, 0, err + out)
        self.assertEqual(self.strategy(), "magazine")  # a dry run changes nothing
        self.assert_forwarding_and_exact()

    def test_set_strategy_client_killed_mid_swap_leaves_a_consistent_state(self):
        if not h.STALL_ARGS:
            self.fail("SKBNF_CONTROL_DAEMON_STALL_ARGS is not set (tests/control/CMakeLists.txt)")
        d = h.Daemon(*h.STALL_ARGS)
        try:
            def get():
                code, out, err = d.ctl("--json", "strategy", "get")
                self.assertEqual(code, 0, err)
                r = json.loads(out)
                return r["spec"], int(r["epoch"])
            old, epoch = get()
            new = "headpool" if old != "headpool" else "magazine"
            # Worker core 1 is late to every swap (skbnfd: 3 s; the fake: never): the swap is in
            # flight for seconds when its client dies.
            p = subprocess.Popen([h.SKBNFCTL, "--addr=" + d.grpc, "strategy", "set", new,
                                  "--quiesce-timeout-ms=4000"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)

            # The swap is in flight once its epoch is published (GetStrategy's epoch increments
            # on every publish) and its client has no answer yet.
            h.until(lambda: get()[1] > epoch or p.poll() is not None, "the swap published")
            self.assertIsNone(p.poll(), "the swap ended before its client could be killed")
            self.kill(p)
            # The swap finishes on its own (committed or rolled back, never half): then the
            # strategy in force is one of the two and the mutation lock is free - another change
            # is accepted and answered (it too meets the late worker: rolled back or done).
            code, out, err = d.ctl("--json", "strategy", "set", old, "--quiesce-timeout-ms=200",
                                   timeout=60)
            self.assertIn(code, (0, 1), err + out)
            if code == 1:
                self.assertIn("rolled back", err + out)
            self.assertIn(get()[0], (old, new))
        finally:
            code = d.stop()
        # No buffer stranded: the daemon's exit audit (skbnfd exits 1 when it is not exact;
        # AuditPool itself cannot run here, the late worker misses every quiescent point).
        self.assertEqual(code, 0, "daemon exit code %r" % code)

    def test_audit_client_killed_leaves_no_worker_parked(self):
        for i in range(10):
            p = self.popen("audit")
            # Killed at a different point of the call each time (before, during or after the
            # park): not a wait for anything, a spread of kill points.
            time.sleep(0.002 * i)
            self.kill(p)
        h.until(self.no_worker_paused, "no worker parked")
        self.assert_forwarding_and_exact()

    def test_pause_client_killed_leaves_the_worker_paused_only_for_its_lease(self):
        code, out, err = self.ctl("--json", "stats")
        self.assertEqual(code, 0, err)
        core = int(json.loads(out)["cores"][-1].get("core", 0))
        # Killed at a different point of the call each time (before, during or after the pause
        # took effect): a worker the dead client paused stays parked only until its lease runs
        # out (1 s here) - nobody is left to resume it.
        for i in range(8):
            p = self.popen("worker", "pause", str(core), "--lease=1s")
            time.sleep(0.003 * i)
            self.kill(p)
        # And once where the pause certainly happened: the call answered, then the client died.
        p = self.popen("--json", "worker", "pause", str(core), "--lease=1s")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        end = int(json.loads(out)["lease_expires_unix_ms"]) / 1000.0
        self.assertFalse(self.no_worker_paused())
        h.until(self.no_worker_paused, "the worker resumed when the dead client's lease ran out")
        self.assertGreaterEqual(time.time(), end - 0.05)
        self.assert_forwarding_and_exact()

if __name__ == "__main__":
    unittest.main()
