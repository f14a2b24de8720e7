# SPDX-License-Identifier: BSD-3-Clause
"""The audit trail survives a crash mid-change (issue 31 item 6, server/core/change_log.h).

The daemon is started with --audit-log=FILE and worker core 1 late to its quiescent point
($SKBNF_CONTROL_DAEMON_STALL_ARGS: skbnfd --test-stall-lcore=1 --test-stall-ms=3000, the fake's
--sim-stuck-core=1), so a SetStrategy with a long quiesce timeout is in the middle of its swap for
seconds. While it is, the daemon gets SIGKILL (no handler, no flush, no destructor). The file must
then hold the swap's begin record (who, role, what) and no end record for it: the begin record is
written - and fdatasync()ed - before the change is applied. A refused call before it is there too,
and every line is one JSON object.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class AuditCrashTest(unittest.TestCase):
    def test_begin_record_survives_sigkill_mid_swap(self):
        if not h.STALL_ARGS:
            self.skipTest("no SKBNF_CONTROL_DAEMON_STALL_ARGS for this daemon")
        audit = os.path.join(tempfile.mkdtemp(prefix="skbnf-audit-"), "audit.jsonl")
        d = h.Daemon("--audit-log=" + audit, *h.STALL_ARGS)
        try:
            code, out, _ = d.ctl("strategy", "get", "--json")
            self.assertEqual(code, 0)
            before = json.loads(out)["spec"]
            nxt = "magazine" if before == "headpool" else "headpool"
            self.assertEqual(d.ctl("routes", "delete", "not-a-prefix")[0], 1)  # refused: audited
            swap = subprocess.Popen(
                [h.SKBNFCTL, "--addr=" + d.grpc, "strategy", "set", nxt,
                 "--quiesce-timeout-ms=9000"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # Wait for the begin record of the swap (bounded), then kill while it runs.
            deadline = time.monotonic() + 20
            begun = None
            while begun is None and time.monotonic() < deadline:
                begun = next((r for r in records(audit) if r["event"] == "begin" and
                              r["rpc"] == "SetStrategy"), None)
                if begun is None:
                    time.sleep(0.02)
            self.assertIsNotNone(begun, "no begin record while the swap runs")
            self.assertIsNone(swap.poll(), "the swap must still be running when killed")
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait(timeout=20)
            swap.wait(timeout=30)
        finally:
            d.stop()
        recs = records(audit)
        self.assertEqual(begun["what"], f"{before} -> {nxt}")
        self.assertEqual(begun["role"], "admin")
        self.assertEqual(begun["source"], "rpc")
        self.assertTrue(begun["who"].startswith("loopback 127.0.0.1"), begun)
        self.assertRegex(begun["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        ends = [r for r in recs if r["event"] == "end" and r.get("id") == begun["id"]]
        self.assertEqual(ends, [], "killed mid-swap: no end record")
        deletes = [r for r in recs if r["rpc"] == "DeleteRoute"]
        self.assertEqual([r["event"] for r in deletes], ["begin", "end"])
        self.assertEqual(deletes[1]["result"], "invalid_argument")


if __name__ == "__main__":
    unittest.main()
