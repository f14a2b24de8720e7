#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skbnfd killed (issue 34 item 3): SIGKILL while traffic flows, then the same command again.
# skbnfd runs from a config file (l3, strategy recycle+magazine, three routes) on 2 MiB
# hugepages of a hugetlbfs mount the test makes (--single-file-segments, page files kept:
# not --in-memory), net_pcap replaying IPv4 frames (infinite_rx) routed into net_null, its
# control API on a unix socket. Before the kill the running state is moved away from the file
# over the API (strategy headpool, a route added, one deleted). Checked, each by waiting for the
# event with a bound:
#   - the kill leaves what a crash leaves: the unix socket file (nobody listening), the page
#     file holding the dead process's pages, so few pages are free that the preflight would
#     refuse the restart if it did not count the stale file (it must, EAL removes it at start:
#     DPDK 22.11 lib/eal/linux/eal_hugepage_info.c clear_hugedir);
#   - the restart starts (gRPC on the same socket), its state is the config's: `skbnfctl
#     strategy get` says recycle+magazine, `skbnfctl routes list` is exactly the file's three
#     routes, frames are forwarded again; its log says it came back after an unclean stop to the
#     config file's state (and names the stale socket and hugepage files);
#   - SIGTERM: exit 0, exact audit.
# The machine's nr_hugepages is set for the test (what others hold stays theirs) and restored.
# Usage: sigkill_restart_test.sh <skbnfd> <skbnfctl>
set -euo pipefail
SKBNFD=$1
CTL=$2
T=$(mktemp -d /tmp/skbnf-kill.XXXXXX)
MNT=/run/skbnf-kill-$$
PREFIX=skbnf-kill-$$
NR=/proc/sys/vm/nr_hugepages
ORIG=$(cat "$NR")
PID=
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
  rm -f "$MNT"/* 2>/dev/null || true
  umount "$MNT" 2>/dev/null || true
  rmdir "$MNT" 2>/dev/null || true
  echo "$ORIG" >"$NR" 2>/dev/null || true
  rm -rf "$T" "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; grep -v "^EAL: \(Detected\|Selected\)" "$T/skb.log" 2>/dev/null | tail -12; exit 1; }
if ! [ -w "$NR" ] || ! mkdir -p "$MNT" || ! mount -t hugetlbfs -o pagesize=2M nodev "$MNT"; then
  echo "SKIP: cannot reserve hugepages or mount hugetlbfs here (needs root)"
  exit 77
fi
free_pages() { awk '/^HugePages_Free:/ {print $2}' /proc/meminfo; }
stale_pages() { find "$MNT" -type f -printf '%b\n' | awk '{s += $1} END {print int(s * 512 / 2097152)}'; }
ctl() { "$CTL" --addr="unix:$T/ctl.sock" --timeout=5 "$@"; }

# IPv4/UDP frames to 10.1.<n>.<m> (routed to net_null0), classic pcap (libpcap's format).
python3 - "$T/frames.pcap" <<'PY'
import struct, sys
def csum(b):
    s = sum((b[i] << 8) | b[i + 1] for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(256):
        udp = struct.pack("!HHHH", 1024, 4789, 26, 0) + bytes(18)
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                                   bytes([172, 16, 0, 1]), bytes([10, 1, i // 16, i % 16 + 1])))
        ip[10:12] = struct.pack("!H", csum(bytes(ip)))
        fr = bytes.fromhex("020000000001020000000002") + b"\x08\x00" + bytes(ip) + udp
        f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)) + fr)
PY
CONF=$T/skbnfd.conf
cat >"$CONF" <<EOF
mode l3
strategy recycle+magazine
eal -l 0,1 --no-pci --single-file-segments --huge-dir=$MNT --file-prefix=$PREFIX
eal --vdev=net_pcap0,rx_pcap=$T/frames.pcap,infinite_rx=1 --vdev=net_null0
port net_pcap0
port net_null0
route 10.1.0.0/16 net_null0 02:00:00:00:01:01
route 10.2.0.0/16 net_pcap0 02:00:00:00:01:02
route 192.0.2.0/24 net_null0 02:00:00:00:01:03
EOF
WANT_ROUTES="10.1.0.0/16 1 02:00:00:00:01:01
10.2.0.0/16 0 02:00:00:00:01:02
192.0.2.0/24 1 02:00:00:00:01:03"
ARGS=(--config="$CONF" --listen="unix:$T/ctl.sock" --metrics-addr=127.0.0.1:0 --stats=0)

# The pages skbnfd needs (its preflight), and a reservation that leaves it a few more than that.
# On a machine with too few free pages the check is an error saying "= N pages"; with enough, ok
# "(N needed)": either way the figure.
NEED=$("$SKBNFD" "${ARGS[@]}" --preflight 2>&1 | python3 -c '
import re, sys
m = re.search(r"^(?:ok|error)\s+hugepages\s.*?(?:\((\d+) needed\)|= (\d+) pages)", sys.stdin.read(), re.M)
print((m.group(1) or m.group(2)) if m else "")' || true)
[ -n "$NEED" ] || fail "no hugepage need in skbnfd --preflight"
echo $(($(cat "$NR") - $(free_pages) + NEED + 6)) >"$NR"

start() {  # log file: skbnfd in the background, PID
  "$SKBNFD" "${ARGS[@]}" >"$1" 2>&1 &
  PID=$!
}
wait_for() {  # what, tenths of a second, command...
  local what=$1 n=$2 i
  shift 2
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    kill -0 "$PID" 2>/dev/null || fail "skbnfd exited while waiting for: $what"
    sleep 0.1
  done
  fail "not within $((n / 10)) s: $what"
}
tx1() { ctl --json ports | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ports"][1].get("pmd", {}).get("opackets", 0)))'; }
TX0=0
forwarding() { local t; t=$(tx1 2>/dev/null) || return 1; [ "$t" -gt $((TX0 + 10000)) ]; }
routes() { ctl routes list | awk 'NR > 1 {print $1, $3, $4}' | sort; }
drift() {  # part: skbnf_config_drift{part} on /metrics (server/ops/config_reload.h)
  local port
  port=$(grep -o "metrics on [^ ]*:[0-9]* /metrics" "$T/skb.log" | tail -1 | sed 's/.*:\([0-9]*\) .*/\1/')
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v p="skbnf_config_drift{part=\"$1\"}" '$1 == p {print $2}'
}
drift_is() { [ "$(drift strategy) $(drift routes)" = "$1" ]; }

