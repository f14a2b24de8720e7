#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The folders' include rules, held against the code (issue 21, "folders that show the
architecture").

Every source folder has a README.md with one line

    May include: common/, dataplane/pool/

(or `May include: nothing of this project`). This test reads those lines and every
`#include "..."` of every C/C++ file under the folder (not its subfolders: they have their own
README), and fails on an include of a project file outside the folder itself and the folders
its README allows. It also fails when the folders' allowances form a loop, when a folder with
sources has no README or no rule, and when a rule names a folder that does not exist. Generated
headers (skbnf/v1/*.pb.h) are named `proto/` in the rules.

Run: python3 tests/layering/layering_test.py [ROOT]   (unittest; the suite runs it as
`unit.layering`).
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                       else os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE_TREES = ["common", "dataplane", "server"]
def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


RULE = re.compile(r"^May include:\s*(.*)$", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".cc", ".h", ".c")


def source_folders(root):
    """Folders (relative, with a trailing slash) that hold C/C++ sources."""
    out = []
    for tree in SOURCE_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, tree)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            if any(f.endswith(SOURCE_EXT) for f in filenames):
                out.append(os.path.relpath(dirpath, root) + "/")
    return sorted(out)


def read_rules(root, folders):
    """folder -> list of allowed folders; errors for missing/odd READMEs."""
    rules, errors = {}, []
    for folder in folders:
        readme = os.path.join(root, folder, "README.md")
        if not os.path.exists(readme):
            errors.append(f"{folder}: no README.md (say what lives here and what it may include)")
            continue
        found = RULE.findall(read_text(readme))
        if len(found) != 1:
            errors.append(f"{folder}README.md: {len(found)} 'May include:' lines, want exactly 1")
            continue
        text = found[0].strip().strip(".")
        allowed = [] if text.startswith("nothing") else [
            a.strip().strip("`") for a in text.split(",") if a.strip()]
        for a in allowed:
            if not a.endswith("/"):
                errors.append(f"{folder}README.md: '{a}' is not a folder (end it with /)")
            elif a != "proto/" and not os.path.isdir(os.path.join(root, a)):
                errors.append(f"{folder}README.md: '{a}' does not exist")
        rules[folder] = allowed
    return rules, errors


def owner(path, folders):
    """The folder (of `folders`) that a project path belongs to: the longest prefix."""
    best = None
    for f in folders:
        if path.startswith(f) and (best is None or len(f) > len(best)):
            best = f
    return best


def violations(root, folders, rules):
    out = []
    for folder in folders:
        allowed = set(rules.get(folder, [])) | {folder}
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if not name.endswith(SOURCE_EXT):
                continue
            rel = folder + name
            text = read_text(os.path.join(root, rel))
            for inc in INCLUDE.findall(text):
                if inc.startswith("skbnf/v1/"):
                    target = "proto/"
                elif os.path.exists(os.path.join(root, inc)):
                    target = owner(inc, folders)
                else:
                    continue  # a system or third-party header, or a path relative to the file
                if target not in allowed:
                    out.append(f'{rel}: #include "{inc}" ({target} is not in {folder}README.md\'s '
                               f"'May include')")
    return out


def loops(rules):
    """Folder-level cycles in the allowances (a rule that lets two folders include each other)."""
    out, state = [], {}

    def visit(f, stack):
        state[f] = 1
        for g in rules.get(f, []):
            if g == f or g not in rules:
                continue
            if state.get(g) == 1:
                out.append(" -> ".join(stack[stack.index(g):] + [g]) if g in stack else g)
            elif g not in state:
                visit(g, stack + [g])
        state[f] = 2

    for f in sorted(rules):
        if f not in state:
            visit(f, [f])
    return out


class LayeringTest(unittest.TestCase):
    def setUp(self):
        self.folders = source_folders(ROOT)
        self.rules, self.errors = read_rules(ROOT, self.folders)

    def test_folders_found(self):
        # An empty walk would make every other check pass vacuously.
        for expected in ("common/", "dataplane/pool/", "dataplane/dpdk/", "server/core/",
                         "server/daemon/", "server/skbnfctl/"):
            self.assertIn(expected, self.folders)

    def test_every_folder_has_a_rule(self):
        self.assertEqual(self.errors, [])

    def test_no_include_outside_the_rule(self):
        self.assertEqual(violations(ROOT, self.folders, self.rules), [])

    def test_rules_have_no_loop(self):
        self.assertEqual(loops(self.rules), [])

    def test_a_planted_upward_include_is_caught(self):
        # The check itself can fail: the pool including the daemon is reported.
        rules = dict(self.rules)
        planted = {"dataplane/pool/": rules["dataplane/pool/"]}
        with tempfile.TemporaryDirectory() as tmp:
            for f in ("dataplane/pool/", "server/daemon/"):
                os.makedirs(os.path.join(tmp, f))
            shutil.copy(os.path.join(ROOT, "dataplane/pool/README.md"),
                        os.path.join(tmp, "dataplane/pool/README.md"))
            for rel, text in (("server/daemon/x.h", ""),
                              ("dataplane/pool/y.cc", '#include "server/daemon/x.h"\n')):
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            found = violations(tmp, ["dataplane/pool/", "server/daemon/"], planted)
        self.assertEqual(len(found), 1, found)
        self.assertIn("dataplane/pool/y.cc", found[0])

    def test_a_planted_loop_is_caught(self):
        self.assertEqual(len(loops({"a/": ["b/"], "b/": ["a/"]})), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
