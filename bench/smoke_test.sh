#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
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
# Hugepages are bench/run's default (tests/support/hugepages.py reserves them as root and only
# ever raises the reservation). Where none can be had, the tooling is still checked, on
# --no-huge (the outputs are then labelled so: check_results.py checks the label either way).
MEM=()
# Gives back exactly what this test reserved/mounted (nothing if the pages were there already).
trap '/usr/bin/python3 "$HERE/../tests/support/hugepages.py" release --state "$OUT/hugepages.state"' EXIT
if ! /usr/bin/python3 "$HERE/../tests/support/hugepages.py" ensure 1100 \
     --state "$OUT/hugepages.state" >/dev/null 2>"$OUT/hugepages.err"; then
  echo "note: no hugepages ($(cat "$OUT/hugepages.err")): checking the tooling on --no-huge"
  MEM=(--no-huge)
fi
# (`builds` against the same tree: it checks the tooling of the two-tree comparison.)
/usr/bin/python3 "$HERE/run" --quick "${MEM[@]}" --build "$BUILD" --baseline-build "$BUILD" \
  --out "$OUT" > "$OUT/stdout.md"
/usr/bin/python3 "$HERE/check_results.py" --quick "$OUT"
