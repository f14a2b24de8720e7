#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_run_protocol (label bench): bench/run's run shape and load cap (issue 23), with
fake runners and a scripted load average, so no DPDK program runs and nothing is timed.

  * a pair whose load reading (start or end of either run) is above --load-cap is run again:
    the first attempt's rows stay in the CSV as `repeated`, the retry's are `ok`, and the
    summary uses only the retry;
  * a pair above the cap on every attempt is kept after --load-retries repeats, marked
    `over_load_cap`, and the table says so;
  * results name their memory: E.meta.json "memory" and the title line of the table;
  * testpmd rate runs carry no --record-core-cycles.
"""
import argparse
import csv
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def load_run():
    loader = importlib.machinery.SourceFileLoader("bench_run_under_test",
                                                  os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class FakeRun:
    """A configuration whose run returns a fixed rate and counts its calls."""

    def __init__(self, name, value):
        self.name, self.value, self.calls = name, value, 0

    def key(self):
        return f"fake:{self.name}"

    def pmds(self):
        return ["net_null"]

    def run(self, ctx, seconds, warmup):
        self.calls += 1
        return {"value": self.value, "samples": [self.value] * seconds,
                "tsc_ticks_per_packet": 20.0, "detail": ""}


class LoadCap(unittest.TestCase):
    def setUp(self):
        self.run = load_run()
        self.out = tempfile.mkdtemp(prefix="bench-run-test-")
        self.a, self.b = FakeRun("a", 10.0), FakeRun("b", 12.0)
        comp = self.run.Comparison("b vs a", self.a, self.b, "a", "b", group="io")
        self.exp = self.run.Experiment("fake", "Fake experiment", lambda q: [comp], "Mpps",
                                       "Mpps", True, "Two fake configurations.", "ratios")
        self.ctx = argparse.Namespace(command="bench/run fake", runs=0)

    def tearDown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def args(self, pairs, cap, retries):
        return argparse.Namespace(pairs=pairs, seconds=5, warmup=1, load_cap=cap,
                                  load_retries=retries, only=[], quick=False, out=self.out)

    def run_with_loads(self, loads, args):
        """Runs the fake experiment with loadavg() returning `loads` in turn (then the last)."""
        seq = list(loads)

        def fake_loadavg():
            v = seq.pop(0) if len(seq) > 1 else seq[0]
            return [v, v, v]
        self.run.loadavg = fake_loadavg
        self.run.run_experiment(self.ctx, self.exp, args)
        with open(os.path.join(self.out, "fake.csv")) as f:
            return list(csv.DictReader(f))

    def test_pair_above_the_cap_is_repeated_and_recorded(self):
        # Per run: one reading at its start, one at its end (then one for the progress line).
        # Pair 1: A starts at 3.0 (above 1.5) -> repeated; its retry and pair 2 are quiet.
        loads = [3.0, 1.0, 1.0, 1.0, 1.0] + [1.0] * 40
        rows = self.run_with_loads(loads, self.args(pairs=2, cap=1.5, retries=3))
        status = [(r["pair"], r["attempt"], r["status"]) for r in rows]
        self.assertEqual(status, [("0", "0", "repeated"), ("0", "0", "repeated"),
                                  ("0", "1", "ok"), ("0", "1", "ok"),
                                  ("1", "0", "ok"), ("1", "0", "ok")])
        self.assertEqual(self.a.calls + self.b.calls, 6)
        self.assertTrue(all(r["load1_end"] != "" for r in rows))
        meta = json.load(open(os.path.join(self.out, "fake.meta.json")))
        self.assertEqual(meta["load_cap"], 1.5)
        self.assertEqual(meta["seconds"], 5)
        # The summary counts the two kept pairs, not the repeated attempt.
        machine = {"cpu_model": "test", "cores": 2, "memory_gib": 1, "distro": "", "kernel": "",
                   "dpdk": "", "hugepages": 0}
        text, summ, _ = self.run.benchlib.report(self.exp, self.out, machine, "", [],
                                                 write=False)
        self.assertEqual(summ[0]["pairs"], 2)
        self.assertIn("Load cap 1.5: 1 pair(s) run again, 0 kept above it.", text)

    def test_pair_above_the_cap_every_time_is_kept_and_marked(self):
        rows = self.run_with_loads([4.0], self.args(pairs=1, cap=1.5, retries=2))
        self.assertEqual([r["status"] for r in rows],
                         ["repeated"] * 4 + ["over_load_cap"] * 2)
        self.assertEqual(self.a.calls + self.b.calls, 6)  # 1 + 2 retries, bounded

    def test_no_cap_runs_each_pair_once(self):
        rows = self.run_with_loads([9.0], self.args(pairs=2, cap=None, retries=0))
        self.assertEqual([r["status"] for r in rows], ["ok"] * 4)

    def test_memory_is_named_in_metadata_and_title(self):
        for no_huge, label in ((False, "2 MiB hugepages"), (True, "--no-huge (4 KiB pages)")):
            self.run.MEMORY["no_huge"] = no_huge
            self.run_with_loads([1.0], self.args(pairs=1, cap=None, retries=0))
            meta = json.load(open(os.path.join(self.out, "fake.meta.json")))
            self.assertEqual(meta["memory"], label)
            machine = {"cpu_model": "t", "cores": 2, "memory_gib": 1, "distro": "",
                       "kernel": "", "dpdk": "", "hugepages": 0}
            text, _, _ = self.run.benchlib.report(self.exp, self.out, machine, "", [],
                                                  write=False)
            self.assertEqual(text.split("\n")[0], f"### Fake experiment [{label}]")

    def test_testpmd_rate_runs_do_not_record_core_cycles(self):
        cmd, _ = self.run.TestpmdRun().command(self.ctx, "p", 1)
        self.assertNotIn("--record-core-cycles", cmd)


if __name__ == "__main__":
    unittest.main(verbosity=2)
