#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The production worker has no test in it (issue 30 item 5), held against the code.

Test hooks reach a worker's poll loop only through dataplane/dpdk/worker_hooks.h: a second
instantiation of the loop (`RunWorker<..., kHooked = true>`, launched by Engine::Start only when
a test gave hooks). This test reads the engine's sources and fails when

  - the `Worker` struct (engine_state.h) has a member or comment about tests, hooks or stalls
    (test state lives with the test's hook, not in every worker);
  - forward.cc names a test, hook or stall outside an `if constexpr (kHooked) { ... }` block
    (what the production instantiation compiles is what is left outside those blocks);
  - `WorkerMain`, the production entry point, runs anything but `RunWorkerInMode<false>`;
  - engine.h declares a `Test...` or `...Test...` function (a test-only control operation).

Words are read per identifier, split at `_` and at case changes: `test_stall_ms`,
`TestAllocateAll` and `SetTestStall` are caught, `latest` is not. Comments and string literals
are left out of forward.cc and engine.h (a comment may explain the hooks). The planted cases
below show each rule fails.

Run: python3 tests/integration/production_worker_test.py [ROOT]   (unittest; ctest runs it as
`integration.production_worker`).
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                       else os.path.join(os.path.dirname(__file__), "..", ".."))
DPDK = os.path.join("dataplane", "dpdk")
TEST_WORDS = {"test", "tests", "hook", "hooks", "hooked", "stall", "stalls"}
# The names that carry the hooked instantiation itself.
ALLOWED = {"kHooked", "HookedWorkerMain"}
GUARD = re.compile(r"if\s+constexpr\s*\(\s*kHooked\s*\)\s*\{")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read(root, name):
    with open(os.path.join(root, DPDK, name), encoding="utf-8") as f:
        return f.read()


def strip_comments_and_strings(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
    return re.sub(r"//[^\n]*", "", code)


def words(ident):
    out = []
    for part in ident.split("_"):
        out += [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", part)]
    return out


def test_names(code):
    """Identifiers of `code` (line, name) that speak of tests, hooks or stalls."""
    found = []
    for m in IDENT.finditer(code):
        name = m.group(0)
        if name not in ALLOWED and TEST_WORDS & set(words(name)):
            found.append((code.count("\n", 0, m.start()) + 1, name))
    return found


def block_end(code, open_brace):
    depth = 0
    for i in range(open_brace, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(code)


def without_guarded_blocks(code):
    """`code` with every `if constexpr (kHooked) { ... }` block blanked (newlines kept)."""
    while True:
        m = GUARD.search(code)
        if m is None:
            return code
        end = block_end(code, m.end() - 1)
        code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():end]) + code[end:]


def worker_struct(header):
    m = re.search(r"^struct Worker \{\n(.*?)^\};", header, flags=re.S | re.M)
    return None if m is None else m.group(1)


def violations(root):
    out = []
    body = worker_struct(read(root, "engine_state.h"))
    if body is None:
        out.append("engine_state.h: no `struct Worker {` ... `};` found")
    else:
        for n, line in enumerate(body.splitlines(), 1):
            if TEST_WORDS & set(words(" ".join(IDENT.findall(line)).replace(" ", "_"))):
                out.append(f"engine_state.h: struct Worker line {n} is about tests: {line.strip()}")
    forward = without_guarded_blocks(strip_comments_and_strings(read(root, "forward.cc")))
    for line, name in test_names(forward):
        out.append(f"forward.cc:{line}: '{name}' outside `if constexpr (kHooked)`: the "
                   "production loop would compile it")
    if not re.search(r"int WorkerMain\(void\* arg\)\s*\{\s*return RunWorkerInMode<false>\(",
                     forward):
        out.append("forward.cc: WorkerMain does not run RunWorkerInMode<false> (the loop "
                   "without hooks)")
    engine_h = strip_comments_and_strings(read(root, "engine.h"))
    for m in re.finditer(r"\b(\w*)\s*\(", engine_h):
        if "test" in words(m.group(1)):
            out.append(f"engine.h: '{m.group(1)}' is a test-only operation of the engine's API "
                       "(give it to a WorkerHooks of the test)")
    return out


class ProductionWorkerTest(unittest.TestCase):
    def test_tree(self):
        self.assertEqual(violations(ROOT), [])

    def plant(self, name, old, new):
        """A copy of the three files with `old` replaced by `new` in `name`."""
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, DPDK))
        for f in ("engine_state.h", "forward.cc", "engine.h"):
            shutil.copy(os.path.join(ROOT, DPDK, f), os.path.join(tmp, DPDK, f))
        path = os.path.join(tmp, DPDK, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text, f"planting needs {old!r} in {name}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))
        return violations(tmp)

    def test_planted_worker_field(self):
        v = self.plant("engine_state.h", "  WorkerCounters c;\n",
                       "  std::atomic<uint32_t> test_stall_ms{0};\n  WorkerCounters c;\n")
        self.assertTrue(any("struct Worker" in x and "test_stall_ms" in x for x in v), v)

    def test_planted_unguarded_check_in_the_loop(self):
        v = self.plant("forward.cc", "    const bool run =\n",
                       "    if (w.alloc_all_test.load()) TestAllocateAll(e, w);\n"
                       "    const bool run =\n")
        self.assertTrue(any("TestAllocateAll" in x for x in v), v)
        self.assertTrue(any("alloc_all_test" in x for x in v), v)

    def test_planted_hook_call_under_a_runtime_if(self):
        v = self.plant("forward.cc", "    const bool run =\n",
                       "    if (e.worker_hooks != nullptr) e.worker_hooks->BeforePoll(view);\n"
                       "    const bool run =\n")
        self.assertTrue(any("worker_hooks" in x for x in v), v)

    def test_planted_hooked_production_entry(self):
        v = self.plant("forward.cc", "return RunWorkerInMode<false>(", "return RunWorkerInMode<true>(")
        self.assertTrue(any("WorkerMain does not run" in x for x in v), v)

    def test_planted_test_operation_in_the_api(self):
        v = self.plant("engine.h", "  bool IsPaused(unsigned lcore) const;\n",
                       "  bool IsPaused(unsigned lcore) const;\n"
                       "  void SetTestStall(unsigned lcore, int ms);\n")
        self.assertTrue(any("SetTestStall" in x for x in v), v)

    def test_words(self):
        self.assertEqual(words("SetTestStall"), ["set", "test", "stall"])
        self.assertEqual(words("test_seen_epoch"), ["test", "seen", "epoch"])
        self.assertNotIn("test", words("latest_epoch"))


if __name__ == "__main__":
    unittest.main()
