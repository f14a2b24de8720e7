#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""IPv4/UDP frames from a raw socket on one kernel interface, received and checked on another.

Used by the attachment tests (AF_XDP over veth, vhost-user through OVS-DPDK): the kernel side of
the attachment is a real interface, so the frames go through the peer's real path. Each frame
carries a sequence number in its payload; on the far side every frame is checked:

  ethernet  dst == --expect-dst-mac, src == --expect-src-mac (l3: next hop's MAC, port's MAC)
  IPv4      TTL == sent TTL - --ttl-dec, header checksum valid, addresses unchanged
  UDP       payload byte for byte as sent

Output (stdout, one JSON object): sent, delivered (distinct good frames), bad (arrived but a
check failed, with the first reasons), duplicates, missing (sequence numbers never seen).
Exit 0 when the run happened (the caller judges the numbers), 2 on a usage/socket error.

The receiver's socket buffer is raised with SO_RCVBUFFORCE (CAP_NET_ADMIN) so that the kernel
does not drop frames on our side of the measurement: a drop there would be ours, not the
peer's, and would break the exact accounting.
"""
import argparse
import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
MAGIC = b"skbnf-raw"


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def mac_text(b):
    return ":".join(f"{x:02x}" for x in b)


def ip_checksum(hdr):
    s = 0
    for i in range(0, len(hdr), 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(seq, args):
    payload = MAGIC + struct.pack("!I", seq) + bytes((seq + i) & 0xFF for i in range(args.size))
    udp = struct.pack("!HHHH", 1024 + seq % 1000, 9, 8 + len(payload), 0) + payload
    dst_ip = socket.inet_aton(args.dst_ip)
    if args.dst_spread > 1:  # vary the last octet: several flows (RSS) and LPM lookups
        dst_ip = dst_ip[:3] + bytes([(dst_ip[3] + seq % args.dst_spread) & 0xFF])
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0,
                               args.ttl, 17, 0, socket.inet_aton(args.src_ip), dst_ip))
    struct.pack_into("!H", ip, 10, ip_checksum(bytes(ip)))
    eth = mac_bytes(args.dst_mac) + mac_bytes(args.src_mac) + struct.pack("!H", ETH_P_IP)
    return eth + bytes(ip) + udp


def check(buf, args):
    """(seq, None) for a good frame, (seq or None, reason) otherwise; None, None: not ours."""
    if len(buf) < 14 + 20 + 8 + len(MAGIC) + 4 or buf[12:14] != b"\x08\x00":
        return None, None
    ihl = (buf[14] & 0x0F) * 4
    udp = 14 + ihl
    pl = udp + 8
    if buf[pl:pl + len(MAGIC)] != MAGIC:
        return None, None
    seq = struct.unpack("!I", buf[pl + len(MAGIC):pl + len(MAGIC) + 4])[0]
    want = frame(seq, args)
    if args.expect_dst_mac and buf[0:6] != mac_bytes(args.expect_dst_mac):
        return seq, f"dst mac {mac_text(buf[0:6])}"
    if args.expect_src_mac and buf[6:12] != mac_bytes(args.expect_src_mac):
        return seq, f"src mac {mac_text(buf[6:12])}"
    if buf[22] != args.ttl - args.ttl_dec:
        return seq, f"ttl {buf[22]}"
    if ip_checksum(bytes(buf[14:14 + ihl])) != 0:
        return seq, "ip checksum"
    if buf[26:34] != want[26:34]:
        return seq, "ip addresses"
    if buf[udp:] [:len(want) - 34] != want[34:]:
        return seq, "udp header or payload"
    return seq, None


class Link:
    """The two packet sockets of a run (send on args.tx, receive on args.rx, the receive buffer
    raised so frames are not lost in the test) and what has arrived: frames checked by check(),
    by sequence number. Shared by this script and tests/support/traffic_until.py."""

    def __init__(self, args):
        self.args = args
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        self.rx.bind((args.rx, 0))
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.tx.bind((args.tx, 0))
        self.rx.setblocking(False)
        self.seen, self.bad, self.dups = set(), [], 0

    def drain(self):
        while True:
            try:
                buf, addr = self.rx.recvfrom(4096)
            except BlockingIOError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            seq, why = check(buf, self.args)
            if seq is None and why is None:
                continue
            if why is not None:
                self.bad.append(f"#{seq}: {why}")
            elif seq in self.seen:
                self.dups += 1
            else:
                self.seen.add(seq)

    def linger(self, sent):
        """Keeps receiving for args.linger seconds or until every sent frame is accounted for."""
        end = time.monotonic() + self.args.linger
        while time.monotonic() < end and len(self.seen) + len(self.bad) < sent:
            select.select([self.rx], [], [], 0.05)
            self.drain()
        self.drain()

    def report(self, sent, start):
        return {
            "sent": sent,
            "delivered": len(self.seen),
            "bad": len(self.bad),
            "bad_first": self.bad[:5],
            "duplicates": self.dups,
            "missing": sent - len(self.seen) - len({int(b.split(':')[0][1:]) for b in self.bad}),
            "rate_pps": self.args.rate,
            "seconds": round(time.monotonic() - start, 3),
        }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tx", required=True)
    p.add_argument("--rx", required=True)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--rate", type=float, default=500, help="frames per second (0: as fast)")
    p.add_argument("--size", type=int, default=64, help="payload bytes after the header")
    p.add_argument("--dst-mac", required=True)
    p.add_argument("--src-mac", required=True)
    p.add_argument("--src-ip", default="10.0.0.1")
    p.add_argument("--dst-ip", default="10.1.0.1")
    p.add_argument("--dst-spread", type=int, default=1)
    p.add_argument("--ttl", type=int, default=64)
    p.add_argument("--ttl-dec", type=int, default=1)
    p.add_argument("--expect-dst-mac", default="")
    p.add_argument("--expect-src-mac", default="")
    p.add_argument("--linger", type=float, default=2.0,
                   help="seconds to keep receiving after the last frame was sent")
    args = p.parse_args()

    try:
        link = Link(args)
    except OSError as e:
        print(f"raw_traffic: socket: {e}", file=sys.stderr)
        return 2

    gap = 1.0 / args.rate if args.rate > 0 else 0
    start = time.monotonic()
    for seq in range(args.count):
        if gap:
            due = start + seq * gap
            while time.monotonic() < due:
                link.drain()
                select.select([link.rx], [], [], max(0, due - time.monotonic()))
        link.tx.send(frame(seq, args))
    link.linger(args.count)
    out = link.report(args.count, start)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
