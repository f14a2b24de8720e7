# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers of the control-plane script tests (Debian python3, standard library only).

The daemon under test is $SKBNF_CONTROL_DAEMON (set by ctest: the fake daemon unless configured
otherwise) with $SKBNF_CONTROL_DAEMON_ARGS; skbnfctl is $SKBNFCTL. Every daemon listens on
loopback ports the kernel picks and is stopped (SIGTERM) by the test that started it.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

DAEMON = os.environ.get("SKBNF_CONTROL_DAEMON", "")
DAEMON_ARGS = os.environ.get("SKBNF_CONTROL_DAEMON_ARGS", "").split()
SKBNFCTL = os.environ.get("SKBNFCTL", "")
# Arguments that make worker core 1 late to its quiescent point (swaps with a short quiesce
# timeout roll back); empty: tests that need it skip.
STALL_ARGS = os.environ.get("SKBNF_CONTROL_DAEMON_STALL_ARGS", "").split()


def until(predicate, what, timeout=30, step=0.02):
    """Polls `predicate` until it returns something true (returned); fails naming `what` after
    `timeout` seconds. For waiting on an event the test cannot be told of; bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("not within %d s: %s" % (timeout, what))


class SharedDaemon(unittest.TestCase):
    """A test case whose tests share one daemon (started with `daemon_args`) as `cls.d`; its
    exit code at the end must be 0 (skbnfd's final audit is exact)."""
    daemon_args = ()

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(*cls.daemon_args)

    @classmethod
    def tearDownClass(cls):
        code = cls.d.stop()
        assert code == 0, "daemon exit code %r" % code


def daemon_is_fake():
    return "skbnf_fake_daemon" in DAEMON


class Daemon:
    """A running daemon: .grpc (address), .metrics_port; stop() or use as a context manager."""

    def __init__(self, *extra):
        if not DAEMON or not os.access(DAEMON, os.X_OK):
            raise RuntimeError("SKBNF_CONTROL_DAEMON is not an executable: %r" % DAEMON)
        self.dir = tempfile.mkdtemp(prefix="skbnf-control-")
        ready = os.path.join(self.dir, "ready.json")
        # our flags go before a "--" in the base arguments (EAL arguments follow it)
        cut = DAEMON_ARGS.index("--") if "--" in DAEMON_ARGS else len(DAEMON_ARGS)
        args = ([DAEMON] + DAEMON_ARGS[:cut] +
                ["--listen=127.0.0.1:0", "--metrics-addr=127.0.0.1:0", "--ready-file=" + ready] +
                # AuditPool's rate limit (server/control/limits.h) is off here: these tests audit after
                # each step; limits_test tests the limit. A test may pass its own value after.
                ["--audit-min-interval-ms=0"] +
                # loopback TCP grants no role (server/core/access.h) but with --loopback-role;
                # a test may pass its own value after.
                ["--loopback-role=admin"] +
                list(extra) + DAEMON_ARGS[cut:])
        self.stderr = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.stderr)
        for _ in range(3000):  # guards a hang only; start-up is bounded by the daemon
            if os.path.exists(ready):
                with open(ready) as f:
                    r = json.load(f)
                self.grpc = r["grpc"]
                self.metrics_port = r["metrics_port"]
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        err = self.read_stderr()
        self.stop()
        raise RuntimeError("daemon did not start: " + err)

    def read_stderr(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self):
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            code = self.proc.returncode
        self.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def ctl(self, *args, timeout=30):
        """Runs skbnfctl against this daemon: (exit code, stdout, stderr)."""
        return skbnfctl("--addr=" + self.grpc, *args, timeout=timeout)

    def scrape(self):
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()


def skbnfctl(*args, timeout=30):
    p = subprocess.run([SKBNFCTL] + list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def free_port():
    """A loopback TCP port nobody listens on right now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- Prometheus text exposition format

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_metrics(text):
    """Returns (types: {family: type}, samples: [(name, {label: value}, float)])."""
    types, samples = {}, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(None, 3)
            types[name] = typ
            continue
        if line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("unparsable sample line: %r" % line)
        labels = {}
        body = m.group(3) or ""
        pos = 0
        while pos < len(body):
            lm = _LABEL.match(body, pos)
            if not lm:
                raise ValueError("unparsable labels in: %r" % line)
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        samples.append((m.group(1), labels, float(m.group(4))))
    return types, samples


def values(samples, name, **match):
    """{frozenset(labels): value} of the samples of `name` whose labels include `match`."""
    out = {}
    for n, labels, v in samples:
        if n == name and all(labels.get(k) == str(x) for k, x in match.items()):
            out[frozenset(labels.items())] = v
    return out


def total(samples, name, **match):
    return sum(values(samples, name, **match).values())
