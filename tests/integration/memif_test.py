#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""skbnfd attached by memif (net_memif) to DPDK's own dpdk-testpmd, end to end (issue 22 item 4).

    kernel ka --veth-- ta  testpmd port 0 (net_af_packet)  --io-->  port 1 (net_memif id=0)
        ==memif==  skbnfd net_memif0 --io / mac / l3--> net_memif1  ==memif==
    testpmd port 2 (net_memif id=1)  --io-->  port 3 (net_af_packet) tb --veth-- kb kernel

Two cases: skbnfd as memif CLIENT of testpmd's memif SERVER (io, mac, l3), and skbnfd as memif
SERVER with testpmd as the client (l3). In each run frames go from a raw socket on ka and are
checked on kb (tests/integration/raw_traffic.py: MACs, TTL-1, IP checksum, payload), first at a
stated low rate (no loss allowed) while skbnfd hot-swaps through every strategy the daemon lists
(tests/support/strategy_specs.py, over gRPC with skbnfctl; all 32 in each l3 run, every fourth
in io and mac: a swap costs ~0.25 s on this loaded 2-vCPU machine), then a burst as fast as a
raw socket sends. Then testpmd stops forwarding (`stop` on its command line) and prints its
forward statistics while the links are still up; in the l3 runs testpmd then quits first, with
skbnfd's worker parked (skbnfctl worker pause; why in one_run): skbnfd must stay up and report
NOT_SERVING naming the memif ports; skbnfd gets SIGTERM: exit 0 and an exact audit. Every frame
is accounted for, exactly, hop by hop:
    sent = delivered + kernel drops (ka tx, ta rx, tb tx, kb rx)
                     + testpmd TX-dropped into skbnfd (memif ring full) and towards tb
                     + skbnfd drops by reason (its exit line)
and each hop's counters agree (testpmd port 0 RX == sent - ingress kernel drops; port 1 TX ==
skbnfd rx; skbnfd tx == port 2 RX; port 3 TX == delivered + egress kernel drops).
testpmd's af_packet ports get framecnt=4096 (> the burst): net_af_packet in DPDK 22.11 does not
report its kernel ring's drops (drivers/net/af_packet/rte_eth_af_packet.c, eth_stats_get has no
imissed), so the ring is made big enough that it cannot drop; a loss there would show as a
mismatch, never be hidden.

net_memif devargs, from DPDK 22.11 drivers/net/memif/rte_eth_memif.c (github DPDK/dpdk,
v22.11.11: ETH_MEMIF_*_ARG, RTE_PMD_REGISTER_PARAM_STRING(net_memif, ...), rte_pmd_memif_probe)
and drivers/net/memif/rte_eth_memif.h (defaults):
    id=<int>            interface id, the pairing key on one socket (default 0): ids 0 and 1
    role=server|client  default client
    bsize=<int>         packet buffer size, default 2048 (ETH_MEMIF_DEFAULT_PKT_BUFFER_SIZE)
    rsize=<int>         log2 of the ring size, default 10 = 1024 slots, max 14
    socket=<string>     default /run/memif.sock; here a socket in the test's own directory
    socket-abstract=yes|no  default YES (abstract namespace: the path is then only a name, no
                        file); `no` here, so the socket is a file that only this test sees
    mac=xx:..           the port's MAC (default random): fixed, so the checks know it
    zero-copy=yes|no    client only; default no
    secret=<string>     not used
The client creates the regions and rings and the server maps them: the client's bsize is used,
its rsize capped by the server's (memif_socket.c memif_msg_receive_hello: run.log2_ring_size =
min(server's max_log2_ring_size, own); run.pkt_buffer_size = own). Both sides get the same here.

Memory decisions (written down as the issue asks):
  - No hugepages, no --single-file-segments: in copy mode (zero-copy=no) net_memif puts rings and
    packet buffers in its own memfd regions (rte_eth_memif.c memif_region_init_shm:
    memfd_create + F_SEAL_SHRINK + mmap MAP_SHARED) and copies each frame between those buffers
    and mbufs; skbnfd's pool never leaves the process, so --no-huge works and the pool need not
    be shareable. TX frees every mbuf after copying and RX allocates one per frame: the PMD
    holds no mbuf across bursts, so the exit audit is exact with no PMD bucket.
  - zero-copy=yes (client only) shares all of EAL's memory with the peer (memif_regions_init ->
    rte_memseg_walk, rte_memseg_get_fd per memseg list) and is refused at probe without
    --single-file-segments ("Zero-copy doesn't support multi-file segments.", memif_set_zc); its
    RX ring then keeps refilled mbufs of skbnfd's pool and its TX ring the sent ones, and
    memif_dev_stop/memif_dev_close free none of them (queue release frees only the array).
    Tried here (--no-huge --single-file-segments: EAL's memory is then one memfd, so it connects
    and forwards): after close 4,096 mbufs (2 ports x 1,024 RX + 1,024 TX) were still out,
    "audit FAILED", exit 1. So copy mode; skbnfd's preflight warns about zero-copy=yes
    (vdev_memif, server/preflight_vdev.cc), checked below.
  - The memif client connects once, at rte_eth_dev_start (memif_connect_client): a client whose
    server socket is not there fails dev_start, and skbnfd's start-up stops. So the server
    always starts first; testpmd's link check is off (--disable-link-check) and the test waits
    for both links to be up through `skbnfctl ports` instead.

