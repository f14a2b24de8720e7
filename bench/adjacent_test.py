#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_adjacent_labels (label bench): bench/adjacent.py's mode labelling and per-mode
ratios on planted runs (no DPDK, nothing timed): a machine that changes mode halfway, with B 3 %
slower than A in both modes, gives two modes with B/A = 0.97 in each; a B run whose neighbours
disagree, or whose own samples jump, is "straddle" and in no ratio; an A run that jumps is
"straddle" too; a one-mode run gives "one"."""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location("adjacent", os.path.join(HERE, "adjacent.py"))
adj = importlib.util.module_from_spec(spec)
spec.loader.exec_module(adj)


def planted(n, fast_until, b=0.97, jitter=0.004, jump_at=None):
    """2n runs in adjacent's order; A forwards 125 Mpps (fast) or 78 (slow)."""
    runs = []
    for i, arm in enumerate(adj.order(n)):
        base = 125.0 if i < fast_until else 78.0
        wiggle = 1 + jitter * ((i * 7919) % 5 - 2) / 2
        v = base * wiggle * (b if arm == "B" else 1.0)
        samples = [v, v, v]
        if i == jump_at:
            samples = [125.0 * wiggle, 78.0 * wiggle, 78.0 * wiggle]
        runs.append({"index": i, "arm": arm, "mpps": sorted(samples)[1], "samples": samples})
    return runs


class Labels(unittest.TestCase):
    def test_order_alternates_and_balances_first_and_second(self):
        o = adj.order(4)
        self.assertEqual(o, ["A", "B", "B", "A", "A", "B", "B", "A"])

    def test_two_modes_each_get_the_true_ratio(self):
        runs = planted(30, fast_until=31)
        th = adj.label_runs(runs, 0.15)
        self.assertTrue(78 < th < 125)
        s = adj.summarise(runs, th)
        for mode in ("fast", "slow"):
            self.assertAlmostEqual(s["modes"][mode]["ratio_median"], 0.97, delta=0.006)
        self.assertEqual(sum(m["b_runs"] for m in s["modes"].values()) + s["straddle_b"], 30)

    def test_a_b_run_between_modes_is_straddle_and_in_no_ratio(self):
        # Order around the change: 28 A, 29 B, 30 B, 31 A, and 31 is the first slow run: the B
        # runs 29 and 30 have one fast and one slow A neighbour.
        runs = planted(30, fast_until=31)
        adj.label_runs(runs, 0.15)
        straddled = [r for r in runs if r["mode"] == "straddle"]
        self.assertTrue(straddled)
        for r in straddled:
            self.assertEqual(r["arm"], "B")
            self.assertNotIn("ratio", r)

    def test_runs_whose_own_samples_jump_are_straddle(self):
        runs = planted(10, fast_until=100, jump_at=4)  # index 4: A
        adj.label_runs(runs, 0.15)
        self.assertEqual(runs[4]["mode"], "straddle")
        self.assertEqual(runs[5]["mode"], "straddle")  # its B neighbour: one neighbour straddles
        runs = planted(10, fast_until=100, jump_at=5)  # index 5: B
        adj.label_runs(runs, 0.15)
        self.assertEqual(runs[5]["mode"], "straddle")
        self.assertNotIn("ratio", runs[5])

    def test_one_mode(self):
        runs = planted(10, fast_until=100)
        th = adj.label_runs(runs, 0.15)
        self.assertIsNone(th)
        s = adj.summarise(runs, th)
        self.assertEqual(list(s["modes"]), ["one"])
        self.assertEqual(s["modes"]["one"]["b_runs"], 10)


if __name__ == "__main__":
    unittest.main()
