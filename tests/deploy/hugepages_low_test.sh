#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Too few hugepages at start (issue 34 item 4b), on the machine's real hugepage pool: the test
# lowers /proc/sys/vm/nr_hugepages until only a few 2 MiB pages are free, and restores it
# whatever happens (trap). On its own hugetlbfs mount (made and removed here), for io and l3:
#   1. skbnfd is refused before EAL (exit 2): "preflight error: hugepages: free 2M pages: F ...
#      < X MiB skbnfd needs = N pages (pool ... + EAL, rings and caches ...) ...: reserve K
#      more: echo V > <nr_hugepages file> (now C)"; no EAL line in its output;
#   2. the command it names is run as written; then skbnfd starts, runs and exits 0 with an
#      exact audit, and the hugepage heap EAL grew (its debug log: "Heap on socket 0 was
#      expanded by M MB", summed) fits in the N pages it asked for.
# The page files go through the kernel's pool (sysfs nr_hugepages, free_hugepages:
# Documentation/admin-guide/mm/hugetlbpage.rst); EAL's dynamic memory grows its heap from the
# mount as it allocates (DPDK 22.11 lib/eal/common/malloc_heap.c, "Heap on socket %d was expanded
# by %zdMB").  Usage: hugepages_low_test.sh <skbnfd>
set -euo pipefail
SKBNFD=$1
T=$(mktemp -d /tmp/skbnf-hpl.XXXXXX)
MNT=/run/skbnf-hpl-$$
NR=/proc/sys/vm/nr_hugepages
ORIG=$(cat "$NR")
cleanup() {
  echo "$ORIG" >"$NR" 2>/dev/null || true
  umount "$MNT" 2>/dev/null || true
  rmdir "$MNT" 2>/dev/null || true
  rm -rf "$T" /var/run/dpdk/skbnf-hpl-$$* 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -12 "$T/skb.log" 2>/dev/null; exit 1; }
if ! [ -w "$NR" ] || ! mkdir -p "$MNT" || ! mount -t hugetlbfs -o pagesize=2M nodev "$MNT"; then
  echo "SKIP: cannot reserve hugepages or mount hugetlbfs here (needs root)"
  exit 77
fi
free_pages() { awk '/^HugePages_Free:/ {print $2}' /proc/meminfo; }
# Pages in the mount's files no process holds (DPDK 22.11 leaves its files when it stops; EAL
# removes them at the next start, and the preflight counts them as free).
stale_pages() { find "$MNT" -type f -printf '%b\n' | awk '{s += $1} END {print int(s * 512 / 2097152)}'; }
CTL=()
if "$SKBNFD" --helpfull 2>&1 | grep -q -- "--listen"; then
  CTL=(--listen=127.0.0.1:0 --loopback-role=admin --metrics-addr=off)
fi

run() {  # mode, extra flags...: skbnfd on the mount for 2 s, log $T/skb.log; returns its exit code
  local mode=$1
  shift
  set +e
  "$SKBNFD" "${CTL[@]}" --mode="$mode" --stats=0 --duration=2 "$@" -- -l 0,1 --no-pci \
    --huge-dir="$MNT" --file-prefix="skbnf-hpl-$$" --vdev=net_null0 --vdev=net_null1 \
    --log-level=lib.eal:debug >"$T/skb.log" 2>&1
  local rc=$?
  set -e
  return $rc
}

for mode in io l3; do
  # 1. A few pages free: what the other users of the machine hold stays theirs. The mount is
  # this test's own: the previous mode's run left its files there (how many depends on what the
  # daemon put in shared memory, e.g. the mbuf dynamic field's memzone), removed first.
  rm -f "$MNT"/*
  total=$(cat "$NR")
  echo $((total - $(free_pages) + 3)) >"$NR"
  [ $(($(free_pages) + $(stale_pages))) -le 5 ] ||
    fail "$mode: could not lower the free hugepages (free $(free_pages), stale $(stale_pages))"
  rc=0; run "$mode" || rc=$?
  [ "$rc" -eq 2 ] || fail "$mode: with $(free_pages) free pages skbnfd exited $rc, not 2"
  line=$(grep "preflight error: hugepages: free 2M pages:" "$T/skb.log") ||
    fail "$mode: no hugepages refusal"
  grep -q "^EAL: Detected" "$T/skb.log" && fail "$mode: EAL ran before the refusal"
  NEED=$(echo "$line" | sed -n 's/.* skbnfd needs = \([0-9]*\) pages .*/\1/p')
  CMD=$(echo "$line" | sed -n 's/.*: reserve [0-9]* more: \(echo [0-9]* > [^ ]*\) (now [0-9]*);.*/\1/p')
  [ -n "$NEED" ] && [ -n "$CMD" ] || fail "$mode: the refusal names no page count or command: $line"
  echo "$line" | grep -q "in a pod raise hugepages-2Mi to at least $((NEED * 2))Mi" ||
    fail "$mode: no pod advice for $NEED pages: $line"
  echo "ok: $mode: refused before EAL with $(free_pages) free: needs $NEED pages, says: $CMD"

  # 2. Do what it says, as written.
  case "$CMD" in
    "echo "*" > /sys/"*"/nr_hugepages") ;;
    *) fail "$mode: not a sysfs nr_hugepages command: $CMD" ;;
  esac
  bash -c "$CMD" || fail "$mode: '$CMD' failed"
  [ $(($(free_pages) + $(stale_pages))) -ge "$NEED" ] ||
    fail "$mode: after '$CMD' only $(free_pages) free + $(stale_pages) stale, $NEED asked"
  rc=0; run "$mode" || rc=$?
  [ "$rc" -eq 0 ] || fail "$mode: after '$CMD' skbnfd exited $rc"
  grep -q "audit OK (exact" "$T/skb.log" || fail "$mode: no exact audit"
  grep -q "preflight error" "$T/skb.log" && fail "$mode: preflight refused after the reservation"
  grown=$(grep -o "Heap on socket 0 was expanded by [0-9]*MB" "$T/skb.log" |
          awk '{s += $NF + 0} END {print s + 0}')
  [ "$grown" -gt 0 ] || fail "$mode: EAL's heap did not grow on hugepages (no expansion logged)"
  [ "$grown" -le $((NEED * 2)) ] ||
    fail "$mode: EAL's heap grew by $grown MB, more than the $NEED pages ($((NEED * 2)) MB) asked"
  echo "ok: $mode: after '$CMD' skbnfd ran (exit 0, exact audit); heap grew $grown MB <= $NEED pages"
  echo "$ORIG" >"$NR"
done
