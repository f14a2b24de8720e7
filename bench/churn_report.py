#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/churn_report.py: the checks, the summary and the plot of a bench/churn.sh run, from its
raw files (churn.csv, client.json); bench/churn.sh runs it at the end, and it can be run again on
committed files. Appends "# summary" and "# check" lines to the CSV (replacing earlier ones) and
exits 0 when every check holds.

Checks (bench/churn.sh's header says why each is what it is):
  every batch: sent == delivered + counted drops (nothing unaccounted); no frame bad/duplicated;
  no control call failed (churn_client's exit and counts); routes, swaps and watch updates
  happened; every reload written was taken (ok or unchanged: "unchanged" when the live strategy
  already is the file's, e.g. after a client's swap to it) and none refused; the OVS restarts
  happened; after the warm-up: RSS's growth since the warm-up's end (the highest sample after it
  over the first sample after it, the plain reading of "growth after the first 5 minutes within
  1 %"; the older peak-of-the-last-third over peak-of-the-first-third figure, which hides a
  steady creep, is printed beside it, not checked) within --rss-tol, threads' peak in the last
  third not above the first third's, descriptors' floor unchanged (rises of at most one
  per client connection while a connection-age GOAWAY's grace lasts); exit 0 with an
  exact audit.
"""
import argparse
import csv
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--exit-status", type=int, required=True)
    ap.add_argument("--client-exit", type=int, required=True)
    ap.add_argument("--reloads", type=int, required=True)
    ap.add_argument("--restarts", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--rss-tol", type=float, default=0.01)
    ap.add_argument("--connections", type=int, default=10,
                    help="the client's connections (routes, swaps, one per watcher)")
    ap.add_argument("--plot")
    a = ap.parse_args()
    lines = [l for l in open(a.csv).read().splitlines()
             if not l.startswith("# summary") and not l.startswith("# check")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    if not rows:
        sys.exit("churn_report: no samples in " + a.csv)
    try:
        client = json.load(open(a.client))
    except (OSError, ValueError):
        client = {"route_ok": 0, "route_failed": -1, "swap_ok": 0, "swap_failed": -1,
                  "watch_updates": 0, "first_watch_error": "no output"}
    exitline = next((l for l in lines if l.startswith("# skbnfd exit")), "")

    def col(k, rs=rows):
        return [int(r[k]) for r in rs]
    later = [r for r in rows if int(r["t_s"]) >= a.warmup] or rows[-1:]
    third = max(1, len(later) // 3)
    first, last = later[:third], later[-third:]

    def growth(k):
        """Growth of the peak: the last third's maximum over the first third's."""
        return max(col(k, last)) / max(col(k, first)) - 1
    def since_warmup(k):
        """Growth since the warm-up: the highest sample after it over the first one after it."""
        return max(col(k, later)) / col(k, later)[0] - 1
    taken = col("reloads_ok")[-1] + col("reloads_unchanged")[-1]
    checks = {
        "sent == delivered + counted drops in every batch": all(u == 0 for u in col("unaccounted")),
        "no frame bad or duplicated": sum(col("bad")) + sum(col("duplicates")) == 0,
        "no control call failed (churn_client)": a.client_exit == 0
            and client["route_failed"] == 0 and client["swap_failed"] == 0
            and not client["first_watch_error"],
        "route changes, swaps and watch updates happened": client["route_ok"] > 0
            and client["swap_ok"] > 0 and client["watch_updates"] > 0,
        "every reload written was taken (ok or unchanged), none refused":
            a.reloads > 0 and taken >= a.reloads and col("reloads_error")[-1] == 0,
        "OVS restarts happened": a.restarts > 0,
        f"RSS flat after {a.warmup} s (growth since then within {100 * a.rss_tol:g} %)":
            since_warmup("rss_kb") <= a.rss_tol,
        # A connection-age GOAWAY (--grpc-max-connection-age) keeps each old connection open
        # next to its successor for the 60 s grace: a rise of up to one per client connection
        # that falls back. A leak raises the floor.
        f"open descriptors flat after {a.warmup} s (the last third's lowest count the first "
        f"third's; rises of at most {a.connections}, falling back)":
            min(col("fds", last)) == min(col("fds", first))
            and max(col("fds", later)) - min(col("fds", first)) <= a.connections,
        f"threads flat after {a.warmup} s (no peak growth)": growth("threads") <= 0,
        "exit 0 with an exact audit": a.exit_status == 0 and "audit OK (exact" in exitline,
    }
    out = lines + [
        f"# summary: {len(rows)} batches, sent {sum(col('sent'))}, delivered "
        f"{sum(col('delivered'))}, counted drops {sum(col('counted_drops'))}, unaccounted "
        f"{sum(col('unaccounted'))}; after {a.warmup} s: RSS {min(col('rss_kb', later))}.."
        f"{max(col('rss_kb', later))} kB (growth since {a.warmup} s "
        f"{100 * since_warmup('rss_kb'):.2f} %, last third's peak over the first third's "
        f"{100 * growth('rss_kb'):.2f} %), fds "
        f"{sorted(set(col('fds', later)))}, threads {sorted(set(col('threads', later)))}; "
        f"reloads written {a.reloads}, taken {taken}; route ops {client['route_ok']}, swaps "
        f"{client['swap_ok']}, watch updates {client['watch_updates']}, watch streams the "
        f"server ended UNAVAILABLE and reopened {client.get('watch_unavailable', 'not counted')}"]
    out += [f"# check {'ok  ' if v else 'FAIL'} {k}" for k, v in checks.items()]
    with open(a.csv, "w") as f:
        f.write("\n".join(out) + "\n")
    if a.plot:
        plot(rows, col, a.plot)
    print("\n".join(l for l in out if l.startswith("# ")))
    sys.exit(0 if all(checks.values()) else 1)


def plot(rows, col, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    t = [int(r["t_s"]) / 60 for r in rows]
    fig, ax = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    ax[0].plot(t, [int(r["rss_kb"]) / 1024 for r in rows])
    ax[0].set_ylabel("RSS MiB")
    ax[1].plot(t, col("fds"), label="open descriptors")
    ax[1].plot(t, col("threads"), label="threads")
    ax[1].legend()
    ax[1].set_ylabel("count")
    ax[2].plot(t, col("sent"), label="sent")
    ax[2].plot(t, col("delivered"), label="delivered")
    ax[2].legend()
    ax[2].set_ylabel("frames per batch")
    ax[2].set_xlabel("minutes")
    for r in rows:
        if "ovs_restart" in r["event"]:
            for x in ax:
                x.axvline(int(r["t_s"]) / 60, color="grey", lw=0.5)
    fig.suptitle("skbnfd over OVS-DPDK under churn (grey: OVS restarts)")
    fig.savefig(path, dpi=80)


if __name__ == "__main__":
    main()
