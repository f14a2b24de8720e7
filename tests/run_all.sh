#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. installs missing Debian packages (deploy/deps.sh)
#   2. Release build with warnings as errors, every test (unit + integration) via ctest; then
#      a planted lock violation that must fail to compile under clang's -Wthread-safety
#      (tests/thread_safety/check.sh --planted-only); then one clang-tidy run over every
#      common/, dataplane/ and server/ unit of that build with readability-function-size (120
#      lines) and -Wthread-safety, both as errors, and a planted 121-line function and the planted
#      lock violation that it must report (tests/function_size/check.sh)
#   3. ASan+UBSan build of everything, the unit, integration and control tests run via ctest
#   4. ThreadSanitizer build of the buffer-core unit tests (also over the toy layer) and the
#      mempool driver tests (the plugin in a two-lcore DPDK program); no suppressions (the
#      driver test publishes its hand-over with atomics, since TSan cannot see rte_ring's or
#      EAL's own ordering)
#   5. libFuzzer (clang 14, ASan+UBSan): every target in tests/fuzz replays its corpus and fuzzes
#      for SKBNF_FUZZ_SECONDS (30 s) each (6 targets: 3 minutes); a crash fails the run and its
#      input is kept
# Build trees: build/, build-asan/, build-tsan/ (override with SKBNF_BUILD / SKBNF_BUILD_ASAN /
# SKBNF_BUILD_TSAN).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, printed at the end (also when a stage fails): the 60-minute budget of
# the brief is watched from these lines.
STAGE_NAME="deploy/deps.sh" STAGE_T0=$SECONDS STAGE_TIMES=""
stage() {  # stage "name": closes the previous stage's timing, announces the next
  STAGE_TIMES+="$(printf '%7d s  %s' $((SECONDS - STAGE_T0)) "$STAGE_NAME")"$'\n'
  STAGE_NAME=$1 STAGE_T0=$SECONDS
  echo "== $1"
}
trap 'stage end >/dev/null; printf "== stage times (total %d s)\n%s" "$SECONDS" "$STAGE_TIMES"' EXIT
bash deploy/deps.sh
JOBS=${SKBNF_JOBS:-$(nproc)}
B=${SKBNF_BUILD:-build}
BA=${SKBNF_BUILD_ASAN:-build-asan}
BT=${SKBNF_BUILD_TSAN:-build-tsan}
# Compiler cache between runs on the same machine (CI clones afresh each time): ccache keyed on
# paths relative to the checkout, so two clones at different paths share it. SKBNF_CCACHE=0
# turns it off.
if [ "${SKBNF_CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-/var/cache/skbnf/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
fi

# Every ctest stage writes a JUnit report; a skipped test that is not on tests/design_skips.txt
# (stage, name, reason) fails the run (tests/check_skips.py): a tool missing on a fresh machine
# must be installed by deploy/deps.sh, never pass as a skip. The checker's own self-test first,
# on a report the real ctest writes.
python3 tests/check_skips.py --self-test >/dev/null || { echo "check_skips.py self-test failed"; exit 1; }
stage_ctest() {  # stage-name build-dir ctest-args...: ctest, then the skip check of that stage
  local stage=$1 junit
  junit="$(cd "$2" && pwd)/junit-$1.xml"
  ctest --test-dir "$2" --output-junit "$junit" "${@:3}"
  python3 tests/check_skips.py "$stage" "$junit"
}

stage "release build ($B)"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKBNF_WERROR=ON >/dev/null
cmake --build "$B" -j "$JOBS"
stage "tests (release)"
stage_ctest release "$B" --output-on-failure -j 1 --timeout 900

stage "clang -Wthread-safety: a planted violation that must fail to compile"
bash tests/thread_safety/check.sh "$B" --planted-only
stage "clang-tidy (function size, thread safety)"
echo "   over common/, dataplane/ and server/: readability-function-size (120 lines) and"
echo "   -Wthread-safety as errors, one parse per unit; planted violations of both must be reported"
bash tests/function_size/check.sh "$B"

stage "ASan+UBSan build: unit, integration and control tests ($BA)"
# Without NDEBUG (-O2 -g, RelWithDebInfo's flags less -DNDEBUG): the pool's invariant checks at
# layer boundaries (dataplane/pool/dcheck.h) run in this stage's unit, integration and control
# tests, skbnfd included, and ToyLayerTest.DebugBuildsCatchALayerThatLosesAnObjectOnFlush shows
# they stop a broken layer (the release stage reports that test skipped).
cmake -S . -B "$BA" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKBNF_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
  -DSKBNF_SANITIZE=ON -DSKBNF_UNIT_ONLY=OFF -DSKBNF_BENCH=OFF >/dev/null
cmake --build "$BA" -j "$JOBS"
stage "unit, integration and control tests (ASan+UBSan)"
# DPDK's own libraries are not instrumented (ASan sees our code, not rte_malloc'd memory) and run
# fine under it with --no-huge; LeakSanitizer's only suppressions may be DPDK's, each documented
# in tests/sanitizers/lsan_dpdk.supp (one so far: libxdp's UMEM descriptor net_af_xdp leaves). The swap storm runs 2,000 swaps here
# (10,000 in the release stage): ASan makes each swap slower, not different.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan_dpdk.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
stage_ctest asan-unit "$BA" --output-on-failure -L unit -j "$JOBS" --timeout 900
# Not here: integration.testpmd_plugin, integration.telemetry_testpmd and
# integration.proc_info_skbnfd. They load the ASan-built plugin (-d libskbnf_mempool.so) into
# Debian's uninstrumented dpdk-testpmd / dpdk-proc-info, where the ASan runtime is not the first
# library loaded and refuses to start ("ASan runtime does not come first"); the plugin under ASan is covered by the driver tests (our own
# instrumented DPDK program loading it with -d).
# Nor the README walk-through (the release stage runs it; under ASan `strategy tune` alone
# would take minutes and test nothing the control tests do not).
# Nor the fake daemon's run of the eight slowest control programs that run here against skbnfd
# too (control_skbnfd.<same program>, every case of it, none skipped): the server code under
# test is the same library in both daemons, so under ASan the fake's run adds only the fake's
# own code, at about two minutes of this stage (stop 45's CI log: 104 of its 653 seconds).
# The release stage runs both; the fake-only programs and cases (health_rule, the golden test,
# tuner_modes_test, Health's simulated failed start, ...) still run on the fake here.
ASAN_FAKE_TWINS='control\.(tune_test|metrics_tls_test|roles_test|vanish_test|limits_identity_test|lease_test|listener_test|prometheus_test)'
SKBNF_SOAK_SWAPS=2000 stage_ctest asan-integration "$BA" --output-on-failure -L "integration|control" \
  -E "testpmd_plugin|telemetry_testpmd|proc_info_skbnfd|readme_walkthrough|^${ASAN_FAKE_TWINS}\$" \
  -j 1 --timeout 900
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS

stage "ThreadSanitizer build of the buffer core and the driver tests ($BT)"
cmake -S . -B "$BT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKBNF_WERROR=ON -DSKBNF_TSAN=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" -DSKBNF_BENCH=OFF >/dev/null
cmake --build "$BT" -j "$JOBS" --target pool_unit_tests pool_toy_layer_tests \
  driver_integration_tests skbnf_mempool
stage "unit and driver tests (TSan)"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
stage_ctest tsan-unit "$BT" --output-on-failure -L unit -j "$JOBS" --timeout 900
stage_ctest tsan-driver "$BT" --output-on-failure -R "StrandingTest|LcacheFidelityTest" -j 1 --timeout 900

stage "fuzzing (tests/fuzz/run_fuzz.sh)"
bash tests/fuzz/run_fuzz.sh "${SKBNF_FUZZ_SECONDS:-30}"
