#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skbnfd attached to Open vSwitch with DPDK by vhost-user, Debian's openvswitch-switch-dpdk 3.1
# (/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk) as the peer, started here with its own
# rundir/db/log and stopped (bridge and ports removed) on every exit path.
#
#   kernel raw socket -> OVS internal port sbiN -> flow -> dpdkvhostuserclient vhu0
#     -> skbnfd net_virtio_user0 (server=1) -> io / mac / l3 (TTL-1, next-hop MAC) -> net_virtio_user1
#     -> vhu1 -> flow -> internal port sboN -> kernel raw socket
#
# Every frame is checked on the far side (tests/integration/raw_traffic.py: MACs, TTL-1, IP
# checksum, payload) and accounted for, exactly, hop by hop, from OVS's live port counters
# (ovs-ofctl dump-ports: tx drop of a dpdkvhostuserclient port includes ovs_tx_failure_drops)
# and skbnfd's exit line (drops by reason), in tests/integration/ovs_accounting.py:
#   sent = delivered + OVS drops (sbi rx, vhu0 tx, vhu1 rx, sbo tx) + skbnfd drops by reason
# At the stated low rate (300 frames/s) nothing may be lost; a burst as fast as a raw socket
# sends then must still add up exactly (OVS's failed transmits into skbnfd's RX ring counted).
# In l3 (with skbnfctl), routes change over gRPC while the low-rate traffic flows (more-specific
# routes to the same next hop added and deleted in a loop: still zero loss), then the covering
# route is deleted and 300 frames sent to it must all be no_route drops, exactly, before it is
# added back for the burst.
#
# Why OVS counted tx failures into skbnfd's RX ring at a few hundred pps (issue 22): virtio_user
# gives each queue VIRTIO_USER_DEF_Q_SZ = 256 descriptors unless `queue_size=` says otherwise
# (DPDK 22.11 drivers/net/virtio/virtio_user_ethdev.c), whatever rte_eth_rx_queue_setup asks:
# 256 frames is under a second of a few hundred pps, and a worker sharing its CPU (here 2 vCPUs
# for OVS's PMD thread, skbnfd and the rest) is descheduled for that long. skbnfd is attached
# with queue_size=1024 (the vhost-user maximum, as skbnfd's --rx-ring default).
#
# Hugepages: tests/support/hugepages.py ensure/release; exit 77 with the reason only when none
# can be had. Usage: [SKBNF_DATAPLANE_GTEST=<dataplane_integration_tests>] ovs_dpdk_test.sh <skbnfd>
# [burst frames (default 3000)] [skbnfctl]
set -euo pipefail
SKBNFD=$1
BURST=${2:-3000}
CTLBIN=${3:-}  # skbnfctl: the multi-queue run's running audit and per-core counters
LOW_RATE=300
LOW_COUNT=1500
HERE=$(cd "$(dirname "$0")" && pwd)
VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
OVS_VSWITCHD=$VSWITCHD
T=$(mktemp -d /tmp/skbnf-ovs.XXXXXX)
STATE=$T/huge.json
SI=sbi$$; SO=sbo$$  # kernel-side internal ports (<= 15 characters)
PID=
. "$HERE/../support/ovs_dpdk.sh"
ovs_env
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ovs_stop
  # skbnfd's EAL hugepage files (not unlinked at exit: they stay for secondary processes;
  # after a killed run nothing removes them): left, they keep pages reserved for the next test.
  [ -n "${MNT:-}" ] && rm -f "$MNT"/skbnf-vu-$$*
  python3 "$HERE/../support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -15 "$T/skb.log" 2>/dev/null; tail -5 "$T/ovs-vswitchd.log"; exit 1; }
[ -x "$VSWITCHD" ] || { echo "SKIP: $VSWITCHD not installed (openvswitch-switch-dpdk)"; exit 77; }
set +e
MNT=$(python3 "$HERE/../support/hugepages.py" ensure 600 --state "$STATE" 2>"$T/err")
rc=$?
set -e
if [ "$rc" -eq 77 ]; then echo "SKIP: $(cat "$T/err")"; exit 77; fi
[ "$rc" -eq 0 ] || fail "hugepages.py ensure: $(cat "$T/err")"

# OVS: its own database and daemon, DPDK on, PMD thread on CPU 0.
ovs_start "skbnf-ovs-$$" other_config:tx-steering=hash
echo "ok: OVS $("$VSWITCHD" --version | head -1 | awk '{print $NF}') up: br0 (netdev), vhu0/vhu1 dpdkvhostuserclient, $SI/$SO internal"

