#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""2 MiB hugepages for tests and benchmarks: one helper, shared by bench/run and the tests that
need production memory (vhost-user/virtio-user, OVS-DPDK, hugepage benchmarks).

Why one helper: the reservation is machine-wide (/proc/sys/vm/nr_hugepages) and a hugetlbfs
mount is needed besides (EAL finds the page size through it; skbnfd's preflight refuses to
start without one, as in a pod without a HugePages emptyDir). The helper only ever RAISES the
reservation (never lowers what someone else reserved) and mounts hugetlbfs only when no 2 MiB
mount exists; `release` gives back exactly what its `ensure` added (pages, mount), so a test
can "start what it needs and stop it afterwards".

As a library:  err, state = ensure(n); ...; release(state)
As a command:  hugepages.py ensure N --state FILE   (prints the mount point; exit 77 with the
                                                      reason when none can be had)
               hugepages.py release --state FILE
"""
import argparse
import json
import os
import subprocess
import sys

MOUNT = "/dev/hugepages"


def free_pages():
    for line in open("/proc/meminfo"):
        if line.startswith("HugePages_Free:"):
            return int(line.split()[1])
    return 0


def mount_point():
    """A hugetlbfs mount with 2 MiB pages, or None."""
    for line in open("/proc/mounts"):
        m = line.split()
        if m[2] == "hugetlbfs" and "pagesize=1G" not in m[3]:
            return m[1]
    return None


def ensure(n):
    """At least n free 2 MiB hugepages and a 2 MiB hugetlbfs mount. Returns (error text or None,
    state): state records what was added, for release()."""
    state = {"added_pages": 0, "mounted": None}
    if mount_point() is None:
        os.makedirs(MOUNT, exist_ok=True)
        r = subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", MOUNT],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"cannot mount hugetlbfs on {MOUNT}: {r.stderr.strip()}", state
        state["mounted"] = MOUNT
    have = free_pages()
    if have >= n:
        return None, state
    try:
        with open("/proc/sys/vm/nr_hugepages") as f:
            total = int(f.read())
        # The pages in use (HugePages_Total - HugePages_Free, surplus pages included) plus n:
        # raising nr_hugepages turns surplus pages in use into persistent ones first, so
        # `persistent + n - free` would fall short by the surplus (seen after a process wrote a
        # lower nr_hugepages while pages were mapped).
        meminfo = {l.split(":")[0]: l.split()[1] for l in open("/proc/meminfo") if ":" in l}
        in_use = int(meminfo.get("HugePages_Total", total)) - have
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(max(total, in_use + n)))
        with open("/proc/sys/vm/nr_hugepages") as f:
            state["added_pages"] = max(0, int(f.read()) - total)
    except OSError as e:
        return f"cannot reserve hugepages ({e}): run as root", state
    if free_pages() < n:
        return (f"only {free_pages()} of {n} 2 MiB hugepages could be reserved (memory too "
                f"fragmented?)"), state
    return None, state


def release(state):
    """Gives back what ensure() added: the pages it reserved, the mount it made."""
    if state.get("added_pages"):
        with open("/proc/sys/vm/nr_hugepages") as f:
            total = int(f.read())
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(max(0, total - state["added_pages"])))
    if state.get("mounted"):
        subprocess.run(["umount", state["mounted"]], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ensure")
    e.add_argument("pages", type=int)
    e.add_argument("--state", required=True, help="file recording what was added")
    r = sub.add_parser("release")
    r.add_argument("--state", required=True)
    a = ap.parse_args()
    if a.cmd == "ensure":
        err, state = ensure(a.pages)
        with open(a.state, "w") as f:
            json.dump(state, f)
        if err:
            print(f"hugepages: {err}", file=sys.stderr)
            return 77
        print(mount_point())
        return 0
    try:
        with open(a.state) as f:
            state = json.load(f)
    except OSError:
        return 0
    release(state)
    os.unlink(a.state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
