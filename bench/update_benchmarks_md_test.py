#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_benchmarks_md_planted_edit: `bench/update_benchmarks_md.py --check` must fail on a
hand edit (issue 23: every number of BENCHMARKS.md and of the README's benchmark paragraph is
generated from a committed raw file). It copies the committed pages, plants edits and runs
--check on the copies against the committed raw files: a figure changed inside a generated
table, inside a generated reading, inside the README's generated paragraph, and a figure typed
into the prose outside any block; each must be reported. (That the unedited pages pass is
ctest bench_benchmarks_md_check.) Also: issue 33 item 1's agreement check (Item1Agreement) on
planted runs.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOL = os.path.join(HERE, "update_benchmarks_md.py")


def check(benchmarks, readme):
    r = subprocess.run(["/usr/bin/python3", TOOL, "--check", "--benchmarks", benchmarks,
                        "--readme", readme], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


class PlantedEdit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-md-")
        self.bm = os.path.join(self.dir, "BENCHMARKS.md")
        self.rd = os.path.join(self.dir, "README.md")
        self.bm_text = open(os.path.join(ROOT, "BENCHMARKS.md")).read()
        self.rd_text = open(os.path.join(ROOT, "README.md")).read()
        self.write(self.bm_text, self.rd_text)

    def tearDown(self):
        for f in (self.bm, self.rd):
            os.unlink(f)
        os.rmdir(self.dir)

    def write(self, bm, rd):
        with open(self.bm, "w") as f:
            f.write(bm)
        with open(self.rd, "w") as f:
            f.write(rd)

    @staticmethod
    def bump_first_ratio(text, start_marker):
        """Changes the first `N.NNNx` after start_marker by one in the last digit."""
        i = text.index(start_marker)
        m = re.compile(r"(\d+\.\d{3})x").search(text, i)
        old = m.group(1)
        new = f"{float(old) + 0.001:.3f}"
        return text[:m.start(1)] + new + text[m.end(1):], old, new

    def test_every_planted_edit_fails_the_check(self):
        # One --check over one copy with all the edits (each check regenerates every table:
        # seconds of CPU): every edit must be reported on its own.
        bm, table_old, table_new = self.bump_first_ratio(self.bm_text,
                                                         "<!-- bench:huge/headline -->")
        bm, _, reading_new = self.bump_first_ratio(bm, "<!-- gen:exp7-reading -->")
        bm = bm.replace("## The protocol\n",
                        "## The protocol\n\nskbnf forwards 2.7x native here.\n", 1)
        rd, _, readme_new = self.bump_first_ratio(self.rd_text, "<!-- gen:readme -->")
        self.write(bm, rd)
        rc, out = check(self.bm, self.rd)
        self.assertEqual(rc, 1, out)
        self.assertIn("BENCHMARKS.md differs from what its raw files generate", out)
        self.assertIn("README.md differs from what its raw files generate", out)
        # The regenerated line (the raw file's figure) beside the planted one.
        self.assertRegex(out, rf"(?m)^\+.*\*\*{re.escape(table_old)}x\*\*")
        for planted in (table_new, reading_new, readme_new):
            self.assertRegex(out, rf"(?m)^-.*{re.escape(planted)}x", planted)
        self.assertIn("a number outside the generated blocks", out)
        self.assertIn("skbnf forwards 2.7x native here.", out)


class Item1Agreement(unittest.TestCase):
    """Issue 33 item 1's acceptance as update_benchmarks_md.py decides it, on planted runs: two
    runs of one comparison at least an hour apart, per mode, intervals overlapping and each within
    +-1.5 %."""

    @staticmethod
    def planted(name, b, start, lo, med, hi, mode="one"):
        meta = {"b": b, "started_utc": f"2026-12-07T{start}:00+00:00"}
        return (name, meta, {"modes": {mode: {"ratio_mpps_ci95": [lo, hi],
                                               "ratio_mpps_median": med}}})

    def test_pairs_and_verdicts(self):
        sys.path.insert(0, HERE)
        import update_benchmarks_md as u
        runs = [self.planted("r1", "headpool", "01:00", 0.870, 0.875, 0.880),
                self.planted("r2", "headpool", "01:30", 0.500, 0.505, 0.510),   # too soon after r1
                self.planted("r3", "headpool", "02:00", 0.878, 0.884, 0.890),   # overlaps r1, narrow
                self.planted("r4", "headpool", "03:10", 0.892, 0.900, 0.910),   # disjoint from r1, r3
                self.planted("r5", "magazine", "04:30", 0.870, 0.875, 0.880),   # another comparison
                self.planted("r6", "headpool", "04:30", 0.80, 0.875, 0.95)]     # overlaps, too wide
        got = {(p["a"], p["z"]): p for p in u.native_interleave_agreement(runs)}
        self.assertNotIn(("r1", "r2"), got)
        self.assertFalse(any("r5" in k for k in got))
        self.assertTrue(got[("r1", "r3")]["agree"] and got[("r1", "r3")]["narrow"])
        self.assertFalse(got[("r1", "r4")]["agree"])
        self.assertFalse(got[("r3", "r4")]["agree"])
        self.assertTrue(got[("r1", "r6")]["agree"])
        self.assertFalse(got[("r1", "r6")]["narrow"])
        self.assertIn(("r2", "r4"), got)  # 100 minutes apart
        self.assertEqual(got[("r3", "r4")]["apart"], 70)


if __name__ == "__main__":
    unittest.main(verbosity=2)
