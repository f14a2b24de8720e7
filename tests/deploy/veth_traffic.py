#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends IPv4/UDP frames on one interface and checks what arrives on another (AF_PACKET raw
sockets, standard library only; run as root in the namespace holding both interfaces).

Each frame: dst MAC --dst-mac, src MAC = the sending interface's, IPv4 198.18.<i>.<j> from
192.0.2.1, TTL --ttl, UDP with a sequence number. Every frame must arrive exactly once on
--recv with TTL - 1, a valid IPv4 header checksum, src MAC --expect-src-mac and dst MAC
--expect-dst-mac. Exit 0 when all N arrived as expected within --timeout seconds, else 1
with what differed.
"""

import argparse
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def mac_text(b):
    return ":".join("%02x" % x for x in b)


def checksum(header):
    s = 0
    for i in range(0, len(header), 2):
        s += (header[i] << 8) + header[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(dst_mac, src_mac, seq, ttl):
    payload = struct.pack("!4sI", b"SKBN", seq) + bytes(18)
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0) + payload
    dst_ip = bytes([198, 18 + (seq >> 16 & 1), seq >> 8 & 0xFF, seq & 0xFF])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, ttl, 17, 0,
                     bytes([192, 0, 2, 1]), dst_ip)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return dst_mac + src_mac + struct.pack("!H", ETH_P_IP) + ip + udp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--send", required=True)
    ap.add_argument("--recv", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--dst-mac", required=True)
    ap.add_argument("--expect-src-mac", required=True)
    ap.add_argument("--expect-dst-mac", required=True)
    ap.add_argument("--ttl", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()

    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    rx.bind((a.recv, 0))
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((a.send, 0))
    with open("/sys/class/net/%s/address" % a.send) as f:
        src_mac = mac_bytes(f.read().strip())
    seen, problems = set(), []
    deadline = time.time() + a.timeout
    sent = 0

    def drain(wait):
        while True:
            r, _, _ = select.select([rx], [], [], wait)
            if not r:
                return
            wait = 0
            data = rx.recv(2048)
            if len(data) < 14 + 20 + 8 + 8 or struct.unpack("!H", data[12:14])[0] != ETH_P_IP:
                continue
            ip = data[14:34]
            if ip[16] != 198 or data[42:46] != b"SKBN":
                continue
            seq = struct.unpack("!I", data[46:50])[0]
            why = []
            if mac_text(data[0:6]) != a.expect_dst_mac.lower():
                why.append("dst mac %s" % mac_text(data[0:6]))
            if mac_text(data[6:12]) != a.expect_src_mac.lower():
                why.append("src mac %s" % mac_text(data[6:12]))
            if ip[8] != a.ttl - 1:
                why.append("ttl %d" % ip[8])
            if checksum(ip) != 0:
                why.append("bad header checksum")
            if seq in seen:
                why.append("duplicate")
            seen.add(seq)
            if why:
                problems.append("frame %d: %s" % (seq, ", ".join(why)))

    for seq in range(a.count):
        tx.send(frame(mac_bytes(a.dst_mac), src_mac, seq, a.ttl))
        sent += 1
        if seq % 16 == 15:
            drain(0.001)
    while len(seen) < a.count and time.time() < deadline:
        drain(0.1)
    missing = a.count - len(seen)
    print("sent %d on %s, received %d on %s, %d with problems" %
          (sent, a.send, len(seen), a.recv, len(problems)))
    for p in problems[:10]:
        print("  " + p)
    return 0 if missing == 0 and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
