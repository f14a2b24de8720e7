# SPDX-License-Identifier: BSD-3-Clause
"""Limits per identity (issue 31 item 3, server/control/limits.h), against the daemon itself.

An identity is what the transport proved (access.h, Caller::ClientKey): here two unix-socket
peers told apart by SO_PEERCRED, skbnfd's own uid 0 (admin) and a second uid made with
util-linux setpriv (--reuid/--regid/--clear-groups, as roles_test.py does) bound to operate.

* streams: with --watch-streams-per-client=2, uid 0 holds two WatchStats streams (skbnfctl top,
  each seen open by its first update); its third is RESOURCE_EXHAUSTED naming
  --watch-streams-per-client, while the second uid opens one and reads at the same moment.
* mutations: with --mutations-per-identity=1 and worker core 1 late to its quiescent point
  ($SKBNF_CONTROL_DAEMON_STALL_ARGS), uid 0's SetStrategy is parked in its swap (seen by its
  audit begin record); its AddRoute meanwhile is RESOURCE_EXHAUSTED naming
  --mutations-per-identity and adds nothing, while the second uid's reads and validate-only
  SetStrategy are answered.
* every refusal is counted in skbnf_control_rejected_total{rpc,reason} (exactly: +1 each);
* once uid 0's streams end (the clients killed) and its swap returns, it is served again.
Needs root (setpriv to another uid), as roles_test.py.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

OTHER = 52011


def read_line(proc, timeout=30):
    """The first line `proc` prints (bounded): the event "its stream is open"."""
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            raise AssertionError("no update from %r (exit %r): %r" % (proc.args, proc.poll(), buf))
        r, _, _ = select.select([proc.stdout], [], [], left)
        if r:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                continue
            buf += chunk
    return buf


class LimitsPerIdentityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: setpriv to another uid")
        if not h.STALL_ARGS:
            raise unittest.SkipTest("no SKBNF_CONTROL_DAEMON_STALL_ARGS for this daemon")
        cls.dir = tempfile.mkdtemp(prefix="skbnf-limits-")
        os.chmod(cls.dir, 0o711)  # the other uid reaches the socket inside, nothing else
        cls.sock = os.path.join(cls.dir, "control.sock")
        cls.audit = os.path.join(cls.dir, "audit.jsonl")
        cls.d = h.Daemon("--listen=127.0.0.1:0,unix:" + cls.sock, "--roles=uid:%d=operate" % OTHER,
                         "--watch-streams-per-client=2", "--mutations-per-identity=1",
                         "--audit-log=" + cls.audit, *h.STALL_ARGS)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "d"):
            code = cls.d.stop()
            shutil.rmtree(cls.dir, ignore_errors=True)
            assert code == 0, "daemon exit code %r" % code

    def cmd(self, uid, *args):
        c = [h.SKBNFCTL, "--addr=unix:" + self.sock] + list(args)
        if uid != 0:
            c = ["setpriv", "--reuid=%d" % uid, "--regid=0", "--clear-groups"] + c
        return c

    def run_as(self, uid, *args):
        p = subprocess.run(self.cmd(uid, *args), capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def rejected(self, rpc, reason):
        return h.total(h.parse_metrics(self.d.scrape())[1], "skbnf_control_rejected_total",
                       rpc=rpc, reason=reason)

    def stream(self, uid):
        p = subprocess.Popen(self.cmd(uid, "top", "--interval=100", "--count=100000", "--json"),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        read_line(p)  # open: the server sent its first update
        return p

    def test_streams_of_one_uid_do_not_starve_another(self):
        before = self.rejected("WatchStats", "streams_per_client")
        held = [self.stream(0), self.stream(0)]
        code, _, err = self.run_as(0, "top", "--count=1", "--interval=100")
        self.assertEqual(code, 1, "a third stream of uid 0 was served")
        self.assertIn("RESOURCE_EXHAUSTED", err)
        self.assertIn("this client (uid:0) already has 2 streams open", err)
        self.assertIn("--watch-streams-per-client", err)
        # at the same moment (uid 0's two streams still open) the other uid is served
        self.assertTrue(all(p.poll() is None for p in held))
        other = self.stream(OTHER)
        code, _, err = self.run_as(OTHER, "top", "--count=1", "--interval=100")
        self.assertEqual(code, 0, err)
        code, _, err = self.run_as(OTHER, "info")
        self.assertEqual(code, 0, err)
        self.assertTrue(all(p.poll() is None for p in held))
        self.assertEqual(self.rejected("WatchStats", "streams_per_client"), before + 1)
        # uid 0's streams end: it is served again (the server sees the cancellation soon after)
        for p in held:
            p.kill()
            p.wait()
        h.until(lambda: self.run_as(0, "top", "--count=1", "--interval=100")[0] == 0,
                "uid 0 served a stream again after its streams ended")
        other.kill()
        other.wait()

    def begun(self, rpc, after):
        with open(self.audit) as f:
            recs = [json.loads(l) for l in f if l.strip()]
        return [r for r in recs[after:] if r["event"] == "begin" and r["rpc"] == rpc]

    def audit_lines(self):
        with open(self.audit) as f:
            return sum(1 for _ in f)

    def routes(self):
        code, out, err = self.run_as(0, "routes", "list", "--json")
        self.assertEqual(code, 0, err)
        return out

    def test_a_parked_change_of_one_uid_leaves_another_served(self):
        code, out, err = self.run_as(0, "strategy", "get", "--json")
        self.assertEqual(code, 0, err)
        spec = json.loads(out)["spec"]
        nxt = "magazine" if spec == "headpool" else "headpool"
        before = self.rejected("AddRoute", "mutations_per_client")
        mark = self.audit_lines()
        swap = subprocess.Popen(self.cmd(0, "strategy", "set", nxt, "--quiesce-timeout-ms=5000"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (swap.poll() is None and swap.kill(), swap.wait()))
        h.until(lambda: self.begun("SetStrategy", mark), "uid 0's swap begun (audit record)")
        self.assertIsNone(swap.poll(), "the swap must still be parked")
        code, _, err = self.run_as(0, "routes", "add", "198.51.100.0/24", "0",
                                   "02:00:00:00:00:77")
        self.assertEqual(code, 1, "uid 0's second change in flight was accepted")
        self.assertIn("RESOURCE_EXHAUSTED", err)
        self.assertIn("AddRoute: uid:0 already has 1 changes in flight or waiting for the change "
                      "lock", err)
        self.assertIn("--mutations-per-identity", err)
        # the other uid at the same moment: reads and a validate-only SetStrategy are answered
        for args in (["info"], ["strategy", "get"], ["stats"],
                     ["strategy", "set", nxt, "--validate-only"]):
            code, _, err = self.run_as(OTHER, *args)
            self.assertEqual(code, 0, "%s: %s" % (args, err))
        self.assertIsNone(swap.poll(), "the swap ended before the other uid was served: the "
                          "test did not show 'at the same moment'")
        self.assertEqual(self.rejected("AddRoute", "mutations_per_client"), before + 1)
        self.assertNotIn("198.51.100.0/24", self.routes())  # refused: nothing changed
        swap.wait(timeout=60)  # the swap returns (done, or rolled back by its timeout)
        code, _, err = self.run_as(0, "routes", "add", "198.51.100.0/24", "0",
                                   "02:00:00:00:00:77")
        self.assertEqual(code, 0, "uid 0 not served after its change ended: " + err)
        self.assertIn("198.51.100.0/24", self.routes())
        code, _, err = self.run_as(0, "routes", "delete", "198.51.100.0/24")
        self.assertEqual(code, 0, err)


class CtlWaitsOutTheAuditRateLimitTest(unittest.TestCase):
    """skbnfctl audit / buffers --exact right after another audit (server/skbnfctl/client.h,
    CallAudit): the server refuses the second with RESOURCE_EXHAUSTED "retry in N ms"
    (CallLimits::Admit); skbnfctl waits that long once and is answered. A limit longer than its
    bound (2 s) is not waited out: the refusal is what the user sees."""

    def rejected(self, d):
        return h.total(h.parse_metrics(d.scrape())[1], "skbnf_control_rejected_total",
                       rpc="AuditPool", reason="rate")

    def test_back_to_back_audits_are_both_answered(self):
        # 1500 ms: the second skbnfctl starts well inside it, and it is under the 2 s bound
        with h.Daemon("--audit-min-interval-ms=1500") as d:
            # the control tests' fake backend does not count its buffers' places: `audit` only
            buffers = ["audit"] if h.daemon_is_fake() else ["buffers", "--exact", "--json"]
            for args in (["audit"], buffers, ["audit"]):
                code, _, err = d.ctl(*args)
                self.assertEqual(code, 0, "%s: %s" % (args, err))
            # the 2nd and 3rd were each refused once, then answered
            self.assertEqual(self.rejected(d), 2)

    def test_a_limit_beyond_the_bound_is_reported_not_waited(self):
        with h.Daemon("--audit-min-interval-ms=3600000") as d:
            code, _, err = d.ctl("audit")
            self.assertEqual(code, 0, err)
            t0 = time.monotonic()
            code, _, err = d.ctl("audit")
            self.assertEqual(code, 1, "a second audit within the hour was answered")
            self.assertIn("RESOURCE_EXHAUSTED", err)
            self.assertIn("at most one call per 3600000 ms", err)
            self.assertLess(time.monotonic() - t0, 30, "skbnfctl waited for the limit")
            self.assertEqual(self.rejected(d), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
