#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Adds (or checks) the SPDX licence line in every C/C++, Python and shell source file.

    deploy/tools/spdx_headers.py [--check] [--root DIR] [PATH ...]

The repository is BSD-3-Clause (LICENSE, as DPDK); libskbnf_mempool.so is meant to be loaded
into other programs, so every source file says so in the form tools read (SPDX, REUSE, the
Linux kernel's and DPDK's checkpatch):
  C/C++ (.c .cc .cpp .h .hpp)        // SPDX-License-Identifier: BSD-3-Clause   (first line)
  Python (.py, python shebang)       # SPDX-License-Identifier: BSD-3-Clause    (first line,
  shell (.sh .bash, sh/bash shebang)                                            after a shebang)
One line, no copyright notice per file: the holders are named once, in LICENSE.

Files: `git ls-files` under --root (default: the repository this script is in), or the PATHs
given (files or directories). A file that already carries an SPDX line is left alone; one with
another identifier is reported and fails. --check changes nothing and exits 1 listing the files
without the line (tests/deploy/spdx_test.py runs it). Writing keeps the file's mode.
"""

import argparse
import os
import re
import subprocess
import sys

LICENSE_ID = "BSD-3-Clause"
TAG = "SPDX-License-Identifier:"
C_EXT = {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp"}
PY_EXT = {".py"}
SH_EXT = {".sh", ".bash"}
HEAD_LINES = 5  # the line must be within the first lines (after a shebang)


def kind(path):
    """'c', 'hash' (Python/shell) or None."""
    ext = os.path.splitext(path)[1]
    if ext in C_EXT:
        return "c"
    if ext in PY_EXT | SH_EXT:
        return "hash"
    if ext:
        return None
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    if re.match(rb"#!\s*\S*(/env\s+)?\S*\b(python3?|bash|sh|dash)\b", first):
        return "hash"
    return None


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
    return [os.path.join(root, p) for p in out.stdout.decode().split("\0") if p]


def expand(paths):
    for p in paths:
        if os.path.isdir(p):
            for d, _, files in os.walk(p):
                if "/.git" in d or "/build" in d or "node_modules" in d:
                    continue
                for f in files:
                    yield os.path.join(d, f)
        else:
            yield p


def process(path, check):
    """None if fine (or fixed), else a problem string."""
    k = kind(path)
    if k is None or os.path.islink(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.splitlines(keepends=True)
    for line in lines[:HEAD_LINES]:
        if TAG in line:
            if line.split(TAG, 1)[1].strip().rstrip("*/").strip() != LICENSE_ID:
                return "%s: another licence: %s" % (path, line.strip())
            return None
    if check:
        return "%s: no '%s %s' in its first %d lines" % (path, TAG, LICENSE_ID, HEAD_LINES)
    header = ("// " if k == "c" else "# ") + TAG + " " + LICENSE_ID + "\n"
    at = 1 if lines and lines[0].startswith("#!") else 0
    lines.insert(at, header)
    mode = os.stat(path).st_mode
    with open(path, "wb") as f:
        f.write("".join(lines).encode("utf-8", errors="surrogateescape"))
    os.chmod(path, mode)
    print("added: %s" % path)
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if missing")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), help="repository (default: this script's)")
    ap.add_argument("paths", nargs="*", help="files or directories (default: git ls-files)")
    args = ap.parse_args(argv)
    files = list(expand(args.paths)) if args.paths else tracked_files(args.root)
    problems = [p for p in (process(f, args.check) for f in sorted(files)) if p]
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("%d file(s) without the SPDX line%s" % (
            len(problems), "; run deploy/tools/spdx_headers.py" if args.check else ""),
            file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
