#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_interleave_labels (label bench): bench/interleave.py's mode labelling and per-mode
ratios on planted samples (no DPDK, nothing timed): a run whose machine changes mode halfway,
with B 5 % slower than A in both modes, must give two modes, B/A = 1.05 in each, the samples
whose A neighbours disagree labelled "straddle" and in no ratio; a one-mode run gives "one"."""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("interleave", os.path.join(HERE, "interleave.py"))
il = importlib.util.module_from_spec(spec)
spec.loader.exec_module(il)


def planted(n, fast_until, b_cost=1.05, jitter=0.004):
    """2n samples in interleave's order; ticks/pkt 100 (fast) or 160 (slow) for A."""
    rows = []
    for i, arm in enumerate(il.order(n)):
        base = 100.0 if i < fast_until else 160.0
        wiggle = 1 + jitter * ((i * 7919) % 5 - 2) / 2
        t = base * wiggle * (b_cost if arm == "B" else 1.0)
        rows.append({"index": i, "arm": arm, "ticks_per_packet": t, "mpps": 1e3 / t,
                     "swap_us": 20})
    return rows


class Labels(unittest.TestCase):
    def test_order_alternates_and_balances_first_and_second(self):
        o = il.order(4)
        self.assertEqual(o, ["A", "B", "B", "A", "A", "B", "B", "A"])
        self.assertEqual(o.count("A"), o.count("B"))

    def test_two_modes_each_get_the_true_ratio(self):
        rows = planted(30, fast_until=31)
        th = il.label_modes(rows, 0.15)
        self.assertIsNotNone(th)
        self.assertTrue(100 < th < 160)
        s = il.summarise(rows, th)
        for mode in ("fast", "slow"):
            m = s["modes"][mode]
            self.assertAlmostEqual(m["ratio_ticks_median"], 1.05, delta=0.006, msg=mode)
            lo, hi = m["ratio_ticks_ci95"]
            self.assertTrue(lo <= 1.05 <= hi or abs(m["ratio_ticks_median"] - 1.05) < 0.006)
        # Mixing the modes would have put some B samples against the other mode's A: none here.
        for r in rows:
            if r["arm"] == "B" and r["mode"] != "straddle":
                self.assertAlmostEqual(r["ratio_ticks"], 1.05, delta=0.01)

    def test_a_sample_between_modes_is_straddle_and_in_no_ratio(self):
        rows = planted(30, fast_until=31)
        il.label_modes(rows, 0.15)
        straddle = [r for r in rows if r["mode"] == "straddle"]
        self.assertGreaterEqual(len(straddle), 1)
        for r in straddle:
            self.assertEqual(r["arm"], "B")
            self.assertNotIn("ratio_ticks", r)

    def test_one_mode_when_no_gap(self):
        rows = planted(10, fast_until=1000)
        th = il.label_modes(rows, 0.15)
        self.assertIsNone(th)
        s = il.summarise(rows, th)
        self.assertEqual(list(s["modes"]), ["one"])
        self.assertEqual(s["modes"]["one"]["b_samples"], 10)
        self.assertEqual(s["straddle"], 0)


if __name__ == "__main__":
    unittest.main()
