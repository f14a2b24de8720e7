#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets of tests/fuzz with clang 14 (ASan+UBSan) and runs each for a
# bounded time. Usage:
#   tests/fuzz/run_fuzz.sh [seconds-per-target] [--merge] [target...]
#     seconds-per-target   default 60 (6 targets: about 6 minutes plus the build); 0 runs
#                          every corpus input once and stops (a quick regression check)
#     --merge              afterwards, add to tests/fuzz/corpus/<target>/ a small set of the
#                          new inputs that covers what they found (libFuzzer
#                          -set_cover_merge=1); without it the committed corpus is only read
#     target...            a subset (strategy_spec pool_ops net_text l3_packet config
#                          rpc_validation); default all
# Environment: SKBNF_BUILD_FUZZ (build dir, default build-fuzz), SKBNF_JOBS (default 2).
# Each target starts from its committed corpus (tests/fuzz/corpus/<target>/, which also holds
# every input that ever crashed it: the regression set) plus the inputs it found in earlier runs
# in this build dir ($SKBNF_BUILD_FUZZ/corpus/<target>/), and its dictionary if it has one.
# Prints per target the executions and libFuzzer's final coverage (cov: edges, ft: features).
# Exits non-zero when any target crashes, leaks, times out on an input or fails a check; the
# input is saved as tests/fuzz/crashes/<target>-<kind>-<sha1> (reproduce: run the target
# binary with that file as its only argument).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=60
MERGE=0
TARGETS=()
for a in "$@"; do
  case "$a" in
    --merge) MERGE=1 ;;
    ''|*[!0-9]*) TARGETS+=("$a") ;;
    *) SECONDS_PER_TARGET=$a ;;
  esac
done
((${#TARGETS[@]})) || TARGETS=(strategy_spec pool_ops net_text l3_packet config rpc_validation)
B=${SKBNF_BUILD_FUZZ:-build-fuzz}
JOBS=${SKBNF_JOBS:-2}
CXX=${SKBNF_FUZZ_CXX:-clang++-14}
if ! command -v "$CXX" >/dev/null; then
  echo "run_fuzz: $CXX not found; install clang-14 and libclang-rt-14-dev (bash deploy/deps.sh)" >&2
  exit 2
fi

t0=$(date +%s)
echo "== build fuzz targets ($B, $CXX)"
cmake -S tests/fuzz -B "$B" -G Ninja -DCMAKE_CXX_COMPILER="$CXX" >/dev/null
cmake --build "$B" -j "$JOBS"
echo "== build: $(($(date +%s) - t0)) s"

mkdir -p tests/fuzz/crashes
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${TARGETS[@]}"; do
  bin="$B/${t}_fuzz"
  if [ ! -x "$bin" ]; then
    echo "run_fuzz: no target $bin" >&2
    failed+=("$t(not built)")
    continue
  fi
  work="$B/corpus/$t"
  mkdir -p "$work" "tests/fuzz/corpus/$t"
  args=(-timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="tests/fuzz/crashes/$t-")
  if ((SECONDS_PER_TARGET == 0)); then
    args+=(-runs=0)  # regression only: every corpus input once (max_total_time=0 is unbounded)
  else
    args+=(-max_total_time="$SECONDS_PER_TARGET")
  fi
  [ -f "tests/fuzz/dict/$t.dict" ] && args+=(-dict="tests/fuzz/dict/$t.dict")
  log="$B/$t.log"
  echo "== $t: ${SECONDS_PER_TARGET} s (log $log)"
  ts=$(date +%s)
  rc=0
  # The guard: libFuzzer stops itself at max_total_time; this only catches a hang outside
  # an input (its own -timeout catches one inside).
  timeout --kill-after=10 $((SECONDS_PER_TARGET + 120)) \
    "$bin" "${args[@]}" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
  line=$(printf '%-14s rc=%-3s %4ss  executions=%-9s cov=%-5s ft=%-6s corpus=%s' "$t" "$rc" \
    "$(($(date +%s) - ts))" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")
  summary+=("$line")
  echo "$line"
  if ((rc != 0)); then
    failed+=("$t")
    grep -E 'FUZZ_CHECK|ERROR: |SUMMARY: |runtime error|Test unit written to' "$log" | head -20 >&2 || true
    continue
  fi
  if ((MERGE)); then
    before=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
    "$bin" -set_cover_merge=1 "tests/fuzz/corpus/$t" "$work" >"$B/$t.merge.log" 2>&1
    echo "   merged: $before -> $(find "tests/fuzz/corpus/$t" -type f | wc -l) files in tests/fuzz/corpus/$t"
  fi
done

echo "== summary (total $(($(date +%s) - t0)) s)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]} (inputs under tests/fuzz/crashes/)" >&2
  exit 1
fi
