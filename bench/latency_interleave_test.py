#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/latency_interleave.py without DPDK (ctest bench_latency_interleave_labels): the rotated
rounds, the histogram difference and its percentiles (GetStats' rule), the mode labels of three
arms around a planted mode change, and the per-arm summary's counts."""
import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import latency_interleave as li  # noqa: E402


class Rotation(unittest.TestCase):
    def test_every_arm_in_every_position(self):
        self.assertEqual(li.order(["x", "y", "z"], 3), list("ABCBCACAB"))
        self.assertEqual(li.order(["x", "y"], 2), list("ABBA"))


class Histogram(unittest.TestCase):
    def test_difference_and_percentiles(self):
        h0 = {(100, 105): 10, (200, 211): 5}
        h1 = {(100, 105): 30, (200, 211): 5, (400, 423): 1, (1000, 1062): 1}
        d = li.difference(h1, h0)
        self.assertEqual(d, {(100, 105): 20, (400, 423): 1, (1000, 1062): 1})
        self.assertEqual(li.quantile(d, 0.5), 105)
        self.assertEqual(li.quantile(d, 0.99), 1062)  # ceil(0.99 * 22) = 22nd sample
        self.assertEqual(li.quantile(d, 0.9), 105)    # ceil(19.8) = 20th: the first bin's last
        self.assertEqual(li.quantile(d, 0.95), 423)   # ceil(20.9) = 21st
        self.assertIsNone(li.quantile({}, 0.5))
        self.assertEqual(li.parse_bins(li.bins_text(d)), d)
        with self.assertRaises(li.Failure):
            li.difference(h0, h1)  # a bin that went down

    def test_histogram_reads_getstats_json(self):
        stats = {"cores": [{"latency": [{"total": {"samples": "3"}, "bins": [
            {"low_ns": "100", "high_ns": "105", "samples": "2"},
            {"low_ns": "200", "high_ns": "211", "samples": "1"}]}]},
            {"latency": [{"total": {"samples": "1"},
                          "bins": [{"low_ns": "100", "high_ns": "105", "samples": "1"}]}]}]}
        self.assertEqual(li.histogram(stats), ({(100, 105): 3, (200, 211): 1}, 4))


def row(i, arm, ticks, p99=500):
    spec = {"A": "headpool", "B": "magazine", "C": "recycle+magazine"}[arm]
    return {"index": i, "arm": arm, "spec": spec, "ticks_per_packet": ticks, "mpps": 1.0,
            "busy_fraction": 0.5, "p99_ns": p99, "swap_us": 10.0 if i else "", "stalls": 0,
            "bins": f"100-105:9 {p99 - 20}-{p99}:1"}


class Modes(unittest.TestCase):
    def test_three_arms_around_a_mode_change(self):
        arms = li.order(["headpool", "magazine", "recycle+magazine"], 4)  # ABC BCA CAB ABC
        ticks = [100] * 6 + [160] * 6  # the machine slows down halfway
        rows = [row(i, a, t * (1.02 if a != "A" else 1)) for i, (a, t) in
                enumerate(zip(arms, ticks))]
        th = li.label_modes(rows, 0.15)
        self.assertTrue(100 < th < 160)
        self.assertEqual([r["mode"] for r in rows if r["arm"] == "A"],
                         ["fast", "fast", "slow", "slow"])
        # index 6 (C) lies between the A at 5 (fast) and the A at 7 (slow)
        self.assertEqual(rows[6]["mode"], "straddle")
        self.assertEqual(rows[1]["mode"], "fast")
        self.assertEqual(rows[11]["mode"], "slow")
        args = argparse.Namespace(arms=["headpool", "magazine", "recycle+magazine"],
                                  sample_every=8, cost_pairs=0)
        summ = li.summarise(rows, [], th, args)
        for spec, modes in summ["arms"].items():
            self.assertEqual(modes["all"]["intervals"], 4, spec)
            self.assertEqual(modes["all"]["samples"], 40, spec)
            labelled = sum(m["intervals"] for k, m in modes.items() if k != "all")
            strad = sum(1 for r in rows if r["spec"] == spec and r["mode"] == "straddle")
            self.assertEqual(labelled + strad, 4, spec)
        self.assertEqual(summ["straddle"], sum(1 for r in rows if r["mode"] == "straddle"))

    def test_one_mode(self):
        rows = [row(i, a, 100 + (i % 3)) for i, a in enumerate(li.order(["a", "b", "c"], 2))]
        self.assertIsNone(li.label_modes(rows, 0.15))
        self.assertEqual({r["mode"] for r in rows}, {"one"})


if __name__ == "__main__":
    unittest.main()
