#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An hour of churn (issue 34 item 6): skbnfd in l3 between two vhost-user ports of Open vSwitch
# with DPDK (Debian's openvswitch-switch-dpdk 3.1, set up as tests/support/ovs_dpdk.sh does),
# for MINUTES (60), with all of this at once:
#   - traffic: raw-socket IPv4 frames in batches of BATCH_S (10) seconds at RATE (300) frames/s
#     from an OVS internal port through skbnfd to the other internal port, every frame checked
#     on arrival (tests/integration/raw_traffic.py);
#   - control load from one client process (build/server/churn_client, bench/churn_client.cc):
#     a swap every SWAP_EVERY_S (10) seconds through five strategies, ROUTE_OPS (100) route
#     adds/deletes per second (/32 routes over the traffic's destinations to the same next hop,
#     so no frame may be lost to them), WATCHERS (8) WatchStats streams;
#   - a config reload every RELOAD_EVERY_S (60) seconds: the --config file's `strategy` line
#     changes (a real reload, applied as a hot swap; the file's routes stay as they are, since a
#     route change in the file makes the live table equal to the file and would remove the
#     churn's gRPC routes: the two paths are exercised without fighting);
#   - Open vSwitch restarted every OVS_RESTART_EVERY_S (600) seconds: ovs-vswitchd SIGKILLed and
#     started on the same database, flows re-added as a controller would, between two batches;
#     the next batch waits for readiness SERVING (bounded).
# Every SAMPLE (after each batch, i.e. every BATCH_S seconds): skbnfd's RSS, open descriptors,
# threads and hugepage use, the batch's sent/delivered and the drops counted for it (skbnfd's
# drops by reason and rx_nombuf over its ports, OVS's rx/tx dropped and errors on the four
# interfaces), into a raw CSV. At the end (SIGTERM): exit 0 with an exact audit, and checks:
#   sent == delivered + counted drops for every batch (nothing unaccounted); no frame bad;
#   no control call failed; the reloads were applied; the OVS restarts happened;
#   RSS, descriptors and threads flat after the first WARMUP_S (300) seconds: RSS's highest
#   sample after it within RSS_TOL (1 %) of the first sample after it (threads: the last third's
#   peak not above the first third's; gRPC's synchronous server grows and shrinks its pool by one or two with the load),
#   descriptors' floor unchanged (the lowest count of the last third that of the first; a
#   connection-age GOAWAY, --grpc-max-connection-age, keeps each old client connection open
#   next to its successor for 60 s: rises of at most one per client connection); a WatchStats
#   stream the server ends UNAVAILABLE at that age is reopened, counted, not an error.
# SKBNFD_FLAGS: extra skbnfd flags (e.g. --grpc-max-connection-age=60 to meet that age in minutes).
# bench/churn_report.py makes the checks, the summary and the plot from the raw files (it can be
# run again on them). Writes OUT/churn.csv, OUT/churn.png (plot), OUT/client.json (the control client's counts),
# OUT/COMMAND; exit 0 when every check holds.
#
# Usage: bench/churn.sh BUILD_DIR [MINUTES (60)] [OUT (bench/results/churn)]
# ctest integration.churn runs a 2-minute version (tests/integration/CMakeLists.txt):
#   MINUTES=2, OVS_RESTART_EVERY_S=60, RELOAD_EVERY_S=30, WARMUP_S=30, RSS_TOL=0.03 (two minutes
#   hardly leave the warm-up: the hour's run is where RSS is held to 1 %).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
MINUTES=${2:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${3:-$HERE/results/churn}
BATCH_S=${BATCH_S:-10}
RATE=${RATE:-300}
SWAP_EVERY_S=${SWAP_EVERY_S:-10}
ROUTE_OPS=${ROUTE_OPS:-100}
WATCHERS=${WATCHERS:-8}
RELOAD_EVERY_S=${RELOAD_EVERY_S:-60}
OVS_RESTART_EVERY_S=${OVS_RESTART_EVERY_S:-600}
WARMUP_S=${WARMUP_S:-300}
RSS_TOL=${RSS_TOL:-0.01}
SKBNFD=$BUILD/server/skbnfd
CTL=$BUILD/server/skbnfctl
HEALTH=$BUILD/server/skbnf_health
CLIENT=$BUILD/server/churn_client
IT=$HERE/../tests/integration
OVS_VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
T=$(mktemp -d /tmp/skbnf-churn.XXXXXX)
STATE=$T/huge.json
SI=sci$$; SO=sco$$
PID= CPID=
. "$HERE/../tests/support/ovs_dpdk.sh"
ovs_env
cleanup() {
  [ -n "$CPID" ] && kill -KILL "$CPID" 2>/dev/null || true
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ovs_stop
  python3 "$HERE/../tests/support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
die() {
  echo "churn: $*" >&2
  tail -20 "$T/skb.log" >&2 2>/dev/null || true
  exit 1
}
for b in "$SKBNFD" "$CTL" "$HEALTH" "$CLIENT" "$OVS_VSWITCHD"; do
  [ -x "$b" ] || die "$b missing (build with -DSKBNF_BENCH=ON; deploy/deps.sh installs OVS)"
done
MNT=$(python3 "$HERE/../tests/support/hugepages.py" ensure 600 --state "$STATE")
ovs_start "skbnf-churn-ovs-$$"

KI=$(cat "/sys/class/net/$SI/address"); KO=$(cat "/sys/class/net/$SO/address")
M0=02:00:00:00:5d:00; M1=02:00:00:00:5d:01
SPECS=(magazine headpool)  # the config file's strategy line alternates between these
write_conf() {  # strategy
  cat >"$T/skb.conf.new" <<CONF
mode l3
strategy $1
port net_virtio_user0 peer=net_virtio_user1 dst_mac=$KI
port net_virtio_user1 peer=net_virtio_user0 dst_mac=$KO
route 10.1.0.0/16 net_virtio_user1 $KO
route 10.0.0.0/16 net_virtio_user0 $KI
CONF
  mv "$T/skb.conf.new" "$T/skb.conf"  # one rename: the watcher never reads half a file
}
write_conf "${SPECS[0]}"
# shellcheck disable=SC2086  # SKBNFD_FLAGS: extra skbnfd flags, split on spaces
"$SKBNFD" --listen="unix:$T/control.sock" --metrics-addr=127.0.0.1:0 --config="$T/skb.conf" ${SKBNFD_FLAGS:-} \
  --stats=0 --ready-file="$T/ready.json" \
  -- -l 0,1 --no-pci --single-file-segments --huge-dir="$MNT" --file-prefix="skbnf-churn-$$" \
  "--vdev=net_virtio_user0,path=$T/vhu0.sock,server=1,queues=1,queue_size=1024,mac=$M0" \
  "--vdev=net_virtio_user1,path=$T/vhu1.sock,server=1,queues=1,queue_size=1024,mac=$M1" \
  >"$T/skb.log" 2>&1 &
PID=$!
ADDR=unix:$T/control.sock
wait_for() {  # what, bound in tenths of a second, command...
  local what=$1 n=$2 i
  shift 2
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    kill -0 "$PID" 2>/dev/null || die "skbnfd exited while waiting for: $what"
    sleep 0.1
  done
  die "not within $((n / 10)) s: $what"
}
ready() { "$HEALTH" --addr="$ADDR" --service=readiness --timeout=2 >/dev/null 2>&1; }
wait_for "skbnfd's ready file" 600 test -s "$T/ready.json"
MPORT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics_port"])' \
  "$T/ready.json")
wait_for "readiness SERVING at start" 600 ready

counted_drops() {  # skbnfd's drops + rx_nombuf, and OVS's dropped + errors on its four ports
  local s o
  s=$("$CTL" --addr="$ADDR" --json stats | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(int(d.get("packets", 0)) for c in r["cores"] for p in c.get("ports", [])
          for d in p.get("drops", [])) +
      sum(int(p.get("rx_nombuf", 0)) for c in r["cores"] for p in c.get("ports", [])))')
  # OVS's counters read live (`ovs-appctl dpctl/show -s` asks each netdev now; the Interface
  # table's statistics column is refreshed only every stats-update-interval, 5 s by default,
  # which moved drops into the next batch). For the internal ports (taps) OVS's figures ARE the
  # kernel's, swapped, plus what OVS itself failed to write to the tap (openvswitch
  # lib/netdev-linux.c, netdev_tap_get_stats: swap_uint64(&stats->rx_dropped,
  # &stats->tx_dropped) ... stats->tx_dropped += netdev->tx_dropped): reading the kernel's
  # /sys/class/net/<tap>/statistics as well counted each such drop twice (seen as a negative
  # `unaccounted` when the machine was loaded).
  o=$(ovs-appctl -t "$T/ovs-vswitchd-dpdk.$(cat "$T/ovs-vswitchd.pid").ctl" dpctl/show -s |
      python3 -c '
import re, sys
want = set(sys.argv[1:])
total, port = 0, None
for line in sys.stdin:
    m = re.match(r"\s+port \d+: (\S+)", line)
    if m:
        port = m.group(1)
        continue
    if port in want and re.match(r"\s+(RX|TX) packets:", line):
        total += sum(int(v) for v in re.findall(r"(?:dropped|errors):(\d+)", line))
print(total)' vhu0 vhu1 "$SI" "$SO")
  echo $((s + o))
}
reloads() {  # skbnf_config_reloads_total: ok,unchanged,error
  curl -s "http://127.0.0.1:$MPORT/metrics" | python3 -c '
import re, sys
v = dict(re.findall(r"^skbnf_config_reloads_total\{result=\"(\w+)\"\} (\S+)$", sys.stdin.read(), re.M))
print(",".join(str(int(float(v.get(k, 0)))) for k in ("ok", "unchanged", "error")))'
}

"$CLIENT" --addr="$ADDR" --seconds=$((MINUTES * 60 + 60)) --route-ops-per-second="$ROUTE_OPS" \
  --next-hop-port=1 --next-hop-mac="$KO" --watchers="$WATCHERS" --swap-every-s="$SWAP_EVERY_S" \
  >"$T/client.json" 2>"$T/client.err" &
CPID=$!

mkdir -p "$OUT"
CSV=$OUT/churn.csv
{
  echo "# churn: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, OVS $("$OVS_VSWITCHD" --version | head -1 | awk '{print $NF}'), $MINUTES min; batches of ${BATCH_S}s at $RATE/s; swap every ${SWAP_EVERY_S}s, $ROUTE_OPS route ops/s, $WATCHERS watchers, reload every ${RELOAD_EVERY_S}s, OVS restart every ${OVS_RESTART_EVERY_S}s"
  echo "sample,t_s,event,sent,delivered,counted_drops,unaccounted,bad,duplicates,rss_kb,fds,threads,hugetlb_kb,reloads_ok,reloads_unchanged,reloads_error"
} >"$CSV"
echo "SKBNFD_FLAGS='${SKBNFD_FLAGS:-}' BATCH_S=$BATCH_S RATE=$RATE SWAP_EVERY_S=$SWAP_EVERY_S ROUTE_OPS=$ROUTE_OPS WATCHERS=$WATCHERS RELOAD_EVERY_S=$RELOAD_EVERY_S OVS_RESTART_EVERY_S=$OVS_RESTART_EVERY_S WARMUP_S=$WARMUP_S RSS_TOL=$RSS_TOL bench/churn.sh BUILD $MINUTES OUT" >"$OUT/COMMAND"

START=$(date +%s)
END=$((START + MINUTES * 60))
next_reload=$((START + RELOAD_EVERY_S)); next_restart=$((START + OVS_RESTART_EVERY_S))
reloads=0 restarts=0 n=0 spec_i=0
while [ "$(date +%s)" -lt "$END" ]; do
  kill -0 "$CPID" 2>/dev/null || die "churn_client ended early: $(cat "$T/client.err" "$T/client.json")"
  event=
  now=$(date +%s)
  if [ "$now" -ge "$next_reload" ]; then
    spec_i=$(((spec_i + 1) % 2)); write_conf "${SPECS[$spec_i]}"
    reloads=$((reloads + 1)); next_reload=$((next_reload + RELOAD_EVERY_S)); event=reload
  fi
  if [ "$now" -ge "$next_restart" ]; then
    opid=$(cat "$T/ovs-vswitchd.pid")
    kill -KILL "$opid"
    gone() { ! kill -0 "$opid" 2>/dev/null; }
    wait_for "the SIGKILLed ovs-vswitchd gone" 100 gone
    "$OVS_VSWITCHD" "unix:$T/db.sock" --pidfile="$T/ovs-vswitchd.pid" --detach \
      --log-file="$T/ovs-vswitchd.log"
    wait_for "OVS's internal ports back" 300 test -e "/sys/class/net/$SO"
    ovs_links_and_flows
    wait_for "readiness SERVING after the OVS restart" 300 ready
    restarts=$((restarts + 1)); next_restart=$((next_restart + OVS_RESTART_EVERY_S))
    event=${event:+$event+}ovs_restart
  fi
  d0=$(counted_drops)
  R=$(python3 "$IT/raw_traffic.py" --tx "$SI" --rx "$SO" --count $((RATE * BATCH_S)) \
      --rate "$RATE" --dst-mac "$M0" --src-mac "$KI" --expect-dst-mac "$KO" \
      --expect-src-mac "$M1" --ttl-dec 1 --dst-spread 50 --linger 1)
  d1=$(counted_drops)
  n=$((n + 1))
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$PID/status")
  thr=$(awk '/^Threads:/{print $2}' "/proc/$PID/status")
  huge=$(awk '/^HugetlbPages:/{print $2}' "/proc/$PID/status")
  fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
  python3 - "$R" "$n" "$(($(date +%s) - START))" "${event:--}" "$((d1 - d0))" "$rss" "$fds" \
    "$thr" "$huge" "$(reloads)" >>"$CSV" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
n, t, ev, drops, rss, fds, thr, huge, rel = sys.argv[2:]
un = r["sent"] - r["delivered"] - int(drops)
print(",".join(map(str, [n, t, ev, r["sent"], r["delivered"], drops, un, r["bad"],
                          r["duplicates"], rss, fds, thr, huge, rel])))  # rel: ok,unchanged,error
PY
  tail -1 "$CSV"
done
kill -TERM "$CPID" 2>/dev/null || true
set +e; wait "$CPID"; crc=$?; set -e
CPID=
kill -TERM "$PID"
set +e; wait "$PID"; rc=$?; set -e
PID=
exitline=$(grep "^skbnfd: " "$T/skb.log" | tail -1 || true)
{
  echo "# churn_client exit $crc: $(cat "$T/client.json") $(head -c 500 "$T/client.err" | tr '\n' ' ')"
  echo "# skbnfd exit status $rc: $exitline"
  echo "# reloads written $reloads, OVS restarts $restarts"
} >>"$CSV"
cp "$T/client.json" "$OUT/client.json"
/usr/bin/python3 "$HERE/churn_report.py" --csv "$CSV" --client "$OUT/client.json" --exit-status "$rc" \
  --client-exit "$crc" --reloads "$reloads" --restarts "$restarts" --warmup "$WARMUP_S" \
  --rss-tol "$RSS_TOL" --connections $((WATCHERS + 2)) --plot "$OUT/churn.png"
