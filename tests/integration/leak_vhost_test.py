#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A leak as a user meets it (issue 32 item 3): a vhost-user peer that stops draining.

  testpmd A (txonly)  net_vhost0 <==vhost-user==> skbnfd net_virtio_user0 --io-->
  testpmd B (rxonly)  net_vhost1 <==vhost-user==> skbnfd net_virtio_user1 (TX)

skbnfd (strategy magazine,track; server=1 on both ports, the vhost library's clients reconnect:
vhost_restart_test.sh says how, from DPDK 22.11's sources) forwards A's frames to B. virtio's
TX frees a sent mbuf only when it needs the descriptor again and the peer has used it
(drivers/net/virtio/virtio_rxtx.c virtio_xmit_cleanup, below vq_free_thresh free descriptors), so
port 1's TX ring is full of sent mbufs all along; while B drains they are replaced all the time
and stay young. B is then SIGSTOPped: it stops taking frames off its virtqueue, and the mbufs in
port 1's TX ring stay there. Then, within bounds, never by sleeping:
  - `skbnfctl buffers`: port 1's TX ring holds them (the pool's place accounting);
  - `skbnfctl buffers --ages --older-than 10s`: they age, allocated by worker core 1 refilling
    RX port 0 (the track modifier's stamp);
  - a real Prometheus (Debian's) scraping skbnfd every second with deploy/'s rules fires
    SkbnfBuffersLeaking. The rule file is the deployed one, its times divided by 30 so the test
    takes seconds, not minutes (300 s -> 10 s, a bucket bound of the age histogram; 10m -> 20s;
    5m -> 10s; 15m -> 30s): the expressions are the deployed ones.
    The idle RX ring of port 1 (B sends nothing) is old all along and must not fire it;
  - B is SIGCONTinued: the TX ring's mbufs are replaced again, no object allocated refilling
    port 0 is old any more, and the alert resolves;
  - SIGTERM: skbnfd exits 0 with an exact audit.
Usage: leak_vhost_test.py <skbnfd> <skbnfctl>
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import hugepages  # noqa: E402
from leak_rules import OLD, alerts, start_prometheus  # noqa: E402
from bounded import fail, wait_for  # noqa: E402

SKBNFD, SKBNFCTL = sys.argv[1], sys.argv[2]
RULES = os.path.join(ROOT, "deploy", "prometheus", "skbnf-rules.yaml")
PAGES = 200


def ctl(addr, *args):
    p = subprocess.run([SKBNFCTL, "--addr=" + addr] + list(args), capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout, p.stderr


def ctl_json(addr, *args):
    code, out, err = ctl(addr, "--json", *args)
    return json.loads(out) if code == 0 else None


def tx_ring(addr, port):
    b = ctl_json(addr, "buffers")
    if b is None:
        return None
    for p in b.get("ports", []):
        if int(p.get("port", 0)) == port:
            return int(p.get("tx_ring", 0))
    return None


def old_from_rx0(addr):
    """Objects older than OLD s that worker core 1 allocated refilling RX port 0: the site's
    histogram (the listing of the oldest holds port 1's idle RX ring first, older still)."""
    r = ctl_json(addr, "buffers", "--ages", "--oldest=0")
    if r is None:
        return None
    for s in r.get("sites", []):
        site = s["site"]
        if site["site"] == "rx" and int(site.get("core", -1)) == 1 and int(
                site.get("rx_port", -1)) == 0:
            (young,) = [int(b["objects"]) for b in s["buckets"] if b["le_seconds"] == OLD]
            return int(s["objects"]) - young
    return None


def sent_on(addr, port):
    ps = ctl_json(addr, "ports")
    if ps is None:
        return 0
    for p in ps["ports"]:
        if int(p.get("id", p.get("port", -1))) == port:
            return int(p.get("pmd", {}).get("opackets", 0))
    return 0


def testpmd(t, name, sock, mode, cpu):
    log = os.path.join(t, name + ".log")
    p = subprocess.Popen(
        ["dpdk-testpmd", "--lcores=0@%d,1@%d" % (cpu, cpu), "--no-huge", "-m", "256", "--no-pci",
         "--file-prefix=skbnf-leak-%s-%d" % (name, os.getpid()),
         "--vdev=net_vhost0,iface=%s,client=1" % sock, "--", "--no-mlockall",
         "--total-num-mbufs=8192", "--forward-mode=" + mode, "--port-topology=loop",
         "--disable-link-check", "--stats-period=1"],
        stdin=subprocess.DEVNULL, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    return p, log


def main():
    t = tempfile.mkdtemp(prefix="skbnf-leak-", dir="/run")
    err, pages = hugepages.ensure(PAGES)
    if err:
        fail("hugepages: " + err)
    procs = []
    prom = None
    mnt = None
    skb_log = os.path.join(t, "skbnfd.log")
    try:
        mnt = hugepages.mount_point()
        conf = os.path.join(t, "skb.conf")
        with open(conf, "w") as f:
            f.write("mode io\nstrategy magazine,track\n"
                    "port net_virtio_user0 peer=net_virtio_user1\n"
                    "port net_virtio_user1 peer=net_virtio_user0\n")
        ready = os.path.join(t, "ready.json")
        skb = subprocess.Popen(
            [SKBNFD, "--listen=127.0.0.1:0", "--loopback-role=admin",
             "--metrics-addr=127.0.0.1:0", "--ready-file=" + ready, "--config=" + conf,
             "--stats=0", "--buffer-census-every=500ms", "--",
             "-l", "0,1", "--no-pci", "--single-file-segments", "--huge-dir=" + mnt,
             "--file-prefix=skbnf-leak-%d" % os.getpid(),
             "--vdev=net_virtio_user0,path=%s/vh0.sock,server=1,queues=1,queue_size=1024" % t,
             "--vdev=net_virtio_user1,path=%s/vh1.sock,server=1,queues=1,queue_size=1024" % t],
            stdout=open(skb_log, "w"), stderr=subprocess.STDOUT)
        procs.append(skb)
        # server=1: the probe waits in accept() for each client (vhost_user_start_server).
        wait_for("skbnfd's vhost-user sockets", lambda: os.path.exists(t + "/vh0.sock"), 30,
                 skb_log)
        a, a_log = testpmd(t, "a", t + "/vh0.sock", "txonly", 0)
        procs.append(a)
        wait_for("skbnfd's second socket", lambda: os.path.exists(t + "/vh1.sock"), 30, skb_log)
        b, b_log = testpmd(t, "b", t + "/vh1.sock", "rxonly", 1)
        procs.append(b)
        r = wait_for("skbnfd ready", lambda: os.path.exists(ready) and json.load(open(ready)), 60,
                     skb_log, a_log, b_log)
        addr, mport = r["grpc"], r["metrics_port"]
        wait_for("frames through skbnfd to B", lambda: sent_on(addr, 1) > 10000, 60, skb_log,
                 a_log, b_log)
        print("ok: A -> skbnfd -> B: %d frames sent on port 1" % sent_on(addr, 1))

        prom = start_prometheus(t, RULES, "skbnf", mport)
        wait_for("Prometheus up", lambda: prom.alive() and alerts(prom) is not None, 30,
                 prom.log_path)
        # Port 1's RX ring (B sends nothing) grows old: it must not fire the alert. Both its
        # age and the rule's window pass before B stops.
        wait_for("port 1's idle RX ring older than %d s" % OLD, lambda: (ctl_json(
            addr, "buffers", "--ages", "--older-than=%ds" % OLD, "--oldest=1") or {}).get(
            "oldest"), 60, skb_log)
        tx0 = tx_ring(addr, 1)
        print("ok: before the stall: port 1's TX ring %s, alert states %s" % (tx0, alerts(prom)))
        if "firing" in (alerts(prom) or ()):
            fail("SkbnfBuffersLeaking fires with B draining (an idle RX ring is old by design)")

        b.send_signal(signal.SIGSTOP)
        held = wait_for("port 1's TX ring holding the mbufs B does not take",
                        lambda: (tx_ring(addr, 1) or 0) >= 512 and tx_ring(addr, 1), 30, skb_log)
        print("ok: B stopped draining: port 1's TX ring holds %d mbufs" % held)
        n_old = wait_for("the TX ring's mbufs older than %d s, from RX port 0's refill" % OLD,
                         lambda: (old_from_rx0(addr) or 0) >= 512 and old_from_rx0(addr), 60,
                         skb_log)
        print("ok: %d mbufs allocated refilling RX port 0 are older than %d s" % (n_old, OLD))
        wait_for("SkbnfBuffersLeaking firing in Prometheus", lambda: "firing" in (alerts(prom) or ()), 90,
                 prom.log_path, skb_log)
        print("ok: SkbnfBuffersLeaking fires")

        b.send_signal(signal.SIGCONT)
        wait_for("no mbuf from RX port 0's refill older than %d s (B draining again)" % OLD,
                 lambda: old_from_rx0(addr) == 0, 30, skb_log, b_log)
        wait_for("SkbnfBuffersLeaking resolved", lambda: alerts(prom) is not None and "firing" not in alerts(prom), 90,
                 prom.log_path)
        print("ok: B draining again: port 1's TX ring %s mbufs, all young; alert resolved"
              % tx_ring(addr, 1))

        skb.send_signal(signal.SIGTERM)
        rc = skb.wait(timeout=60)
        with open(skb_log) as f:
            text = f.read()
        if rc != 0 or "audit OK (exact" not in text:
            fail("SIGTERM: exit %d, exact audit %s" % (rc, "audit OK (exact" in text), skb_log)
        print("ok: SIGTERM: exit 0, " + re.search(r"audit OK[^;]*", text).group(0))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        if prom is not None:
            prom.stop()
        for f in os.listdir(mnt) if mnt else []:
            if f.startswith("skbnf-leak-%d" % os.getpid()):
                os.unlink(os.path.join(mnt, f))
        hugepages.release(pages)
        subprocess.run(["rm", "-rf", t])
    print("PASS")


if __name__ == "__main__":
    main()
