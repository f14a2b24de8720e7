# SPDX-License-Identifier: BSD-3-Clause
"""Helpers for bench/run: statistics, the machine, binaries, traffic files, callgrind, reports.

Pure Python 3 (Debian's /usr/bin/python3); matplotlib (python3-matplotlib) only for the plots.
"""
import csv
import glob
import ipaddress
import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import struct
import subprocess
import tempfile
import time

# ------------------------------------------------------------------------------------------
# Statistics
# ------------------------------------------------------------------------------------------


# The run shape of every headline figure (issue 23), bench/run's defaults; BENCHMARKS.md's
# protocol paragraph is generated from it (bench/update_benchmarks_md.py). The load cap: the
# 1-minute load average, at a run's start or end, above which a pair is run again. On this
# 2-vCPU machine a benchmark's own busy-polling lcore holds it at 1.0, so 1.5 allows half a CPU
# of anything else, i.e. the benchmark's lcore keeps a vCPU of its own most of the time.
PROTOCOL = {"pairs": 10, "seconds": 5, "warmup": 1, "load_cap": 1.5, "load_retries": 3}


def tsc_mhz():
    """The TSC frequency as the kernel measured it at boot (dmesg `tsc: Detected N MHz`, or
    `Refined TSC clocksource calibration`), or None. TSC ticks per packet are printed beside
    it: ticks are wall time at this rate, not core cycles."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = (re.search(r"Refined TSC clocksource calibration: ([\d.]+) MHz", out) or
         re.search(r"tsc: Detected ([\d.]+) MHz", out))
    return float(m.group(1)) if m else None


def memory_of(meta):
    """The memory a result ran on, from its metadata. Results written before issue 23 have no
    "memory" field: hugepages then only with --huge on their command line."""
    if meta.get("memory"):
        return meta["memory"]
    return ("2 MiB hugepages" if "--huge" in meta.get("command", "").split()
            else "--no-huge (4 KiB pages)")


def counted(rows):
    """The rows a summary uses: not the runs a load-cap repeat superseded."""
    return [r for r in rows if r.get("status", "ok") != "repeated"]


def ticks_of(row):
    """skbnfd's TSC ticks per packet of a run, or None. Older CSVs call the column
    cycles_per_packet and hold testpmd's --record-core-cycles figure of the rate run in it too:
    that one is never used (issue 23: testpmd's cycles, if published, come from a separate run)."""
    if row["key"].startswith("testpmd:"):
        return None
    v = row.get("tsc_ticks_per_packet", row.get("cycles_per_packet", ""))
    return float(v) if v else None


def bootstrap_ci(values, stat=statistics.median, resamples=10000, level=0.95, seed=12345):
    """Percentile bootstrap interval of stat(values), resampling the values (the pairs)."""
    if not values:
        return (float("nan"), float("nan"))
    if len(values) == 1:
        return (values[0], values[0])
    rng = random.Random(seed)
    n = len(values)
    if stat is statistics.median:
        stat = _median  # the same value, without statistics' per-call overhead
    est = sorted(stat([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    lo = est[int((1 - level) / 2 * resamples)]
    hi = est[min(resamples - 1, int((1 + level) / 2 * resamples))]
    return (lo, hi)


def halfwidth_pct(lo, hi, median):
    """Half the width of the interval [lo, hi] as a percentage of its median: the "+- %" of the
    interleave, adjacent and BENCHMARKS.md tables."""
    return 50.0 * (hi - lo) / median


def write_rows_csv(path, cols, rows):
    """Rows (dicts) as CSV with the columns `cols` in that order: a missing key is an empty cell,
    a key not in `cols` is left out (the bench tools' raw per-sample files)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})


def write_json(path, obj):
    """`obj` as indented JSON with sorted keys (the bench tools' summary.json and meta.json)."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)


def _median(v):
    """statistics.median's value (the mean of the two middle values for an even count)."""
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def cv(values):
    if len(values) < 2:
        return float("nan")
    m = statistics.mean(values)
    return statistics.stdev(values) / m if m else float("nan")


def spread_ratio_ci(pairs, resamples=10000, seed=12345):
    """Ratio of coefficients of variation CV(B)/CV(A) over runs, bootstrapped over pairs."""
    if len(pairs) < 3:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    n = len(pairs)
    est = []
    for _ in range(resamples):
        s = [pairs[rng.randrange(n)] for _ in range(n)]
        ca, cb = cv([a for a, _ in s]), cv([b for _, b in s])
        if ca and ca == ca and cb == cb:
            est.append(cb / ca)
    if not est:
        return (float("nan"), float("nan"))
    est.sort()
    return (est[int(0.025 * len(est))], est[min(len(est) - 1, int(0.975 * len(est)))])


# ------------------------------------------------------------------------------------------
# The machine and the binaries
# ------------------------------------------------------------------------------------------


def _cmd_out(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info():
    cpuinfo = open("/proc/cpuinfo").read()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+)", open("/proc/meminfo").read(), re.M)
    huge = re.search(r"^HugePages_Total:\s*(\d+)", open("/proc/meminfo").read(), re.M)
    distro = ""
    if os.path.exists("/etc/os-release"):
        m = re.search(r'^PRETTY_NAME="?([^"\n]*)', open("/etc/os-release").read(), re.M)
        distro = m.group(1) if m else ""
    return {
        "cpu_model": model.group(1).strip() if model else "unknown",
        "cpu_mhz": float(mhz.group(1)) if mhz else None,
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "hugepages": int(huge.group(1)) if huge else 0,
        "kernel": platform.release(),
        "distro": distro,
        "dpdk": _cmd_out(["pkg-config", "--modversion", "libdpdk"]),
        "valgrind": _cmd_out(["valgrind", "--version"]),
        "virtualized": "hypervisor" in cpuinfo,
        "tsc_mhz": tsc_mhz(),
    }


def machine_line(m, eal):
    return (f"{m['cpu_model']}, {m['cores']} cores"
            f"{' (VM)' if m.get('virtualized') else ''}, {m.get('memory_gib')} GiB, "
            f"{m['distro']}, kernel {m['kernel']}, DPDK {m['dpdk']}, "
            f"hugepages {m['hugepages']} (EAL {' '.join(eal)})")


class Binaries:
    """Finds the programs in the build tree wherever they are built (skbnfd moves from
    dataplane/dpdk/ to server/): the newest executable of that name under the build dir."""

    def __init__(self, build):
        self.build = build
        self._cache = {}

    def _find(self, name, want_exec=True):
        if name in self._cache:
            return self._cache[name]
        best = None
        for dirpath, dirnames, filenames in os.walk(self.build):
            dirnames[:] = [d for d in dirnames if d != "CMakeFiles" and not d.startswith(".")]
            if name in filenames:
                p = os.path.join(dirpath, name)
                if want_exec and not os.access(p, os.X_OK):
                    continue
                if best is None or os.path.getmtime(p) > os.path.getmtime(best):
                    best = p
        if best is None:
            raise FileNotFoundError(
                f"{name} not found under {self.build}: build it first (cmake --build "
                f"{self.build} --target {name.replace('lib', '', 1).replace('.so', '')})")
        self._cache[name] = best
        return best

    def skbnfd(self):
        return self._find("skbnfd")

    def plugin(self):
        return self._find("libskbnf_mempool.so", want_exec=False)

    def alloc_bench(self):
        return self._find("alloc_touch_bench")

    def control_flags(self):
        if "ctl" not in self._cache:
            h = _cmd_out([self.skbnfd(), "--helpfull"])
            # With the control plane built in: a kernel-chosen loopback port, no /metrics.
            self._cache["ctl"] = (["--listen=127.0.0.1:0", "--metrics-addr=off"]
                                  if re.search(r"-listen\b", h) else [])
        return self._cache["ctl"]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MALLOC_LIBS = {
    "jemalloc": ["libjemalloc.so.2"],
    "tcmalloc": ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
    "mimalloc": ["libmimalloc.so.2", "libmimalloc.so"],
}


def malloc_lib(name):
    for lib in MALLOC_LIBS.get(name, []):
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
            p = os.path.join(d, lib)
            if os.path.exists(p):
                return p
    return None


# ------------------------------------------------------------------------------------------
# Traffic: routes and pcap files (classic libpcap format)
# ------------------------------------------------------------------------------------------


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def udp_frame(dst, ttl, frame_len=64):
    eth = bytes.fromhex("020000000001020000000002") + b"\x08\x00"
    ip_len = frame_len - 14
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, ttl, 17, 0,
                      ipaddress.IPv4Address("192.168.0.1").packed, struct.pack("!I", dst))
    hdr = hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]
    udp = struct.pack("!HHHH", 1024, 4789, ip_len - 20, 0)
    return eth + hdr + udp + b"\0" * (ip_len - 28)


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


def random_prefixes(count, base, seed):
    """`count` distinct prefixes inside base/8 (base: first octet), lengths 16..24, half of
    them /24 (as in real tables, where /24s dominate)."""
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < count:
        ln = 24 if rng.random() < 0.5 else rng.randint(16, 23)
        p = (base << 24) | (rng.getrandbits(24) & ~((1 << (32 - ln)) - 1) & 0xFFFFFF)
        if (p, ln) in seen:
            continue
        seen.add((p, ln))
        out.append((p, ln))
    return out


def _dests(prefixes, count, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        p, ln = prefixes[rng.randrange(len(prefixes))]
        out.append(p | (rng.getrandbits(32 - ln) if ln < 32 else 0))
    return out


def _route_lines(prefixes, port, hop):
    return [f"route {ipaddress.IPv4Address(p)}/{ln} {port} 02:00:00:00:01:{hop:02x}"
            for p, ln in prefixes]


_MEMO = {}


def flow_routes(routes):
    """Two flows' tables: half the prefixes in 10/8 -> net_ring0, half in 11/8 -> net_ring1."""
    key = ("fr", routes)
    if key not in _MEMO:
        _MEMO[key] = (_route_lines(random_prefixes(routes // 2, 10, 1), "net_ring0", 1)
                      + _route_lines(random_prefixes(routes - routes // 2, 11, 2), "net_ring1", 2))
    return _MEMO[key]


def flow_pcaps(workdir, dests, routes=100000):
    """Two pcaps of `dests` random destinations each (flow A inside 10/8's prefixes, flow B
    inside 11/8's), TTL 2 (the second hop drops them as ttl_expired, on the other core)."""
    pa = os.path.join(workdir, f"flowA-{dests}-{routes}.pcap")
    pb = os.path.join(workdir, f"flowB-{dests}-{routes}.pcap")
    if not os.path.exists(pa):
        write_pcap(pa, [udp_frame(d, 2) for d in _dests(random_prefixes(routes // 2, 10, 1),
                                                         dests, 3)])
        write_pcap(pb, [udp_frame(d, 2) for d in _dests(
            random_prefixes(routes - routes // 2, 11, 2), dests, 4)])
    return pa, pb


def single_routes(routes, port="net_null0"):
    """`routes` random prefixes inside 10/8, all to `port` (single_pcap's destinations)."""
    key = ("sr", routes, port)
    if key not in _MEMO:
        _MEMO[key] = _route_lines(random_prefixes(routes, 10, 1), port, 1)
    return _MEMO[key]


def single_pcap(workdir, dests, routes):
    p = os.path.join(workdir, f"single-{dests}-{routes}.pcap")
    if not os.path.exists(p):
        write_pcap(p, [udp_frame(d, 64) for d in _dests(random_prefixes(routes, 10, 1), dests,
                                                         5)])
    return p


# ------------------------------------------------------------------------------------------
# callgrind
# ------------------------------------------------------------------------------------------


# bench/run --callgrind-keep DIR: where callgrind_run copies the counted threads' files (for
# callgrind_annotate: where the instructions go, per function), named by the next run's tag.
CALLGRIND_KEEP = {"dir": None, "tag": "run"}


# More valgrind flags for every callgrind run (bench/run --cache-sim adds --cache-sim=yes), and
# the last run's event totals over its counted threads.
CALLGRIND_EXTRA = []
# Under --cache-sim on a loaded machine one configuration can take well over ten minutes.
CALLGRIND_TIMEOUT = {"s": 1800}
CALLGRIND_LAST = {}
CALLGRIND_DESC = {}  # the simulated caches of the last run (--cache-sim=yes): I1, D1, LL


def callgrind_run(cmd, env=None, stdin_after=None, workers=1, main_thread=False, extra=()):
    """Runs cmd under callgrind, one output file per thread; returns the instructions of the
    `workers` busiest threads other than the main one (thread 1), and the program's output."""
    w = tempfile.mkdtemp(prefix="cg-", dir=os.path.expanduser("~"))
    CALLGRIND_DESC.clear()
    try:
        vg = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
              f"--callgrind-out-file={w}/cg.%p", *extra, *CALLGRIND_EXTRA]
        p = subprocess.Popen(vg + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=env, text=True)
        if stdin_after is not None:
            # testpmd without a terminal waits for a line on stdin and then stops.
            time.sleep(stdin_after)
            try:
                p.stdin.write("\n")
                p.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            out, _ = p.communicate(timeout=CALLGRIND_TIMEOUT["s"])
        except subprocess.TimeoutExpired:
            # Never leave a valgrind behind; the caller reports this configuration as not
            # counted and goes on with the next.
            p.kill()
            p.communicate()
            raise RuntimeError(f"callgrind: no result after {CALLGRIND_TIMEOUT['s']} s "
                               f"(--callgrind-timeout): {' '.join(cmd[:6])} ...")
        irs, events, totals = [], [], {}
        for f in glob.glob(f"{w}/cg.*-*"):
            if f.endswith("-01") != main_thread:
                continue
            for line in open(f):
                if line.startswith("events:"):
                    events = line.split()[1:]
                # With --cache-sim=yes: the simulated geometry, e.g.
                # `desc: D1 cache:         49152 B, 64 B, 12-way associative`.
                m = re.match(r"desc: (I1|D1|LL) cache:\s+(.*)$", line)
                if m:
                    CALLGRIND_DESC[m.group(1)] = re.sub(r"\s+", " ", m.group(2).strip())
                if line.startswith("summary:"):
                    irs.append((int(line.split()[1]), f, [int(x) for x in line.split()[1:]]))
        irs.sort(reverse=True)
        # Every event of the counted threads (Ir, and with --cache-sim=yes Dr Dw I1mr D1mr
        # D1mw ILmr DLmr DLmw: simulated cache misses).
        for _, _, vals in irs[:workers]:
            for name, v in zip(events, vals):
                totals[name] = totals.get(name, 0) + v
        CALLGRIND_LAST.clear()
        CALLGRIND_LAST.update(totals)
        if CALLGRIND_KEEP["dir"]:
            os.makedirs(CALLGRIND_KEEP["dir"], exist_ok=True)
            for i, (_, f, _) in enumerate(irs[:workers]):
                tag = re.sub(r"[^A-Za-z0-9_.+-]+", "_", CALLGRIND_KEEP["tag"])
                shutil.copy(f, os.path.join(CALLGRIND_KEEP["dir"], f"{tag}.t{i}.callgrind"))
        return {"ir": sum(ir for ir, _, _ in irs[:workers]), "output": out}
    finally:
        shutil.rmtree(w, ignore_errors=True)


def skbnfd_rx_tx(output):
    """(rx, tx) packet counts of skbnfd's exit summary line (`skbnfd: 2.0 s, rx N, tx M, ...`),
    or None when the output has no such line."""
    m = re.search(r"^skbnfd: .*, rx (\d+), tx (\d+),", output, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_swaps(text):
    """skbnfd --swap-cycle lines: 'swap ok: A -> B, epoch E, T us; lcore L: ack Q us, F
    flushed; ... D from retired depots'."""
    out = []
    for m in re.finditer(r"^swap (ok|FAILED): (\S+) -> (\S+), epoch (\d+), (\d+) us;(.*)$", text,
                         re.M):
        q = [int(x) for x in re.findall(r"ack (\d+) us", m.group(6))]
        fl = [int(x) for x in re.findall(r"(\d+) flushed", m.group(6))]
        out.append({"ok": m.group(1) == "ok", "from": m.group(2), "to": m.group(3),
                    "total_us": int(m.group(5)), "quiesce_us": max(q) if q else "",
                    "flushed": sum(fl)})
    return out


# ------------------------------------------------------------------------------------------
# Reports
# ------------------------------------------------------------------------------------------


def _f(x, nd=2):
    if x is None or x == "" or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{nd}f}"


def _drop_share(detail, name):
    """Two-flow experiments: share of the offered packets dropped because the ring to the
    other core was full (freed at once on the receiving core), from skbnfd's summary line."""
    m = re.search(r", tx (\d+), .*tx_full=(\d+)", detail or "")
    if not m:
        return None
    tx, full = int(m.group(1)), int(m.group(2))
    fwd = tx / 2 if name == "exp1" else tx
    return full / (full + fwd) if full + fwd else None


def busy_share(row, tsc_mhz):
    """Share of an skbnfd worker's time spent on polls that received (experiment `vhost`): its
    busy TSC ticks per packet x packets per second / TSC ticks per second. Near 1: the worker
    was busy all the time (skbnfd set the rate); lower: it waited for the peer. None without
    a TSC frequency or ticks."""
    t = ticks_of(row)
    if t is None or not tsc_mhz:
        return None
    return float(row["value"]) * t / tsc_mhz  # Mpps x ticks/packet / MHz


def vhost_sanity(rows):
    """One line under experiment `vhost`'s table: skbnfd's drops by reason and its exit audit
    over the counted runs, and what the peer counted, so a run that lost frames to its set-up
    (no_route, not_ipv4, ...) shows, and the forwarded frames can be checked against the sink."""
    drops, nombuf, audits, runs, peer_in, peer_out, tx = {}, 0, [], 0, 0, 0, 0
    for r in counted(rows):
        d = r.get("detail", "")
        m = re.search(r", tx (\d+), drops (.*?), rx_nombuf (\d+),.*; audit (\w+)", d)
        if not m:
            continue
        runs += 1
        tx += int(m.group(1))
        for k, v in re.findall(r"(\w+)=(\d+)", m.group(2)):
            drops[k] = drops.get(k, 0) + int(v)
        nombuf += int(m.group(3))
        audits.append(m.group(4))
        p = re.search(r"peer: into skbnfd (\d+), from skbnfd (\d+)", d)
        if p:
            peer_in += int(p.group(1))
            peer_out += int(p.group(2))
    if not runs:
        return ""
    return (f"Over the {runs} counted runs: skbnfd transmitted {tx:,} frames and dropped "
            + ", ".join(f"{k} {v:,}" for k, v in drops.items())
            + f"; rx_nombuf {nombuf:,}; exact pool audit at exit "
            + ("OK in every run" if all(a == "OK" for a in audits) else "FAILED in some run")
            + f". The peer put {peer_in:,} frames into skbnfd's RX rings and took {peer_out:,} "
            f"from its TX rings (whole process lives, warm-up included).")


def _median_or_none(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def summarize(exp, rows, cg):
    order = []
    for quick in (False, True):
        try:
            for c in exp.build(quick):
                if c.label not in order:
                    order.append(c.label)
        except Exception:  # noqa: BLE001  (report from whatever the CSV has)
            pass
    defs = {}
    for quick in (True, False):
        for c in exp.build(quick):
            defs[c.label] = c
    labels = [l for l in order if any(r["comparison"] == l for r in rows)]
    labels += [l for l in dict.fromkeys(r["comparison"] for r in rows) if l not in labels]
    out = []
    rows = counted(rows)
    for label in labels:
        rs = [r for r in rows if r["comparison"] == label]
        pairs = {}
        for r in rs:
            pairs.setdefault(int(r["pair"]), {})[r["role"]] = r
        full = [(p["A"], p["B"]) for _, p in sorted(pairs.items()) if "A" in p and "B" in p]
        av = [float(a["value"]) for a, _ in full]
        bv = [float(b["value"]) for _, b in full]
        ratios = [b / a for a, b in zip(av, bv) if a > 0]
        lo, hi = bootstrap_ci(ratios)
        ca = [ticks_of(a) for a, _ in full if ticks_of(a) is not None]
        cb = [ticks_of(b) for _, b in full if ticks_of(b) is not None]
        c = defs.get(label)
        s = {
            "comparison": label, "group": rs[0]["group"],
            "a": next((r["config"] for r in rs if r["role"] == "A"), ""),
            "b": next((r["config"] for r in rs if r["role"] == "B"), ""),
            "pairs": len(full), "ratios": ratios,
            "median_ratio": statistics.median(ratios) if ratios else float("nan"),
            "ci95": [lo, hi],
            "median_a": statistics.median(av) if av else float("nan"),
            "median_b": statistics.median(bv) if bv else float("nan"),
            "cv_a": cv(av), "cv_b": cv(bv), "values_a": av, "values_b": bv,
            # Only the spread experiments (exp4) report it; it is the slow part of a summary.
            "spread_ratio_ci95": list(spread_ratio_ci(list(zip(av, bv))))
            if exp.plot == "spread" else [float("nan"), float("nan")],
            "ticks_a": statistics.median(ca) if ca else None,
            "ticks_b": statistics.median(cb) if cb else None,
            "over_load_cap": sum(1 for r in rs if r.get("status") == "over_load_cap"),
            "repeated": 0,
            "instr_a": cg.get(next((r["key"] for r in rs if r["role"] == "A"), "")),
            "instr_b": cg.get(next((r["key"] for r in rs if r["role"] == "B"), "")),
            "seed": c.seed if c else None, "seed_ratio": c.seed_ratio if c else None,
            "load1": [min(float(r["load1"]) for r in rs), max(float(r["load1"]) for r in rs)],
            "drop_a": _median_or_none([_drop_share(a["detail"], exp.name) for a, _ in full]),
            "drop_b": _median_or_none([_drop_share(b["detail"], exp.name) for _, b in full]),
        }
        out.append(s)
    return out


def report(exp, outdir, machine, command, eal, write=True):
    """E.md's text from the raw files in outdir (E.csv, E_callgrind.csv, E_swaps.csv,
    E.meta.json). write: also write E.md, E.json and E.png; bench/update_benchmarks_md.py
    calls it with write=False to regenerate BENCHMARKS.md's tables from the raw files alone.
    Returns (text, summary rows, meta)."""
    rows = list(csv.DictReader(open(os.path.join(outdir, f"{exp.name}.csv"))))
    cg = {}
    cgp = os.path.join(outdir, f"{exp.name}_callgrind.csv")
    if os.path.exists(cgp):
        for r in csv.DictReader(open(cgp)):
            try:
                cg[r["key"]] = float(r["instructions_per_packet"])
            except ValueError:
                pass
    meta_p = os.path.join(outdir, f"{exp.name}.meta.json")
    meta = json.load(open(meta_p)) if os.path.exists(meta_p) else {}
    summ = summarize(exp, rows, cg)
    for s in summ:
        s["repeated"] = sum(1 for r in rows if r["comparison"] == s["comparison"]
                            and r.get("status") == "repeated")
    memory = memory_of(meta)
    if meta.get("eal"):
        eal = meta["eal"].split()
    elif memory.startswith("--no-huge") != ("--no-huge" in eal):
        # Results from before issue 23 (no "eal" in their metadata): the EAL memory flags
        # bench/run used for that memory then.
        eal = (["--no-huge", "-m", "1024", "--no-pci", "--no-shconf"]
               if memory.startswith("--no-huge") else ["-m", "1024", "--no-pci", "--in-memory"])
    swaps = []
    sp = os.path.join(outdir, f"{exp.name}_swaps.csv")
    if os.path.exists(sp):
        swaps = list(csv.DictReader(open(sp)))
    loads = [float(r["load1"]) for r in counted(rows)]
    loads += [float(r["load1_end"]) for r in counted(rows) if r.get("load1_end")]
    lines = [f"### {exp.title} [{memory}]", "", exp.desc, ""]
    if exp.seed_note:
        lines += [exp.seed_note, ""]
    lower = "" if exp.higher_better else " (lower is better)"
    has_cyc = any(s["ticks_a"] or s["ticks_b"] for s in summ)
    tsc = meta.get("tsc_mhz") or _tsc_from_details(rows) or machine.get("tsc_mhz")
    has_ins = any(s["instr_a"] or s["instr_b"] for s in summ)
    hdr = (f"| comparison (A -> B) | pairs | A median ({exp.unit}) | B median ({exp.unit}) | "
           f"B/A: median of pair ratios{lower} | 95 % interval |")
    sep = "|---|---:|---:|---:|---:|---|"
    if exp.plot == "spread":
        hdr += " CV A | CV B | CV B/CV A (95 %) |"
        sep += "---:|---:|---|"
    has_drop = exp.name in ("exp1", "exp5") and any(s["drop_a"] is not None for s in summ)
    if has_drop:
        hdr += " dropped at the ring A -> B |"
        sep += "---|"
    busy = {}
    if exp.name == "vhost":
        for s in summ:
            rs = [r for r in counted(rows) if r["comparison"] == s["comparison"]]
            busy[s["comparison"]] = tuple(
                _median_or_none([busy_share(r, tsc) for r in rs if r["role"] == role])
                for role in ("A", "B"))
        hdr += " skbnfd worker busy A -> B |"
        sep += "---|"
    if has_cyc:
        # Older results did not record the TSC frequency: then /proc/cpuinfo's `cpu MHz` of
        # the machine (a VM's constant TSC rate; named as such).
        tsc_txt = (f"TSC {tsc:.0f} MHz" if tsc else
                   f"TSC not recorded; cpu MHz {machine['cpu_mhz']:.0f}"
                   if machine.get("cpu_mhz") else "TSC not recorded")
        hdr += f" skbnfd TSC ticks/pkt A -> B ({tsc_txt}) |"
        sep += "---|"
    if has_ins:
        hdr += " instr/object A -> B |" if exp.name == "exp6" else " instr/pkt A -> B |"
        sep += "---|"
    hdr += " seed |"
    sep += "---|"
    lines += [hdr, sep]
    for s in summ:
        row = (f"| {s['comparison']} | {s['pairs']} | {_f(s['median_a'])} | {_f(s['median_b'])} "
               f"| **{_f(s['median_ratio'], 3)}x** | {_f(s['ci95'][0], 3)}–{_f(s['ci95'][1], 3)}"
               " |")
        if exp.plot == "spread":
            sr = s["spread_ratio_ci95"]
            row += (f" {_f(100 * s['cv_a'], 1)} % | {_f(100 * s['cv_b'], 1)} % | "
                    f"{_f(s['cv_b'] / s['cv_a'] if s['cv_a'] else float('nan'))} "
                    f"({_f(sr[0])}–{_f(sr[1])}) |")
        if has_drop:
            da, db = s["drop_a"], s["drop_b"]
            row += (f" {_f(100 * da if da is not None else None, 0)} % -> "
                    f"{_f(100 * db if db is not None else None, 0)} % |")
        if busy:
            ba, bb = busy[s["comparison"]]
            row += f" {_f(ba)} -> {_f(bb)} |"
        if has_cyc:
            row += f" {_f(s['ticks_a'], 1)} -> {_f(s['ticks_b'], 1)} |"
        if has_ins:
            row += f" {_f(s['instr_a'], 1)} -> {_f(s['instr_b'], 1)} |"
        row += f" {s['seed'] or ''} |"
        lines.append(row)
    lines.append("")
    if getattr(exp, "caveat", ""):
        lines += [f"**{exp.caveat}**", ""]
    if exp.name == "vhost":
        sane = vhost_sanity(rows)
        if sane:
            lines += [sane, ""]
    if not getattr(exp, "callgrind", True):
        lines += ["Instructions per packet: not counted for this experiment (no callgrind run; "
                  "see above).", ""]
    if swaps:
        lines += ["Swap latency (publish -> every worker acknowledged -> old generation retired), "
                  "per strategy pair, µs:", "",
                  "| swap | swaps | failed | p50 | p90 | p99 | max | worker ack p50 / max |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for label in dict.fromkeys(r["comparison"] for r in swaps):
            for direction in dict.fromkeys((r["from"], r["to"]) for r in swaps
                                           if r["comparison"] == label):
                ss = [r for r in swaps if r["comparison"] == label
                      and (r["from"], r["to"]) == direction]
                t = sorted(int(r["total_us"]) for r in ss)
                q = sorted(int(r["quiesce_us"]) for r in ss if r["quiesce_us"] != "")
                pct = lambda v, p: v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
                lines.append(f"| `{direction[0]}` -> `{direction[1]}` | {len(ss)} | "
                             f"{sum(1 for r in ss if r['ok'] != 'True')} | {pct(t, .5)} | "
                             f"{pct(t, .9)} | {pct(t, .99)} | {t[-1]} | "
                             f"{pct(q, .5)} / {q[-1] if q else '–'} |")
        lost = []
        for r in rows:
            if r["role"] == "B" and r["detail"]:
                m = re.search(r"drops (.*?), rx_nombuf (\d+).*swaps ok (\d+) failed (\d+); "
                              r"audit (\w+)", r["detail"])
                if m:
                    dropped = sum(int(x) for x in re.findall(r"=(\d+)", m.group(1)))
                    lost.append((dropped, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                 m.group(5)))
        if lost:
            sw = sum(x[2] + x[3] for x in lost)
            lines += ["", f"Packets lost per swap: {sum(x[0] for x in lost)} dropped and "
                      f"{sum(x[1] for x in lost)} failed RX refills over {sw} swaps in "
                      f"{len(lost)} runs "
                      f"({(sum(x[0] for x in lost) / sw) if sw else 0:.2f} drops per swap); "
                      f"exact pool audit at exit: "
                      f"{'OK in every run' if all(x[4] == 'OK' for x in lost) else 'FAILED'}."]
        lines.append("")
    reps = sum(s["repeated"] for s in summ) // 2
    over = sum(s["over_load_cap"] for s in summ) // 2
    cap = meta.get("load_cap")
    lines += [f"Memory: {memory}. "
              + (f"Load cap {cap}: {reps} pair(s) run again, {over} kept above it. " if cap
                 else "No load cap (--quick or --load-cap 0). " if "load_cap" in meta
                 else "No load cap (results taken before issue 23's run shape). "),
              "",
              f"Machine: {machine_line(machine, eal)}. Load average (1 min) at the start "
              f"{'and end ' if any(r.get('load1_end') for r in rows) else ''}of the "
              f"runs: {min(loads):.2f}–{max(loads):.2f}. PMDs: "
              f"{meta.get('pmds', '')}. {meta.get('started', '')} – {meta.get('ended', '')} UTC.",
              "",
              f"Command: `{meta.get('command', command)}` ({meta.get('protocol', '')}). Raw runs: "
              f"`{exp.name}.csv`; plot: `{exp.name}.png`.", ""]
    text = "\n".join(lines)
    if not write:
        return text, summ, meta
    with open(os.path.join(outdir, f"{exp.name}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, f"{exp.name}.json"), "w") as f:
        json.dump({"experiment": exp.name, "title": exp.title, "unit": exp.unit,
                   "machine": machine, "meta": meta, "comparisons": summ,
                   "load1_range": [min(loads), max(loads)]}, f, indent=1, default=str)
    plot(exp, summ, swaps, os.path.join(outdir, f"{exp.name}.png"), machine, loads, eal, memory)
    return text, summ, meta


def _tsc_from_details(rows):
    """Older CSVs: testpmd's `at N MHz Clock` (rte_get_tsc_hz) in a run's detail."""
    for r in rows:
        m = re.search(r"at (\d+) MHz Clock", r.get("detail", ""))
        if m:
            return float(m.group(1))
    return None


def plot(exp, summ, swaps, path, machine, loads, eal, memory=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def ratio_axes(ax, items, xlabel):
        for i, s in enumerate(items):
            y = len(items) - 1 - i
            rng = random.Random(i)
            ax.scatter(s["ratios"], [y + rng.uniform(-0.12, 0.12) for _ in s["ratios"]], s=12,
                       color="0.55", zorder=2, label="pairs" if i == 0 else None)
            lo, hi = s["ci95"]
            if lo == lo:
                ax.plot([lo, hi], [y, y], color="C0", lw=4, alpha=0.6, zorder=3,
                        label="95 % interval" if i == 0 else None)
            ax.plot([s["median_ratio"]], [y], "o", color="C0", ms=8, zorder=4,
                    label="median" if i == 0 else None)
            if s.get("seed_ratio"):
                ax.plot([s["seed_ratio"]], [y], "D", color="C3", ms=7, zorder=5,
                        label="seed" if not any(t.get("seed_ratio") for t in items[:i]) else None)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_ylim(-0.6, len(items) - 0.4)
        ax.set_yticks(range(len(items)))
        ax.set_yticklabels([s["comparison"] for s in reversed(items)], fontsize=7)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=7, loc="best")
        ax.grid(axis="x", alpha=0.3)

    foot = (f"{machine['cpu_model']}, {machine['cores']} cores, DPDK {machine['dpdk']}, "
            f"{memory or ('--no-huge' if '--no-huge' in eal else '2 MiB hugepages')}; "
            f"load {min(loads):.1f}–{max(loads):.1f}")
    if getattr(exp, "caveat", ""):
        foot += "; " + exp.caveat.split(":")[0]
    xl = f"B/A ({exp.unit}{', lower is better' if not exp.higher_better else ''})"
    if exp.plot == "sweep":
        fig, ax = plt.subplots(figsize=(8, 4.5))
        by = {}
        for s in summ:
            by.setdefault(s["b"], []).append(s)
        for k, (name, items) in enumerate(by.items()):
            xs = [int(s["group"]) for s in items]
            ys = [s["median_ratio"] for s in items]
            lo = [s["median_ratio"] - s["ci95"][0] for s in items]
            hi = [s["ci95"][1] - s["median_ratio"] for s in items]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=4, label=f"{name} / slab")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("destinations per flow")
        ax.set_ylabel("Mpps ratio to slab (median of pairs, 95 %)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    elif exp.plot == "spread":
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.7 * len(summ)),
                                      gridspec_kw={"width_ratios": [3, 2]})
        ratio_axes(ax, summ, xl)
        data, names = [], []
        for s in summ:
            data += [s["values_a"], s["values_b"]]
        for s in summ:
            names += [f"{s['a']}\n({s['group']})", f"{s['b']}\n({s['group']})"]
        if data:
            ax2.boxplot(data, vert=True)
            ax2.set_xticks(range(1, len(names) + 1))
            ax2.set_xticklabels(names, fontsize=7)
            ax2.set_ylabel(exp.unit + " per run")
            ax2.set_title("run-to-run spread", fontsize=9)
    elif exp.plot == "swaps" and swaps:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.7 * len(summ)))
        ratio_axes(ax, summ, xl)
        for direction in dict.fromkeys((r["from"], r["to"]) for r in swaps):
            t = sorted(int(r["total_us"]) for r in swaps if (r["from"], r["to"]) == direction)
            ax2.plot(t, [(i + 1) / len(t) for i in range(len(t))], label=" -> ".join(direction))
        ax2.set_xscale("log")
        ax2.set_xlabel("swap commit latency (µs)")
        ax2.set_ylabel("fraction of swaps")
        ax2.legend(fontsize=6)
        ax2.grid(alpha=0.3)
    else:
        fig, ax = plt.subplots(figsize=(9, 1.6 + 0.45 * len(summ)))
        ratio_axes(ax, summ, xl)
        if exp.name == "exp6":
            ax.axvline(0.8, color="C2", lw=0.8, ls="--", label="target 0.8")
            ax.set_xscale("log")
    fig.suptitle(f"{exp.title} [{memory}]" if memory else exp.title, fontsize=10)
    fig.text(0.01, 0.005, foot, fontsize=6, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
