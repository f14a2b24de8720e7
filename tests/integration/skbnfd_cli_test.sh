#!/usr/bin/env bash
# skbnfd as a program: bad flags stop start-up with what to write instead; the demo (no
# arguments) forwards, prints per-core lines, and on SIGINT drains, audits, prints one summary
# line and exits 0; the ring_mp_mc baseline does the same.  Usage: skbnfd_cli_test.sh <skbnfd>
set -euo pipefail
BIN=$1
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail() { echo "FAIL: $*"; cat "$OUT"; exit 1; }

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
expect_refusal "Unknown command line flag" --no-such-flag

demo() {  # flags...: run the demo, SIGINT after 3 s
  "$BIN" "$@" >"$OUT" 2>&1 &
  local pid=$!
  sleep 3
  kill -INT "$pid"
  set +e; wait "$pid"; local rc=$?; set -e
  [ "$rc" -eq 0 ] || fail "demo $* exited $rc"
  grep -q "^lcore 1: rx .* pps" "$OUT" || fail "demo $*: no per-core line"
  grep -q "audit OK" "$OUT" || fail "demo $*: no audit OK"
  local tx
  tx=$(sed -n 's/^skbnfd: .*, tx \([0-9]*\),.*/\1/p' "$OUT")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || fail "demo $*: nothing forwarded"
  echo "ok: demo $* forwarded $tx packets, audit OK, exit 0"
}
demo
demo --pool-ops=ring_mp_mc
demo --strategy=recycle+headpool --colour
