#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skbnfd as a program: bad flags stop start-up with what to write instead; the demo (no
# arguments) forwards, prints per-core lines, and on SIGINT drains, audits, prints one summary
# line and exits 0; the ring_mp_mc baseline does the same.  Usage: skbnfd_cli_test.sh <skbnfd>
set -euo pipefail
BIN=$1
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail() { echo "FAIL: $*"; cat "$OUT"; exit 1; }
# With the control plane built in, listen on kernel-chosen loopback ports and no metrics, so
# that this test never collides with another skbnfd on the machine.
CTL=()
if "$BIN" --helpfull 2>&1 | grep -q -- "--listen"; then
  CTL=(--listen=127.0.0.1:0 --metrics-addr=off)
fi

# --help lists the flags by topic (exit 0), with the EAL `--` convention and an example; the
# topics, every flag once and no source file: tests/cli.
"$BIN" --help >"$OUT" 2>&1 || fail "--help exited $?"
grep -q "No flags matched" "$OUT" && fail "--help: no flags listed"
for want in "-- EAL arguments" "examples:" "ports and EAL" "buffer pool" "demo (" \
            "console and run time:" "--pool-ops" "--demo-routes" "--stats"; do
  grep -q -- "$want" "$OUT" || fail "--help: no '$want'"
done
if "$BIN" --helpfull 2>&1 | grep -q -- "--listen"; then
  grep -q "^control API and TLS:" "$OUT" || fail "--help: no control API topic"
fi
grep -q "Flags from" "$OUT" && fail "--help groups the flags by source file"
grep -q -- "--test-stall" "$OUT" && fail "--help lists the test hooks"
echo "ok: --help lists the flags by topic"

expect_refusal() {  # pattern, flags...
  local pat=$1; shift
  set +e; "$BIN" "$@" >"$OUT" 2>&1; local rc=$?; set -e
  [ "$rc" -ne 0 ] || fail "$* was accepted"
  grep -q -- "$pat" "$OUT" || fail "$*: no '$pat' in the message"
  echo "ok: $* refused"
}
expect_refusal "write --mode=io" --mode=l2
expect_refusal "write e.g. --strategy=magazine" --strategy=magazine+recycle
expect_refusal "write --pool-ops=skbnf or --pool-ops=ring_mp_mc" --pool-ops=stack
expect_refusal "write --mbuf-cache=N" --pool-ops=ring_mp_mc --strategy=magazine
expect_refusal "out of range" --burst=100000
expect_refusal "unknown flag --no-such-flag" --no-such-flag
expect_refusal "lcache:size=N" --mbuf-cache=64
expect_refusal "swap-cycle='headpool;magazine'" --swap-cycle="headpool;bogus"
expect_refusal "needs --pool-ops=skbnf" --pool-ops=ring_mp_mc --swap-cycle=headpool
PCIDEVICE_SKBNF_TEST=eth0 expect_refusal "is not a PCI address" --pcidevice-env
expect_refusal "line 1: unknown directive" --config=<(echo "colr on")

# The example config file, for 2 s: exits 0 with an exact audit; net_null's all-zero frames
# are counted as not_ipv4 drops in l3.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
"$BIN" "${CTL[@]}" --config="$SRC/server/daemon/skbnfd.conf.example" --duration=2 >"$OUT" 2>&1 ||
  fail "example config run failed"
grep -Eq "mode l3, pool skbnf, strategy recycle\+magazine, workers on lcores 1, 100[0-9] routes" "$OUT" ||
  fail "example config not applied"
grep -q "audit OK (exact" "$OUT" || fail "example config: no exact audit"
grep -Eq "not_ipv4=[1-9]" "$OUT" || fail "example config: no not_ipv4 drops counted"
echo "ok: example config ran, audit exact"

