#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The plugin inside DPDK's own testpmd: io forwarding on two net_null ports with
# `-d libskbnf_mempool.so --mbuf-pool-ops-name=skbnf` and DPDK's cache off (--mbcache=0).
# Checks: the skbnf ops were selected, packets were forwarded, testpmd exited 0. Then a bad
# SKBNF_STRATEGY: the pool creation fails cleanly with our message (no crash).
# Usage: testpmd_plugin_test.sh <path to libskbnf_mempool.so>  (not under a world-writable
# directory such as /tmp: EAL refuses to load plugins from there)
set -euo pipefail
PLUGIN=$(readlink -f "$1")
TESTPMD=$(command -v dpdk-testpmd)
OUT=$(mktemp)
SAFE=""
trap 'rm -f "$OUT"; [ -z "$SAFE" ] || rm -rf "$SAFE"; rmdir /var/run/dpdk/skbnf-tp-$$ 2>/dev/null || true' EXIT
# EAL refuses a plugin below a world-writable directory (e.g. a clone under /tmp): then load a
# copy from a private directory.
d=$(dirname "$PLUGIN")
while [ "$d" != "/" ]; do
  if [ -n "$(find "$d" -maxdepth 0 -perm -0002)" ]; then
    SAFE=$(mktemp -d /run/skbnf-tp.XXXXXX 2>/dev/null || mktemp -d "$HOME/.skbnf-tp.XXXXXX")
    cp "$PLUGIN" "$SAFE/" && PLUGIN="$SAFE/$(basename "$PLUGIN")"
    echo "note: plugin copied to $PLUGIN (its build path has a world-writable directory)"
    break
  fi
  d=$(dirname "$d")
done
run() {  # strategy, seconds
  (sleep "$2"; echo) | SKBNF_STRATEGY=$1 timeout 60 "$TESTPMD" -l 0,1 --no-huge -m 512 \
    --no-pci --no-shconf --no-telemetry --file-prefix=skbnf-tp-$$ -d "$PLUGIN" --mbuf-pool-ops-name=skbnf \
    --vdev=net_null0 --vdev=net_null1 -- --mbcache=0 --forward-mode=io --auto-start \
    --no-mlockall --stats-period=0 >"$OUT" 2>&1
}
fail() { echo "FAIL: $*"; cat "$OUT"; exit 1; }

for s in magazine recycle+headpool lcache+magazine,prefetch; do
  run "$s" 2 || fail "testpmd exited $? with SKBNF_STRATEGY=$s"
  grep -q "preferred mempool ops selected: skbnf" "$OUT" || fail "skbnf ops not selected ($s)"
  tx=$(awk '/Accumulated forward statistics/{f=1} f && /TX-packets:/{print $2; exit}' "$OUT")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || fail "no packets forwarded ($s): TX-packets '$tx'"
  grep -q "Bye" "$OUT" || fail "testpmd did not exit cleanly ($s)"
  echo "ok: testpmd + skbnf plugin ($s) forwarded $tx packets and exited 0"
done

set +e
run "magazine+bogus" 1
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || fail "bad SKBNF_STRATEGY: expected a clean failure, rc=$rc"
[ "$rc" -ne 124 ] || fail "bad SKBNF_STRATEGY: testpmd hung"
grep -q "skbnf mempool .*bad strategy 'magazine+bogus'" "$OUT" || fail "no strategy message"
grep -q "Creation of mbuf pool .* failed" "$OUT" || fail "pool creation did not fail"
echo "ok: bad SKBNF_STRATEGY reported and pool creation failed cleanly (rc=$rc)"
