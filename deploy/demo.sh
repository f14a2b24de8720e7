#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo (README): installs what is missing, builds skbnfd, skbnfctl and the plugin (what the
# README's walk-through then uses), and runs skbnfd with no arguments: l3 forwarding over
# 10,000 generated prefixes of IPv4/UDP traffic to 4,096 destinations, replayed by net_pcap,
# into a net_null sink. No NIC and no hugepages needed. Ctrl-C stops it
# (drain, pool audit, one summary line). Extra arguments go to skbnfd, e.g.
#   bash deploy/demo.sh --strategy=recycle+headpool
#   bash deploy/demo.sh --pool-ops=ring_mp_mc
# Build tree: build/ (override with SKBNF_BUILD).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/deps.sh
B=${SKBNF_BUILD:-build}
# A tree configured before (the test suite's, say) keeps its own build type and options.
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKBNF_UNIT_ONLY=OFF >/dev/null
fi
# Everything the README's walk-through then uses: skbnfd, skbnfctl and the plugin.
cmake --build "$B" --target skbnfd skbnfctl skbnf_mempool
exec "$B/server/skbnfd" "$@"
