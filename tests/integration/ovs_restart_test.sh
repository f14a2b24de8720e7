#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Open vSwitch-DPDK dies and comes back while skbnfd forwards through it (issue 34 item 1).
#
#   kernel raw socket -> OVS internal port sbiN -> vhu0 -> skbnfd net_virtio_user0 (server=1) -> io
#     -> net_virtio_user1 -> vhu1 -> internal port sboN -> kernel raw socket
#
# Debian's openvswitch-switch-dpdk 3.1 as the peer (tests/support/ovs_dpdk.sh). Paced frames flow
# through skbnfd; ovs-vswitchd is SIGKILLed under them, then started again on the same database,
# and the OpenFlow flows are added again as a controller would (OVS keeps the database across a
# restart, not the flows). Checked, each by waiting for the event with a bound, never by sleeping:
#   - skbnfd keeps running while OVS is away, and its readiness (grpc.health.v1, skbnf_health)
#     goes NOT_SERVING (a vhost link is down);
#   - after OVS's return, readiness is SERVING again and a frame crosses skbnfd within 5 s of
#     the flows being back (DPDK 22.11 virtio_user server mode: virtio_user_dev_server_reconnect
#     accepts the new connection when the link is polled, drivers/net/virtio/virtio_user/
#     vhost_user.c vhost_user_update_link_state);
#   - then paced frames (300/s) arrive, >= 99 % of them (in practice all: the same rate is
#     zero-loss in integration.ovs_dpdk);
#   - SIGTERM: exit 0 and an exact audit (what the dead peer's rings held is back in the pool).
#     Before port_setup.cc enabled link-state interrupts, this SIGTERM crashed skbnfd (SIGSEGV in
#     eal-intr-thread, exit 139): see the comment there.
#
# Then skbnfd as the vhost-user *client* (the issue's "where the PMD allows"): the same OVS's vhu0
# and vhu1 become `dpdkvhostuser` ports (OVS is the server, sockets $T/vhu0 and $T/vhu1 in its
# rundir), skbnfd's net_virtio_user has path= set to them and no server=1. What DPDK 22.11 does
# when the server dies (v22.11.11, drivers/net/virtio/virtio_user/):
#   - vhost_user.c vhost_user_update_link_state: at a link poll, recv(MSG_PEEK) on the socket
#     returns 0: VIRTIO_NET_S_LINK_UP cleared, an alarm set for
#     virtio_user_dev.c virtio_user_dev_delayed_disconnect_handler, which in client mode only
#     unregisters the interrupt callback (the server_disconnect/re-listen branch is
#     `if (dev->is_server)`); the dead socket stays open (vhostfd >= 0), so every later link
#     poll sees recv() == 0 again, and virtio_user_dev_server_reconnect runs only
#     `else if (dev->is_server)`. Nothing in the client ever connects again.
# So with OVS SIGKILLed and started again: skbnfd keeps running and readiness is NOT_SERVING
# while OVS is away; after OVS is back (its sockets listening again, flows re-added) the port
# stays dead: readiness still NOT_SERVING and a frame sent into vhu0 does not cross skbnfd;
# never a crash, and SIGTERM gives exit 0 and an exact audit. (A SIGKILLed OVS leaves its
# server sockets; DPDK's vhost library cannot bind over them, lib/vhost/socket.c
# vhost_user_start_server: "failed to bind ... remove it and try again": the test removes them
# before the restart, as an init script would.)
# Usage: ovs_restart_test.sh <skbnfd> <skbnf_health>
set -euo pipefail
SKBNFD=$1
HEALTH=$2
RATE=300
COUNT=1500
HERE=$(cd "$(dirname "$0")" && pwd)
OVS_VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
T=$(mktemp -d /tmp/skbnf-ovsr.XXXXXX)
STATE=$T/huge.json
SI=sri$$; SO=sro$$  # kernel-side internal ports (<= 15 characters)
LOAD=
. "$HERE/../support/ovs_dpdk.sh"
# start_skbnfd, skbnfd_address, wait_for, ready/not_ready and stop_skbnfd: shared with the other
# peer-restart tests (vhost, memif, AF_XDP); the fail() below replaces its own (OVS's log too).
. "$HERE/peer_restart_lib.sh"
ovs_env
fail() { echo "FAIL: $*"; tail -15 "$T/skb.log" 2>/dev/null; tail -5 "$T/ovs-vswitchd.log"; exit 1; }
cleanup() {
  [ -n "$LOAD" ] && kill "$LOAD" 2>/dev/null || true
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ovs_stop
  [ -n "${MNT:-}" ] && rm -f "$MNT"/skbnf-vr-$$*
  python3 "$HERE/../support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
[ -x "$OVS_VSWITCHD" ] || { echo "SKIP: $OVS_VSWITCHD not installed (openvswitch-switch-dpdk)"; exit 77; }
set +e
MNT=$(python3 "$HERE/../support/hugepages.py" ensure 600 --state "$STATE" 2>"$T/err")
rc=$?
set -e
if [ "$rc" -eq 77 ]; then echo "SKIP: $(cat "$T/err")"; exit 77; fi
[ "$rc" -eq 0 ] || fail "hugepages.py ensure: $(cat "$T/err")"

ovs_start "skbnf-ovsr-$$"
M0=02:00:00:00:5c:00; M1=02:00:00:00:5c:01
cat >"$T/skb.conf" <<CONF
mode io
port net_virtio_user0 peer=net_virtio_user1
port net_virtio_user1 peer=net_virtio_user0
CONF
start_skbnfd ovs --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off --config="$T/skb.conf" --stats=0 \
  -- -l 0,1 --no-pci --single-file-segments --huge-dir="$MNT" --file-prefix="skbnf-vr-$$" \
  "--vdev=net_virtio_user0,path=$T/vhu0.sock,server=1,queues=1,queue_size=1024,mac=$M0" \
  "--vdev=net_virtio_user1,path=$T/vhu1.sock,server=1,queues=1,queue_size=1024,mac=$M1"
skbnfd_address ovs
wait_for "readiness SERVING at start" 300 ready
traffic() {  # count rate [raw_traffic.py options...]: prints raw_traffic.py's JSON
  local ki
  ki=$(cat "/sys/class/net/$SI/address")
  python3 "$HERE/raw_traffic.py" --tx "$SI" --rx "$SO" --count "$1" --rate "$2" \
    --dst-mac "$M0" --src-mac "$ki" --expect-dst-mac "$M0" --expect-src-mac "$ki" --ttl-dec 0 \
    --dst-spread 50 "${@:3}"
}
delivered() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["delivered"])' "$1"; }
BEFORE=$(traffic 600 "$RATE")
[ "$(delivered "$BEFORE")" -eq 600 ] || fail "before the restart: $BEFORE"
echo "ok: before: 600 of 600 frames through OVS -> skbnfd -> OVS"