# 1. Running from the file, then moved away from it over the API, forwarding.
start "$T/skb.log"
wait_for "first start: the control socket answers" 300 ctl strategy get >/dev/null 2>&1
ctl strategy set headpool >/dev/null || fail "strategy set headpool"
ctl routes add 10.9.0.0/16 1 02:00:00:00:09:09 >/dev/null || fail "routes add"
ctl routes delete 192.0.2.0/24 >/dev/null || fail "routes delete"
ctl strategy get | grep -q "^spec *headpool$" || fail "the swap over the API did not take"
# The drift is visible before any crash: the gauge, and a log line saying what differs.
wait_for "drift on /metrics (strategy and routes)" 50 drift_is "1 1"
grep -q "config drift: the running state differs from $CONF: strategy headpool (file: recycle+magazine); routes: 1 not in the file, 1 of the file's missing or different" "$T/skb.log" ||
  fail "no drift line naming what differs"
TX0=$(tx1)
wait_for "first start: frames forwarded" 100 forwarding
echo "ok: running from the file, then strategy headpool and routes changed over the API (skbnf_config_drift strategy=1 routes=1, logged); forwarding"

# 2. SIGKILL under traffic.
TX0=$(tx1)
kill -KILL "$PID"
set +e; wait "$PID"; rc=$?; set -e
PID=
[ "$rc" -eq 137 ] || fail "SIGKILL: skbnfd exited $rc"
[ -S "$T/ctl.sock" ] || fail "no stale socket after the kill (the test would prove nothing)"
ls "$MNT/${PREFIX}"map_* >/dev/null 2>&1 || fail "no page file left after the kill"
FREE=$(free_pages); STALE=$(stale_pages)
[ "$FREE" -lt "$NEED" ] || fail "precondition: $FREE free pages after the kill, $NEED needed: the stale file would not be in the way"
[ $((FREE + STALE)) -ge "$NEED" ] || fail "precondition: $FREE free + $STALE stale < $NEED"
echo "ok: killed under traffic (exit 137): socket file left, page file holds $STALE pages, $FREE free of $NEED needed"

# 3. The same command again.
start "$T/skb.log"
wait_for "restart: the control socket answers" 300 ctl strategy get >/dev/null 2>&1
wait_for "restart: the config-state line" 100 grep -q "running the config file's state" "$T/skb.log"
grep -q "preflight warning: hugepages: .* in stale hugepage files ($MNT/${PREFIX}map_" "$T/skb.log" ||
  fail "restart: no warning naming the stale page file"
grep -q "skbnfd: control socket $T/ctl.sock is stale" "$T/skb.log" || fail "restart: stale socket not said"
grep -q "skbnfd: back after an unclean stop (control socket $T/ctl.sock is stale .*): running the config file's state ($CONF): strategy recycle+magazine, 3 routes" "$T/skb.log" ||
  fail "restart: no line saying it came back to the config's state"
ctl strategy get | grep -q "^spec *recycle+magazine$" || fail "restart: strategy is not the config's: $(ctl strategy get)"
[ "$(routes)" = "$(echo "$WANT_ROUTES" | sort)" ] || fail "restart: routes are not the config's: $(routes)"
wait_for "restart: no drift on /metrics" 50 drift_is "0 0"
grep -q "config drift: the running" "$T/skb.log" && fail "restart: drift logged though the state is the file's"
TX0=$(tx1)
wait_for "restart: frames forwarded" 100 forwarding
echo "ok: restarted: strategy recycle+magazine and the file's 3 routes (the API's changes gone), forwarding; the log says so:"
grep "back after an unclean stop" "$T/skb.log" | sed 's/^/  /'

# 4. A normal stop.
kill -TERM "$PID"
set +e; wait "$PID"; rc=$?; set -e
PID=
[ "$rc" -eq 0 ] || fail "SIGTERM after the restart: exit $rc"
grep -q "audit OK (exact" "$T/skb.log" || fail "no exact audit at stop"
[ -e "$T/ctl.sock" ] && fail "the control socket is left after a clean stop"
echo "ok: SIGTERM: exit 0, $(grep -o 'audit OK (exact[^:]*' "$T/skb.log")"
