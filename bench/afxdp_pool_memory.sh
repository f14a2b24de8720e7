#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The mbuf pool's memory with --no-huge on AF_XDP (the chart's af_xdp mode): skbnf's packed
# slabs against DPDK's ring_mp_mc, the same number of mbufs. A benchmark, not a test.
#
# Why it differs: on 4 KiB pages DPDK's default populate (rte_mempool_op_populate_helper) does
# not let an object cross a page boundary, and an mbuf with its 2 KiB data room is ~2.3 KiB,
# so it lays out one mbuf per 4 KiB page; skbnf's store packs its slabs. The AF_XDP PMD
# registers the pool's memory as its UMEM and the kernel pins it, so every page is resident:
# the process's RSS is the honest measure.
#
# How: skbnfd (io mode, two net_af_xdp ports on veth pairs in a namespace this script creates
# and removes, copy mode), EAL --no-huge -m 1024; once it forwards ("mode" line), read
# /proc/<pid>/smaps_rollup (Rss, Pss) and the pool line; then SIGTERM (exit 0, exact audit
# checked). Each (pool ops, mbufs) run is repeated REPS times; two pool sizes give the cost per
# mbuf as the slope, free of everything the process has besides the pool.
# Usage: bench/afxdp_pool_memory.sh <skbnfd> [reps (default 3)] > bench/results/afxdp_pool_memory.txt
set -euo pipefail
SKBNFD=$1
REPS=${2:-3}
NS=skbnf-mem-$$
LOG=$(mktemp)
PID=
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -f "$LOG"
}
trap cleanup EXIT
ip netns add "$NS"
for p in "xa ka" "xb kb"; do
  set -- $p
  ip -n "$NS" link add "$1" type veth peer name "$2"
  for i in "$1" "$2"; do
    ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
    ip -n "$NS" link set "$i" up
  done
done
echo "# afxdp_pool_memory: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $("$SKBNFD" --version 2>&1 | head -1)"
echo "# skbnfd --mode=io, 2 x net_af_xdp (veth, copy mode), EAL --no-huge -m 1024; kB from /proc/<pid>/smaps_rollup"
echo "pool_ops,mbufs,rep,rss_kb,pss_kb,anon_kb,exit,audit"
RAW=$(mktemp)
for ops in skbnf ring_mp_mc; do
  for n in 16384 65536; do
    for rep in $(seq "$REPS"); do
      ip netns exec "$NS" "$SKBNFD" --listen=127.0.0.1:0 --metrics-addr=off --mode=io --stats=0 \
        --pool-ops="$ops" --mbufs="$n" -- -l 0,1 --no-huge -m 1024 --no-pci --no-shconf \
        --file-prefix="skbnf-mem-$$" --vdev=net_af_xdp0,iface=xa --vdev=net_af_xdp1,iface=xb \
        >"$LOG" 2>&1 &
      PID=$!
      for _ in $(seq 300); do
        grep -q "^mode " "$LOG" && break
        kill -0 "$PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
        sleep 0.1
      done
      grep -q "^mode " "$LOG" || { echo "skbnfd did not start forwarding" >&2; exit 1; }
      r=$(awk '/^Rss:/{r=$2} /^Pss:/{p=$2} /^Anonymous:/{a=$2} END{print r","p","a}' \
          "/proc/$PID/smaps_rollup")
      kill -TERM "$PID"
      set +e; wait "$PID"; rc=$?; set -e
      PID=
      audit=$(grep -q "audit OK (exact" "$LOG" && echo exact || echo NOT-exact)
      echo "$ops,$n,$rep,$r,$rc,$audit" | tee -a "$RAW"
    done
  done
done
# Summary: median RSS per (ops, mbufs); bytes per mbuf = slope between the two sizes.
python3 - "$RAW" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
med = {}
for ops in ("skbnf", "ring_mp_mc"):
    for n in (16384, 65536):
        med[ops, n] = statistics.median(int(r[3]) for r in rows if r[0] == ops and int(r[1]) == n)
print("# summary (median RSS kB; bytes per mbuf = (RSS(65536) - RSS(16384)) * 1024 / 49152)")
per = {}
for ops in ("skbnf", "ring_mp_mc"):
    per[ops] = (med[ops, 65536] - med[ops, 16384]) * 1024 / 49152
    print(f"# {ops}: RSS {med[ops, 16384]} kB at 16384 mbufs, {med[ops, 65536]} kB at 65536; "
          f"{per[ops]:.0f} B per mbuf; 65536 mbufs = {per[ops] * 65536 / 2**20:.0f} MiB")
print(f"# skbnf / ring_mp_mc = {per['skbnf'] / per['ring_mp_mc']:.2f} "
      f"({100 * (1 - per['skbnf'] / per['ring_mp_mc']):.0f}% less pool memory)")
print("# exits all 0 and audits all exact:",
      all(r[6] == "0" and r[7] == "exact" for r in rows))
PY
rm -f "$RAW"