# SIGKILL under traffic: a paced sender keeps frames flowing into OVS until OVS is gone (then
# it is stopped; what it counted is not judged).
python3 "$HERE/raw_traffic.py" --tx "$SI" --rx "$SO" --count 100000 --rate "$RATE" \
  --dst-mac "$M0" --src-mac "$(cat "/sys/class/net/$SI/address")" --dst-spread 50 \
  >/dev/null 2>&1 &
LOAD=$!
into_skbnfd() {  # frames OVS has transmitted into skbnfd's RX ring (vhu0's tx pkts)
  ovs-ofctl dump-ports "$OF" vhu0 2>/dev/null | grep -o 'tx pkts=[0-9]*' | cut -d= -f2
}
N0=$(into_skbnfd)
more_into_skbnfd() { [ "$(into_skbnfd)" -gt "$((N0 + 30))" ]; }
wait_for "the load reaching skbnfd" 100 more_into_skbnfd
kill -KILL "$(cat "$T/ovs-vswitchd.pid")"
echo "ok: ovs-vswitchd SIGKILLed under traffic"
wait_for "readiness NOT_SERVING while OVS is away" 200 not_ready
kill "$LOAD" 2>/dev/null || true
wait "$LOAD" 2>/dev/null || true
LOAD=
kill -0 "$PID" || fail "skbnfd died with OVS"
echo "ok: skbnfd running, readiness NOT_SERVING while OVS is away"

