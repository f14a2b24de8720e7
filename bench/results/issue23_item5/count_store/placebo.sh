#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# placebo.sh N binA binA2 binB [strategy]: issue 33 item 7's placebo for the count-cost
# experiment. A = 0a82a66 built in one tree, A2 = the same commit built again in another tree
# (the placebo: no change, another build), B = 0a82a66 + no_count.patch. Each round runs all
# three, the order rotated (A A2 B, A2 B A, B A A2), one skbnfd io run each as ab.sh's `one`:
# the median of the last five per-second rx rates (Mpps). Prints: round A A2 B.
N=$1; A=$2; A2=$3; B=$4; S=${5:-headpool}
one(){ $1 --listen=127.0.0.1:0 --metrics-addr=off --mode=io --strategy=$S --mbufs=32768 --duration=6.3 --stats=1 -- -l 0,1 -m 1024 --no-pci --in-memory --file-prefix=pl$$ --vdev=net_null0 --vdev=net_null1 2>&1 | grep -o "rx [0-9.]*M pps" | awk '{print $2}' | sed 's/M//' | tail -5 | sort -n | sed -n 3p; }
for i in $(seq 1 $N); do
  case $((i % 3)) in
    1) a=$(one $A); a2=$(one $A2); b=$(one $B) ;;
    2) a2=$(one $A2); b=$(one $B); a=$(one $A) ;;
    0) b=$(one $B); a=$(one $A); a2=$(one $A2) ;;
  esac
  echo "$i $a $a2 $b"
done
