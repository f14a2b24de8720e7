#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# DPDK's own /mempool/info on a skbnf pool inside DPDK's own dpdk-testpmd (issue 32 item 5):
# testpmd loads the plugin (-d libskbnf_mempool.so --mbuf-pool-ops-name=skbnf, --mbcache=0) with
# telemetry on, and Debian's dpdk-telemetry.py (package dpdk) asks it. Shapes: DPDK 22.11
# lib/mempool/rte_mempool.c mempool_handle_info (/mempool/info,NAME: name, size, cache_size,
# ops_index, populated_size, ...; no available count in 22.11) and rte_mempool_dump (testpmd's
# `dump_mempool`: ops_name, common_pool_count = the ops' get_count, total_cache_count);
# usertools/dpdk-telemetry.py (stdin not a terminal: one JSON reply per line).
# Checks: /mempool/list has testpmd's pool; /mempool/info says size == populated_size ==
# --total-num-mbufs, cache_size 0 (DPDK's lcore cache off: every object the plugin's layers hold
# is counted by the ops, not hidden in DPDK's cache), and testpmd's dump names the ops at its
# ops_index `skbnf` (the index is the process's own: testpmd links librte_mempool_dpaa, whose ops
# register before the -d plugin's; README.md, "Mempool ops indices"); while forwarding, DPDK's count (common_pool_count + total_cache_count) never exceeds
# the population; after `stop` it is exactly the population (every mbuf is back: net_null holds
# none), for a layered strategy whose per-lcore magazines and depot hold objects.
# Usage: telemetry_testpmd_test.sh <path to libskbnf_mempool.so>
set -euo pipefail
PLUGIN=$(readlink -f "$1")
PREFIX=skbnf-teltp-$$
T=$(mktemp -d /run/skbnf-teltp.XXXXXX)
TP=
cleanup() {
  exec 3>&- 2>/dev/null || true
  [ -z "$TP" ] || { kill "$TP" 2>/dev/null || true; wait "$TP" 2>/dev/null || true; }
  rm -rf "$T" "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$T/testpmd.log" 2>/dev/null | tail -40; exit 1; }
[ -x /usr/bin/dpdk-telemetry.py ] || fail "/usr/bin/dpdk-telemetry.py missing (package dpdk)"
# EAL refuses a plugin below a world-writable directory: load a copy from this private one.
cp "$PLUGIN" "$T/" && PLUGIN="$T/$(basename "$PLUGIN")"
tel() { printf '%s\n' "$@" | timeout 20 python3 /usr/bin/dpdk-telemetry.py -f "$PREFIX"; }
field() {  # json-line, python expression on `r`
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}
wait_for() {  # what, command...: until the command succeeds, 20 s at most
  local what=$1 i
  shift
  for i in $(seq 200); do
    if "$@"; then return 0; fi
    kill -0 "$TP" 2>/dev/null || fail "testpmd exited while waiting for $what"
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

N=8192
mkfifo "$T/in"
# stdbuf: testpmd's dump goes to stdio, fully buffered into a file otherwise.
SKBNF_STRATEGY=recycle+magazine stdbuf -oL dpdk-testpmd -l 0,1 --no-huge -m 512 --no-pci --no-shconf \
  --file-prefix="$PREFIX" -d "$PLUGIN" --mbuf-pool-ops-name=skbnf \
  --vdev=net_null0 --vdev=net_null1 -- -i --mbcache=0 --total-num-mbufs=$N --forward-mode=io \
  --no-mlockall <"$T/in" >"$T/testpmd.log" 2>&1 &
TP=$!
exec 3>"$T/in"
wait_for "the telemetry socket" test -S "/var/run/dpdk/$PREFIX/dpdk_telemetry.v2"
echo start >&3
forwarding() { [ "$(field "$(tel /ethdev/stats,0)" 'r["/ethdev/stats"]["opackets"]')" -gt 0 ]; }
wait_for "forwarding" forwarding
grep -q "preferred mempool ops selected: skbnf" "$T/testpmd.log" || fail "skbnf ops not selected"

pool=$(field "$(tel /mempool/list)" 'r["/mempool/list"][0]')
info=$(tel "/mempool/info,$pool")
read -r size populated cache index < <(field "$info" \
  '" ".join(str(r["/mempool/info"][k]) for k in ("size","populated_size","cache_size","ops_index"))')
[ "$size" = "$N" ] && [ "$populated" = "$N" ] || fail "/mempool/info $pool: size $size populated $populated, want $N"
[ "$cache" = 0 ] || fail "/mempool/info $pool: cache_size $cache, want 0 (--mbcache=0)"
echo "ok: /mempool/info,$pool: size $size == populated_size == --total-num-mbufs, cache_size 0, ops_index $index"

dump_counts() {  # prints "ops common cache" from the last dump of $pool in the log
  awk -v p="mempool <$pool>" '
    index($0, p) == 1 {f = 1; ops = ""; c = ""; t = ""}
    f && /ops_name:/ {ops = $2}
    f && /common_pool_count=/ {split($0, a, "="); c = a[2]}
    f && /total_cache_count=/ {split($0, a, "="); t = a[2]}
    f && /cache_size=/ && t == "" {t = 0}
    END {print ops, c, t}' "$T/testpmd.log"
}
lines_before=$(wc -l <"$T/testpmd.log")
echo "dump_mempool" >&3
dumped() { [ "$(sed -n "$((lines_before + 1)),\$p" "$T/testpmd.log" | grep -c common_pool_count=)" -ge 1 ]; }
wait_for "dump_mempool while forwarding" dumped
sleep 0.2  # the rest of the dump's lines (printed by one call, ms apart)
read -r ops common cachec < <(dump_counts)
[ "$ops" = "<skbnf>" ] || fail "testpmd's dump names ops index $index '$ops', want <skbnf>"
[ $((common + cachec)) -le "$N" ] || fail "forwarding: DPDK's count $common + $cachec > $N"
echo "ok: forwarding: ops_name <skbnf>, DPDK's count $common (+ cache $cachec) <= $N"

echo stop >&3
stopped() { grep -q "Done." "$T/testpmd.log"; }
wait_for "stop" stopped
lines_before=$(wc -l <"$T/testpmd.log")
echo "dump_mempool" >&3
wait_for "dump_mempool after stop" dumped
sleep 0.2
read -r ops common cachec < <(dump_counts)
[ "$common" = "$N" ] && [ "${cachec:-0}" = 0 ] || fail "after stop: DPDK's count $common + cache ${cachec}, want $N + 0"
echo "ok: after stop: DPDK's count (the plugin's get_count: store + layers + depots) $common == $N"
echo quit >&3
exec 3>&-
wait "$TP" || fail "testpmd exited $?"
TP=
echo "ok: testpmd exited 0"
