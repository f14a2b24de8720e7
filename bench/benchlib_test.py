#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unit checks of bench/benchlib.py (ctest bench_benchlib, label bench): the statistics the
headlines rest on, and the traffic files the l3 experiments replay."""
import ipaddress
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


class Stats(unittest.TestCase):
    def test_interval_brackets_median_and_narrows_with_pairs(self):
        import random
        rng = random.Random(1)
        few = [1.0 + rng.gauss(0, 0.1) for _ in range(5)]
        many = [1.0 + rng.gauss(0, 0.1) for _ in range(200)]
        import statistics
        for v in (few, many):
            lo, hi = benchlib.bootstrap_ci(v)
            self.assertLessEqual(lo, statistics.median(v))
            self.assertGreaterEqual(hi, statistics.median(v))
        w_few = benchlib.bootstrap_ci(few)[1] - benchlib.bootstrap_ci(few)[0]
        w_many = benchlib.bootstrap_ci(many)[1] - benchlib.bootstrap_ci(many)[0]
        self.assertLess(w_many, w_few)

    def test_interval_excludes_one_for_a_clear_effect(self):
        lo, hi = benchlib.bootstrap_ci([1.20, 1.22, 1.19, 1.25, 1.21, 1.18, 1.23, 1.2, 1.24, 1.22])
        self.assertGreater(lo, 1.0)
        self.assertLess(hi, 1.3)

    def test_single_value_and_empty(self):
        self.assertEqual(benchlib.bootstrap_ci([2.0]), (2.0, 2.0))
        lo, hi = benchlib.bootstrap_ci([])
        self.assertTrue(lo != lo and hi != hi)  # NaN

    def test_spread_ratio(self):
        steady = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.1]
        noisy = [8.0, 12.0, 9.0, 11.5, 7.5, 12.5, 10.0, 9.0]
        lo, hi = benchlib.spread_ratio_ci(list(zip(noisy, steady)))
        self.assertLess(hi, 1.0)  # B (steady) spreads less than A (noisy)


class Traffic(unittest.TestCase):
    def test_frames_are_valid_ipv4_udp(self):
        fr = benchlib.udp_frame(0x0A010203, 2)
        self.assertEqual(len(fr), 64)
        self.assertEqual(fr[12:14], b"\x08\x00")
        ip = fr[14:34]
        self.assertEqual(benchlib._csum(ip), 0)  # header checksum verifies
        self.assertEqual(ip[8], 2)  # TTL
        self.assertEqual(ip[16:20], bytes([10, 1, 2, 3]))
        self.assertEqual(struct.unpack("!H", ip[2:4])[0], 50)

    def test_flow_destinations_are_routed_to_their_own_ring(self):
        routes = benchlib.flow_routes(2000)
        self.assertEqual(len(routes), 2000)
        self.assertEqual(len(set(routes)), 2000)
        nets = {"net_ring0": [], "net_ring1": []}
        for line in routes:
            _, prefix, port, _ = line.split()
            nets[port].append(ipaddress.IPv4Network(prefix))
        with tempfile.TemporaryDirectory() as d:
            pa, pb = benchlib.flow_pcaps(d, 50, 2000)
            for path, port in ((pa, "net_ring0"), (pb, "net_ring1")):
                data = open(path, "rb").read()
                self.assertEqual(struct.unpack("<I", data[:4])[0], 0xA1B2C3D4)
                off, n = 24, 0
                while off < len(data):
                    ln = struct.unpack("<IIII", data[off:off + 16])[2]
                    dst = ipaddress.IPv4Address(data[off + 16 + 30:off + 16 + 34])
                    self.assertTrue(any(dst in net for net in nets[port]),
                                    f"{dst} matches no prefix of {port}")
                    other = "net_ring1" if port == "net_ring0" else "net_ring0"
                    self.assertFalse(any(dst in net for net in nets[other]))
                    off += 16 + ln
                    n += 1
                self.assertEqual(n, 50)


if __name__ == "__main__":
    unittest.main()
