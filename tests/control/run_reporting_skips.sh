#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one test program (gtest or Python unittest) for ctest and reports a run that passed but
# skipped something as skipped (exit 77, the tests' SKIP_RETURN_CODE), never as passed: a gtest
# "[  SKIPPED ]" line or unittest's "OK (skipped=N)". A failure stays a failure.
#   run_reporting_skips.sh PROGRAM [ARGS...]
set -uo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" > >(tee "$out") 2>&1
rc=$?
wait
if [ "$rc" -eq 0 ] && grep -Eq '^\[  SKIPPED \]|^OK \(skipped=[0-9]+\)' "$out"; then
  echo "run_reporting_skips: passed with skipped cases: reported to ctest as skipped"
  exit 77
fi
exit "$rc"
