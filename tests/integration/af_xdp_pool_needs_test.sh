#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The preflight's pool sizing counts what net_af_xdp really holds per RX queue (issue 34 item 4a):
# DPDK 22.11's PMD (drivers/net/af_xdp/rte_eth_af_xdp.c, v22.11.11) takes
# ETH_AF_XDP_DFLT_NUM_DESCS = XSK_RING_CONS__DEFAULT_NUM_DESCS = 2,048 mbufs per queue at queue
# set-up (xsk_configure: rte_pktmbuf_alloc_bulk of reserve_size, reserve_fill_queue) and keeps
# them there (af_xdp_rx_zc refills one for one), whatever RX ring size was asked for; the old
# formula counted the ring (1,024). Checked against the real PMD, on veth pairs in a network
# namespace the script creates and removes:
#   1. `skbnfd --preflight` with two --vdev=net_af_xdp ports and --rx-ring=512 names the term
#      "AF_XDP RX 2 ports x 1 queues x 2048" and a minimum N;
#   2. skbnfd --mbufs=N-1 is refused before EAL (exit 2) with the same numbers;
#   3. skbnfd --mbufs=N starts; with its worker parked (layers flushed, nothing moving) each
#      port's RX side (fill + RX ring, read from the XDP rings' indices: skbnfctl stats,
#      af_xdp_rings) holds exactly the preflight's per-queue figure, not the 512 of its ring;
#      SIGTERM: exit 0, exact audit;
#   4. the default pool (no --mbufs) with six AF_XDP ports and 64-descriptor rings is the same
#      need + 8,192 (dataplane/dpdk/pool_sizing.h; the old ring-based default was below it and
#      refused): frames forwarded on every pair, rx_nombuf 0 under a flood, exact audit.
# The namespace and veth pairs: tests/support/af_xdp_veth.sh.
# Usage: af_xdp_pool_needs_test.sh <skbnfd> <skbnfctl>
set -euo pipefail
SKBNFD=$1
CTL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
NS=skbnf-xpn-$$
T=$(mktemp -d /tmp/skbnf-xpn.XXXXXX)
. "$HERE/peer_restart_lib.sh"
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; grep -v "^libxdp\|^libbpf" "$T/skb.log" 2>/dev/null | tail -15; exit 1; }
. "$HERE/../support/af_xdp_veth.sh"
xdp_netns
veth_pair "xa ka" "xb kb"
EAL=(-l 0,1 --no-huge -m 512 --no-pci --no-shconf --file-prefix="skbnf-xpn-$$"
     --vdev=net_af_xdp0,iface=xa --vdev=net_af_xdp1,iface=xb)
FLAGS=(--mode=io --rx-ring=512 --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off --stats=0)

# 1. The preflight's figure.
set +e
in_ns "$SKBNFD" --preflight "${FLAGS[@]}" --mbufs=1024 -- "${EAL[@]}" >"$T/pre.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat "$T/pre.log"; fail "--preflight with --mbufs=1024 exited $rc, not 1"; }
line=$(grep "pool_sizing" "$T/pre.log") || { cat "$T/pre.log"; fail "no pool_sizing line"; }
echo "$line" | grep -q "RX 0 ports x 1 queues x 512 + AF_XDP RX 2 ports x 1 queues x 2048 (the PMD's fill-ring reserve)" ||
  fail "pool_sizing does not count 2048 per AF_XDP RX queue: $line"
NEED=$(echo "$line" | sed -n 's/.*< \([0-9]*\) needed.*/\1/p')
PER_QUEUE=$(echo "$line" | sed -n 's/.*AF_XDP RX 2 ports x 1 queues x \([0-9]*\) .*/\1/p')
[ -n "$NEED" ] && [ "$PER_QUEUE" = 2048 ] || fail "cannot read the figures from: $line"
echo "ok: preflight: $NEED needed, $PER_QUEUE per AF_XDP RX queue (ring 512)"

# 2. One short: refused before EAL, naming the numbers.
set +e
in_ns "$SKBNFD" "${FLAGS[@]}" --mbufs=$((NEED - 1)) --duration=1 -- "${EAL[@]}" >"$T/skb.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--mbufs=$((NEED - 1)) exited $rc, not 2"
grep -q "preflight error: pool_sizing: pool of $((NEED - 1)) objects < $NEED needed" "$T/skb.log" ||
  fail "--mbufs=$((NEED - 1)): no pool_sizing refusal naming $NEED"
grep -q "EAL:" "$T/skb.log" && fail "--mbufs=$((NEED - 1)): EAL ran"
echo "ok: --mbufs=$((NEED - 1)) refused before EAL (exit 2)"

