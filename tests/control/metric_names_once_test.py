#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Metric families are defined in one place (issue 30 item 6), held against the code.

server/core/metric_families.h defines every family skbnf exports (name, type, help); the
collectors fill samples into NewFamily(metric::kX). This test reads the C++ sources under
server/, dataplane/ and common/ and fails when any file but metric_families.h writes a family's
name as a string literal ("skbnf_config_reloads_total", or any "skbnf_..." literal ending in a
Prometheus suffix) or builds a prometheus::MetricFamily from a literal
(`MetricFamily{"...", ...}`): such a family's name and help are a second definition that can
drift from the list. A planted violation shows the check fails.

Run: python3 tests/control/metric_names_once_test.py [ROOT]   (ctest: control.metric_names_once)
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                       else os.path.join(os.path.dirname(__file__), "..", ".."))
LIST = os.path.join("server", "core", "metric_families.h")
DIRS = ("server", "dataplane", "common")
DEF = re.compile(r'inline constexpr MetricDef \w+\{\s*"(skbnf_[a-z0-9_]+)"')
LITERAL = re.compile(r'"(skbnf_[a-z0-9_]+)"')
SUFFIX = re.compile(r"_(total|seconds|bytes|info|ratio|objects|mbufs|hz|up|required|watched|"
                    r"successful|running|state|epoch|streams|paused)$")
INLINE_FAMILY = re.compile(r'MetricFamily\s*[{(]\s*(std::string\()?\s*"')


def defined_names(root):
    with open(os.path.join(root, LIST), encoding="utf-8") as f:
        return set(DEF.findall(f.read()))


def violations(root):
    names = defined_names(root)
    out = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for fn in files:
                if not fn.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                if rel == LIST:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        if line.lstrip().startswith("//"):
                            continue
                        for lit in LITERAL.findall(line):
                            if lit in names or SUFFIX.search(lit):
                                out.append(f"{rel}:{n}: family name {lit} written outside {LIST}")
                        if INLINE_FAMILY.search(line):
                            out.append(f"{rel}:{n}: MetricFamily built from a literal")
    return names, out


class MetricNamesOnce(unittest.TestCase):
    def test_the_list_is_read(self):
        names = defined_names(ROOT)
        self.assertIn("skbnf_config_reloads_total", names)
        self.assertGreater(len(names), 40)

    def test_no_family_is_defined_outside_the_list(self):
        _, bad = violations(ROOT)
        self.assertEqual(bad, [])

    def test_a_planted_inline_family_fails(self):
        tmp = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tmp, "server", "core"))
            os.makedirs(os.path.join(tmp, "server", "ops"))
            shutil.copy(os.path.join(ROOT, LIST), os.path.join(tmp, LIST))
            with open(os.path.join(tmp, "server", "ops", "planted.cc"), "w") as f:
                f.write('// "skbnf_config_watched" in a comment is fine\n'
                        'auto f = prometheus::MetricFamily{"skbnf_config_watched", "help",\n'
                        '                                  MetricType::Gauge, {}};\n'
                        'const char* other = "skbnf_new_thing_total";\n'
                        'const char* pool = "skbnf_mbuf_";  // a mempool name, not a metric\n')
            _, bad = violations(tmp)
            self.assertEqual(len(bad), 3, bad)
            self.assertTrue(any("skbnf_config_watched" in b for b in bad))
            self.assertTrue(any("skbnf_new_thing_total" in b for b in bad))
            self.assertTrue(any("built from a literal" in b for b in bad))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)
