#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. installs missing Debian packages (deploy/deps.sh)
#   2. Release build with warnings as errors, every test (unit + integration) via ctest
#   3. ASan+UBSan build of the unit tests, run via ctest
# Build trees: build/ and build-asan/ (override with SKBNF_BUILD / SKBNF_BUILD_ASAN).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/deps.sh
JOBS=${SKBNF_JOBS:-$(nproc)}
B=${SKBNF_BUILD:-build}
BA=${SKBNF_BUILD_ASAN:-build-asan}

echo "== release build ($B)"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKBNF_WERROR=ON >/dev/null
cmake --build "$B" -j "$JOBS"
echo "== tests (release)"
ctest --test-dir "$B" --output-on-failure -j 1 --timeout 900

echo "== ASan+UBSan build of the unit tests ($BA)"
cmake -S . -B "$BA" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKBNF_WERROR=ON \
  -DSKBNF_SANITIZE=ON -DSKBNF_UNIT_ONLY=ON -DSKBNF_BENCH=OFF >/dev/null
cmake --build "$BA" -j "$JOBS" --target pool_unit_tests
echo "== unit tests (ASan+UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$BA" --output-on-failure -L unit -j "$JOBS" --timeout 900
