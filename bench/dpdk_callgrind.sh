#!/usr/bin/env bash
# Instructions per forwarded packet on the forwarding lcore, under valgrind's callgrind
# (deterministic, unlike Mpps on a shared machine). Same set-up as dpdk_bench.py: two net_null
# ports, one forwarding lcore, io. For each configuration: run ~N s under callgrind with one
# output file per thread, take the forwarding thread's instruction count (the busiest thread
# other than the main one, which does start-up) and divide by the packets it forwarded. The
# forwarding thread's count includes its idle polls before traffic starts (few: net_null
# always has packets).
#   bash bench/dpdk_callgrind.sh [build dir] [seconds] [strategies...]
set -euo pipefail
cd "$(dirname "$0")/.."
BARG=${1:-build}
B=$(readlink -f "$BARG")
SECS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
STRATS=("$@")
[ ${#STRATS[@]} -gt 0 ] || STRATS=(slab magazine headpool recycle lcache recycle+headpool headpool+magazine lcache+magazine)
PLUGIN=$B/dataplane/dpdk/libskbnf_mempool.so
SKBNFD=$B/server/skbnfd
W=$(mktemp -d)
trap 'rm -rf "$W"; rmdir /var/run/dpdk/cg-$$ 2>/dev/null || true' EXIT
CTL=()
if "$SKBNFD" --helpfull 2>&1 | grep -q -- "--listen"; then
  CTL=(--listen=127.0.0.1:0 --metrics-addr=off)  # control plane built in: no fixed ports
fi
EAL=(-l 0,1 --no-huge -m 1024 --no-pci --no-shconf --vdev=net_null0 --vdev=net_null1)

worker_ir() {  # the busiest thread's Ir among callgrind files $1*, except the main thread (-01)
  for f in "$1"*-[0-9]*; do
    case "$f" in *-01) continue ;; esac
    awk '/^summary:/{print $2}' "$f"
  done | sort -n | tail -1
}

testpmd() {  # name, extra env, extra EAL, extra testpmd args
  local name=$1 envs=$2 eal=$3 tpa=$4 out=$W/out
  (sleep "$SECS"; echo) | env $envs valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$W/cg.$$.%p" dpdk-testpmd "${EAL[@]}" --file-prefix=cg-$$ $eal -- \
    --forward-mode=io --auto-start --no-mlockall --stats-period=0 --total-num-mbufs=32768 \
    $tpa >"$out" 2>&1 || true
  local pkts ir
  pkts=$(awk '/Accumulated forward statistics/{f=1} f && /TX-packets:/{print $2; exit}' "$out")
  ir=$(worker_ir "$W/cg.$$.")
  rm -f "$W"/cg.$$.*
  printf "| %s | %s | %s | %.1f |\n" "$name" "$pkts" "$ir" "$(awk -v i="$ir" -v p="$pkts" 'BEGIN{print i/p}')"
}

skbnfd() {  # name, flags
  local name=$1 flags=$2 out=$W/out
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$W/cg.$$.%p" \
    "$SKBNFD" "${CTL[@]}" --mode=io --stats=0 --duration="$SECS" --mbufs=32768 $flags -- "${EAL[@]}" \
    --file-prefix=cg-$$ >"$out" 2>&1
  local pkts ir
  pkts=$(sed -n 's/^skbnfd: .*, tx \([0-9]*\),.*/\1/p' "$out")
  ir=$(worker_ir "$W/cg.$$.")
  rm -f "$W"/cg.$$.*
  printf "| %s | %s | %s | %.1f |\n" "$name" "$pkts" "$ir" "$(awk -v i="$ir" -v p="$pkts" 'BEGIN{print i/p}')"
}

echo "| configuration | packets forwarded | instructions (forwarding thread) | instructions / packet |"
echo "|---|---:|---:|---:|"
testpmd "testpmd native (ring_mp_mc, cache 250)" "" "" ""
for s in "${STRATS[@]}"; do
  testpmd "testpmd + plugin \`$s\` (mbcache 0)" "SKBNF_STRATEGY=$s" \
    "-d $PLUGIN --mbuf-pool-ops-name=skbnf" "--mbcache=0"
done
skbnfd "skbnfd ring_mp_mc (cache 250)" "--pool-ops=ring_mp_mc --mbuf-cache=250"
for s in "${STRATS[@]}"; do skbnfd "skbnfd \`$s\`" "--strategy=$s"; done
echo
echo "Command: \`bash bench/dpdk_callgrind.sh $BARG $SECS ${STRATS[*]}\` (valgrind $(valgrind --version | sed 's/valgrind-//'), callgrind, ~$SECS s per configuration)."
