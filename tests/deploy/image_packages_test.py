#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.image_packages: the image's base by digest and its pinned packages, without dockerd.

deploy/Dockerfile's runtime stage installs each runtime package at the version
deploy/image-packages.lock pins (`deploy/base-image.sh pins`) and then requires the image's whole
package set to equal the lock (`deploy/base-image.sh check`); its first step refuses a BASE not
given by digest. Here, on this Debian host with the real dpkg-query:
  - `check` passes for a lock equal to what is installed, and fails, naming the package, for a
    moved version, a package the lock lacks and one it has that is not installed;
  - `pins` prints the lock's PACKAGE=VERSION lines and fails naming a package the lock lacks;
  - every package the Dockerfile installs is pinned in the committed lock, which is sorted,
    unique and PACKAGE=VERSION only;
  - the Dockerfile's BASE check (its own shell text, run with sh) accepts name@sha256:<digest> and
    base-image.sh's skbnf-base:sha256-<digest> and refuses a tag, saying what to write.
deploy.docker builds the image once with the lock and checks the result (the image's first layer
is the base's, its packages are the lock's).
"""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "deploy", "base-image.sh")
LOCK = os.path.join(ROOT, "deploy", "image-packages.lock")
DOCKERFILE = os.path.join(ROOT, "deploy", "Dockerfile")
DIGEST = "0123456789abcdef" * 4


def installed():
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}=${Version}\n"], check=True,
                         capture_output=True, text=True).stdout
    return sorted(out.split(), key=lambda s: s.encode())


def run(lock_lines, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".lock", delete=False) as f:
        f.write("# a header line\n" + "\n".join(lock_lines) + "\n")
    try:
        p = subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, SKBNF_PACKAGES_LOCK=f.name))
        return p.returncode, p.stdout, p.stderr
    finally:
        os.unlink(f.name)


def dockerfile_packages():
    text = open(DOCKERFILE).read()
    m = re.search(r'pkgs="([^"]+)"', text)
    return m.group(1).replace("\\", " ").split()


class ImagePackagesTest(unittest.TestCase):
    def test_check_passes_for_what_is_installed(self):
        rc, out, err = run(installed(), "check")
        self.assertEqual(rc, 0, err)

    def test_check_fails_naming_the_drift(self):
        pkgs = installed()
        i = next(i for i, p in enumerate(pkgs) if p.startswith("dpkg="))
        moved = list(pkgs)
        moved[i] = "dpkg=0.0.1"
        rc, _, err = run(moved, "check")
        self.assertEqual(rc, 1)
        self.assertIn("-dpkg=0.0.1", err)
        self.assertIn("+" + pkgs[i], err)
        self.assertIn("PACKAGES_LOCK=update", err)  # says how to refresh
        rc, _, err = run(pkgs[:i] + pkgs[i + 1:], "check")  # installed, not locked
        self.assertEqual(rc, 1)
        self.assertIn("+" + pkgs[i], err)
        rc, _, err = run(pkgs + ["zz-not-installed=1.0"], "check")  # locked, not installed
        self.assertEqual(rc, 1)
        self.assertIn("-zz-not-installed=1.0", err)

    def test_pins(self):
        rc, out, err = run(["bash=5.2.15-2+b8", "dpkg=1.21.22"], "pins", "dpkg", "bash")
        self.assertEqual((rc, out), (0, "dpkg=1.21.22\nbash=5.2.15-2+b8\n"), err)
        rc, out, err = run(["bash=5.2.15-2+b8"], "pins", "bash", "libnuma1")
        self.assertEqual(rc, 1)
        self.assertIn("libnuma1 is not in", err)
        # a prefix is not a package: libnuma1 must not match libnuma1-dev
        rc, out, err = run(["libnuma1-dev=2.0.16-1"], "pins", "libnuma1")
        self.assertEqual(rc, 1)

    def test_committed_lock_pins_every_package_the_dockerfile_installs(self):
        lines = [l for l in open(LOCK).read().splitlines() if l and not l.startswith("#")]
        self.assertGreaterEqual(len(lines), 80, "the lock lists the whole image")
        for l in lines:
            self.assertRegex(l, r"^[a-z0-9][a-z0-9+.-]+=[A-Za-z0-9.+:~-]+$")
        self.assertEqual(lines, sorted(set(lines), key=lambda s: s.encode()))
        pkgs = dockerfile_packages()
        self.assertIn("librte-net-ixgbe23", pkgs)
        p = subprocess.run(["bash", SCRIPT, "pins", *pkgs], capture_output=True, text=True,
                           env=dict(os.environ, SKBNF_PACKAGES_LOCK=LOCK))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.split()), len(pkgs))

    def test_dockerfile_refuses_a_base_by_tag(self):
        text = open(DOCKERFILE).read()
        m = re.search(r'RUN (case "\$BASE" in .*?esac)', text, re.S)
        self.assertIsNotNone(m, "the runtime stage's BASE check")
        snippet = m.group(1).replace("\\\n", "\n")
        for base, ok in (("debian:bookworm-slim", False), ("debian:latest", False),
                         ("debian:bookworm-slim@sha256:" + DIGEST, True),
                         ("registry.example.net/debian@sha256:" + DIGEST, True),
                         ("skbnf-base:sha256-" + DIGEST, True),
                         ("skbnf-base:sha256-" + DIGEST[:12], False),
                         ("debian@sha256:abc", False)):
            p = subprocess.run(["sh", "-c", snippet], capture_output=True, text=True,
                               env={"BASE": base, "PATH": os.environ["PATH"]})
            self.assertEqual(p.returncode == 0, ok, (base, p.stderr))
            if not ok:
                self.assertIn("is not pinned by digest", p.stderr)
                self.assertIn("base-image.sh --import", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
