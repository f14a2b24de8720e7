#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An AF_XDP interface flaps under skbnfd (issue 34 item 2): set down and up, then deleted and
# created again, while skbnfd runs on it (net_af_xdp, copy mode on veth, in a network namespace
# this script creates and removes).
#   ka --veth-- xa  skbnfd net_af_xdp0 --io--> net_af_xdp1  xb --veth-- kb
# Raw-socket frames from ka are checked on kb (tests/integration/raw_traffic.py).
# What DPDK 22.11 does (v22.11.11, /work/.mirror/DPDK+dpdk/repo,
# drivers/net/af_xdp/rte_eth_af_xdp.c): eth_link_update does nothing, the link is "up" from
# eth_dev_start to eth_dev_stop whatever the interface does; the XDP socket stays bound to the
# ifindex it was created on. So skbnfd itself must look at the kernel's interface
# (dataplane/dpdk/af_xdp_link.cc): the port is link down while its interface is down, and dead
# for good once the interface it was bound to is gone (a new one of the same name is another
# ifindex: the socket is not bound to it). Checked, each by waiting for the event with a bound:
#   - xa down: readiness NOT_SERVING; xa up: SERVING and frames through again (recovered);
#   - xa deleted and a new xa|ka pair created: NOT_SERVING, and it stays so with the new xa up
#     (the port is reported dead, not recovered);
#   - skbnfd keeps running throughout; SIGTERM: exit 0, exact audit.
# Exit 77 (skip) only when no network namespace can be created.
# Usage: af_xdp_flap_test.sh <skbnfd> <skbnf_health>
set -euo pipefail
SKBNFD=$1
HEALTH=$2
HERE=$(cd "$(dirname "$0")" && pwd)
NS=skbnf-xfl-$$
T=$(mktemp -d /tmp/skbnf-xfl.XXXXXX)
. "$HERE/peer_restart_lib.sh"
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; grep -v "^libxdp\|^libbpf" "$T/skb.log" | tail -15; exit 1; }
. "$HERE/../support/af_xdp_veth.sh"
xdp_netns
veth_pair "xa ka" "xb kb"
cat >"$T/skb.conf" <<CONF
mode io
port net_af_xdp0 peer=net_af_xdp1
port net_af_xdp1 peer=net_af_xdp0
CONF
start_skbnfd "af_xdp" --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off --config="$T/skb.conf" --stats=0 \
  -- -l 0,1 --no-huge -m 512 --no-pci --no-shconf --file-prefix="skbnf-xfl-$$" \
  --vdev=net_af_xdp0,iface=xa --vdev=net_af_xdp1,iface=xb
skbnfd_address "af_xdp"
one_frame() {  # a frame from ka through skbnfd arrives on kb
  local ka out
  ka=$(mac ka)
  out=$(in_ns python3 "$HERE/raw_traffic.py" --tx ka --rx kb --count 1 --rate 0 --linger 0.1 \
    --dst-mac 02:00:00:00:00:01 --src-mac "$ka" --ttl-dec 0 2>/dev/null) || return 1
  [ "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["delivered"])' "$out")" -eq 1 ]
}
wait_for "readiness SERVING at start" 300 ready
wait_for "a frame through skbnfd at start" 50 one_frame
echo "ok: at start: SERVING, frames ka -> xa -> skbnfd -> xb -> kb"

ip -n "$NS" link set xa down
wait_for "readiness NOT_SERVING with xa down" 100 not_ready
echo "ok: xa down: readiness NOT_SERVING"
ip -n "$NS" link set xa up
wait_for "readiness SERVING with xa up again" 100 ready
wait_for "a frame through skbnfd with xa up again" 50 one_frame
echo "ok: xa up again: SERVING, frames through skbnfd (recovered)"

ip -n "$NS" link del xa
wait_for "readiness NOT_SERVING with xa deleted" 100 not_ready
veth_pair xa ka
new_xa_up() { ip -n "$NS" link show xa | grep -q "state UP"; }
wait_for "the new xa up with its carrier" 100 new_xa_up
ready && fail "readiness SERVING on an AF_XDP port whose interface was deleted"
one_frame && fail "a frame crossed an AF_XDP port whose interface was deleted"
echo "ok: xa deleted and created again: the port is reported dead (NOT_SERVING), skbnfd running"

stop_skbnfd "xa flapped"
