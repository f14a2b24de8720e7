#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ctest bench_run_protocol (label bench): bench/run's run shape and load cap (issue 23), with
fake runners and a scripted load average, so no DPDK program runs and nothing is timed.

  * a pair whose load reading (start or end of either run) is above --load-cap is run again:
    the first attempt's rows stay in the CSV as `repeated`, the retry's are `ok`, and the
    summary uses only the retry;
  * a pair above the cap on every attempt is kept after --load-retries repeats, marked
    `over_load_cap`, and the table says so;
  * results name their memory: E.meta.json "memory" and the title line of the table;
  * testpmd rate runs carry no --record-core-cycles;
  * experiment `vhost` (issue 23 item 6): its own load cap (2.6) unless --load-cap is given; the
    peer's and skbnfd's command lines (CPUs, rings = queue_size, hugepages flags, every pcap
    destination routed); the peer is stopped on every exit path (a fake dpdk-testpmd on PATH:
    skbnfd failing, the peer ignoring its newline and SIGINT); the table names the shared
    cores, the worker's busy share and the drops, and update_benchmarks_md renders its reading.
"""
import argparse
import csv
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def load_run():
    loader = importlib.machinery.SourceFileLoader("bench_run_under_test",
                                                  os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class FakeRun:
    """A configuration whose run returns a fixed rate and counts its calls."""

    def __init__(self, name, value):
        self.name, self.value, self.calls = name, value, 0

    def key(self):
        return f"fake:{self.name}"

    def pmds(self):
        return ["net_null"]

    def run(self, ctx, seconds, warmup):
        self.calls += 1
        return {"value": self.value, "samples": [self.value] * seconds,
                "tsc_ticks_per_packet": 20.0, "detail": ""}


class LoadCap(unittest.TestCase):
    def setUp(self):
        self.run = load_run()
        self.out = tempfile.mkdtemp(prefix="bench-run-test-")
        self.a, self.b = FakeRun("a", 10.0), FakeRun("b", 12.0)
        comp = self.run.Comparison("b vs a", self.a, self.b, "a", "b", group="io")
        self.exp = self.run.Experiment("fake", "Fake experiment", lambda q: [comp], "Mpps",
                                       "Mpps", True, "Two fake configurations.", "ratios")
        self.ctx = argparse.Namespace(command="bench/run fake", runs=0)

    def tearDown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def args(self, pairs, cap, retries):
        return argparse.Namespace(pairs=pairs, seconds=5, warmup=1, load_cap=cap,
                                  load_retries=retries, only=[], quick=False, out=self.out)

    def run_with_loads(self, loads, args):
        """Runs the fake experiment with loadavg() returning `loads` in turn (then the last)."""
        seq = list(loads)

        def fake_loadavg():
            v = seq.pop(0) if len(seq) > 1 else seq[0]
            return [v, v, v]
        self.run.loadavg = fake_loadavg
        self.run.run_experiment(self.ctx, self.exp, args)
        with open(os.path.join(self.out, "fake.csv")) as f:
            return list(csv.DictReader(f))

    def test_pair_above_the_cap_is_repeated_and_recorded(self):
        # Per run: one reading at its start, one at its end (then one for the progress line).
        # Pair 1: A starts at 3.0 (above 1.5) -> repeated; its retry and pair 2 are quiet.
        loads = [3.0, 1.0, 1.0, 1.0, 1.0] + [1.0] * 40
        rows = self.run_with_loads(loads, self.args(pairs=2, cap=1.5, retries=3))
        status = [(r["pair"], r["attempt"], r["status"]) for r in rows]
        self.assertEqual(status, [("0", "0", "repeated"), ("0", "0", "repeated"),
                                  ("0", "1", "ok"), ("0", "1", "ok"),
                                  ("1", "0", "ok"), ("1", "0", "ok")])
        self.assertEqual(self.a.calls + self.b.calls, 6)
        self.assertTrue(all(r["load1_end"] != "" for r in rows))
        meta = json.load(open(os.path.join(self.out, "fake.meta.json")))
        self.assertEqual(meta["load_cap"], 1.5)
        self.assertEqual(meta["seconds"], 5)
        # The summary counts the two kept pairs, not the repeated attempt.
        machine = {"cpu_model": "test", "cores": 2, "memory_gib": 1, "distro": "", "kernel": "",
                   "dpdk": "", "hugepages": 0}
        text, summ, _ = self.run.benchlib.report(self.exp, self.out, machine, "", [],
                                                 write=False)
        self.assertEqual(summ[0]["pairs"], 2)
        self.assertIn("Load cap 1.5: 1 pair(s) run again, 0 kept above it.", text)

    def test_pair_above_the_cap_every_time_is_kept_and_marked(self):
        rows = self.run_with_loads([4.0], self.args(pairs=1, cap=1.5, retries=2))
        self.assertEqual([r["status"] for r in rows],
                         ["repeated"] * 4 + ["over_load_cap"] * 2)
        self.assertEqual(self.a.calls + self.b.calls, 6)  # 1 + 2 retries, bounded

    def test_no_cap_runs_each_pair_once(self):
        rows = self.run_with_loads([9.0], self.args(pairs=2, cap=None, retries=0))
        self.assertEqual([r["status"] for r in rows], ["ok"] * 4)

    def test_memory_is_named_in_metadata_and_title(self):
        for no_huge, label in ((False, "2 MiB hugepages"), (True, "--no-huge (4 KiB pages)")):
            self.run.MEMORY["no_huge"] = no_huge
            self.run_with_loads([1.0], self.args(pairs=1, cap=None, retries=0))
            meta = json.load(open(os.path.join(self.out, "fake.meta.json")))
            self.assertEqual(meta["memory"], label)
            machine = {"cpu_model": "t", "cores": 2, "memory_gib": 1, "distro": "",
                       "kernel": "", "dpdk": "", "hugepages": 0}
            text, _, _ = self.run.benchlib.report(self.exp, self.out, machine, "", [],
                                                  write=False)
            self.assertEqual(text.split("\n")[0], f"### Fake experiment [{label}]")

    def test_testpmd_rate_runs_do_not_record_core_cycles(self):
        cmd, _ = self.run.TestpmdRun().command(self.ctx, "p", 1)
        self.assertNotIn("--record-core-cycles", cmd)


# A stand-in for dpdk-testpmd (experiment `vhost`'s peer): creates the vhost-user socket files
# its --vdev=net_vhostN,iface=PATH name, prints testpmd's ready line, then waits on stdin like
# non-interactive testpmd (exit on a line or end-of-file) and prints per-port totals. With
# FAKE_TESTPMD_STUBBORN=1 it ignores stdin and SIGINT (only SIGKILL ends it). Writes its pid.
FAKE_TESTPMD = r"""#!/usr/bin/python3
import os, re, signal, sys, time
for a in sys.argv:
    m = re.match(r"--vdev=net_vhost\d+,iface=([^,]+)", a)
    if m:
        open(m.group(1), "w").close()
