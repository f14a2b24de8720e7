#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A skipped test is a test that did not run: every ctest stage of tests/run_all.sh hands its
JUnit report (`ctest --output-junit FILE`) to this script, which fails the run when a test was
skipped that is not on the written list of design skips (tests/design_skips.txt), and prints
every skip with its reason, the listed ones too.

Why a list and not "no skips": a few tests do not apply to a build by design (a check that only
exists without NDEBUG is reported skipped in the Release build; a variant that has no target in
that build). Each such skip is one line in tests/design_skips.txt with its stage and reason. A
tool that is missing on a fresh machine is never a design skip: deploy/deps.sh installs it
(issue 34 item 0: integration.ovs_dpdk skipped on every fresh machine because nothing installed
Open vSwitch, and the suite stayed green).

The report's shape is ctest's own JUnit writer (CMake >= 3.21, Source/CTest/cmCTestTestHandler.cxx
WriteJUnitXML): one <testcase name=... status="run|fail|notrun|disabled"> per test, a <skipped
message=...> child for a skipped one, its output in <system-out>. --self-test reads a report the
real ctest writes for a tiny project (one skip by exit code, one by output), not a hand-made one.

Usage: check_skips.py STAGE JUNIT.xml [DESIGN_SKIPS.txt]
       check_skips.py --self-test   (a planted unlisted skip must fail, a listed one must pass)
Exit 0: no skip outside the list; 1: an unlisted skip (named, with its output's reason line).
"""
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


def load_list(path):
    """(stage, compiled full-match regex of the test name, reason) per non-comment line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or not all(p.strip() for p in parts):
                raise SystemExit(f"{path}:{n}: want 'stage<TAB>test-name regex<TAB>reason': {line!r}")
            out.append((parts[0].strip(), re.compile(parts[1].strip()), parts[2].strip()))
    return out


def skip_reason(case):
    """The test's own reason line (SKIP: ..., [  SKIPPED ] ..., 'skipped ...'), else ctest's."""
    text = case.findtext("system-out") or ""
    for line in text.splitlines():
        if re.search(r"^SKIP|\[  SKIPPED \]|skipped ", line):
            return line.strip()[:200]
    sk = case.find("skipped")
    return (sk.get("message") if sk is not None else "") or "no reason printed"


def skipped_cases(junit):
    root = ET.parse(junit).getroot()
    for case in root.iter("testcase"):
        if case.get("status") in ("notrun", "disabled") or case.find("skipped") is not None:
            yield case.get("name"), skip_reason(case)


def check(stage, junit, listing):
    allowed = [(r, why) for s, r, why in load_list(listing) if s == stage]
    bad = 0
    for name, reason in skipped_cases(junit):
        why = next((w for r, w in allowed if r.fullmatch(name)), None)
        if why is None:
            bad += 1
            print(f"skips: {stage}: {name} SKIPPED and not a design skip ({reason}); install what "
                  f"it needs in deploy/deps.sh, or list it in {os.path.relpath(listing)} with why")
        else:
            print(f"skips: {stage}: {name} skipped by design: {why} (test says: {reason})")
    return 1 if bad else 0


def real_ctest_report(d):
    """A JUnit report written by the real ctest for a tiny project: one test skipped by exit code
    77 (SKIP_RETURN_CODE, as integration.ovs_dpdk), one by SKIP_REGULAR_EXPRESSION (as the
    gtest-discovered suites), one that passes."""
    src = os.path.join(d, "src")
    os.makedirs(src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.21)\nproject(p NONE)\nenable_testing()\n"
                "add_test(NAME a.listed COMMAND sh -c \"echo 'SKIP: by design'; exit 77\")\n"
                "set_tests_properties(a.listed PROPERTIES SKIP_RETURN_CODE 77)\n"
                "add_test(NAME b.unlisted COMMAND sh -c "
                "\"echo '[  SKIPPED ] ovs-vswitchd-dpdk not installed'\")\n"
                "set_tests_properties(b.unlisted PROPERTIES SKIP_REGULAR_EXPRESSION SKIPPED)\n"
                "add_test(NAME c.ran COMMAND true)\n")
    b = os.path.join(d, "b")
    subprocess.run(["cmake", "-S", src, "-B", b], check=True, stdout=subprocess.DEVNULL)
    j = os.path.join(d, "j.xml")
    subprocess.run(["ctest", "--test-dir", b, "--output-junit", j], stdout=subprocess.DEVNULL)
    return j


def self_test():
    with tempfile.TemporaryDirectory() as d:
        j, lst = real_ctest_report(d), os.path.join(d, "l.txt")
        names = sorted(n for n, _ in skipped_cases(j))
        if names != ["a.listed", "b.unlisted"]:
            print(f"self-test: ctest's report read as skipped: {names}")
            return 1
        open(lst, "w").write("release\ta\\.listed\tplanted design skip\n")
        if check("release", j, lst) != 1:
            print("self-test: an unlisted skip passed")
            return 1
        open(lst, "a").write("release\tb\\..*\tplanted\n")
        if check("release", j, lst) != 0:
            print("self-test: a listed skip failed")
            return 1
        if check("asan", j, lst) != 1:
            print("self-test: a skip listed for another stage passed")
            return 1
    print("self-test: ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    listing = sys.argv[3] if len(sys.argv) == 4 else os.path.join(HERE, "design_skips.txt")
    return check(sys.argv[1], sys.argv[2], listing)


if __name__ == "__main__":
    sys.exit(main())
