#!/usr/bin/env bash
# ctest bench_run_quick: runs `bench/run --quick` (every experiment, 2 pairs of 1-second runs)
# and checks that what it wrote is well formed: CSV of raw runs, summary table, JSON, PNG per
# experiment (bench/check_results.py). It checks the tooling, never the numbers.
#   bench/smoke_test.sh <build dir> <output dir>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?build dir}
OUT=${2:?output dir}
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "SKIP: python3-matplotlib is not installed (deploy/deps.sh installs it)"; exit 77
fi
if ! command -v dpdk-testpmd >/dev/null; then
  echo "SKIP: dpdk-testpmd is not installed (Debian package dpdk; deploy/deps.sh)"; exit 77
fi
rm -rf "$OUT"
mkdir -p "$OUT"
# (`builds` against the same tree: it checks the tooling of the two-tree comparison.)
/usr/bin/python3 "$HERE/run" --quick --build "$BUILD" --baseline-build "$BUILD" --out "$OUT" \
  > "$OUT/stdout.md"
/usr/bin/python3 "$HERE/check_results.py" --quick "$OUT"