open(os.environ["FAKE_TESTPMD_PID"], "w").write(str(os.getpid()))
print("Press enter to exit", flush=True)
if os.environ.get("FAKE_TESTPMD_STUBBORN"):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(1)
sys.stdin.readline()
for p, (rx, tx) in enumerate([(100, 0), (0, 90), (80, 0)]):
    print(f"  ---------------------- Forward statistics for port {p}  ----------------------")
    print(f"  RX-packets: {rx:<14} RX-dropped: 0             RX-total: {rx}")
    print(f"  TX-packets: {tx:<14} TX-dropped: 5             TX-total: {tx + 5}")
"""


class TwoPollers(unittest.TestCase):
    def test_every_two_worker_experiment_has_the_two_poller_cap(self):
        # Two busy-polling workers make the load average 2 or more whatever else runs: with the
        # default cap (1.5) every pair would be repeated and then kept as over_load_cap.
        run = load_run()
        two = [e.name for e in run.EXPERIMENTS if e.name != "builds" and any(
            getattr(cfg, "workers", 1) >= 2 for c in e.build(False) for cfg in (c.a, c.b))]
        self.assertEqual(sorted(two), ["exp1", "exp5"])
        for e in run.EXPERIMENTS:
            if e.name in two:
                self.assertEqual(e.load_cap, run.TWO_POLLERS_CAP, e.name)
                self.assertIn("load cap is 2.6", e.caveat, e.name)


class Vhost(unittest.TestCase):
    def setUp(self):
        self.run = load_run()
        self.tmp = tempfile.mkdtemp(prefix="bench-vhost-test-")
        self.ctx = argparse.Namespace(command="bench/run vhost", runs=0, workdir=self.tmp)
        self.exp = next(e for e in self.run.EXPERIMENTS if e.name == "vhost")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_comparisons_and_own_load_cap(self):
        comps = self.exp.build(False)
        self.assertEqual([(c.group, c.b.strategy) for c in comps],
                         [(str(r), s) for r in (1024, 4096) for s in
                          ("headpool", "magazine", "recycle+magazine", "lcache+headpool")])
        self.assertTrue(all(c.a.strategy == "ring_mp_mc" and c.a.ring == c.b.ring
                            for c in comps))
        self.assertEqual(len(self.exp.build(True)), 1)
        base = dict(pairs=10, seconds=5, warmup=1, load_cap=1.5, load_retries=3, only=[],
                    quick=False, out=self.tmp, load_retries_default=True)
        own = self.run.for_experiment(argparse.Namespace(**base, load_cap_given=False),
                                      self.exp)
        self.assertEqual(own.load_cap, 2.6)
        given = self.run.for_experiment(argparse.Namespace(**base, load_cap_given=True),
                                        self.exp)
        self.assertEqual(given.load_cap, 1.5)
        quick = dict(base, quick=True, load_cap=None)
        self.assertIsNone(self.run.for_experiment(
            argparse.Namespace(**quick, load_cap_given=False), self.exp).load_cap)

    def test_command_lines(self):
        cfg = self.run.VhostRun("magazine", 4096)
        cfg.peer = self.run.VhostPeer(self.ctx)
        tp = cfg.peer.command()
        self.assertEqual(tp[2:4], ["dpdk-testpmd", "--lcores=0@0,1@0"])  # lcores on CPU 0
        for f in ("--in-memory", "--single-file-segments", "--port-topology=chained",
                  "--forward-mode=io", f"--vdev=net_vhost0,iface={cfg.peer.socks[0]},queues=1"):
            self.assertIn(f, tp)
        self.assertNotIn("--record-core-cycles", tp)
        self.assertTrue(any(a.startswith("--vdev=net_pcap0,") and "infinite_rx=1" in a
                            for a in tp))
        conf = cfg.config_text(self.ctx, "pfx")
        self.assertIn("rx_ring 4096\ntx_ring 4096\n", conf)
        self.assertIn("strategy magazine\n", conf)
        self.assertIn("eal -l 0,1 -m 512 --no-pci --in-memory --single-file-segments "
                      "--file-prefix=pfx\n", conf)
        for i in (0, 1):
            self.assertIn(f"path={cfg.peer.socks[i]},queues=1,queue_size=4096,", conf)
        self.assertIn("worker 1 net_virtio_user0:0\n", conf)
        ref = self.run.VhostRun("ring_mp_mc", 1024)
        ref.peer = cfg.peer
        self.assertIn("pool_ops ring_mp_mc\nmbuf_cache 256\n", ref.config_text(self.ctx, "p"))
        # Every destination in the peer's pcap is covered by a route out net_virtio_user1.
        import ipaddress
        import struct
        nets = [ipaddress.ip_network(l.split()[1]) for l in conf.splitlines()
                if l.startswith("route ")]
        self.assertEqual(len(nets), self.run.VHOST_ROUTES)
        self.assertTrue(all(l.split()[2] == "net_virtio_user1" for l in conf.splitlines()
                            if l.startswith("route ")))
        data = open(cfg.peer.pcap, "rb").read()
        off, dests = 24, []
        while off < len(data):
            n = struct.unpack("<IIII", data[off:off + 16])[2]
            dests.append(ipaddress.ip_address(data[off + 16 + 30:off + 16 + 34]))
            off += 16 + n
        self.assertEqual(len(dests), self.run.VHOST_DESTS)
        self.assertGreaterEqual(len(set(dests)), 10000)  # 10k+ flows
        by_len = {}
        for n in nets:
            by_len.setdefault(n.prefixlen, set()).add(n)
        for d in dests[:500]:
            self.assertTrue(any(ipaddress.ip_network(f"{d}/{ln}", strict=False) in s
                                for ln, s in by_len.items()), d)
        cfg.peer.cleanup()

    def fake_testpmd(self, stubborn):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir, exist_ok=True)
        path = os.path.join(bindir, "dpdk-testpmd")
        with open(path, "w") as f:
            f.write(FAKE_TESTPMD)
        os.chmod(path, 0o755)
        pidfile = os.path.join(self.tmp, "peer.pid")
        env = {"PATH": bindir + os.pathsep + os.environ["PATH"], "FAKE_TESTPMD_PID": pidfile}
        if stubborn:
            env["FAKE_TESTPMD_STUBBORN"] = "1"
        return env, pidfile

    def run_vhost(self, env, skbnfd_result):
        """VhostRun.run with the fake peer and skbnfd's run replaced by skbnfd_result()."""
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        cfg = self.run.VhostRun("headpool", 1024)
        saved = self.run.SkbnfdRun.run
        self.run.SkbnfdRun.run = lambda me, ctx, s, w: skbnfd_result()
        try:
            return cfg.run(self.ctx, 1, 0)
        finally:
            self.run.SkbnfdRun.run = saved
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def assert_gone(self, pidfile):
        with open(pidfile) as f:
            pid = int(f.read())
        # Reaped by VhostPeer.stop (Popen.wait): the pid no longer exists.
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)
        left = [d for d in os.listdir(self.tmp) if d.startswith("vh-")]
        self.assertEqual(left, [], "the peer's socket directory was not removed")

    def test_peer_totals_reach_the_detail(self):
        env, pidfile = self.fake_testpmd(False)
        ports = ("port 0 net_virtio_user0 (net_virtio_user) mac 02:00:00:00:00:01 peer 1 rxq 1 "
                 "txq 1 rings 1024/1024\nport 1 net_virtio_user1 (net_virtio_user) mac "
                 "02:00:00:00:00:02 peer 0 rxq 1 txq 1 rings 1024/1024\n")
        res = self.run_vhost(env, lambda: {"value": 1.0, "samples": [1.0], "stdout": ports,
                                           "tsc_ticks_per_packet": 100.0, "detail": "skbnfd: x"})
        self.assertEqual(res["detail"], "skbnfd: x; peer: into skbnfd 90, from skbnfd 80, "
                                        "dropped at port 1 5 (incl. while skbnfd was away)")
        self.assert_gone(pidfile)

    def test_rings_other_than_the_label_fail_the_run(self):
        env, pidfile = self.fake_testpmd(False)
        ports = ("port 0 net_virtio_user0 (net_virtio_user) mac x peer 1 rxq 1 txq 1 rings "
                 "256/256\nport 1 net_virtio_user1 (net_virtio_user) mac y peer 0 rxq 1 txq 1 "
                 "rings 1024/1024\n")
        with self.assertRaisesRegex(self.run.RunError, "not 1024 descriptors"):
            self.run_vhost(env, lambda: {"value": 1.0, "samples": [1.0], "stdout": ports,
                                         "tsc_ticks_per_packet": 1.0, "detail": ""})
        self.assert_gone(pidfile)

    def test_peer_stopped_when_skbnfd_fails(self):
        env, pidfile = self.fake_testpmd(False)

        def fail():
            raise self.run.RunError("skbnfd failed")
        with self.assertRaises(self.run.RunError):
            self.run_vhost(env, fail)
        self.assert_gone(pidfile)

    def test_stubborn_peer_is_killed_on_interrupt(self):
        env, pidfile = self.fake_testpmd(True)
        self.run.VhostPeer.STOP_WAIT = (0.2, 0.2, 5)

        def interrupt():
            raise KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            self.run_vhost(env, interrupt)
        self.assert_gone(pidfile)

    def test_table_and_reading(self):
        detail = ("skbnfd: 6.3 s, rx 1000, tx 990, drops not_ipv4=0 bad_header=0 "
                  "ttl_expired=0 no_route=0 tx_full=10, rx_nombuf 0, strategy s, swaps ok 0 "
                  "failed 0; audit OK (exact); peer: into skbnfd 1000, from skbnfd 990, "
                  "dropped at port 1 7 (incl. while skbnfd was away)")

        class Fake(FakeRun):
            def run(me, ctx, seconds, warmup):
                r = FakeRun.run(me, ctx, seconds, warmup)
                r["detail"] = detail
                return r
        comps = [self.run.Comparison(f"{ring}-descriptor rings: `headpool` vs `ring_mp_mc`",
                                     Fake(f"a{ring}", 2.0), Fake(f"b{ring}", 2.2),
                                     "ring_mp_mc (cache 256)", "headpool", group=str(ring))
                 for ring in (1024, 4096)]
        exp = self.run.Experiment("vhost", self.exp.title, lambda q: comps, "Mpps", "Mpps", True,
                                  self.exp.desc, "ratios", memory="huge_only", load_cap=2.6,
                                  callgrind=False, caveat=self.exp.caveat, eal=self.exp.eal)
        self.run.EXPERIMENTS[self.run.EXPERIMENTS.index(self.exp)] = exp
        self.run.loadavg = lambda: [2.2, 2.2, 2.2]
        args = argparse.Namespace(pairs=3, seconds=5, warmup=1, load_cap=1.5, load_retries=3,
                                  only=[], quick=False, out=self.tmp, load_cap_given=False,
                                  load_retries_default=True)
        self.run.run_experiment(self.ctx, exp, args)
        meta = json.load(open(os.path.join(self.tmp, "vhost.meta.json")))
        self.assertEqual(meta["load_cap"], 2.6)  # 2.2 is under it: no repeats
        self.assertEqual(meta["memory"], "2 MiB hugepages")
        self.assertIn("peer testpmd: --lcores=0@0,1@0", meta["eal"])
        meta["tsc_mhz"] = 2000.0
        json.dump(meta, open(os.path.join(self.tmp, "vhost.meta.json"), "w"))
        machine = {"cpu_model": "t", "cores": 2, "memory_gib": 1, "distro": "", "kernel": "",
                   "dpdk": "", "hugepages": 0}
        json.dump(machine, open(os.path.join(self.tmp, "machine.json"), "w"))
        text, summ, _ = self.run.benchlib.report(exp, self.tmp, machine, "", [], write=False)
        self.assertIn("On this 2-vCPU machine the peer shares the cores", text)
        self.assertIn("skbnfd worker busy A -> B |", text)
        # 2.0 Mpps x 20 ticks / 2000 MHz = 0.02; 2.2 x 20 / 2000 = 0.022
        self.assertIn("| 0.02 -> 0.02 |", text)
        # 2 comparisons x 3 pairs x 2 runs, each with tx 990 and tx_full 10
        self.assertIn("skbnfd transmitted 11,880 frames and dropped not_ipv4 0, bad_header 0, "
                      "ttl_expired 0, no_route 0, tx_full 120; rx_nombuf 0", text)
        self.assertIn("exact pool audit at exit OK in every run", text)
        self.assertIn("Instructions per packet: not counted", text)
        self.assertIn("Load cap 2.6: 0 pair(s) run again", text)
        sys.path.insert(0, HERE)
        import update_benchmarks_md as ub
        r = ub.Results(self.tmp)
        r.run = self.run
        reading = ub.gen_vhost_reading(r)
        self.assertIn("**1024-descriptor rings**", reading)
        self.assertIn("**4096-descriptor rings**", reading)
        self.assertIn("`headpool`: 1.100x (1.100–1.100); 2.00 -> 2.20 Mpps; worker busy "
                      "0.02 -> 0.02 (the peer or the machine set the rate", reading)
        self.assertIn("Faster than `ring_mp_mc` (whole interval above 1): `headpool`", reading)
        self.assertIn("the peer shares the cores", reading)


if __name__ == "__main__":
    unittest.main(verbosity=2)