# 3. The minimum runs, and the PMD holds what the preflight counted.
start_skbnfd "af_xdp pool needs" "${FLAGS[@]}" --mbufs="$NEED" -- "${EAL[@]}"
skbnfd_address "af_xdp pool needs"
in_ns "$CTL" --addr="$ADDR" worker pause 1 >/dev/null || fail "skbnfctl worker pause"
in_ns "$CTL" --addr="$ADDR" stats >"$T/stats" 2>&1 || fail "skbnfctl stats"
in_ns "$CTL" --addr="$ADDR" worker resume 1 >/dev/null || fail "skbnfctl worker resume"
python3 - "$T/stats" "$PER_QUEUE" <<'PY' || { cat "$T/stats"; fail "RX side != the preflight's figure"; }
import re, sys
text = open(sys.argv[1]).read()
rx = [int(a) for a in re.findall(r"ring mbufs: rx (\d+) tx \d+ \(af_xdp_rings\)", text)]
print(f"ok: worker parked: RX side per port {rx} (fill + RX ring), preflight counts {sys.argv[2]}")
sys.exit(0 if len(rx) == 2 and all(r == int(sys.argv[2]) for r in rx) else 1)
PY
stop_skbnfd "af_xdp pool needs"
grep -q "$((2 * PER_QUEUE)) mbufs taken back" "$T/skb.log" ||
  fail "stop: not both fill reserves ($((2 * PER_QUEUE))) taken back"

# 4. The default pool (no --mbufs) counts the same need (dataplane/dpdk/pool_sizing.h: the
#    engine's default is the preflight's minimum + 8,192), so a default configuration is never
#    below it. Six AF_XDP ports with 64-descriptor rings: before issue 34 item 4 the default was
#    sized from the rings (6 x (64 + 64) + 2,176 + 8,192 = 11,136) and the preflight refused it
#    (12,768 needed: 6 x 2,048 of fill reserve + ...). Now: the preflight says OK with the pool
#    8,192 above the need; skbnfd starts, forwards on each pair (io: a<->b, c<->d, e<->f), a
#    flood counts no rx_nombuf on any port (the PMDs' own count), SIGTERM: exit 0, exact audit.
veth_pair "xc kc" "xd kd" "xe ke" "xf kf"
EAL6=(-l 0,1 --no-huge -m 512 --no-pci --no-shconf --file-prefix="skbnf-xpn6-$$")
for i in 0 1 2 3 4 5; do EAL6+=("--vdev=net_af_xdp$i,iface=x$(echo abcdef | cut -c$((i + 1)))"); done
FLAGS6=(--mode=io --rx-ring=64 --tx-ring=64 --listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off --stats=0)
in_ns "$SKBNFD" --preflight "${FLAGS6[@]}" -- "${EAL6[@]}" >"$T/pre6.log" 2>&1 ||
  { cat "$T/pre6.log"; fail "--preflight of the default pool with six AF_XDP ports failed"; }
line=$(grep "pool_sizing" "$T/pre6.log") || { cat "$T/pre6.log"; fail "no pool_sizing line (6 ports)"; }
echo "$line" | grep -q "AF_XDP RX 6 ports x 1 queues x 2048" || fail "6 ports: not counted: $line"
POOL6=$(echo "$line" | sed -n 's/.*pool of \([0-9]*\) objects >= .*/\1/p')
NEED6=$(echo "$line" | sed -n 's/.*objects >= \([0-9]*\) needed.*/\1/p')
[ -n "$POOL6" ] && [ -n "$NEED6" ] || fail "6 ports: cannot read the figures from: $line"
[ "$POOL6" -eq $((NEED6 + 8192)) ] || fail "6 ports: default pool $POOL6 is not the need $NEED6 + 8192"
echo "ok: default pool with six AF_XDP ports: $POOL6 objects = $NEED6 needed + 8192"

start_skbnfd "af_xdp default pool" "${FLAGS6[@]}" -- "${EAL6[@]}"
skbnfd_address "af_xdp default pool"
grep -q "preflight error" "$T/skb.log" && fail "default pool: preflight refused it"
nombuf_all() {  # the PMDs' rx_nombuf of every port, summed
  in_ns "$CTL" --addr="$ADDR" --json ports | python3 -c '
import json, sys
print(sum(int(p.get("pmd", {}).get("rx_nombuf", 0)) for p in json.load(sys.stdin)["ports"]))'
}
traffic6() {  # tx rx count rate: raw_traffic.py through skbnfd (io: frames unchanged), its JSON
  in_ns python3 "$HERE/raw_traffic.py" --tx "$1" --rx "$2" --count "$3" --rate "$4" \
    --dst-mac 02:00:00:00:00:01 --src-mac "$(mac "$1")" --ttl-dec 0 --linger 0.3
}
delivered() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["delivered"])' "$1"; }
first_frame() { [ "$(delivered "$(traffic6 ka kb 1 0 2>/dev/null)")" -eq 1 ]; }
wait_for "a frame through skbnfd (default pool)" 50 first_frame
for pr in "ka kb" "kd kc" "ke kf"; do
  read -r a b <<<"$pr"
  R=$(traffic6 "$a" "$b" 300 300)
  [ "$(delivered "$R")" -eq 300 ] || fail "default pool: $a -> $b at 300 frames/s: $R"
done
traffic6 ka kb 5000 0 >/dev/null  # a flood: as fast as the raw socket sends
N=$(nombuf_all)
[ "$N" -eq 0 ] || fail "default pool: rx_nombuf $N under a flood"
echo "ok: default pool: 3 x 300 paced frames delivered on the three pairs, a 5,000-frame flood, rx_nombuf 0 on all six ports"
stop_skbnfd "af_xdp default pool"
