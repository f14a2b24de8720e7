# SPDX-License-Identifier: BSD-3-Clause
"""PauseWorker is a lease (issue 31 item 4; server/control/pause_leases.h). Against skbnfd's
demo (control_skbnfd.lease_test) and the fake daemon (control.lease_test):

  - a bad lease is INVALID_ARGUMENT naming lease_ms, and pauses nothing;
  - a paused worker makes readiness NOT_SERVING (asked as the kubelet would, grpc.health.v1
    Check on service "readiness": skbnf_health, the probe the chart and the image use), naming
    the core, and resumes by itself when its lease runs out - not before the end the response
    named - logged, and counted as skbnf_control_changes_total{rpc="ResumeWorker",
    source="lease"}; readiness is SERVING again;
  - pausing again renews the lease from then (was_paused, a later end);
  - ResumeWorker ends the lease: nothing expires later.
Every wait is for an event, bounded; the one time check is "not resumed before the end the
server announced".
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

HEALTH = os.path.join(os.path.dirname(h.SKBNFCTL), "skbnf_health")




class PauseLeases(h.SharedDaemon):
    def ctl(self, *args):
        return self.d.ctl(*args)

    def cores(self):
        code, out, err = self.ctl("--json", "stats")
        self.assertEqual(code, 0, err)
        return json.loads(out)["cores"]

    def paused(self, core):
        return any(c.get("paused") for c in self.cores() if int(c.get("core", 0)) == core)

    def ready(self):
        r = subprocess.run([HEALTH, "--addr=" + self.d.grpc, "--service=readiness"],
                           capture_output=True, text=True, timeout=30)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        return r.returncode == 0

    def lease_resumes(self):
        return h.total(h.parse_metrics(self.d.scrape())[1], "skbnf_control_changes_total",
                       rpc="ResumeWorker", source="lease", result="ok")

    def pause(self, core, *flags):
        code, out, err = self.ctl("--json", "worker", "pause", str(core), *flags)
        self.assertEqual(code, 0, err + out)
        return json.loads(out)

    def setUp(self):
        h.until(self.ready, "readiness SERVING before the test")
        self.core = int(self.cores()[-1].get("core", 0))
        self.assertFalse(self.paused(self.core))

    def test_bad_lease_is_invalid_argument_and_pauses_nothing(self):
        for lease in ("10ms", "90m"):
            code, out, err = self.ctl("worker", "pause", str(self.core), "--lease=" + lease)
            self.assertNotEqual(code, 0, out)
            self.assertIn("INVALID_ARGUMENT", err)
            self.assertIn("lease_ms", err)
            self.assertFalse(self.paused(self.core), lease)

    def test_a_lease_runs_out_and_the_worker_resumes_by_itself(self):
        before = self.lease_resumes()
        r = self.pause(self.core, "--lease=1500ms")
        self.assertEqual(int(r["lease_ms"]), 1500, r)
        end_ms = int(r["lease_expires_unix_ms"])
        self.assertAlmostEqual(end_ms / 1000.0, time.time() + 1.5, delta=1.0)
        self.assertTrue(self.paused(self.core))
        h.until(lambda: not self.ready(), "readiness NOT_SERVING while the worker is paused")
        h.until(lambda: not self.paused(self.core), "the worker resumed when its lease ran out")
        self.assertGreaterEqual(time.time(), end_ms / 1000.0 - 0.05,
                                "resumed before the end of its lease")
        h.until(self.ready, "readiness SERVING again")
        self.assertEqual(self.lease_resumes(), before + 1)
        log = self.d.read_stderr()
        self.assertIn("NOT_SERVING: worker core %d: paused by PauseWorker" % self.core, log)
        self.assertIn("PauseWorker lease of core %d" % self.core, log)
        self.assertIn("ran out: worker resumed", log)

    def test_pausing_again_renews_the_lease(self):
        first = self.pause(self.core, "--lease=1500ms")
        self.assertFalse(first.get("was_paused", False), first)
        second = self.pause(self.core, "--lease=3s")
        self.assertTrue(second.get("was_paused"), second)
        end_ms = int(second["lease_expires_unix_ms"])
        self.assertGreater(end_ms, int(first["lease_expires_unix_ms"]) + 1000, second)
        h.until(lambda: not self.paused(self.core), "the worker resumed at the renewed end")
        self.assertGreaterEqual(time.time(), end_ms / 1000.0 - 0.05,
                                "resumed at the first lease's end, not the renewal's")

    def test_resume_ends_the_lease(self):
        before = self.lease_resumes()
        r = self.pause(self.core, "--lease=1s")
        code, out, err = self.ctl("worker", "resume", str(self.core))
        self.assertEqual(code, 0, err + out)
        self.assertFalse(self.paused(self.core))
        h.until(self.ready, "readiness SERVING after the resume")
        # Past the released lease's end, nothing expired: pause again, and it holds.
        h.until(lambda: time.time() > int(r["lease_expires_unix_ms"]) / 1000.0 + 0.3,
              "the released lease's end passed", timeout=10)
        self.assertEqual(self.lease_resumes(), before)
        self.pause(self.core, "--lease=60s")
        self.assertTrue(self.paused(self.core))
        code, out, err = self.ctl("worker", "resume", str(self.core))
        self.assertEqual(code, 0, err + out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
