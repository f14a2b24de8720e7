#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The README's walk-through, run as a user runs it, in the README's order, against the suite's
own build tree: `bash deploy/demo.sh` (which must build everything the walk-through then uses:
skbnfd, skbnfctl and the plugin), then every command of the "While it runs, from another shell"
block, each of which must exit 0 and print something, then Ctrl-C (SIGINT) on the demo, which
must audit and exit 0.

The commands are read from README.md itself, so a command edited there is tested as written;
only the build directory (`build/`) is mapped to the suite's tree.
Usage: readme_walkthrough_test.py <source dir> <build dir>
"""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request

SRC, BUILD = sys.argv[1], sys.argv[2]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def code_blocks(text):
    return re.findall(r"```(?:sh)?\n(.*?)```", text, re.S)


def run_live_view(cmd, mapped):
    """`skbnfctl top` runs until Ctrl-C, as the user leaves it: wait for its second refresh
    (bounded), then SIGINT; it must end at once (0, or killed by the SIGINT as a plain `top`
    is) having printed the per-core tables twice."""
    p = subprocess.Popen(mapped.split(), cwd=SRC, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = b""
    deadline = time.monotonic() + 60
    while out.count(b"per-layer allocs") < 2 and time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.5)
        if ready:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break  # it exited
            out += chunk
    p.send_signal(signal.SIGINT)
    rest, _ = p.communicate(timeout=30)
    out = (out + (rest or b"")).decode(errors="replace")
    if out.count("per-layer allocs") < 2:
        fail(f"`{cmd}` did not refresh twice within 60 s:\n{out[-2000:]}")
    if p.returncode not in (0, -signal.SIGINT):
        fail(f"`{cmd}` exited {p.returncode} on Ctrl-C:\n{out[-2000:]}")
    print(f"ok: {cmd} (Ctrl-C after two refreshes)")


readme = open(os.path.join(SRC, "README.md")).read()
blocks = code_blocks(readme)
if not blocks:
    fail("README.md has no code block")
setup = [l.split("#")[0].strip() for l in blocks[0].splitlines() if l.strip()]
if setup[:2] != ["bash deploy/demo.sh", "bash tests/run_all.sh"]:
    fail(f"README's first block is not the two set-up commands: {setup}")
m = re.search(r"While it runs, from another shell:\s*```sh\n(.*?)```", readme, re.S)
if not m:
    fail("README has no 'While it runs, from another shell' block")
walk = [re.sub(r"\s+#\s.*$", "", l).strip() for l in m.group(1).splitlines() if l.strip()]
if len(walk) < 5:
    fail(f"the walk-through block has only {len(walk)} commands")

# The README's commands reach the demo on its default ports (gRPC 127.0.0.1:50051, /metrics
# :9478): another daemon there would answer instead of ours.
for port in (50051, 9478):
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            print(f"SKIP: 127.0.0.1:{port} is in use by another process; the README's commands "
                  "would reach it, not the demo")
            sys.exit(77)

# 1. The demo, exactly as the README says, with the build tree mapped to the suite's.
env = dict(os.environ, SKBNF_BUILD=BUILD)
demo = subprocess.Popen(["bash", "deploy/demo.sh"], cwd=SRC, env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
try:
    # Ready when /metrics answers with a forwarding core (bounded: the build is a no-op here).
    deadline = time.monotonic() + 120
    while True:
        if demo.poll() is not None:
            fail(f"the demo exited ({demo.returncode}) before serving:\n{demo.stdout.read()}")
        try:
            body = urllib.request.urlopen("http://localhost:9478/metrics", timeout=1).read()
            if b"skbnf_worker_busy_polls_total" in body:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            fail("the demo did not serve /metrics within 120 s")
        time.sleep(0.2)
    for need in ("dataplane/dpdk/libskbnf_mempool.so",):
        if not os.path.exists(os.path.join(BUILD, need)):
            fail(f"the demo did not build {need} (the README's plugin line uses it)")
    # 2. Every walk-through command in order, from "another shell" (the source dir).
    for cmd in walk:
        mapped = re.sub(r"(^|\s)build/", lambda g: g.group(1) + BUILD.rstrip("/") + "/", cmd)
        if re.search(r"skbnfctl top\b", cmd) and "--count" not in cmd:
            run_live_view(cmd, mapped)
            continue
        r = subprocess.run(["bash", "-o", "pipefail", "-c", mapped], cwd=SRC,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail(f"`{cmd}` exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        if not r.stdout.strip():
            fail(f"`{cmd}` printed nothing")
        print(f"ok: {cmd}")
finally:
    if demo.poll() is None:
        os.killpg(demo.pid, signal.SIGINT)
out, _ = demo.communicate(timeout=60)
if demo.returncode != 0:
    fail(f"the demo exited {demo.returncode} after Ctrl-C:\n{out[-3000:]}")
if "audit OK" not in out:
    fail(f"the demo's Ctrl-C summary has no 'audit OK':\n{out[-3000:]}")
print(f"ok: Ctrl-C: the demo exited 0 ({len(walk)} walk-through commands)")
print("1 passed, 0 failed")
