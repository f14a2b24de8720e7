#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_min_pool_bisect (label bench): bench/min_pool.py's bisection, memory arithmetic
and --quick assertions on planted oracles and rows (no DPDK, nothing timed): a pool that
passes from a planted threshold up must be found to within the step, never outside
[floor, upper]; a passing floor and a failing upper bound are reported as such; --quick's check
must reject a planted tiny pool that "passed" and a result whose step below was never seen
failing."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("min_pool", os.path.join(HERE, "min_pool.py"))
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)


def oracle(threshold, seen):
    def trial(n):
        seen.append(n)
        return n >= threshold
    return trial


class Bisect(unittest.TestCase):
    def test_finds_the_threshold_to_within_the_step(self):
        for threshold in (4257, 5000, 8191, 8192, 12000, 12700, 12767):
            for step in (1, 32, 64, 500):
                seen = []
                b = mp.bisect(oracle(threshold, seen), 4256, 12768, step)
                self.assertEqual(b["status"], "converged", (threshold, step))
                self.assertGreaterEqual(b["result"], threshold)
                self.assertLess(b["lo"], threshold)
                self.assertLessEqual(b["result"] - b["lo"], step)
                self.assertTrue(all(4256 <= n <= 12768 for n in seen))
                self.assertEqual(len(seen), len(set(seen)), "a pool tried twice")
                self.assertEqual([n for n, _ in b["trials"]], seen)
                # about log2(range / step) steps, plus the two ends
                self.assertLessEqual(len(seen), 2 + (8512 // step).bit_length() + 1)

    def test_on_the_step_grid(self):
        b = mp.bisect(oracle(6000, []), 4256, 12768, 64)
        # every midpoint on the grid while the gap is at least two steps
        lo, hi = 4256, 12768
        for n, ok in b["trials"][2:]:
            if hi - lo >= 128:
                self.assertEqual(n % 64, 0, (lo, hi, n))
            self.assertTrue(lo < n < hi)
            lo, hi = (lo, n) if ok else (n, hi)

    def test_quick_shape_takes_one_midpoint(self):
        step = mp.round_up((4256 - 256) // 2 + 1, 64)
        b = mp.bisect(oracle(2000, []), 256, 4256, step)
        self.assertEqual([n for n, _ in b["trials"]], [4256, 256, 2256])
        self.assertEqual((b["result"], b["lo"]), (2256, 256))

    def test_floor_that_passes_is_the_result(self):
        seen = []
        b = mp.bisect(oracle(100, seen), 4256, 12768, 64)
        self.assertEqual((b["status"], b["result"], b["lo"]), ("at_floor", 4256, None))
        self.assertEqual(seen, [12768, 4256])

    def test_upper_that_fails_gives_no_result(self):
        seen = []
        b = mp.bisect(oracle(20000, seen), 4256, 12768, 64)
        self.assertEqual((b["status"], b["result"]), ("above_upper", None))
        self.assertEqual(seen, [12768])

    def test_floor_above_upper_is_an_error(self):
        with self.assertRaises(ValueError):
            mp.bisect(oracle(1, []), 10, 5, 1)


class Verdict(unittest.TestCase):
    def test_rx_nombuf_or_a_wedge_is_too_small(self):
        self.assertEqual(mp.verdict(0, 1000, (500, 500), False), (True, ""))
        self.assertFalse(mp.verdict(1, 1000, (500, 500), False)[0])
        self.assertFalse(mp.verdict(0, 0, (0, 0), True)[0])
        self.assertEqual(mp.verdict(0, 500, (500, 0), True), (False, "wedged: stopped receiving"))
        # a stall the probe saw end is noted, not a failure
        self.assertEqual(mp.verdict(0, 500, (0, 500), False),
                         (True, "stalled, then received again"))


class Memory(unittest.TestCase):
    def test_element_and_slab_arithmetic(self):
        self.assertEqual(mp.ELT_BYTES, 2368)
        self.assertEqual(mp.PER_SLAB, 27)
        self.assertEqual(mp.mib_pool(27, "headpool"), 0.06)   # one 64 KiB slab
        self.assertEqual(mp.mib_pool(28, "headpool"), 0.12)   # two
        self.assertEqual(mp.mib_pool(27 * 16, "magazine"), 1.0)
        self.assertEqual(mp.mib_pool(1024, "ring_mp_mc:256"), round(1024 * 2368 / 2**20, 2))
        self.assertEqual(mp.mib_elements(1024), 2.31)

    def test_arms(self):
        self.assertTrue(mp.is_native("ring_mp_mc:32"))
        self.assertFalse(mp.is_native("lcache+headpool"))
        self.assertEqual(mp.native_cache("ring_mp_mc:32"), 32)
        self.assertEqual(mp.native_cache("ring_mp_mc"), 256)


def rows_for(results):
    """Step rows of one quick case: {mbufs: ok}."""
    return [{"case": "c", "mbufs": n, "ok": ok, "rx_nombuf": 0 if ok else 5,
             "rx_packets": 100 if ok else 0} for n, ok in results.items()]


class QuickCheck(unittest.TestCase):
    def summ(self, result, lo, status="converged", step=2048):
        return [{"case": "c", "arm": "headpool", "status": status, "mbufs": result,
                 "largest_failed": lo, "step": step}]

    def test_a_clean_run_passes(self):
        rows = rows_for({4256: True, mp.QUICK_PLANTED: False, 2176: True})
        self.assertEqual(mp.check_quick(rows, self.summ(2176, mp.QUICK_PLANTED)), [])

    def test_a_planted_pool_that_passed_is_caught(self):
        rows = rows_for({4256: True, mp.QUICK_PLANTED: True})
        self.assertTrue(mp.check_quick(rows, self.summ(mp.QUICK_PLANTED, None, "at_floor")))

    def test_a_result_with_rx_nombuf_is_caught(self):
        rows = rows_for({4256: True, mp.QUICK_PLANTED: False, 2176: True})
        rows[-1]["rx_nombuf"] = 3
        self.assertTrue(mp.check_quick(rows, self.summ(2176, mp.QUICK_PLANTED)))

    def test_a_stall_retried_result_counts_by_its_last_attempt(self):
        rows = rows_for({4256: True, mp.QUICK_PLANTED: False})
        rows += rows_for({2256: False}) + rows_for({2256: True})  # stalled, then passed
        self.assertEqual(mp.check_quick(rows, self.summ(2256, mp.QUICK_PLANTED)), [])
        rows += rows_for({2256: False})  # ... and failed last: the verdict is a failure
        self.assertTrue(mp.check_quick(rows, self.summ(2256, mp.QUICK_PLANTED)))

    def test_unconverged_or_unseen_failure_is_caught(self):
        rows = rows_for({4256: True, mp.QUICK_PLANTED: False, 2176: True})
        self.assertTrue(mp.check_quick(rows, self.summ(2176, 1000)))   # 1000 never tried
        self.assertTrue(mp.check_quick(rows, self.summ(4256, mp.QUICK_PLANTED)))  # > one step
        self.assertTrue(mp.check_quick(rows, self.summ(None, 4256, "above_upper")))


class Modes(unittest.TestCase):
    def test_two_clusters_within_a_case(self):
        rows = [{"case": "c", "ticks_per_packet": t} for t in (100, 102, 99, 160, 158)]
        rows.append({"case": "c", "ticks_per_packet": ""})  # a refused step: no label
        mp.label_modes(rows, 0.15)
        self.assertEqual([r.get("mode") for r in rows],
                         ["fast", "fast", "fast", "slow", "slow", None])

    def test_one_mode(self):
        rows = [{"case": "c", "ticks_per_packet": t} for t in (100, 104, 101)]
        mp.label_modes(rows, 0.15)
        self.assertEqual({r["mode"] for r in rows}, {"one"})


class PreflightRuleCoversTheTable(unittest.TestCase):
    """Issue 33 item 3: skbnfd's pool sizing rule (what `--mbufs 0` and the chart's default size
    the pool by, and what preflight refuses below) must be at least every smallest pool the
    committed table measured at zero rx_nombuf: a rule below a measured minimum would size pods
    that lose packets. The table (bench/results/issue33/min_pool-*/summary.csv) is measurement,
    the rule is server/daemon/startup_checks.cc's; a new slice that beats the rule fails here."""

    def test_every_stored_minimum_is_within_the_rule(self):
        import csv
        import glob
        rows = []
        for f in glob.glob(os.path.join(HERE, "results", "issue33", "min_pool-*", "summary.csv")):
            rows += [r for r in csv.DictReader(open(f)) if r["status"] == "converged"]
        self.assertTrue(rows, "no committed min_pool slice")
        for r in rows:
            self.assertGreaterEqual(int(r["preflight_min"]), int(r["mbufs"]), r)


if __name__ == "__main__":
    unittest.main()