# OVS back on the same database; the flows added again (a controller's job).
"$OVS_VSWITCHD" "unix:$T/db.sock" --pidfile="$T/ovs-vswitchd.pid" --detach \
  --log-file="$T/ovs-vswitchd.log"
wait_for "OVS's internal ports back" 200 test -e "/sys/class/net/$SO"
ovs_links_and_flows
t0=$(date +%s.%N)
one_frame() { [ "$(delivered "$(traffic 1 0 --linger 0.1)")" -eq 1 ]; }
wait_for "a frame through skbnfd within 5 s of OVS's return" 50 one_frame
t1=$(date +%s.%N)
echo "ok: forwarding again $(python3 -c "print(f'{$t1 - $t0:.2f}')") s after OVS's flows were back"
wait_for "readiness SERVING after OVS's return" 100 ready
AFTER=$(traffic "$COUNT" "$RATE")
python3 - "$AFTER" "$COUNT" <<'PY' || fail "after the restart: $AFTER"
import json, sys
r, n = json.loads(sys.argv[1]), int(sys.argv[2])
print(f"after: {r['delivered']} of {r['sent']} paced frames delivered (bad {r['bad']}, "
      f"duplicates {r['duplicates']})")
sys.exit(0 if r["sent"] == n and r["delivered"] >= 0.99 * n and r["bad"] == 0 else 1)
PY
echo "ok: readiness SERVING, paced frames through the restarted OVS"

stop_skbnfd "after the OVS restart"

rm -f "$MNT"/skbnf-vr-$$*

# ---- skbnfd as the vhost-user client: OVS's vhu0/vhu1 as dpdkvhostuser (OVS the server).
"${VSCTL[@]}" del-port br0 vhu0 -- del-port br0 vhu1 \
  -- add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuser \
  -- add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuser
ovs_links_and_flows
socks_there() { [ -S "$T/vhu0" ] && [ -S "$T/vhu1" ]; }
wait_for "client: OVS's vhost-user server sockets" 100 socks_there
start_skbnfd client --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off \
  --config="$T/skb.conf" --stats=0 \
  -- -l 0,1 --no-pci --single-file-segments --huge-dir="$MNT" --file-prefix="skbnf-vr-$$" \
  "--vdev=net_virtio_user0,path=$T/vhu0,queues=1,queue_size=1024,mac=$M0" \
  "--vdev=net_virtio_user1,path=$T/vhu1,queues=1,queue_size=1024,mac=$M1"
skbnfd_address client
wait_for "client: readiness SERVING at start" 300 ready
CLIENT=$(traffic 300 "$RATE")
[ "$(delivered "$CLIENT")" -eq 300 ] || fail "client: before the restart: $CLIENT"
echo "ok: client: 300 of 300 frames through OVS (dpdkvhostuser) -> skbnfd -> OVS"

kill -KILL "$(cat "$T/ovs-vswitchd.pid")"
echo "ok: client: ovs-vswitchd SIGKILLed"
wait_for "client: readiness NOT_SERVING while OVS is away" 200 not_ready
echo "ok: client: skbnfd running, readiness NOT_SERVING while OVS is away"

rm -f "$T/vhu0" "$T/vhu1"
"$OVS_VSWITCHD" "unix:$T/db.sock" --pidfile="$T/ovs-vswitchd.pid" --detach \
  --log-file="$T/ovs-vswitchd.log"
wait_for "client: OVS's internal ports back" 200 test -e "/sys/class/net/$SO"
wait_for "client: OVS's vhost-user server sockets back" 200 socks_there
ovs_links_and_flows
# OVS listens again: a frame into vhu0 (OVS counts it sent, or dropped with no guest) must not
# cross skbnfd, whose client port never connects again (see the header).
LATE=$(traffic 20 100 --linger 1)
[ "$(delivered "$LATE")" -eq 0 ] || fail "client: frames crossed a port DPDK never reconnects: $LATE"
kill -0 "$PID" || fail "client: skbnfd died"
ready && fail "client: readiness SERVING on a client port whose server was restarted"
echo "ok: client: OVS back; the port stays dead (no reconnect in client mode): 0 of 20 frames, NOT_SERVING"

stop_skbnfd "client, after the OVS restart"
