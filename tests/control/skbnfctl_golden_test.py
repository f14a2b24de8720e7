# SPDX-License-Identifier: BSD-3-Clause
"""Golden tests of skbnfctl's output against a running fake daemon.

Each step runs skbnfctl and records "$ skbnfctl ARGS", its stdout, its stderr and its exit code;
fields that cannot be deterministic (uptime, build, swap timings, objects flushed) are masked.
The transcript must equal golden/skbnfctl.txt. After an intended output change, regenerate with
  SKBNF_UPDATE_GOLDEN=1 ctest -R skbnfctl_golden   (and review the diff).

Non-golden checks (stats, top, audit, exit codes) also run against a non-fake daemon; the golden
transcript itself is the fake's (its ports and lcores), so it is skipped there, but its steps that
depend on nothing of the fake (PORTABLE, and the route rules' errors) are run against every daemon
and must print the golden's own blocks: the transcript agrees with the fake and with skbnfd.
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "skbnfctl.txt")

# (args, masks): masks are (regex, replacement) applied to stdout+stderr; a step whose output
# has masks also has its runs of spaces collapsed (masked table cells change column widths).
STEPS = [
    (["info"], [(r"^skbnf \S+ \(commit .*\)$", "skbnf <build>"), (r"uptime(\s+)\d+s", r"uptime\1<N>s")]),
    (["ports"], []),
    (["--json", "ports"], []),
    (["strategy", "list"], []),
    (["strategy", "get"], []),
    (["--json", "strategy", "get"], []),
    (["strategy", "set", "headpool:hot_list_len=64,prefetch", "--dry-run"], []),
    (["strategy", "get"], []),
    (["strategy", "set", "headpool:hot_list_len=64,prefetch"],
     [(r"total [\d.]+ us", "total <T> us"), (r"depot drained \d+", "depot drained <N>"),
      (r"^(\d+)\s+(yes|no)\s+(yes|no)\s+[\d.]+\s+\d+$", r"\1 \2 \3 <US> <N>")]),
    (["strategy", "get"], []),
    (["strategy", "set", "magazine:size=0"], []),
    (["strategy", "set", "magazine+headpool", "--dry-run"], []),
    (["routes", "list"], []),
    (["routes", "add", "10.0.0.0/8", "1", "02:00:00:00:00:aa"], []),
    (["routes", "add", "10.1.0.0/16", "0", "02:00:00:00:00:bb"], []),
    (["routes", "add", "10.2.0.0/16", "1", "02:00:00:00:00:aa"], []),
    (["routes", "list"], []),
    (["--json", "routes", "list"], []),
    (["routes", "add", "10.0.0.0/8", "1", "02:00:00:00:00:aa"], []),
    (["routes", "add", "10.0.0.1/8", "1", "02:00:00:00:00:aa"], []),
    (["routes", "add", "10.3.0.0/16", "7", "02:00:00:00:00:aa"], []),
    (["routes", "add", "10.3.0.0/16", "1", "01:00:5e:00:00:01"], []),
    (["routes", "delete", "10.0.0.0/8"], []),
    (["routes", "del", "10.0.0.0/8"], []),  # the old word still works (CHANGELOG.md)
    (["routes", "list"], []),
    (["worker", "pause", "1"], []),
    (["worker", "pause", "1"], []),
    (["worker", "resume", "1"], []),
    (["worker", "resume", "1"], []),
    (["worker", "pause", "9"], []),
    # the fake daemon has no --config: trouble (2, as diff(1)), not drift (1)
    (["config", "diff"], []),
    # usage errors: exit 2, nothing sent
    (["frobnicate"], [(r"\n\nusage:[\s\S]*", "\n<usage>\n")]),
    (["strategy", "set"], [(r"\n\nusage:[\s\S]*", "\n<usage>\n")]),
    (["worker", "pause", "one"], [(r"\n\nusage:[\s\S]*", "\n<usage>\n")]),
    (["--frobnicate", "info"], [(r"\n\nusage:[\s\S]*", "\n<usage>\n")]),
    (["config", "frobnicate"], [(r"\n\nusage:[\s\S]*", "\n<usage>\n")]),
]


def transcript(d):
    out = []
    for args, masks in STEPS:
        code, so, se = d.ctl(*args)
        text = so + ("[stderr]\n" + se if se else "")
        for pattern, repl in masks:
            text = re.sub(pattern, repl, text, flags=re.M)
        if masks:
            text = re.sub(r" {2,}", " ", text)
        out.append("$ skbnfctl %s\n%s[exit %d]\n" % (" ".join(args), text, code))
    return "\n".join(out)


class SkbnfctlTranscriptTest(unittest.TestCase):
    def test_transcript_matches_golden(self):
        if not h.daemon_is_fake():
            self.skipTest("golden transcript is the fake daemon's")
        with h.Daemon() as d:
            got = transcript(d)
        if os.environ.get("SKBNF_UPDATE_GOLDEN"):
            os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
            with open(GOLDEN, "w") as f:
                f.write(got)
        with open(GOLDEN) as f:
            want = f.read()
        self.maxDiff = None
        self.assertEqual(got, want)


def golden_blocks():
    """The golden transcript as [(args, output and exit line)], in order."""
    with open(GOLDEN) as f:
        text = f.read()
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^\$ skbnfctl (.*)\n((?:(?!\$ skbnfctl ).*\n)*?\[exit \d+\]\n)", text, re.M)]


def golden_block(args, last=False):
    found = [out for a, out in golden_blocks() if a == " ".join(args)]
    if not found:
        raise AssertionError("no step '%s' in the golden transcript" % " ".join(args))
    return found[-1] if last else found[0]


# Steps of the golden transcript whose output depends on nothing of the fake (its ports, lcores,
# timings): the parser's and the route rules' words (Mutations', server/core/mutations.h). Against
# any daemon they must print the golden's own block, so the transcript is skbnfd's words too.
PORTABLE = [
    ["strategy", "set", "magazine:size=0"],
    ["strategy", "set", "magazine+headpool", "--dry-run"],
    ["routes", "add", "10.0.0.1/8", "1", "02:00:00:00:00:aa"],
    ["routes", "add", "10.3.0.0/16", "1", "01:00:5e:00:00:01"],
]


class SkbnfctlBehaviourTest(unittest.TestCase):
    def run_step(self, d, args):
        code, so, se = d.ctl(*args)
        return so + ("[stderr]\n" + se if se else "") + "[exit %d]\n" % code

    def test_the_goldens_error_words_are_every_daemons(self):
        with h.Daemon() as d:
            code, out, err = d.ctl("--json", "info")
            self.assertEqual(code, 0, err)
            info = json.loads(out)
            for args in PORTABLE:
                self.assertEqual(self.run_step(d, args), golden_block(args), " ".join(args))
            if info.get("mode") != "FORWARDING_MODE_L3":
                self.skipTest("routes: not l3 mode")
            add = ["routes", "add", "10.0.0.0/8", "1", "02:00:00:00:00:aa"]
            code, out, err = d.ctl(*add)
            self.assertEqual(code, 0, err)
            self.assertEqual(self.run_step(d, add), golden_block(add, last=True), "routed twice")
            for args in (["routes", "delete", "10.0.0.0/8"], ["routes", "del", "10.0.0.0/8"]):
                self.assertEqual(self.run_step(d, args), golden_block(args), " ".join(args))

    def test_stats_top_audit_and_exit_codes(self):
        with h.Daemon() as d:
            code, out, err = d.ctl("--json", "info")
            self.assertEqual(code, 0, err)
            workers = [l for l in json.loads(out)["lcores"] if l["role"] == "LCORE_ROLE_WORKER"]
            self.assertTrue(workers, "the daemon reports no worker: the per-core checks below "
                                     "would check nothing")

            code, out, err = d.ctl("stats")
            self.assertEqual(code, 0, err)
            lines = out.splitlines()
            self.assertTrue(lines[0].startswith("strategy "), out)
            self.assertEqual(lines[1].split()[:3], ["CORE", "LCORE", "STATE"])
            self.assertIn("CYC/PKT", lines[1].split())
            self.assertEqual(len([l for l in lines[2:2 + len(workers)] if l.split()[2] == "running"]),
                             len(workers), out)
            self.assertTrue(any(l.startswith("pool: ") for l in lines), out)

            code, out, err = d.ctl("--json", "stats", "--core=%d" % workers[0].get("core", 0))
            self.assertEqual(code, 0, err)
            self.assertEqual(len(json.loads(out)["cores"]), 1)

            code, out, err = d.ctl("top", "--count=3", "--interval=50")
            self.assertEqual(code, 0, err)
            self.assertEqual(out.count("strategy "), 3, out)
            # (300 ms: every core must have had busy polls within the window, also on a loaded
            # sanitizer run.)
            code, out, err = d.ctl("--json", "top", "--count=2", "--interval=300")
            self.assertEqual(code, 0, err)
            frames = [json.loads(l) for l in out.splitlines()]
            self.assertEqual(len(frames), 2)
            self.assertGreater(int(frames[1]["monotonic_ns"]), int(frames[0]["monotonic_ns"]))
            # cycles per packet per core: counters and the figure over the window
            self.assertEqual(len(frames[1]["cores"]), len(workers), frames[1])
            for c in frames[1]["cores"]:
                self.assertGreater(int(c["tsc_hz"]), 0)
                self.assertGreater(int(c["busy_packets"]), 0, c)
                self.assertGreater(int(c["busy_cycles"]), int(c["busy_packets"]), c)
                self.assertGreater(c["cycles_per_packet"], 1.0, c)

            code, out, err = d.ctl("audit")
            self.assertEqual(code, 0, err)
            self.assertTrue(out.startswith("audit ok: populated "), out)

            code, out, err = d.ctl("top", "--interval=5", "--count=1")
            self.assertEqual(code, 1, "server refusal is exit 1")
            self.assertTrue(err.startswith("skbnfctl: INVALID_ARGUMENT: interval_ms: "), err)
        # nobody listens any more: a server error (exit 1) with gRPC's message
        code, out, err = h.skbnfctl("--addr=" + d.grpc, "--timeout=2", "info")
        self.assertEqual(code, 1)
        self.assertRegex(err, r"^skbnfctl: (UNAVAILABLE|DEADLINE_EXCEEDED): ")

    def test_rolled_back_swap_is_exit_1_and_counted(self):
        if not h.STALL_ARGS:
            self.skipTest("SKBNF_CONTROL_DAEMON_STALL_ARGS not set")
        with h.Daemon(*h.STALL_ARGS) as d:
            code, out, err = d.ctl("strategy", "set", "headpool", "--quiesce-timeout-ms=50")
            self.assertEqual(code, 1, out + err)
            self.assertIn("ROLLED BACK", out)
            self.assertTrue(err.startswith("skbnfctl: swap failed and rolled back: "), err)
            _, samples = h.parse_metrics(d.scrape())
            self.assertEqual(h.total(samples, "skbnf_strategy_swaps_total", result="rolled_back"), 1)
            self.assertEqual(h.total(samples, "skbnf_strategy_swaps_total", result="ok"), 0)
            code, out, _ = d.ctl("strategy", "get")
            self.assertIn("magazine", out, "the old strategy is back")

    def test_strategy_set_deadline_covers_swap_and_rollback(self):
        # --timeout=1 alone would expire under a 1.5 s quiesce wait: skbnfctl adds twice the
        # quiesce timeout, so it reports the server's answer (rolled back), not a deadline.
        if not h.STALL_ARGS:
            self.skipTest("SKBNF_CONTROL_DAEMON_STALL_ARGS not set")
        with h.Daemon(*h.STALL_ARGS) as d:
            code, out, err = d.ctl("--timeout=1", "strategy", "set", "headpool",
                                   "--quiesce-timeout-ms=1500")
            self.assertEqual(code, 1, out + err)
            self.assertNotIn("DEADLINE_EXCEEDED", err)
            self.assertIn("ROLLED BACK", out)
            self.assertTrue(err.startswith("skbnfctl: swap failed and rolled back: "), err)

    def test_help_and_no_command(self):
        code, out, _ = h.skbnfctl("--help")
        self.assertEqual(code, 0)
        self.assertIn("strategy set SPEC [--validate-only]", out)
        code, _, err = h.skbnfctl()
        self.assertEqual(code, 2)
        self.assertTrue(err.startswith("skbnfctl: no command given"), err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
