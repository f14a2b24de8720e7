#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skbnfd's layout-control flags (issue 23 item 2; bench/run layout uses them):
#   --pool-flags=no_iova_contig   DPDK's ring_mp_mc pool made with RTE_MEMPOOL_F_NO_IOVA_CONTIG
#   --store-stride=N              skbnf's slab store, objects N bytes apart
# --help documents them as benchmark/diagnostic knobs (with the DMA caveat); every misplaced or
# bad value stops start-up saying what to write; each runs the demo (virtual ports) to an exact
# audit. Where the mbufs land is tested in layout_integration_tests.
# Usage: skbnfd_layout_flags_test.sh <skbnfd>
set -euo pipefail
BIN=$1
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail() { echo "FAIL: $*"; cat "$OUT"; exit 1; }
CTL=()
if "$BIN" --helpfull 2>&1 | grep -q -- "--listen"; then
  CTL=(--listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off)
fi

# absl wraps the help text: compare with the whitespace folded.
"$BIN" --helpfull 2>&1 | tr -s '[:space:]' ' ' >"$OUT" || true
for want in "--pool-flags=no_iova_contig" "--store-stride=BYTES" "not IOVA-contiguous" "wrong for a real NIC's DMA" \
            "benchmark/diagnostic knob" "--pool-flags=no_iova_contig" "--store-stride=4096"; do
  grep -q -- "$want" "$OUT" || fail "--helpfull: no '$want'"
done
echo "ok: --helpfull documents both flags (bench/run's check_layout_flags finds the dashed names)"

expect_refusal() {  # pattern, flags...
  local pat=$1; shift
  set +e; "$BIN" "${CTL[@]}" "$@" >"$OUT" 2>&1; local rc=$?; set -e
  [ "$rc" -ne 0 ] || fail "$* was accepted"
  grep -q -- "$pat" "$OUT" || fail "$*: no '$pat' in the message"
  echo "ok: $* refused"
}
expect_refusal "write --pool-ops=ring_mp_mc --pool-flags=no_iova_contig" --pool-flags=no_iova_contig
expect_refusal "unknown flag 'no_iova'; write --pool-flags=no_iova_contig" \
  --pool-ops=ring_mp_mc --pool-flags=no_iova
expect_refusal "unknown flag ''" --pool-ops=ring_mp_mc --pool-flags=no_iova_contig,
expect_refusal "applies to --pool-ops=skbnf" --pool-ops=ring_mp_mc --store-stride=4096
expect_refusal "write 0 (packed, the default) or a multiple of 64" --store-stride=4100
expect_refusal "write 0 (packed, the default) or a multiple of 64" --store-stride=131072
expect_refusal "write 0 (packed, the default) or a multiple of 64" --store-stride=-64
# Smaller than an mbuf: known once DPDK has sized the element (the engine, still at start-up).
expect_refusal "write 0 (packed) or a multiple of 64 from 2368 to 65536" --store-stride=1024 \
  --duration=1

run() {  # flags...: the demo (net_pcap -> net_null) for 2 s: exit 0, exact audit, forwarded
  "$BIN" "${CTL[@]}" "$@" --duration=2 >"$OUT" 2>&1 || fail "$* exited $?"
  grep -q "audit OK (exact" "$OUT" || fail "$*: no exact audit"
  local tx
  tx=$(sed -n 's/^skbnfd: .*, tx \([0-9]*\),.*/\1/p' "$OUT")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || fail "$*: nothing forwarded"
  echo "ok: $* forwarded $tx packets, audit exact, exit 0"
}
run --pool-ops=ring_mp_mc --pool-flags=no_iova_contig
run --strategy=lcache+headpool --store-stride=4096
run --store-stride=0
