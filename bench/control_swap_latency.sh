#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SetStrategy commit latency over N swaps (default 1000) through the gRPC API, while the
# daemon's workers forward. Prints p50/p99/max of the RPC round trip, the swap commit
# (SwapReport.total_ns) and the slowest worker's quiesce time per swap.
#
#   bench/control_swap_latency.sh                      # the fake daemon (see below)
#   DAEMON=build/server/skbnfd DAEMON_ARGS="..." bench/control_swap_latency.sh
#
# Environment: BUILD (build dir, default build), DAEMON (default: the fake daemon
# $BUILD/tests/control/skbnf_fake_daemon; the real DPDK engine under load:
# $BUILD/server/skbnfd), DAEMON_ARGS (extra daemon arguments; for the fake,
# e.g. "--sim-workers=1 --sim-poll-pause-us=0" for a busy-polling worker), SWAPS (1000).
# The daemon is started on a kernel-chosen loopback port and stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DAEMON=${DAEMON:-$BUILD/tests/control/skbnf_fake_daemon}
SWAPS=${SWAPS:-1000}
BENCH=$BUILD/server/control_swap_bench
[ -x "$DAEMON" ] || { echo "no daemon at $DAEMON (build first)" >&2; exit 2; }
[ -x "$BENCH" ] || { echo "no $BENCH (build with -DSKBNF_BENCH=ON)" >&2; exit 2; }
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
# Our flags go before a "--" in DAEMON_ARGS (EAL arguments follow it).
read -r -a extra <<<"${DAEMON_ARGS:-}"
pre=() post=()
for i in "${!extra[@]}"; do
  if [ "${extra[$i]}" = "--" ]; then post=("${extra[@]:$i}"); break; fi
  pre+=("${extra[$i]}")
done
"$DAEMON" "${pre[@]}" --listen=127.0.0.1:0 --metrics-addr=off --ready-file="$dir/ready" \
  "${post[@]}" 2>"$dir/stderr" &
pid=$!
for _ in $(seq 3000); do [ -s "$dir/ready" ] && break; sleep 0.01; done
[ -s "$dir/ready" ] || { echo "daemon did not start:" >&2; cat "$dir/stderr" >&2; exit 1; }
addr=$(sed -n 's/.*"grpc":"\([^"]*\)".*/\1/p' "$dir/ready")
echo "daemon: $DAEMON ${DAEMON_ARGS:-}"
echo "host: $(nproc) cpus, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 1  # let the workers reach steady state
"$BENCH" --addr="$addr" --swaps="$SWAPS" "$@"
