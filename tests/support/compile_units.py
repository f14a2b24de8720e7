#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon's translation units as the release build compiles them, for clang-based checks.

Reads <build>/compile_commands.json and prints one line per unit of common/, dataplane/ and
server/ (matched by real path, so a clone under a symlinked directory still finds them):
    <directory> TAB <file> TAB <shell-quoted arguments>
The arguments are the build's (include paths, defines, -std, -O, -DNDEBUG) without the compiler,
the output/dependency options, -c and any -W flag: GCC's warnings are the -Werror build's business,
each clang check enables only the diagnostics it is about. Used by tests/thread_safety/check.sh
and tests/function_size/check.sh, so both look at exactly the same units.
Usage: compile_units.py <compile_commands.json> <source root>
"""
import json
import os
import shlex
import sys

DIRS = ("server", "dataplane", "common")


def units(db_path, src):
    src = os.path.realpath(src)
    roots = tuple(os.path.join(src, d) + "/" for d in DIRS)
    with open(db_path) as f:
        db = json.load(f)
    for e in db:
        f = e["file"]
        if not os.path.realpath(os.path.join(e["directory"], f)).startswith(roots):
            continue
        args = shlex.split(e["command"])[1:]
        if args and args[0].endswith(("c++", "g++", "gcc", "cc", "clang++")):
            args = args[1:]  # ccache <compiler> ...
        keep, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MT"):
                skip = True
                continue
            if a in ("-c", "-MD", "-Werror") or a.startswith("-W"):
                continue
            keep.append(a)
        yield e["directory"], f, " ".join(shlex.quote(k) for k in keep)


if __name__ == "__main__":
    for d, f, a in units(sys.argv[1], sys.argv[2]):
        print(f"{d}\t{f}\t{a}")
