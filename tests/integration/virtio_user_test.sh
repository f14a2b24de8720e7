#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skbnfd with a vhost-user virtio_user port (net_virtio_user, the attachment to OVS-DPDK) and
# dpdk-testpmd's vhost PMD (net_vhost, DPDK's own vhost-user library) as the backend, on 2 MiB
# hugepages this script reserves and gives back (tests/support/hugepages.py).
#   - without --single-file-segments: preflight warns before EAL (vdev_memory), and start-up is
#     refused (exit 2) with a message naming --single-file-segments. (On main before issue 22
#     skbnfd started, said "link up", health SERVING, and forwarded nothing: DPDK 22.11's
#     virtio_user logs "Too many memory regions" / "Failed to start device" and
#     virtio_user_set_status swallows it, drivers/net/virtio/virtio_user_ethdev.c.)
#   - with it: the port starts, skbnfd runs and exits 0 with an exact audit.
# Exit 77 (skip) only when no hugepage can be had or dpdk-testpmd is missing, with the reason.
# Usage: virtio_user_test.sh <skbnfd>
set -euo pipefail
SKBNFD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
STATE=$T/huge.json
VH=
cleanup() {
  [ -n "$VH" ] && kill "$VH" 2>/dev/null && wait "$VH" 2>/dev/null || true
  # EAL's hugepage files of the refused start (exit 2 before rte_eal_cleanup) stay otherwise
  [ -n "${MNT:-}" ] && rm -f "$MNT"/skbnf-vu-$$* "$MNT"/skbnf-vh-$$*
  python3 "$HERE/../support/hugepages.py" release --state "$STATE" || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -20 "$T/out"; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "SKIP: dpdk-testpmd not installed"; exit 77; }
set +e
MNT=$(python3 "$HERE/../support/hugepages.py" ensure 160 --state "$STATE" 2>"$T/err")
rc=$?
set -e
if [ "$rc" -eq 77 ]; then echo "SKIP: $(cat "$T/err")"; exit 77; fi
[ "$rc" -eq 0 ] || fail "hugepages.py ensure: $(cat "$T/err")"

# The backend: testpmd's vhost-user server socket (net_vhost, server mode by default).
SOCK=$T/vhost.sock
tail -f /dev/null | dpdk-testpmd --lcores=0@0,1@0 --no-huge -m 256 --no-pci --file-prefix="skbnf-vh-$$" \
  --vdev "net_vhost0,iface=$SOCK" -- --no-mlockall --total-num-mbufs=8192 --forward-mode=io \
  >"$T/testpmd" 2>&1 &
VH=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { cat "$T/testpmd"; fail "testpmd did not create $SOCK"; }

"$SKBNFD" --helpfull >"$T/out" 2>&1 || true
CTL=()
grep -q -- "--listen" "$T/out" && CTL=(--listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off)
run() {  # EAL memory flags...: skbnfd for 2 s on the virtio_user port
  set +e
  "$SKBNFD" "${CTL[@]}" --mode=io --duration=2 --stats=0 -- -l 0,1 --no-pci \
    --huge-dir="$MNT" --file-prefix="skbnf-vu-$$" "$@" \
    "--vdev=net_virtio_user0,path=$SOCK,queues=1" >"$T/out" 2>&1
  local rc=$?
  set -e
  return $rc
}

# Without the flag: warned before EAL, refused before the port starts, exit 2.
rc=0; run || rc=$?
[ "$rc" -eq 2 ] || fail "without --single-file-segments: exit $rc, not 2 (start-up refused)"
grep -q "preflight warning: vdev_memory: net_virtio_user0: .*--single-file-segments" "$T/out" ||
  fail "no preflight warning naming --single-file-segments"
grep -q "preflight warning: vdev_queue_size: net_virtio_user0: .*add queue_size=1024" "$T/out" ||
  fail "no preflight warning about virtio_user's 256-descriptor default rings"
grep -q "port 0 (net_virtio_user0, vhost-user): EAL's memory is [0-9]* files .*add --single-file-segments" "$T/out" ||
  fail "refusal does not name --single-file-segments"
grep -q "^port 0 link up" "$T/out" && fail "a refused port was reported link up"
echo "ok: without --single-file-segments: exit 2, $(grep -o "EAL's memory is [0-9]* files" "$T/out")"

# With it: starts, runs, exact audit, exit 0. The port has no control queue (no cq=1), so
# virtio_user clears VIRTIO_NET_F_CTRL_RX (DPDK 22.11 virtio_user_dev.c) and
# rte_eth_promiscuous_enable returns -ENOTSUP ("host does not support rx control",
# virtio_ethdev.c, at the virtio init log's INFO level): Engine::Start takes that as a PMD
# without promiscuous mode, not as an error (engine.cc; rte_ethdev.h documents -ENOTSUP).
rc=0; run --single-file-segments --log-level=pmd.net.virtio.init:info || rc=$?
[ "$rc" -eq 0 ] || fail "with --single-file-segments: exit $rc"
grep -q "preflight warning: vdev_memory" "$T/out" && fail "warned although the flag is given"
grep -q "audit OK (exact" "$T/out" || fail "with --single-file-segments: no exact audit"
grep -q "host does not support rx control" "$T/out" ||
  fail "rte_eth_promiscuous_enable did not answer -ENOTSUP: the start-up with it is not shown"
echo "ok: with --single-file-segments: started (promiscuous -ENOTSUP not fatal), exit 0, exact audit"
