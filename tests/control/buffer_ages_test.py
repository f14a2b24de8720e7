# SPDX-License-Identifier: BSD-3-Clause
"""Since when, and who took it (issue 32 item 2; server/core/buffer_ages.h): the track modifier
swapped in and out at run time, on skbnfd's demo (control_skbnfd.buffer_ages_test) and the fake
daemon (control.buffer_ages_test), seen through skbnfctl (GetBufferAges) and /metrics:

  - tracking off: `skbnfctl buffers --ages` is FAILED_PRECONDITION saying how to switch it on;
    skbnf_pool_tracking is 0 and no age series is exported;
  - `strategy set '<spec>,track'` (a hot swap): a census arrives within a bounded wait; in flight
    = tracked + untracked; each site's buckets are cumulative and end at its object count; the
    sites add up to the tracked objects; --oldest N lists at most N, oldest first; the same
    census on /metrics: skbnf_pool_inflight_age_seconds per site with _count == the +Inf
    bucket, skbnf_pool_tracking 1;
  - a bad --oldest is INVALID_ARGUMENT naming the field; `--exact --ages` is a usage error;
  - swapped off again: tracking 0, the age series gone, the RPC refuses again.
Every wait is for an event, bounded (control_harness.until).
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402


class BufferAges(h.SharedDaemon):
    daemon_args = ("--buffer-census-every=250ms",)

    def ctl(self, *args):
        return self.d.ctl(*args)

    def spec(self):
        code, out, err = self.ctl("--json", "strategy", "get")
        self.assertEqual(code, 0, err)
        return json.loads(out)["spec"]

    def metrics(self):
        return h.parse_metrics(self.d.scrape())[1]

    def ages(self):
        code, out, err = self.ctl("--json", "buffers", "--ages", "--oldest=5")
        return (json.loads(out) if code == 0 else None), err

    def test_off_on_off(self):
        base = self.spec()
        self.assertNotIn("track", base)
        code, _, err = self.ctl("buffers", "--ages")
        self.assertEqual(code, 1, err)
        self.assertIn("FAILED_PRECONDITION", err)
        self.assertIn("tracking is off", err)
        self.assertIn(base + ",track", err)  # what to write
        m = self.metrics()
        self.assertEqual(list(h.values(m, "skbnf_pool_tracking").values()), [0.0])
        self.assertEqual(h.values(m, "skbnf_pool_inflight_age_seconds_count"), {})

        code, out, err = self.ctl("strategy", "set", base + ",track")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.spec(), base + ",track")
        h.until(lambda: self.ages()[0] is not None, "a census after switching tracking on")
        r, _ = self.ages()
        tracked, untracked = int(r["tracked"]), int(r["untracked"])
        self.assertEqual(int(r["in_flight"]), tracked + untracked)
        self.assertLessEqual(int(r["in_flight"]), int(r["populated"]))
        self.assertGreater(int(r["census_every_ms"]), 0)
        by_sites = 0
        for s in r["sites"]:
            self.assertIn(s["site"]["site"], ("rx", "worker", "application", "other"))
            counts = [int(b["objects"]) for b in s["buckets"]]
            self.assertEqual(counts, sorted(counts), "cumulative buckets")
            self.assertEqual(s["buckets"][-1]["le_seconds"], "Infinity")
            self.assertEqual(counts[-1], int(s["objects"]))
            self.assertGreaterEqual(float(s["max_seconds"]), 0)
            by_sites += int(s["objects"])
        self.assertEqual(by_sites, tracked)
        ages = [float(b["age_seconds"]) for b in r["oldest"]]
        self.assertLessEqual(len(ages), 5)
        self.assertEqual(ages, sorted(ages, reverse=True), "oldest first")
        self.assertEqual(len(ages), min(5, tracked))

        def exported():
            m = self.metrics()
            return (list(h.values(m, "skbnf_pool_tracking").values()) == [1.0] and
                    (tracked == 0 or h.values(m, "skbnf_pool_inflight_age_seconds_count")))
        h.until(exported, "skbnf_pool_tracking 1 and the age histogram on /metrics")
        m = self.metrics()
        for labels, count in h.values(m, "skbnf_pool_inflight_age_seconds_count").items():
            lab = dict(labels)
            self.assertIn(lab["site"], ("rx", "worker", "application", "other"))
            inf = h.values(m, "skbnf_pool_inflight_age_seconds_bucket", le="+Inf", **lab)
            self.assertEqual(list(inf.values()), [count])

        code, _, err = self.ctl("buffers", "--ages", "--oldest=1001")
        self.assertEqual(code, 1, err)
        self.assertIn("INVALID_ARGUMENT", err)
        self.assertIn("oldest:", err)
        code, _, err = self.ctl("buffers", "--ages", "--exact")
        self.assertEqual(code, 2, err)
        self.assertIn("--exact and --ages", err)

        code, out, err = self.ctl("strategy", "set", base)
        self.assertEqual(code, 0, out + err)
        h.until(lambda: list(h.values(self.metrics(), "skbnf_pool_tracking").values()) == [0.0],
                "skbnf_pool_tracking 0 after switching tracking off")
        self.assertEqual(h.values(self.metrics(), "skbnf_pool_inflight_age_seconds_count"), {})
        code, _, err = self.ctl("buffers", "--ages")
        self.assertEqual(code, 1, err)
        self.assertIn("tracking is off", err)


if __name__ == "__main__":
    unittest.main()
