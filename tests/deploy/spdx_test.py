#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.spdx_tool / deploy.spdx_headers: the licence is stated in every source file.

The repository is BSD-3-Clause (LICENSE, as DPDK: the mempool plugin loads into other
programs). The licence text itself cannot be tested; what can:
  - SpdxToolTest: deploy/tools/spdx_headers.py adds `SPDX-License-Identifier: BSD-3-Clause`
    in the right comment syntax and place (after a shebang) to C/C++, Python and shell files
    (by extension or by shebang), leaves other files, files that have it and the file mode
    alone, is idempotent, refuses a file with another licence, and --check reports without
    writing;
  - SpdxRepoTest: every C/C++, Python and shell file git tracks carries the line, and
    LICENSE is the BSD 3-Clause text naming "The skbnf authors".
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "deploy", "tools", "spdx_headers.py")
LINE = "SPDX-License-Identifier: BSD-3-Clause"


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=120)


class SpdxToolTest(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="spdx-")
        self.files = {
            "a.cc": "#include <x>\n",
            "b.h": "// Header: why.\n#pragma once\n",
            "c.py": "#!/usr/bin/python3\n\"\"\"Doc.\"\"\"\n",
            "d.sh": "set -e\necho hi\n",
            "run": "#!/usr/bin/env bash\necho hi\n",
            "tool": "#!/usr/bin/python3\nprint(1)\n",
            "e.md": "# Title\n",
            "f.cc": "// SPDX-License-Identifier: BSD-3-Clause\nint x;\n",
            "data": "plain text\n",
        }
        for name, text in self.files.items():
            with open(os.path.join(self.d, name), "w") as f:
                f.write(text)
        os.chmod(os.path.join(self.d, "run"), 0o755)

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def read(self, name):
        with open(os.path.join(self.d, name)) as f:
            return f.read()

    def test_adds_the_line_where_missing(self):
        p = run("--check", self.d)
        self.assertEqual(p.returncode, 1)
        for name in ("a.cc", "b.h", "c.py", "d.sh", "run", "tool"):
            self.assertIn(os.path.join(self.d, name), p.stderr)
        self.assertEqual(self.read("a.cc"), self.files["a.cc"])  # --check writes nothing
        p = run(self.d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("a.cc"), "// %s\n#include <x>\n" % LINE)
        self.assertEqual(self.read("b.h"), "// %s\n// Header: why.\n#pragma once\n" % LINE)
        self.assertEqual(self.read("c.py"), "#!/usr/bin/python3\n# %s\n\"\"\"Doc.\"\"\"\n" % LINE)
        self.assertEqual(self.read("d.sh"), "# %s\nset -e\necho hi\n" % LINE)
        self.assertEqual(self.read("run"), "#!/usr/bin/env bash\n# %s\necho hi\n" % LINE)
        self.assertEqual(self.read("tool"), "#!/usr/bin/python3\n# %s\nprint(1)\n" % LINE)
        for untouched in ("e.md", "f.cc", "data"):
            self.assertEqual(self.read(untouched), self.files[untouched], untouched)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.d, "run")).st_mode), 0o755)
        # idempotent, and --check is now happy
        before = {n: self.read(n) for n in self.files}
        self.assertEqual(run(self.d).returncode, 0)
        self.assertEqual({n: self.read(n) for n in self.files}, before)
        self.assertEqual(run("--check", self.d).returncode, 0)

    def test_another_licence_is_reported_not_replaced(self):
        with open(os.path.join(self.d, "g.cc"), "w") as f:
            f.write("// SPDX-License-Identifier: GPL-2.0-only\n")
        p = run(os.path.join(self.d, "g.cc"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("another licence", p.stderr)
        self.assertEqual(self.read("g.cc"), "// SPDX-License-Identifier: GPL-2.0-only\n")


class SpdxRepoTest(unittest.TestCase):
    def test_license_file(self):
        with open(os.path.join(ROOT, "LICENSE")) as f:
            text = f.read()
        self.assertTrue(text.startswith("BSD 3-Clause License"))
        self.assertIn("The skbnf authors", text)
        self.assertIn("Neither the name of the copyright holder", text)

    def test_every_source_file_has_the_line(self):
        p = run("--check", "--root", ROOT)
        self.assertEqual(p.returncode, 0, "\n" + p.stderr[-4000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