# skbnfd in each mode (io, mac, l3), hot swaps while traffic flows; OVS stays up between runs
# and each run is accounted for from the port counters' difference.
KI=$(cat "/sys/class/net/$SI/address"); KO=$(cat "/sys/class/net/$SO/address")
M0=02:00:00:00:5b:00; M1=02:00:00:00:5b:01
"$SKBNFD" --helpfull >"$T/skb.log" 2>&1 || true
CTL=()
grep -q -- "--listen" "$T/skb.log" && CTL=(--listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off)
ports() { ovs-ofctl dump-ports "$OF"; }
ovs-ofctl show "$OF" >"$T/show"

run_mode() {  # mode [mq]: io (frames unchanged), mac (src = port 1's MAC, dst = its dst_mac), l3
  local mode=$1 mq=${2:-} expect
  case $mode in
    io) expect=(--expect-dst-mac "$M0" --expect-src-mac "$KI" --ttl-dec 0) ;;
    mac) expect=(--expect-dst-mac "$KO" --expect-src-mac "$M1" --ttl-dec 0) ;;
    l3) expect=(--expect-dst-mac "$KO" --expect-src-mac "$M1" --ttl-dec 1) ;;
  esac
  cat >"$T/skb.conf" <<CONF
mode $mode
port net_virtio_user0 peer=net_virtio_user1 dst_mac=$KI
port net_virtio_user1 peer=net_virtio_user0 dst_mac=$KO
CONF
  # mq: two RX queues per port, two workers (lcores 1 and 2 on one CPU), one queue of each port
  # each; OVS spreads flows over skbnfd's queues (tx-steering=hash, OVS 3.1).
  local q=1 lcores=(-l 0,1) mqflags=()
  if [ -n "$mq" ]; then
    q=2 lcores=(--lcores=0@0,1@1,2@1) mqflags=(--rx-queues=2)
    printf 'worker 1 net_virtio_user0:0 net_virtio_user1:0\nworker 2 net_virtio_user0:1 net_virtio_user1:1\n' >>"$T/skb.conf"
  fi
  if [ "$mode" = l3 ]; then
    printf 'route 10.1.0.0/16 net_virtio_user1 %s\nroute 10.0.0.0/16 net_virtio_user0 %s\n' \
      "$KO" "$KI" >>"$T/skb.conf"
  fi
  "$SKBNFD" "${CTL[@]}" "${mqflags[@]}" --config="$T/skb.conf" --stats=0 \
    --swap-cycle='headpool;recycle+magazine;magazine;lcache:size=64+magazine' --swap-every=1 \
    -- "${lcores[@]}" --no-pci --single-file-segments --huge-dir="$MNT" \
    --file-prefix="skbnf-vu-$$" \
    "--vdev=net_virtio_user0,path=$T/vhu0.sock,server=1,queues=$q,queue_size=1024,mac=$M0" \
    "--vdev=net_virtio_user1,path=$T/vhu1.sock,server=1,queues=$q,queue_size=1024,mac=$M1" \
    >"$T/skb.log" 2>&1 &
  PID=$!
  for _ in $(seq 300); do
    grep -q "^mode " "$T/skb.log" && break
    kill -0 "$PID" 2>/dev/null || fail "$mode: skbnfd did not start"
    sleep 0.1
  done
  grep -q "^mode $mode" "$T/skb.log" || fail "$mode: skbnfd not forwarding"
  traffic() {  # count rate [more raw_traffic.py options]
    python3 "$HERE/raw_traffic.py" --tx "$SI" --rx "$SO" --count "$1" --rate "$2" \
      --dst-mac "$M0" --src-mac "$KI" "${expect[@]}" --dst-spread 50 "${@:3}"
  }
  ports >"$T/ports.before"
  local addr="" churn_pid="" nr=""
  addr=$(grep -o "gRPC on [0-9.]*:[0-9]*" "$T/skb.log" | awk '{print $3}' || true)
  if [ "$mode" = l3 ] && [ -z "$mq" ] && [ -n "$CTLBIN" ] && [ -n "$addr" ]; then
    # Route churn over gRPC while the low-rate traffic flows: more-specific routes over the
    # traffic's destinations (10.1.0.1-50) added and deleted in a loop, all to the same next
    # hop, so every frame must still arrive, right, with nothing lost.
    rm -f "$T/churn.n" "$T/churn.err"
    (
      n=0
      while [ ! -f "$T/churn.stop" ]; do
        for r in 10.1.0.0/24 10.1.0.32/27 10.1.0.1/32; do
          "$CTLBIN" --addr="$addr" routes add "$r" 1 "$KO" >/dev/null 2>>"$T/churn.err" || exit 1
        done
        for r in 10.1.0.32/27 10.1.0.0/24 10.1.0.1/32; do
          "$CTLBIN" --addr="$addr" routes del "$r" >/dev/null 2>>"$T/churn.err" || exit 1
        done
        n=$((n + 6))
      done
      echo "$n" >"$T/churn.n"
    ) &
    churn_pid=$!
  fi
  LOW=$(traffic "$LOW_COUNT" "$LOW_RATE")
  if [ -n "$churn_pid" ]; then
    touch "$T/churn.stop"
    wait "$churn_pid" || { cat "$T/churn.err"; fail "l3: route churn over gRPC failed"; }
    rm -f "$T/churn.stop"
    echo "  $(cat "$T/churn.n") route adds/deletes over gRPC during the low-rate run"
    [ "$(cat "$T/churn.n")" -gt 0 ] || fail "l3: no route change happened during the traffic"
    # A deleted route: every frame to it is a no_route drop (delivered 0; counted exactly by
    # ovs_accounting.py from skbnfd's exit line), then the route comes back for the burst.
    "$CTLBIN" --addr="$addr" routes del 10.1.0.0/16 >/dev/null || fail "l3: routes del"
    NR=$(traffic 300 "$LOW_RATE" --linger 1)
    "$CTLBIN" --addr="$addr" routes add 10.1.0.0/16 1 "$KO" >/dev/null || fail "l3: routes add"
    nr=$NR
  fi
  if [ -n "$mq" ] && [ -n "$CTLBIN" ]; then
    # Buffers sit in the virtio rings now: the running audit (workers parked) must still be
    # exact, and each worker must have had its share of the flows.
    "$CTLBIN" --addr="$addr" audit >"$T/audit" 2>&1 || { cat "$T/audit"; fail "mq: skbnfctl audit"; }
    grep -q "^audit ok" "$T/audit" || { cat "$T/audit"; fail "mq: running audit not ok"; }
    "$CTLBIN" --addr="$addr" stats >"$T/stats" 2>&1 || fail "mq: skbnfctl stats"
  fi
  HIGH=$(traffic "$BURST" 0)
  ports >"$T/ports.after"
  kill -TERM "$PID"
  set +e; wait "$PID"; local rc=$?; set -e
  PID=
  [ "$rc" -eq 0 ] || fail "$mode: skbnfd exited $rc"
  grep -q "audit OK (exact" "$T/skb.log" || fail "$mode: no exact audit"
  grep -q "^swap ok" "$T/skb.log" || fail "$mode: no swap while forwarding"
  grep -Eq "swaps ok [0-9]+ failed [1-9]" "$T/skb.log" && fail "$mode: a swap failed"
  python3 "$HERE/ovs_accounting.py" "$LOW" "$HIGH" "$T/ports.before" "$T/ports.after" \
    "$T/skb.log" "$T/show" "$SI" "$SO" ${nr:+"$nr"} || fail "$mode: accounting"
  if [ -n "$mq" ] && [ -n "$CTLBIN" ]; then
    # Per-core RX counters (skbnfctl stats, after the low-rate run): both cores received, and
    # they sum to what OVS sent into vhu0 during it (nothing else was sent then).
    python3 - "$T/stats" "$LOW" <<'PY' || fail "mq: per-core sums"
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l[:1].isdigit()]
rx = {r[1]: int(r[5]) for r in rows if len(r) > 5 and r[2] in ("running", "paused")}
low = json.loads(sys.argv[2])
print(f"  per-core RX after the low-rate run: {rx}, sum {sum(rx.values())}, sent {low['sent']}")
sys.exit(0 if len(rx) == 2 and min(rx.values()) > 0 and sum(rx.values()) == low["sent"] else 1)
PY
    grep -A3 "^audit ok" "$T/audit" | grep -o "running (workers parked): in flight by counters [0-9]* vs populated - available [0-9]*" | sed 's/^/  /'
  fi
  echo "ok: OVS-DPDK $mode${mq:+ (2 RX queues, 2 workers)} with swaps: exit 0, $(grep -o 'audit OK[^;]*' "$T/skb.log")"
}
for mode in io mac l3; do run_mode "$mode"; done
run_mode l3 mq

# The engine itself on two RX queues of one port (SKBNF_DATAPLANE_GTEST: the
# dataplane_integration_tests binary): RSS spreads OVS's flows over both queues, each polled by
# its own worker, one TX queue shared (frees on the other core), per-core sums, and the 10 ms
# no-stranding check, which needs the engine's test hook (dataplane_test.cc, OvsTwoQueuesTest).
if [ -n "${SKBNF_DATAPLANE_GTEST:-}" ]; then
  set +e
  SKBNF_IT_OVS_MQ="$T,$SI,$SO" SKBNF_IT_HUGE_DIR="$MNT" "$SKBNF_DATAPLANE_GTEST" \
    --gtest_filter='OvsTwoQueuesTest.*' >"$T/mq.out" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 0 ] && grep -q "\[  PASSED  \] 1 test" "$T/mq.out" ||
    { cat "$T/mq.out"; fail "OvsTwoQueuesTest (rc $rc)"; }
  echo "ok: OvsTwoQueuesTest (2 RX queues of one port, 2 workers, shared TX queue):"
  grep "^per-core\|^no stranding\|^stop:" "$T/mq.out" | sed 's/^/  /'
fi
