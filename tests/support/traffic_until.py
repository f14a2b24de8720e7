#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""raw_traffic.py's frames and checks, sent at a fixed rate for as long as the caller wants:
until a line arrives on stdin (or stdin closes), then the receiver lingers for the frames in
flight and one JSON object is printed, in raw_traffic.py's format (sent, delivered, bad,
bad_first, duplicates, missing, rate_pps, seconds).

Why: "hot swaps through every strategy while traffic flows" needs traffic that lasts exactly as
long as the swaps, and how long a swap takes depends on how loaded the machine is (2 vCPUs
shared by busy pollers). A fixed frame count either ends before the last swap or wastes
seconds. The frame format and the per-frame checks are raw_traffic.py's own functions
(tests/integration/raw_traffic.py: frame, check), imported, not copied.

Usage: traffic_until.py --tx IF --rx IF --rate PPS [raw_traffic.py's frame/check options]
Exit 0 when the run happened (the caller judges the numbers), 2 on a socket error.
"""
import argparse
import json
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import raw_traffic  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tx", required=True)
    p.add_argument("--rx", required=True)
    p.add_argument("--rate", type=float, required=True, help="frames per second (> 0)")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--dst-mac", required=True)
    p.add_argument("--src-mac", required=True)
    p.add_argument("--src-ip", default="10.0.0.1")
    p.add_argument("--dst-ip", default="10.1.0.1")
    p.add_argument("--dst-spread", type=int, default=1)
    p.add_argument("--ttl", type=int, default=64)
    p.add_argument("--ttl-dec", type=int, default=1)
    p.add_argument("--expect-dst-mac", default="")
    p.add_argument("--expect-src-mac", default="")
    p.add_argument("--linger", type=float, default=2.0)
    args = p.parse_args()
    try:
        link = raw_traffic.Link(args)
    except OSError as e:
        print(f"traffic_until: socket: {e}", file=sys.stderr)
        return 2

    gap = 1.0 / args.rate
    start = time.monotonic()
    sent = 0
    stop = False
    while not stop:
        due = start + sent * gap
        while True:
            link.drain()
            left = due - time.monotonic()
            r, _, _ = select.select([link.rx, sys.stdin], [], [], max(0.0, left))
            if sys.stdin in r:
                stop = True  # a line or EOF: the caller is done
                break
            if time.monotonic() >= due:
                break
        if stop:
            break
        link.tx.send(raw_traffic.frame(sent, args))
        sent += 1
    link.linger(sent)
    print(json.dumps(link.report(sent, start)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
