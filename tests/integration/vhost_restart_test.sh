#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dpdk-testpmd's net_vhost (DPDK's own vhost-user library) dies and comes back while skbnfd is
# attached to it with net_virtio_user (issue 34 item 2).
#
#   testpmd net_vhost0 <==vhost-user==> skbnfd net_virtio_user0 --io--> net_virtio_user1
#   testpmd net_vhost1 <==vhost-user==> ...                       <--io--
#   (testpmd in flowgen mode sends on both ports all the time and receives and frees what comes
#   back: frames cross skbnfd, in and out, whenever both sides are up, whatever the start order)
#
# testpmd is SIGKILLed (no goodbye on the socket) under that traffic, then started again.
# What DPDK 22.11 does then (v22.11.11, /work/.mirror/DPDK+dpdk/repo):
#   - virtio_user notices the dead peer when its link is polled:
#     drivers/net/virtio/virtio_user/vhost_user.c vhost_user_update_link_state peeks at the
#     socket (recv MSG_PEEK returns 0), clears VIRTIO_NET_S_LINK_UP and sets an alarm for
#     virtio_user_dev_delayed_disconnect_handler (virtio_user_dev.c).
#   - server mode (server=1; testpmd's net_vhost then is the client, client=1): that handler
#     closes the connection (server_disconnect) and listens again; the next link poll calls
#     virtio_user_dev_server_reconnect, which accepts the new connection and renegotiates.
#     The vhost library's client reconnects by itself (lib/vhost/socket.c: vsocket->reconnect
#     unless RTE_VHOST_USER_NO_RECONNECT; vhost_user_client_reconnect retries every second), so
#     the restarted testpmd finds skbnfd: readiness NOT_SERVING while testpmd is away, SERVING
#     and frames counted through skbnfd again after.
#   - client mode (server=0, testpmd's net_vhost the server, drivers/net/vhost/rte_eth_vhost.c
#     client=0 by default): the handler only unregisters the interrupt callback; nothing ever
#     reconnects (vhost_user_update_link_state reconnects only `else if (dev->is_server)`). The
#     port is dead for good: readiness must stay NOT_SERVING after testpmd is back, and skbnfd
#     must neither crash nor keep buffers.
# In both: skbnfd keeps running, and SIGTERM exits 0 with an exact audit (what the dead peer's
# rings held is back in the pool). Each step waits for its event with a bound, never sleeps.
# Before dataplane/dpdk/eal.cc ignored SIGPIPE, the client-mode SIGTERM killed skbnfd with
# SIGPIPE (exit 141): virtio_user's stop writes to the dead peer's socket (vhost_user_write,
# sendmsg without MSG_NOSIGNAL).
# Exit 77 (skip) only when no hugepage can be had.
# Usage: vhost_restart_test.sh <skbnfd> <skbnf_health> <skbnfctl>
set -euo pipefail
SKBNFD=$1
HEALTH=$2
CTL=$3
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/skbnf-vhr.XXXXXX)
STATE=$T/huge.json
. "$HERE/peer_restart_lib.sh"
cleanup() {
  [ -n "$VH" ] && kill -KILL "$VH" 2>/dev/null || true
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  [ -n "${MNT:-}" ] && rm -f "$MNT"/skbnf-vhr-$$*
  python3 "$HERE/../support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
command -v dpdk-testpmd >/dev/null || fail "dpdk-testpmd not installed (deploy/deps.sh installs it)"
set +e
MNT=$(python3 "$HERE/../support/hugepages.py" ensure 200 --state "$STATE" 2>"$T/err")
rc=$?
set -e
if [ "$rc" -eq 77 ]; then echo "SKIP: $(cat "$T/err")"; exit 77; fi
[ "$rc" -eq 0 ] || fail "hugepages.py ensure: $(cat "$T/err")"

vhost_testpmd() {  # client=0|1: testpmd's two net_vhost ports
  start_testpmd "--vdev=net_vhost0,iface=$T/vh0.sock,client=$1" \
    "--vdev=net_vhost1,iface=$T/vh1.sock,client=$1"
}
socks_there() { [ -S "$T/vh0.sock" ] && [ -S "$T/vh1.sock" ]; }

one_case() {  # server=0|1
  local server=$1
  local case="skbnfd server=$server"
  : >"$T/testpmd.log"
  rm -f "$T"/vh*.sock
  if [ "$server" -eq 0 ]; then vhost_testpmd 0; wait_for "testpmd's sockets" 100 socks_there; fi
  cat >"$T/skb.conf" <<CONF
mode io
port net_virtio_user0 peer=net_virtio_user1
port net_virtio_user1 peer=net_virtio_user0
CONF
  start_skbnfd "$case" --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off --config="$T/skb.conf" --stats=0 \
    -- -l 0,1 --no-pci --single-file-segments --huge-dir="$MNT" --file-prefix="skbnf-vhr-$$" \
    "--vdev=net_virtio_user0,path=$T/vh0.sock,server=$server,queues=1,queue_size=1024" \
    "--vdev=net_virtio_user1,path=$T/vh1.sock,server=$server,queues=1,queue_size=1024"
  # Server mode: virtio_user's probe blocks in accept() until its client is there
  # (vhost_user.c vhost_user_start_server); the vhost library's client retries until the
  # sockets exist.
  if [ "$server" -eq 1 ]; then vhost_testpmd 1; fi
  skbnfd_address "$case"
  wait_for "$case: readiness SERVING at start" 300 ready
  frames_through "$case" "frames through skbnfd"
  echo "ok: $case: readiness SERVING, frames through skbnfd (received, sent: $(rx))"

  kill_testpmd
  wait_for "$case: readiness NOT_SERVING while testpmd is away" 200 not_ready
  echo "ok: $case: testpmd SIGKILLed; skbnfd running, readiness NOT_SERVING"

  # A SIGKILLed vhost server leaves its socket files; the new one cannot bind over them
  # (lib/vhost/socket.c vhost_user_start_server: "failed to bind ... remove it and try again").
  [ "$server" -eq 0 ] && rm -f "$T"/vh*.sock
  vhost_testpmd "$server"
  if [ "$server" -eq 1 ]; then
    wait_for "$case: readiness SERVING after testpmd's return" 200 ready
    frames_through "$case" "frames through skbnfd after testpmd's return"
    echo "ok: $case: testpmd back; readiness SERVING, frames through skbnfd again"
  else
    # Client mode does not reconnect in DPDK 22.11 (see the header): the port stays dead. Wait
    # until the new testpmd listens and has had the time its link checks take, then the port
    # must still be reported dead and skbnfd still running.
    wait_for "$case: the restarted testpmd's sockets" 100 socks_there
    wait_for "$case: the restarted testpmd forwarding" 100 testpmd_forwarding 2
    ready && fail "$case: readiness SERVING on a client-mode port whose peer was restarted"
    kill -0 "$PID" || fail "$case: skbnfd died"
    echo "ok: $case: testpmd back; the port stays dead (no reconnect in client mode), NOT_SERVING"
  fi

  stop_skbnfd "$case"
  kill_testpmd
  rm -f "$MNT"/skbnf-vhr-$$*
}
one_case 1
one_case 0
