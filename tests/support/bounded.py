# SPDX-License-Identifier: BSD-3-Clause
"""What the leak tests (tests/integration/leak_vhost_test.py, leak_plugin_test.py) share: a
failure that prints the tails of the logs it names, and a bounded wait for an event (never a
sleep-then-hope: the predicate is polled until it holds or the bound passes)."""
import os
import sys
import time


def fail(msg, *logs):
    print("FAIL: " + msg)
    for path in logs:
        if path and os.path.exists(path):
            with open(path, errors="replace") as f:
                print("---- " + path + "\n" + f.read()[-3000:])
    sys.exit(1)


def wait_for(what, pred, seconds, *logs):
    """pred()'s first true value within `seconds`, else fail() naming `what`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    fail("not within %d s: %s" % (seconds, what), *logs)
