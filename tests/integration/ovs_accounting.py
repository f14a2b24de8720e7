#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every frame of one ovs_dpdk_test.sh run accounted for, hop by hop, exactly.

Arguments: low-rate result JSON, burst result JSON (raw_traffic.py), `ovs-ofctl dump-ports`
before and after the run, skbnfd's log (its exit line: rx, tx, drops by reason), `ovs-ofctl show`
(port numbers by name), the kernel-side in and out interface names, and optionally the result
JSON of frames sent while their route was deleted: none may arrive, and skbnfd's no_route drops
must equal their number exactly (nothing else in the run is unroutable).

OVS's counters are read live (dump-ports asks the netdev; the Interface table's statistics lag
by stats-update-interval). On a dpdkvhostuserclient port, tx drop includes
ovs_tx_failure_drops (OVS lib/netdev-dpdk.c counts them into tx_dropped). Exit 0 when:
  sent = delivered + OVS drops (in rx, vhu0 tx, vhu1 rx, out tx) + skbnfd drops by reason,
each hop's counters agree, nothing was lost at the low rate, and no frame arrived wrong.
"""
import json
import re
import sys


def ports(path):
    out = {}
    for m in re.finditer(r"port +(\S+): rx pkts=(\d+).*?drop=(\d+).*?\n +tx pkts=(\d+).*?drop=(\d+)",
                         open(path).read()):
        out[m.group(1)] = dict(rx=int(m.group(2)), rx_drop=int(m.group(3)),
                               tx=int(m.group(4)), tx_drop=int(m.group(5)))
    return out


def main():
    low, high = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    before, after = ports(sys.argv[3]), ports(sys.argv[4])
    line = [l for l in open(sys.argv[5]) if l.startswith("skbnfd: ") and " rx " in l][-1]
    rx = int(re.search(r" rx (\d+),", line).group(1))
    tx = int(re.search(r" tx (\d+),", line).group(1))
    drops = {k: int(v) for k, v in
             re.findall(r"(\w+)=(\d+)", line.split("drops ", 1)[1].split(", rx_nombuf")[0])}
    nums = {m.group(2): m.group(1) for m in re.finditer(r" (\d+)\(([^)]+)\):", open(sys.argv[6]).read())}

    def delta(name):
        n = nums[name]
        return {k: after[n][k] - before[n][k] for k in after[n]}

    si, so, v0, v1 = delta(sys.argv[7]), delta(sys.argv[8]), delta("vhu0"), delta("vhu1")
    nr = json.loads(sys.argv[9]) if len(sys.argv) > 9 else None
    sent = low["sent"] + high["sent"] + (nr["sent"] if nr else 0)
    delivered = low["delivered"] + high["delivered"] + (nr["delivered"] if nr else 0)
    ovs = {"in rx_drop": si["rx_drop"], "vhu0 tx_drop (incl. ovs_tx_failure_drops)": v0["tx_drop"],
           "vhu1 rx_drop": v1["rx_drop"], "out tx_drop": so["tx_drop"]}
    skb = sum(drops.values())
    print(f"  low rate {low['rate_pps']:.0f}/s: sent {low['sent']}, delivered {low['delivered']}; "
          f"burst: sent {high['sent']}, delivered {high['delivered']}")
    print(f"  sent {sent} = delivered {delivered} + OVS drops {sum(ovs.values())} {ovs} + skbnfd "
          f"drops {skb} {drops}")
    hops = [("sent == OVS rx on the in port", sent, si["rx"] + si["rx_drop"]),
            ("in rx == vhu0 tx + tx drop", si["rx"], v0["tx"] + v0["tx_drop"]),
            ("vhu0 tx == skbnfd rx", v0["tx"], rx),
            ("skbnfd rx == tx + drops", rx, tx + skb),
            ("skbnfd tx == vhu1 rx + rx drop", tx, v1["rx"] + v1["rx_drop"]),
            ("vhu1 rx == out tx + tx drop", v1["rx"], so["tx"] + so["tx_drop"]),
            ("out tx == delivered", so["tx"], delivered)]
    ok = True
    for name, a, b in hops:
        if a != b:
            print(f"  MISMATCH {name}: {a} != {b}")
            ok = False
    if sent != delivered + sum(ovs.values()) + skb:
        print("  MISMATCH: sent != delivered + drops")
        ok = False
    if nr:
        print(f"  route deleted: sent {nr['sent']}, delivered {nr['delivered']}, skbnfd no_route "
              f"{drops.get('no_route')}")
        if nr["delivered"] != 0 or drops.get("no_route") != nr["sent"] or nr["bad"]:
            print("  MISMATCH: frames to a deleted route must all be no_route drops")
            ok = False
    if low["delivered"] != low["sent"]:
        print(f"  LOSS at {low['rate_pps']:.0f}/s: {low['sent'] - low['delivered']}")
        ok = False
    if low["bad"] or high["bad"] or low["duplicates"] or high["duplicates"]:
        print(f"  BAD frames: {low['bad_first'] + high['bad_first']}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
