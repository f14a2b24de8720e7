#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Packets lost per swap in a swap storm: skbnfd forwarding at full load (io, one worker
# busy-polling net_null0 -> net_null1, the set-up of experiment 7) while control_swap_bench
# makes SWAPS (default 10,000) SetStrategy calls through gRPC, every ordered pair of SPECS in
# turn. At SIGTERM skbnfd drains, audits exactly and prints its summary; from it:
#   lost = every drop (io mode: only tx_full) + failed RX refills (rx_nombuf)
#   lost per swap = lost / swaps
# plus the swap latency distribution (control_swap_bench) and the audit result. net_null has
# no hardware ring to overflow, so a packet lost here is one the buffer pool failed to provide
# (or TX refused) during the storm; without swaps this set-up loses none.
#
#   bench/swap_storm_loss.sh                     # 10,000 swaps, the default spec set
#   SWAPS=2000 SPECS="magazine;headpool" bench/swap_storm_loss.sh
# Environment: BUILD (default build; needs server/skbnfd and server/control_swap_bench, i.e.
# -DSKBNF_BENCH=ON), SWAPS, SPECS (';'-separated). Each swap uses the pool's default quiesce
# timeout (200 ms), as in production; a swap that times out is counted failed by the bench.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SWAPS=${SWAPS:-10000}
SPECS=${SPECS:-"slab;magazine;recycle+magazine;headpool+magazine;lcache+magazine;lcache+recycle+headpool+magazine,prefetch"}
SKBNFD=$BUILD/server/skbnfd
BENCH=$BUILD/server/control_swap_bench
[ -x "$SKBNFD" ] || { echo "no $SKBNFD (build first)" >&2; exit 2; }
[ -x "$BENCH" ] || { echo "no $BENCH (build with -DSKBNF_BENCH=ON)" >&2; exit 2; }

# Every ordered pair (a, b): "a;b" in turn, so each transition a -> b occurs.
IFS=';' read -r -a specs <<<"$SPECS"
order=()
for a in "${specs[@]}"; do
  for b in "${specs[@]}"; do
    [ "$a" = "$b" ] || order+=("$a" "$b")
  done
done
seq_specs=$(IFS=';'; echo "${order[*]}")

dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
"$SKBNFD" --mode=io --strategy="${specs[0]}" --mbufs=32768 --stats=0 --listen=127.0.0.1:0 \
  --metrics-addr=off --ready-file="$dir/ready" -- -l 0,1 --no-huge -m 1024 --no-pci --no-shconf \
  --file-prefix="skbnf-storm-$$" --vdev=net_null0 --vdev=net_null1 >"$dir/stdout" 2>"$dir/stderr" &
pid=$!
for _ in $(seq 3000); do [ -s "$dir/ready" ] && break; sleep 0.01; done
[ -s "$dir/ready" ] || { echo "skbnfd did not start:" >&2; cat "$dir/stderr" >&2; exit 1; }
addr=$(sed -n 's/.*"grpc":"\([^"]*\)".*/\1/p' "$dir/ready")
echo "skbnfd io, one worker busy-polling net_null0 -> net_null1; $SWAPS swaps over ${#specs[@]} specs (${#order[@]} steps per round of every ordered pair)"
echo "host: $(nproc) cpus, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 1
bench_rc=0
"$BENCH" --addr="$addr" --swaps="$SWAPS" --specs="$seq_specs" || bench_rc=$?
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
summary=$(grep '^skbnfd: ' "$dir/stdout" "$dir/stderr" -h | tail -1)
echo "$summary"
rx=$(sed -n 's/.*, rx \([0-9]*\),.*/\1/p' <<<"$summary")
nombuf=$(sed -n 's/.*rx_nombuf \([0-9]*\),.*/\1/p' <<<"$summary")
drops=0
for n in $(grep -o '[a-z_0-9]*=[0-9]*' <<<"$summary" | cut -d= -f2); do drops=$((drops + n)); done
lost=$((drops + nombuf))
printf 'swaps %d  rx %s  dropped %d  rx_nombuf %d  lost %d  lost per swap %.4f  skbnfd exit %d\n' \
  "$SWAPS" "$rx" "$drops" "$nombuf" "$lost" "$(awk -v l="$lost" -v s="$SWAPS" 'BEGIN { print l / s }')" "$rc"
((bench_rc == 0 && rc == 0))
