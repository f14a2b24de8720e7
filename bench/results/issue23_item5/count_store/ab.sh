#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ab.sh N binA binB [strategy] : alternate A/B skbnfd io runs, print median pps of each run
N=$1; A=$2; B=$3; S=${4:-headpool}
one(){ $1 --listen=127.0.0.1:0 --metrics-addr=off --mode=io --strategy=$S --mbufs=32768 --duration=6.3 --stats=1 -- -l 0,1 -m 1024 --no-pci --in-memory --file-prefix=ab$$ --vdev=net_null0 --vdev=net_null1 2>&1 | grep -o "rx [0-9.]*M pps" | awk '{print $2}' | sed 's/M//' | tail -5 | sort -n | sed -n 3p; }
for i in $(seq 1 $N); do
  if (( i % 2 )); then a=$(one $A); b=$(one $B); else b=$(one $B); a=$(one $A); fi
  echo "$i A $a B $b $(echo "scale=3; $b/$a" | bc)"
done