Usage: memif_test.py SKBNFD SKBNFCTL [burst frames (default 3000)] [short]
(`short`: only the two l3 runs, each swapping through half the specs, for the sanitizer stage.)
Exit 0 pass, 1 fail, 77 skip (only when dpdk-testpmd is not installed or no network namespace
can be made), with the reason. A missing PMD fails (its vdev does not probe).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import strategy_specs  # noqa: E402

LOW_RATE = 1000  # frames/s: the stated low rate at which no frame may be lost
PEER_LEFT = "worker parked, testpmd quit first, skbnfd NOT_SERVING, worker resumed; "
WORKER_LCORE = "1"  # skbnfd's one worker: EAL -l 0,1 (main lcore 0)
SKB_MAC = ("02:00:00:00:6d:00", "02:00:00:00:6d:01")


class Fail(Exception):
    pass


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def wait_until(what, cond, timeout, proc=None, log=None):
    """cond() until true or the deadline; a process that died fails at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise Fail(f"{what}: process exited {proc.returncode}" + tail(log))
        time.sleep(0.05)
    raise Fail(f"{what}: not within {timeout} s" + tail(log))


def tail(path, n=15):
    if not path or not os.path.exists(path):
        return ""
    lines = open(path, errors="replace").read().splitlines()
    return "\n  " + "\n  ".join(lines[-n:])


def grep(path, pattern):
    try:
        return re.search(pattern, open(path, errors="replace").read(), re.M)
    except OSError:
        return None


class Netns:
    """A network namespace with two veth pairs (ta|ka, tb|kb), IPv6 off so only the test's frames
    cross them; removed on close whatever happened."""

    def __init__(self):
        self.name = f"skbnf-memif-{os.getpid()}"
        r = subprocess.run(["ip", "netns", "add", self.name], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(skip(f"cannot create a network namespace: {r.stderr.strip()}"))
        try:
            for a, b in (("ta", "ka"), ("tb", "kb")):
                run(["ip", "-n", self.name, "link", "add", a, "type", "veth", "peer", "name", b])
                for i in (a, b):
                    run(self.cmd("sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1"))
                    run(["ip", "-n", self.name, "link", "set", i, "up"])
        except subprocess.CalledProcessError:
            self.close()
            raise

    def cmd(self, *argv):
        return ["ip", "netns", "exec", self.name, *argv]

    def mac(self, ifname):
        return run(self.cmd("cat", f"/sys/class/net/{ifname}/address")).stdout.strip()

    def drops(self):
        """Kernel drop counters of the four ends."""
        out = {}
        for i in ("ka", "ta", "tb", "kb"):
            for k in ("rx_dropped", "tx_dropped"):
                out[f"{i} {k}"] = int(run(self.cmd(
                    "cat", f"/sys/class/net/{i}/statistics/{k}")).stdout)
        return out

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def skip(reason):
    print(f"SKIP: {reason}")
    return 77


class Proc:
    """A child process with its output in a file (and optionally a command pipe on stdin); stop()
    sends its stop signal and waits, close() kills it if still running."""

    def __init__(self, argv, log, stop_signal, stdin=False):
        self.log = log
        self.stop_signal = stop_signal
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=open(log, "w"), stderr=subprocess.STDOUT, text=True)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def stop(self, timeout=20):
        """Sends the stop signal, waits; returns the exit status."""
        if self.p.poll() is None:
            self.p.send_signal(self.stop_signal)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                raise Fail(f"{self.log}: did not stop within {timeout} s of "
                           f"{signal.Signals(self.stop_signal).name}" + tail(self.log))
        return self.p.returncode

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def memif(i, role, sock):
    return (f"net_memif{i},role={role},id={i},socket={sock},socket-abstract=no,bsize=2048,"
            f"rsize=10")


def testpmd(ns, t, case, role, sock, burst):
    """testpmd: af_packet ta (0), memif id 0 (1), memif id 1 (2), af_packet tb (3); io forwarding
    pairs 0<->1 and 2<->3 (testpmd's default port topology)."""
    fc = 1
    while fc < burst + 64:
        fc *= 2
    argv = ns.cmd(
        "dpdk-testpmd", "--lcores=0@1,1@0", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
        f"--file-prefix=skbnf-memif-tp-{os.getpid()}",
        f"--vdev=net_af_packet0,iface=ta,framecnt={fc}",
        f"--vdev={memif(0, role, sock)}", f"--vdev={memif(1, role, sock)}",
        f"--vdev=net_af_packet1,iface=tb,framecnt={fc}",
        "--", "-i", "--auto-start", "--no-mlockall", "--total-num-mbufs=16384",
        "--forward-mode=io", "--disable-link-check")
    return Proc(["stdbuf", "-oL", *argv], os.path.join(t, f"testpmd-{case}.log"),
                signal.SIGINT, stdin=True)


def testpmd_forward_stats(log):
    """Per port: RX-packets, RX-dropped, TX-packets, TX-dropped from testpmd's exit lines
    (app/test-pmd/testpmd.c fwd_stats_display, printed by stop_packet_forwarding on `stop`)."""
    text = open(log, errors="replace").read()
    out = {}
    for m in re.finditer(
            r"Forward statistics for port (\d+)\s*-+\s*\n\s*RX-packets: (\d+)\s+RX-dropped: (\d+)"
            r".*?TX-packets: (\d+)\s+TX-dropped: (\d+)", text, re.S):
        out[int(m.group(1))] = dict(rx=int(m.group(2)), rx_drop=int(m.group(3)),
                                    tx=int(m.group(4)), tx_drop=int(m.group(5)))
    return out


def skbnfd_exit_line(log):
    lines = [l for l in open(log, errors="replace") if l.startswith("skbnfd: ") and " rx " in l]
    if not lines:
        raise Fail("skbnfd printed no exit line" + tail(log))
    line = lines[-1]
    rx = int(re.search(r" rx (\d+),", line).group(1))
    tx = int(re.search(r" tx (\d+),", line).group(1))
    drops = {k: int(v) for k, v in
             re.findall(r"(\w+)=(\d+)", line.split("drops ", 1)[1].split(", rx_nombuf")[0])}
    return rx, tx, drops, line


def one_run(a, ns, t, case, skb_role, mode):
    """One skbnfd run against one testpmd: swaps under low-rate traffic, a burst, SIGTERM."""
    tp_role = "client" if skb_role == "server" else "server"
    sock = os.path.join(t, f"memif-{case}.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    ka, kb = ns.mac("ka"), ns.mac("kb")
    conf = os.path.join(t, f"skbnfd-{case}.conf")
    with open(conf, "w") as f:
        f.write(f"mode {mode}\n"
                f"port net_memif0 peer=net_memif1 dst_mac={ka}\n"
                f"port net_memif1 peer=net_memif0 dst_mac={kb}\n")
        if mode == "l3":
            f.write(f"route 10.1.0.0/16 net_memif1 {kb}\nroute 10.0.0.0/16 net_memif0 {ka}\n")
    skb_argv = [a.skbnfd, "--listen=127.0.0.1:0", "--loopback-role=admin", "--metrics-addr=off", f"--config={conf}",
                "--stats=0", "--", "-l", "0,1", "--no-huge", "-m", "512", "--no-pci",
                "--no-shconf", f"--file-prefix=skbnf-memif-skb-{os.getpid()}",
                f"--vdev={memif(0, skb_role, sock)},mac={SKB_MAC[0]}",
                f"--vdev={memif(1, skb_role, sock)},mac={SKB_MAC[1]}"]
    skb_log = os.path.join(t, f"skbnfd-{case}.log")
    procs = []
    try:
        def start_skbnfd():
            p = Proc(skb_argv, skb_log, signal.SIGTERM)
            procs.append(p)
            wait_until(f"{case}: skbnfd forwarding", lambda: grep(skb_log, r"^mode "), 30,
                       p.p, skb_log)
            return p

        def start_testpmd():
            p = testpmd(ns, t, case, tp_role, sock, a.burst)
            procs.append(p)
            wait_until(f"{case}: testpmd forwarding",
                       lambda: grep(p.log, r"packet forwarding - ports=4"), 30, p.p, p.log)
            return p

        if tp_role == "server":  # the server first: a memif client connects once, at start
            tp = start_testpmd()
            wait_until(f"{case}: testpmd's memif socket", lambda: os.path.exists(sock), 10,
                       tp.p, tp.log)
            skb = start_skbnfd()
        else:
            # A memif server without its client forwards nothing: readiness must say so, naming
            # the ports, until testpmd connects (server/health.cc: "link down").
            skb = start_skbnfd()
            wait_until(f"{case}: readiness NOT_SERVING naming both memif ports before the client",
                       lambda: grep(skb_log, r"readiness NOT_SERVING: port 0 \(net_memif0\): link "
                                             r"down; port 1 \(net_memif1\): link down"),
                       10, skb.p, skb_log)
            tp = start_testpmd()
        if not grep(skb_log, rf"^mode {mode}\b"):
            raise Fail(f"{case}: skbnfd not in {mode}" + tail(skb_log))
        addr = grep(skb_log, r"gRPC on (\S+)").group(1)

        def links_up():
            ports = strategy_specs.ctl(a.skbnfctl, addr, "ports")["ports"]
            return len(ports) == 2 and all(p.get("link_up") for p in ports)
        wait_until(f"{case}: both memif links up (skbnfctl ports)", links_up, 15, skb.p, skb_log)
        if skb_role == "server":
            wait_until(f"{case}: readiness SERVING once the client is connected",
                       lambda: grep(skb_log,
                                    r"readiness NOT_SERVING.*\n(.*\n)*.*readiness SERVING"),
                       10, skb.p, skb_log)

        expect = {
            "io": ["--expect-dst-mac", SKB_MAC[0], "--expect-src-mac", ka, "--ttl-dec", "0"],
            "mac": ["--expect-dst-mac", kb, "--expect-src-mac", SKB_MAC[1], "--ttl-dec", "0"],
            "l3": ["--expect-dst-mac", kb, "--expect-src-mac", SKB_MAC[1], "--ttl-dec", "1"],
        }[mode]

        def traffic_args(rate):
            return ["--tx", "ka", "--rx", "kb", "--rate", str(rate), "--dst-mac", SKB_MAC[0],
                    "--src-mac", ka, *expect, "--dst-spread", "50"]

        def traffic(count, rate):
            return ns.cmd("python3", os.path.join(HERE, "raw_traffic.py"), "--count", str(count),
                          *traffic_args(rate))

        drops_before = ns.drops()
        # Low rate with every swap while it flows: the traffic (tests/support/traffic_until.py,
        # raw_traffic.py's frames and checks) runs until the last swap has answered.
        specs = strategy_specs.every_spec(a.skbnfctl, addr)
        if mode != "l3":  # l3 (both roles) swaps through all; io and mac a quarter each, to
            specs = specs[("io", "mac").index(mode)::4]  # keep the test under a minute
        elif a.short:  # the sanitizer stage (a swap ~1 s there): half each, all over the two
            specs = specs[("client", "server").index(skb_role)::2]
        low_p = subprocess.Popen(
            ns.cmd("python3", os.path.join(HERE, "..", "support", "traffic_until.py"),
                   *traffic_args(LOW_RATE)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        t0 = time.monotonic()
        results = strategy_specs.swap_through(a.skbnfctl, addr, specs,
                                              lambda: low_p.poll() is None)
        swap_s = time.monotonic() - t0
        low = json.loads(low_p.communicate("stop\n", timeout=60)[0])
        bad = [r for r in results if not r[1]]
        if bad or len(results) != len(specs):
            raise Fail(f"{case}: swaps: {len(results) - len(bad)} of {len(specs)} ok; first "
                       f"failures: {bad[:3]}")
        high = json.loads(subprocess.run(traffic(a.burst, 0), stdout=subprocess.PIPE, text=True,
                                         check=True).stdout)
        # testpmd stops forwarding first and prints its forward statistics while both memif
        # links are still connected (net_memif reports no counters once its peer is gone:
        # memif_stats_get sums over pmd->run's rings, zeroed at disconnect), and no testpmd lcore
        # polls a ring while skbnfd's exit tears the link down.
        tp.send("stop")
        wait_until(f"{case}: testpmd's forward statistics",
                   lambda: grep(tp.log, r"Accumulated forward statistics.*\n.*\n.*\n.*\n"), 15,
                   tp.p, tp.log)
        def quit_testpmd():
            tp.send("quit")
            try:
                rc = tp.p.wait(20)
            except subprocess.TimeoutExpired:
                raise Fail(f"{case}: testpmd did not quit" + tail(tp.log))
            if rc != 0:
                raise Fail(f"{case}: testpmd exited {rc} after quit" + tail(tp.log))

        peer_leaves_first = mode == "l3"
        if peer_leaves_first:
            # The peer goes away (a CNF restart): skbnfd must keep running and say NOT_SERVING
            # naming the memif ports. Its worker is parked first (skbnfctl worker pause): DPDK
            # 22.11's memif_disconnect (memif_socket.c) clears CONNECTED and then munmaps the
            # rings on the interrupt thread, while a worker already inside eth_memif_rx/tx keeps
            # using them; seen here: skbnfd (server) SIGSEGV when testpmd quit under traffic
            # polling, and testpmd SIGSEGV when skbnfd exited under testpmd's polling.
            strategy_specs.ctl(a.skbnfctl, addr, "worker", "pause", WORKER_LCORE)
            mark = len(open(skb_log, errors="replace").read())
            quit_testpmd()
            wait_until(f"{case}: readiness NOT_SERVING after the memif peer left",
                       lambda: re.search(r"readiness NOT_SERVING: port 0 \(net_memif0\): link down",
                                         open(skb_log, errors="replace").read()[mark:]),
                       10, skb.p, skb_log)
            # Unparked, the worker polls the disconnected ports: eth_memif_rx/tx return 0 when
            # not CONNECTED.
            strategy_specs.ctl(a.skbnfctl, addr, "worker", "resume", WORKER_LCORE)
        rc = skb.stop()
        if rc != 0:
            raise Fail(f"{case}: skbnfd exited {rc} after SIGTERM" + tail(skb_log))
        if grep(skb_log, r"preflight warning: vdev_memif"):
            raise Fail(f"{case}: preflight warned about copy-mode memif" + tail(skb_log))
        audit = grep(skb_log, r"audit OK \(exact[^;\n]*")
        if not audit:
            raise Fail(f"{case}: no exact audit" + tail(skb_log))
        if grep(skb_log, r"swaps ok \d+ failed [1-9]"):
            raise Fail(f"{case}: a swap failed" + tail(skb_log))
        if not peer_leaves_first:
            quit_testpmd()
        drops = {k: v - drops_before[k] for k, v in ns.drops().items()}
        account(case, low, high, testpmd_forward_stats(tp.log), skbnfd_exit_line(skb_log),
                drops, tp.log)
        print(f"ok: {case}: {len(results)} swaps in {swap_s:.1f} s under {LOW_RATE}/s traffic; "
              f"{PEER_LEFT if peer_leaves_first else ''}"
              f"SIGTERM: exit 0, {audit.group(0)}", flush=True)
    finally:
        for p in procs:
            p.close()


def account(case, low, high, tp, skb, kernel, tp_log):
    rx, tx, skb_drops, _ = skb
    if sorted(tp) != [0, 1, 2, 3]:
        raise Fail(f"{case}: testpmd's forward statistics not found" + tail(tp_log, 40))
    sent = low["sent"] + high["sent"]
    delivered = low["delivered"] + high["delivered"]
    k_in = kernel["ka tx_dropped"] + kernel["ta rx_dropped"]
    k_out = kernel["tb tx_dropped"] + kernel["kb rx_dropped"]
    buckets = {
        "kernel ka->ta": k_in,
        "testpmd RX-dropped (all ports)": sum(p["rx_drop"] for p in tp.values()),
        "testpmd TX-dropped into skbnfd (memif id 0)": tp[1]["tx_drop"],
        **{f"skbnfd {k}": v for k, v in skb_drops.items()},
        "testpmd TX-dropped to tb": tp[3]["tx_drop"],
        "kernel tb->kb": k_out,
    }
    dropped = sum(buckets.values())
    print(f"  {case}: low rate {LOW_RATE}/s: sent {low['sent']}, delivered {low['delivered']}; "
          f"burst: sent {high['sent']}, delivered {high['delivered']}")
    print(f"  {case}: sent {sent} = delivered {delivered} + drops {dropped} "
          f"{ {k: v for k, v in buckets.items() if v} or '{}' }")
    print(f"  {case}: testpmd port0 rx {tp[0]['rx']} -> port1 tx {tp[1]['tx']} -> skbnfd rx {rx}"
          f" tx {tx} -> port2 rx {tp[2]['rx']} -> port3 tx {tp[3]['tx']}")
    hops = [
        ("sent - kernel ka->ta drops == testpmd port 0 RX", sent - k_in, tp[0]["rx"]),
        ("port 0 RX == port 1 TX + TX-dropped", tp[0]["rx"], tp[1]["tx"] + tp[1]["tx_drop"]),
        ("port 1 TX (memif id 0) == skbnfd rx", tp[1]["tx"], rx),
        ("skbnfd rx == tx + drops by reason", rx, tx + sum(skb_drops.values())),
        ("skbnfd tx == port 2 RX (memif id 1)", tx, tp[2]["rx"]),
        ("port 2 RX == port 3 TX + TX-dropped", tp[2]["rx"], tp[3]["tx"] + tp[3]["tx_drop"]),
        ("port 3 TX == delivered + kernel tb->kb drops", tp[3]["tx"], delivered + k_out),
        ("nothing back the other way (port 3 RX, port 0 TX)", 0, tp[3]["rx"] + tp[0]["tx"]),
        ("sent == delivered + drops", sent, delivered + dropped),
        (f"no loss at {LOW_RATE}/s", low["sent"], low["delivered"]),
        ("no frame arrived wrong or twice", 0,
         low["bad"] + high["bad"] + low["duplicates"] + high["duplicates"]),
    ]
    bad = [f"{name}: {x} != {y}" for name, x, y in hops if x != y]
    if bad:
        raise Fail(f"{case}: accounting: " + "; ".join(bad) +
                   f"; first bad frames: {low['bad_first'] + high['bad_first']}")


def preflight_zero_copy(skbnfd):
    """zero-copy=yes is warned about before EAL, naming the vdev and what to write
    (server/preflight_vdev.cc, vdev_memif); copy mode is not."""
    r = subprocess.run([skbnfd, "--preflight", "--", "-l", "0,1", "--no-huge", "-m", "512",
                        "--no-pci", f"--vdev={memif(0, 'client', '/tmp/x.sock')},zero-copy=yes",
                        f"--vdev={memif(1, 'client', '/tmp/x.sock')}"],
                       capture_output=True, text=True, timeout=30)
    warn = re.search(r"^warn +vdev_memif +(.*)$", r.stdout, re.M)
    if (r.returncode != 0 or not warn or not warn.group(1).startswith("net_memif0: zero-copy=yes")
            or "write zero-copy=no" not in warn.group(1) or "net_memif1" in warn.group(1)):
        raise Fail(f"preflight: no vdev_memif warning naming net_memif0 alone (exit "
                   f"{r.returncode}):\n{r.stdout}{r.stderr}")
    print(f"ok: preflight: warn vdev_memif {warn.group(1)[:70]}...")


def main():
    if len(sys.argv) < 3:
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2

    class A:
        skbnfd, skbnfctl = sys.argv[1], sys.argv[2]
        burst = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
        short = len(sys.argv) > 4 and sys.argv[4] == "short"

    if shutil.which("dpdk-testpmd") is None:
        return skip("dpdk-testpmd not installed (Debian package dpdk)")
    t = tempfile.mkdtemp(prefix="skbnf-memif-")
    os.chmod(t, 0o755)
    ns = None
    start = time.monotonic()
    try:
        preflight_zero_copy(A.skbnfd)
        ns = Netns()
        runs = [("client-io", "client", "io"), ("client-mac", "client", "mac"),
                ("client-l3", "client", "l3"), ("server-l3", "server", "l3")]
        if A.short:  # the sanitizer stage: l3 in both roles
            runs = [r for r in runs if r[2] == "l3"]
        for case, role, mode in runs:
            one_run(A, ns, t, case, role, mode)
        print(f"ok: memif: {', '.join(r[0] for r in runs)} against dpdk-testpmd, "
              f"{time.monotonic() - start:.1f} s")
        return 0
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    except RuntimeError as e:  # skbnfctl failed (tests/support/strategy_specs.py)
        print(f"FAIL: {e}")
        return 1
    except subprocess.CalledProcessError as e:
        print(f"FAIL: {' '.join(e.cmd)}: exit {e.returncode}: {(e.stderr or '').strip()}")
        return 1
    finally:
        if ns is not None:
            ns.close()
        if os.environ.get("SKBNF_KEEP"):
            print(f"kept {t}")
        else:
            shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
