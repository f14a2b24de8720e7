# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd's and skbnfctl's help and bad flags, as a user runs them (issue 30 item 7).

--help exits 0 and lists the flags by topic, naming no source file and no absl default heading
("Flags from ..."); every flag defined in the sources is listed exactly once (skbnfd: every
ABSL_FLAG under server/, the test hooks in --helpfull only; skbnfctl: every flag its parser
knows); a bad flag exits 2 and says what to write.

Usage: help_test.py SKBNFD SKBNFCTL SOURCE_ROOT
"""

import glob
import os
import re
import subprocess
import sys
import unittest

SKBNFD, SKBNFCTL, ROOT = sys.argv[1:4]
del sys.argv[1:4]

SKBNFD_TOPICS = ["config file", "ports and EAL", "buffer pool", "control API and TLS", "metrics",
                 "preflight", "console and run time", "demo"]
FULL_ONLY_TOPICS = ["test hooks", "flag files and the environment"]
SKBNFCTL_TOPICS = ["commands that read:", "commands that change:", "flags: server and TLS",
                   "flags: calls and output", "flags: strategy set and strategy tune",
                   "flags: stats and top"]
# A source or header file named in the text (skbnfd.conf.example is a config file, not source).
SOURCE_FILE = re.compile(r"[\w/.-]+\.(cc|h|cpp|hpp|py)\b")


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def dashed(name):
    return "--" + name.replace("_", "-")


def headings(text, flag):
    """Lines that introduce `flag` in a help text (`  --flag`, `  --flag=VALUE ...`)."""
    return [l for l in text.splitlines() if re.match(r"^  %s(=| |$)" % re.escape(flag), l)]


def skbnfd_flags():
    """name -> defining file, for every ABSL_FLAG under server/."""
    flags = {}
    for path in glob.glob(os.path.join(ROOT, "server", "**", "*.cc"), recursive=True):
        with open(path) as f:
            for m in re.finditer(r"ABSL_FLAG\(\s*[\w:<>]+\s*,\s*(\w+)\s*,", f.read()):
                flags[m.group(1)] = os.path.relpath(path, ROOT)
    return flags


class SkbnfdHelp(unittest.TestCase):
    def test_help_exits_0_by_topic_naming_no_source_file(self):
        for arg, topics in (("--help", SKBNFD_TOPICS), ("-h", SKBNFD_TOPICS),
                            ("--helpfull", SKBNFD_TOPICS + FULL_ONLY_TOPICS)):
            code, out, err = run(SKBNFD, arg)
            self.assertEqual(code, 0, arg + err)
            self.assertEqual(err, "", arg)
            self.assertTrue(out.startswith("skbnfd: "), out[:200])
            self.assertIn("usage: skbnfd [flags] [-- EAL arguments]", out)
            self.assertIn("examples:", out)
            self.assertNotIn("Flags from", out)
            self.assertNotIn("No flags matched", out)
            self.assertIsNone(SOURCE_FILE.search(out), (arg, SOURCE_FILE.search(out)))
            titles = [l for l in out.splitlines() if re.match(r"^[a-z].*:$", l)]
            for t in topics:
                self.assertEqual(len([l for l in titles if l.startswith(t)]), 1, (arg, t, titles))
            self.assertNotIn("other flags", out, "a flag without a topic (flag_help.cc's table)")
        _, short, _ = run(SKBNFD, "--help")
        for t in FULL_ONLY_TOPICS:
            self.assertNotIn("\n" + t, short)

    def test_every_flag_listed_once(self):
        flags = skbnfd_flags()
        self.assertGreater(len(flags), 30, "the ABSL_FLAG scan found too few flags")
        _, short, _ = run(SKBNFD, "--help")
        _, full, _ = run(SKBNFD, "--helpfull")
        for name, path in flags.items():
            test_hook = path.endswith("test_hooks.cc")
            self.assertEqual(len(headings(full, dashed(name))), 1, (name, path))
            self.assertEqual(len(headings(short, dashed(name))), 0 if test_hook else 1, (name, path))
        listed = {m.group(1) for m in re.finditer(r"^  --([a-z0-9-]+)", full, re.M)}
        absl_own = {"flagfile", "fromenv", "tryfromenv", "undefok"}
        self.assertEqual(listed - absl_own, {n.replace("_", "-") for n in flags})

    def test_bad_flags_exit_2_with_what_to_write(self):
        for args, want in (
                (["--no-such-flag"], "skbnfd: unknown flag --no-such-flag (`skbnfd --help` lists "
                                     "the flags)\n"),
                (["--pool-op=skbnf"], "skbnfd: unknown flag --pool-op; did you mean --pool-ops?"),
                (["--burst=abc"], "skbnfd: --burst=abc: 'abc' is not a whole number in range; "
                                  "write --burst=N\n"),
                (["--mode"], "skbnfd: --mode needs a value; write --mode=io|mac|l3\n"),
                (["--mode=l2"], "write --mode=io, --mode=mac or --mode=l3"),
                (["--burst=100000"], "out of range; write a value in 1..512"),
                (["--heap-trim-every=-1s"], "skbnfd: --heap-trim-every=-1s is negative; write "
                                            "--heap-trim-every=10s (the default) or "
                                            "--heap-trim-every=0 (never)\n"),
                (["--mutex-deadlock-detection=on"],
                 "skbnfd: --mutex-deadlock-detection=on is not a mode; write "
                 "--mutex-deadlock-detection=off (the default), =report or =abort\n")):
            code, out, err = run(SKBNFD, *args)
            self.assertEqual(code, 2, (args, out, err))
            self.assertIn(want, err, args)
            self.assertNotIn("ERROR:", err, "absl's own refusal (exit 1) reached the user")


def skbnfctl_flags():
    """The flags skbnfctl's parser knows (args.cc's kValueFlags and kBoolFlags)."""
    with open(os.path.join(ROOT, "server", "skbnfctl", "args.cc")) as f:
        src = f.read()
    names = []
    for table in ("kValueFlags", "kBoolFlags"):
        m = re.search(table + r" = \{(.*?)\};", src, re.S)
        names += re.findall(r'"(\w+)"', m.group(1))
    return names


class SkbnfctlHelp(unittest.TestCase):
    def test_help_exits_0_by_topic(self):
        code, out, err = run(SKBNFCTL, "--help")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("usage: skbnfctl [flags] COMMAND [args]"), out[:200])
        for t in SKBNFCTL_TOPICS:
            self.assertEqual(out.count("\n" + t + "\n"), 1, t)
        self.assertIsNone(SOURCE_FILE.search(out))
        self.assertIn("strategy set SPEC [--validate-only] [--quiesce-timeout-ms=N]", out)

    def test_every_flag_listed_once(self):
        flags = skbnfctl_flags()
        self.assertGreater(len(flags), 15, "the parser's flag tables were not found")
        _, out, _ = run(SKBNFCTL, "--help")
        flag_part = out[out.index("\nflags: "):]
        for name in flags:
            # one line of the flag tables introduces it ("  --name", "  --a | --b")
            lines = [l for l in flag_part.splitlines()
                     if re.match(r"^  (--[\w-]+(=\S+)? \| )?%s(=| |$)" % re.escape(dashed(name)), l)]
            self.assertEqual(len(lines), 1, (name, lines))

    def test_bad_flags_exit_2(self):
        for args, want in ((["--frobnicate", "info"], "skbnfctl: unknown flag --frobnicate\n"),
                           (["--timeout"], "skbnfctl: --timeout needs a value\n"),
                           (["--json=yes", "info"], "skbnfctl: --json takes no value\n"),
                           (["strategy", "set", "magazine", "--quiesce-timeout-ms=x"],
                            "skbnfctl: --quiesce-timeout-ms: 'x' is not a non-negative whole "
                            "number\n")):
            code, out, err = run(SKBNFCTL, "--addr=unix:/nonexistent", *args)
            self.assertEqual(code, 2, (args, err))
            self.assertTrue(err.startswith(want), (args, err))
            self.assertIn("\n\nusage: skbnfctl", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