demo() {  # flags...: run the demo, SIGINT 2 s after it started forwarding
  "$BIN" "${CTL[@]}" "$@" >"$OUT" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    grep -q "^mode " "$OUT" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 2
  kill -INT "$pid"
  set +e; wait "$pid"; local rc=$?; set -e
  [ "$rc" -eq 0 ] || fail "demo $* exited $rc"
  grep -q "^lcore 1: rx .* pps" "$OUT" || fail "demo $*: no per-core line"
  # cycles per packet from the worker's busy-cycle counters: a positive figure while it forwards
  grep -Eq "^lcore 1: rx .* pps, tx .* pps, cycles/pkt [0-9]+\.[0-9], " "$OUT" ||
    fail "demo $*: no cycles/pkt figure on the per-core line"
  grep -q "audit OK" "$OUT" || fail "demo $*: no audit OK"
  local tx
  tx=$(sed -n 's/^skbnfd: .*, tx \([0-9]*\),.*/\1/p' "$OUT")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || fail "demo $*: nothing forwarded"
  echo "ok: demo $* forwarded $tx packets, audit OK, exit 0"
}
demo
demo --pool-ops=ring_mp_mc
demo --strategy=recycle+headpool --colour
# Hot swaps while the demo forwards: swaps acknowledged (one not acknowledged in time on a
# loaded machine is rolled back and reported, which is allowed here), audit still exact.
demo --swap-cycle="headpool;lcache:size=64+magazine;recycle+headpool,prefetch" --swap-every=0.3
grep -q "^swap ok: .* -> .*, epoch" "$OUT" || fail "no swap line"
echo "ok: $(grep -c '^swap ok' "$OUT") hot swaps in the demo, audit OK"
# --swap-cycle goes through the control plane's one door (server/core/mutations.h): every swap is in
# the audit trail (server/core/change_log.h: JSON lines), from local:console, with source console,
# whatever its result.
swaps=$(grep -c '^swap ' "$OUT")
logged=$(grep -c '"event":"end","rpc":"SetStrategy","source":"console","who":"local:console"' \
  "$OUT" || true)
[ "$swaps" -gt 0 ] && [ "$logged" -eq "$swaps" ] ||
  fail "--swap-cycle: $swaps swaps, $logged change-log lines with source=console"
echo "ok: the $swaps --swap-cycle swaps are in the change log with source=console"

# A worker that does not stop (issue 31 item 7): the hidden --test-stall-* hook
# (server/daemon/test_hooks.cc) makes lcore 1 sleep 60 s before its quiescent point at the first
# swap's new epoch. At --duration's end Engine::Stop waits its 5 s bound (EngineConfig::
# stop_timeout), names the worker, its core and what its thread is doing (the kernel's state
# and wchan), takes no audit under it, and skbnfd exits 1 at once (no destructor or EAL clean-up
# under the running worker), long before the stall would end.
t0=$(date +%s)
set +e
"$BIN" "${CTL[@]}" --test-stall-lcore=1 --test-stall-ms=60000 --swap-cycle="headpool;magazine" \
  --swap-every=0.5 --duration=2 --stats=0 >"$OUT" 2>&1
rc=$?
set -e
took=$(( $(date +%s) - t0 ))
[ "$rc" -eq 1 ] || fail "wedged worker: exit $rc (want 1)"
grep -Eq "^skbnfd: stopping the engine: worker on lcore 1 \(cores? [0-9,]+\) did not stop within 5000 ms: its loop did not come round" "$OUT" ||
  fail "wedged worker: not named"
grep -q "state S (sleeping), waiting in .*nanosleep" "$OUT" || fail "wedged worker: its thread's state not said"
grep -q "audit FAILED (not taken: worker on lcore 1" "$OUT" || fail "wedged worker: summary line"
[ "$took" -lt 30 ] || fail "wedged worker: skbnfd took $took s to exit (the stall is 60 s)"
echo "ok: a wedged worker is named and skbnfd exits 1 after ${took} s"
