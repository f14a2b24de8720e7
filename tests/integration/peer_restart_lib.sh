# SPDX-License-Identifier: BSD-3-Clause
# peer_restart_lib.sh, sourced by the peer-restart tests (vhost_restart_test.sh,
# memif_restart_test.sh, af_xdp_flap_test.sh): skbnfd
# attached to a dpdk-testpmd that is SIGKILLed and started again (issue 34 item 2). What the
# tests share: starting skbnfd and finding its gRPC address, waiting for an event with a bound
# (never sleep-then-hope), readiness, skbnfd's port counters, and the stop check (SIGTERM: exit 0
# and an exact audit). The caller sets SKBNFD HEALTH CTL T (and NS when skbnfd runs in a
# network namespace: skbnfd, skbnf_health and skbnfctl then run in it); fail() below prints the
# logs' tails (a caller may define its own after sourcing this).
# Also used by af_xdp_flap_test.sh (an interface, not testpmd, is what fails there).
fail() {
  echo "FAIL: $*"
  tail -15 "$T/skb.log" 2>/dev/null || true
  tail -8 "$T/testpmd.log" 2>/dev/null || true
  exit 1
}
PID=  # skbnfd
VH=   # dpdk-testpmd
ADDR=
start_skbnfd() {  # case, skbnfd arguments...: starts skbnfd (log $T/skb.log), sets PID
  local case=$1
  shift
  : >"$T/skb.log"
  # shellcheck disable=SC2086  # NS has no blanks; `ip netns exec` execs skbnfd: PID is its
  ${NS:+ip netns exec $NS} "$SKBNFD" "$@" >"$T/skb.log" 2>&1 &
  PID=$!
}
skbnfd_address() {  # case: waits for skbnfd's gRPC listener, sets ADDR
  local _
  for _ in $(seq 300); do
    grep -q "gRPC on [0-9.]*:[0-9]*" "$T/skb.log" && break
    kill -0 "$PID" 2>/dev/null || fail "$1: skbnfd did not start"
    sleep 0.1
  done
  ADDR=$(grep -o "gRPC on [0-9.]*:[0-9]*" "$T/skb.log" | awk '{print $3}' || true)
  [ -n "$ADDR" ] || fail "$1: no gRPC address in skbnfd's log"
}
start_testpmd() {  # testpmd vdev arguments...: flowgen on them (log $T/testpmd.log), sets VH
  # flowgen sends on every port all the time and receives and frees what comes back: frames
  # cross skbnfd, in and out, whenever both sides are up, whatever the start order.
  # --stats-period: testpmd forwards until a signal instead of reading stdin.
  dpdk-testpmd --lcores=0@0,1@0 --no-huge -m 256 --no-pci --file-prefix="skbnf-pr-tp-$$" \
    "$@" -- --no-mlockall --total-num-mbufs=8192 --forward-mode=flowgen --disable-link-check \
    --stats-period=1 </dev/null >>"$T/testpmd.log" 2>&1 &
  VH=$!
}
kill_testpmd() {
  kill -KILL "$VH" 2>/dev/null || true
  wait "$VH" 2>/dev/null || true
  VH=
}
testpmd_forwarding() {  # n: the n-th testpmd of this case has started forwarding
  [ "$(grep -c "flowgen packet forwarding packets/burst" "$T/testpmd.log")" -ge "$1" ]
}
wait_for() {  # what, bound in tenths of a second, command...: waits for the command to succeed
  local what=$1 n=$2 i
  shift 2
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    [ -z "$PID" ] || kill -0 "$PID" 2>/dev/null || fail "skbnfd exited while waiting for: $what"
    sleep 0.1
  done
  fail "not within $((n / 10)) s: $what"
}
ready() { ${NS:+ip netns exec $NS} "$HEALTH" --addr="$ADDR" --service=readiness --timeout=2 >/dev/null 2>&1; }
not_ready() { kill -0 "$PID" 2>/dev/null && ! ready; }  # a dead skbnfd is not "not ready"
rx() {  # frames skbnfd received and sent, both ports (skbnfctl ports: ipackets, opackets)
  ${NS:+ip netns exec $NS} "$CTL" --addr="$ADDR" --json ports 2>/dev/null | python3 -c '
import json, sys
ps = [p.get("pmd", {}) for p in json.load(sys.stdin)["ports"]]
print(sum(int(p.get("ipackets", 0)) for p in ps), sum(int(p.get("opackets", 0)) for p in ps))'
}
R0=
rx_grows() {  # both of rx's counters 1000 beyond R0's
  local r
  r=$(rx) || return 1
  set -- $r $R0
  [ "$1" -gt "$(($3 + 1000))" ] && [ "$2" -gt "$(($4 + 1000))" ]
}
frames_through() {  # case, what: waits for 1000 frames in and out of skbnfd from now
  R0=$(rx) || fail "$1: skbnfctl ports"
  wait_for "$1: $2" 100 rx_grows
}
stop_skbnfd() {  # case: SIGTERM, exit 0, an exact audit
  local rc
  kill -TERM "$PID"
  set +e; wait "$PID"; rc=$?; set -e
  PID=
  [ "$rc" -eq 0 ] || fail "$1: SIGTERM after the peer's restart: skbnfd exited $rc"
  grep -q "audit OK (exact" "$T/skb.log" || fail "$1: no exact audit at stop"
  echo "ok: $1: SIGTERM: exit 0, $(grep -o 'audit OK[^;]*' "$T/skb.log")"
}
