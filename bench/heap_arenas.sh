#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The heap under control churn, without a peer (the reason for skbnfd's two malloc arenas,
# server/daemon/skbnfd.cc main): skbnfd in l3 on two net_null ports (no hugepages: EAL's memory
# is then anonymous too, the same in every run), under bench/churn_client at ROUTE_OPS (1000)
# route adds/deletes per second, a swap every SWAP (1) s, WATCHERS (8) WatchStats streams and a
# config reload every RELOAD (6) s: ten times the hour of churn's rates (bench/churn.sh).
# Every 10 s: VmRSS, the process's anonymous memory (smaps_rollup), the main heap's RSS
# ([heap] in smaps), threads and descriptors, into OUT.csv. ENVV: environment for skbnfd
# (e.g. MALLOC_ARENA_MAX=16, glibc's default on 2 cores: 8 x cores).
# Usage: bench/heap_arenas.sh BUILD_DIR SECONDS OUT.csv
set -u
B=$1; S=$2; OUT=$3
ROUTE_OPS=${ROUTE_OPS:-1000}; SWAP=${SWAP:-1}; RELOAD=${RELOAD:-6}; WATCHERS=${WATCHERS:-8}
T=$(mktemp -d "$HOME/skbnf-heap.XXXX")
M=02:00:00:00:5d:01
conf() {
  printf 'mode l3\nstrategy %s\nport net_null0 peer=net_null1 dst_mac=%s\nport net_null1 peer=net_null0 dst_mac=%s\nroute 10.1.0.0/16 net_null1 %s\nroute 10.0.0.0/16 net_null0 %s\n' \
    "$1" $M $M $M $M >"$T/c.new"
  mv "$T/c.new" "$T/skb.conf"
}
conf magazine
# shellcheck disable=SC2086
env ${ENVV:-} "$B/server/skbnfd" --listen="unix:$T/control.sock" --metrics-addr=127.0.0.1:0 \
  --config="$T/skb.conf" --stats=0 --ready-file="$T/ready.json" -- -l 0,1 --no-huge -m 512 \
  --no-pci --no-shconf --file-prefix="heap$$" --vdev=net_null0 --vdev=net_null1 >"$T/skb.log" 2>&1 &
P=$!
for _ in $(seq 100); do [ -s "$T/ready.json" ] && break; sleep 0.1; done
[ -s "$T/ready.json" ] || { cat "$T/skb.log"; kill "$P"; exit 1; }
"$B/server/churn_client" --addr="unix:$T/control.sock" --seconds=$((S + 30)) \
  --route-ops-per-second="$ROUTE_OPS" --next-hop-port=1 --next-hop-mac=$M --watchers="$WATCHERS" \
  --swap-every-s="$SWAP" >"$T/client.json" 2>"$T/client.err" &
C=$!
{
  echo "# heap_arenas: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, git $(git -C "$(dirname "$0")" rev-parse --short HEAD), ENVV='${ENVV:-}', ROUTE_OPS=$ROUTE_OPS SWAP=$SWAP RELOAD=$RELOAD WATCHERS=$WATCHERS, $S s"
  echo "t_s,rss_kb,anon_kb,heap_kb,threads,fds"
} >"$OUT"
st=$(date +%s); k=0
while [ $(($(date +%s) - st)) -lt "$S" ]; do
  sleep 10; k=$((k + 1))
  if [ $((k * 10 % RELOAD)) -lt 10 ]; then
    if [ $((k % 2)) = 0 ]; then conf magazine; else conf headpool; fi
  fi
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$P/status")
  anon=$(awk '/^Anonymous:/{print $2}' "/proc/$P/smaps_rollup")
  heap=$(awk '/\[heap\]/{f=1;next} f&&/^Rss:/{print $2; exit}' "/proc/$P/smaps")
  thr=$(awk '/^Threads:/{print $2}' "/proc/$P/status")
  echo "$(($(date +%s) - st)),$rss,$anon,$heap,$thr,$(find "/proc/$P/fd" -mindepth 1 | wc -l)" >>"$OUT"
done
kill -TERM "$C"; kill -TERM "$P"; wait "$P"; rc=$?
echo "# skbnfd exit $rc; client: $(cat "$T/client.json")" >>"$OUT"
# growth: the peak of the last third of the samples against the peak of the first third
python3 - "$OUT" <<'PY'
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if l[0].isdigit()]
rss = [int(r[1]) for r in rows]
n = len(rss) // 3
a, b = max(rss[:n]), max(rss[-n:])
line = "# rss first-third peak %d kB, last-third peak %d kB: %+.2f %%" % (a, b, 100.0 * (b - a) / a)
print(line)
open(sys.argv[1], "a").write(line + "\n")
PY
rm -rf "$T"
exit "$rc"
