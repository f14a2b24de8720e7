#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Soak on a real attachment (issue 22, item 7): skbnfd in l3 between two vhost-user ports of
# Open vSwitch with DPDK (Debian's openvswitch-switch-dpdk 3.1), for 30 minutes by default, with
#   - traffic: raw-socket IPv4 frames at a fixed low rate (default 300/s) from an OVS internal
#     port through skbnfd to the other internal port, every frame checked on arrival
#     (tests/integration/raw_traffic.py: MACs, TTL-1, checksum, payload), one batch per minute;
#   - hot swaps through every strategy (--swap-cycle, one swap a second);
#   - route churn over gRPC (skbnfctl): more-specific routes over the traffic's destinations,
#     to the same next hop, added and deleted in a loop, so no frame may be lost to them;
# and each minute samples skbnfd's RSS (VmRSS), open file descriptors (/proc/<pid>/fd),
# hugepage use (HugetlbPages of skbnfd, and the system's HugePages_Total - HugePages_Free) and
# that minute's frames, into a raw CSV. At the end (SIGTERM): exit 0, an exact audit, and the
# checks: 0 frames lost or wrong over the whole run; fds and hugepage use identical every
# minute; RSS flat (after the first minute, max - min <= 1 MiB; the first sample is the
# warm-up). A benchmark script, not a CI test; the OVS set-up is the one of
# tests/integration/ovs_dpdk_test.sh (see there why queue_size=1024).
#
# Usage: bench/ovs_soak.sh <skbnfd> <skbnfctl> [minutes (30)] [csv (bench/results/ovs_soak.csv)]
#        [rate frames/s (300)]
# Exit 0 when every check holds, 1 otherwise (the CSV and a summary are written either way).
set -euo pipefail
SKBNFD=$1
CTLBIN=$2
MINUTES=${3:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
CSV=${4:-$HERE/results/ovs_soak.csv}
RATE=${5:-300}
IT=$HERE/../tests/integration
VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
T=$(mktemp -d /tmp/skbnf-soak.XXXXXX)
STATE=$T/huge.json
SI=ssi$$; SO=sso$$
PID=
CHURN=
. "$IT/../support/ovs_dpdk.sh"
ovs_env
cleanup() {
  [ -n "$CHURN" ] && kill "$CHURN" 2>/dev/null || true
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ovs_stop
  python3 "$IT/../support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
die() { echo "ovs_soak: $*" >&2; tail -20 "$T/skb.log" >&2 2>/dev/null || true; exit 1; }
[ -x "$VSWITCHD" ] || die "$VSWITCHD not installed (openvswitch-switch-dpdk)"
MNT=$(python3 "$IT/../support/hugepages.py" ensure 600 --state "$STATE")

ovs_start "skbnf-soak-ovs-$$"

KI=$(cat "/sys/class/net/$SI/address"); KO=$(cat "/sys/class/net/$SO/address")
M0=02:00:00:00:5b:00; M1=02:00:00:00:5b:01
cat >"$T/skb.conf" <<CONF
mode l3
port net_virtio_user0 peer=net_virtio_user1 dst_mac=$KI
port net_virtio_user1 peer=net_virtio_user0 dst_mac=$KO
route 10.1.0.0/16 net_virtio_user1 $KO
route 10.0.0.0/16 net_virtio_user0 $KI
CONF
"$SKBNFD" --listen=127.0.0.1:0 --metrics-addr=off --config="$T/skb.conf" --stats=0 \
  --swap-cycle='headpool;recycle+magazine;magazine;recycle+headpool;lcache:size=64+magazine' \
  --swap-every=1 \
  -- -l 0,1 --no-pci --single-file-segments --huge-dir="$MNT" --file-prefix="skbnf-soak-$$" \
  "--vdev=net_virtio_user0,path=$T/vhu0.sock,server=1,queues=1,queue_size=1024,mac=$M0" \
  "--vdev=net_virtio_user1,path=$T/vhu1.sock,server=1,queues=1,queue_size=1024,mac=$M1" \
  >"$T/skb.log" 2>&1 &
PID=$!
for _ in $(seq 300); do
  grep -q "^mode " "$T/skb.log" && break
  kill -0 "$PID" 2>/dev/null || die "skbnfd did not start"
  sleep 0.1
done
grep -q "^mode l3" "$T/skb.log" || die "skbnfd not forwarding in l3"
ADDR=$(grep -o "gRPC on [0-9.]*:[0-9]*" "$T/skb.log" | awk '{print $3}')

# Route churn: counts its changes in $T/churn.n (one line per completed cycle of 6).
(
  while :; do
    for r in 10.1.0.0/24 10.1.0.32/27 10.1.0.1/32; do
      "$CTLBIN" --addr="$ADDR" routes add "$r" 1 "$KO" >/dev/null 2>>"$T/churn.err" || exit 1
    done
    for r in 10.1.0.32/27 10.1.0.0/24 10.1.0.1/32; do
      "$CTLBIN" --addr="$ADDR" routes del "$r" >/dev/null 2>>"$T/churn.err" || exit 1
    done
    echo 6 >>"$T/churn.n"
    sleep 0.5
  done
) &
CHURN=$!

mkdir -p "$(dirname "$CSV")"
{
  echo "# ovs_soak: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, OVS $("$VSWITCHD" --version | head -1 | awk '{print $NF}'), $MINUTES minute(s) at $RATE frames/s, l3, swaps every 1 s, route churn over gRPC"
  echo "minute,t_s,sent,delivered,lost,bad,duplicates,rss_kb,fds,hugetlb_kb,sys_hugepages_used,route_changes,swaps_ok"
} >"$CSV"
START=$(date +%s)
for m in $(seq "$MINUTES"); do
  kill -0 "$CHURN" 2>/dev/null || die "route churn failed: $(cat "$T/churn.err")"
  R=$(python3 "$IT/raw_traffic.py" --tx "$SI" --rx "$SO" --count $((RATE * 58)) --rate "$RATE" \
      --dst-mac "$M0" --src-mac "$KI" --expect-dst-mac "$KO" --expect-src-mac "$M1" \
      --ttl-dec 1 --dst-spread 50 --linger 2)
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$PID/status")
  huge=$(awk '/^HugetlbPages:/{print $2}' "/proc/$PID/status")
  fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
  sysh=$(awk '/^HugePages_Total:/{t=$2} /^HugePages_Free:/{f=$2} END{print t-f}' /proc/meminfo)
  changes=$(( $(wc -l <"$T/churn.n" 2>/dev/null || echo 0) * 6 ))
  swaps=$(grep -c "^swap ok" "$T/skb.log" || true)
  python3 - "$R" "$m" "$(( $(date +%s) - START ))" "$rss" "$fds" "$huge" "$sysh" "$changes" \
    "$swaps" >>"$CSV" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
m, t, rss, fds, huge, sysh, changes, swaps = sys.argv[2:]
print(",".join(map(str, [m, t, r["sent"], r["delivered"], r["sent"] - r["delivered"], r["bad"],
                          r["duplicates"], rss, fds, huge, sysh, changes, swaps])))
PY
  tail -1 "$CSV"
done
kill "$CHURN" 2>/dev/null || true
wait "$CHURN" 2>/dev/null || true
CHURN=
kill -TERM "$PID"
set +e; wait "$PID"; rc=$?; set -e
PID=
exitline=$(grep "^skbnfd: " "$T/skb.log" | tail -1)
echo "# skbnfd exit status $rc: $exitline" >>"$CSV"
python3 - "$CSV" "$rc" <<'PY'
import csv, sys
path, rc = sys.argv[1], int(sys.argv[2])
rows = [r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))]
exitline = [l for l in open(path) if l.startswith("# skbnfd exit")][-1]
col = lambda k: [int(r[k]) for r in rows]
later = rows[1:] if len(rows) > 1 else rows
rss = [int(r["rss_kb"]) for r in later]
checks = {
    "0 frames lost": sum(col("lost")) == 0,
    "0 frames wrong or duplicated": sum(col("bad")) + sum(col("duplicates")) == 0,
    "open fds flat": len(set(col("fds"))) == 1,
    "skbnfd hugepage use flat": len(set(col("hugetlb_kb"))) == 1,
    "system hugepage use flat": len(set(col("sys_hugepages_used"))) == 1,
    "RSS flat after minute 1 (max-min <= 1024 kB)": max(rss) - min(rss) <= 1024,
    "route changes and swaps happened": col("route_changes")[-1] > 0 and col("swaps_ok")[-1] > 0,
    "exit 0 with an exact audit": rc == 0 and "audit OK (exact" in exitline,
}
with open(path, "a") as f:
    f.write(f"# summary: {len(rows)} minute(s), sent {sum(col('sent'))}, delivered "
            f"{sum(col('delivered'))}, RSS {min(rss)}..{max(rss)} kB after minute 1, fds "
            f"{sorted(set(col('fds')))}, hugetlb kB {sorted(set(col('hugetlb_kb')))}, route changes "
            f"{col('route_changes')[-1]}, swaps {col('swaps_ok')[-1]}\n")
    for k, v in checks.items():
        f.write(f"# check {'ok  ' if v else 'FAIL'} {k}\n")
print(open(path).read().split("\n# summary", 1)[1] if "\n# summary" in open(path).read() else "")
sys.exit(0 if all(checks.values()) else 1)
PY
