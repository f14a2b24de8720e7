#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# clang-tidy's readability-function-size over the daemon's code (tests/run_all.sh runs it as a
# stage, next to the thread-safety one; issue 21: no function of common/, dataplane/ or server/
# longer than 120 lines):
#   1. a planted 121-line function (planted_long_function.cc) must be reported, and a 120-line
#      one beside it must not, or the check itself is not working;
#   2. every translation unit of common/, dataplane/ and server/, as the release build compiles it
#      (compile_commands.json, through tests/support/compile_units.py like the thread-safety
#      stage), checked by clang-tidy-14 with that one check, LineThreshold 120 and nothing else
#      (its statement threshold, on by default at 800, is turned off): any finding fails the
#      stage. Inline functions in this project's headers count too (-header-filter); a header's
#      finding is printed once however many units include it.
# Lines are clang-tidy's: from the line of a body's opening brace to its closing brace's, comments
# and blank lines included; a lambda's lines count in the function that holds it.
# The same clang-tidy run also reports clang's thread-safety analysis (-Wthread-safety, its
# diagnostics as errors): each unit is parsed once for both checks, which keeps the two stages of
# issue 21 inside their CI budget. tests/thread_safety/check.sh keeps its own planted violation
# and can still run the analysis alone (without --planted-only); here the planted violation is
# run through clang-tidy too, so this run is shown to catch one.
# Usage: check.sh <release build dir>   (SKBNF_FS_ONLY=<part of a path>: only the units it names)
set -euo pipefail
B=${1:?usage: check.sh <build dir>}
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
TIDY=${SKBNF_CLANG_TIDY:-clang-tidy-14}
command -v "$TIDY" >/dev/null || { echo "FAIL: $TIDY not found (deploy/deps.sh installs clang-tidy-14)"; exit 1; }
CONFIG='{Checks: "-*,readability-function-size,clang-diagnostic-thread-safety*",
  WarningsAsErrors: "readability-function-size,clang-diagnostic-thread-safety*",
  CheckOptions: [{key: readability-function-size.LineThreshold, value: 120},
                 {key: readability-function-size.StatementThreshold, value: 4294967295}]}'
TS_ARGS='--extra-arg=-Wthread-safety'
export TIDY CONFIG TS_ARGS
HEADERS="^$SRC/(common|dataplane|server)/"

# 1. the planted functions first.
out=$("$TIDY" --quiet --config="$CONFIG" "$SRC/tests/function_size/planted_long_function.cc" \
      -- -std=c++20 2>&1 || true)
grep -q "function 'PlantedTooLong' exceeds" <<<"$out" || {
  echo "$out"; echo "FAIL: the planted 121-line function was not reported"; exit 1; }
if grep -q "PlantedAtLimit" <<<"$out"; then
  echo "$out"; echo "FAIL: a 120-line function was reported: the threshold is not 120"; exit 1
fi
echo "ok: the planted 121-line function is reported, the 120-line one is not"
out=$("$TIDY" --quiet --config="$CONFIG" $TS_ARGS "$SRC/tests/thread_safety/planted_violation.cc" \
      -- -std=c++20 2>&1 || true)
grep -q "requires holding mutex 'mu_'" <<<"$out" || {
  echo "$out"; echo "FAIL: the planted lock violation was not reported by this run"; exit 1; }
echo "ok: the planted lock violation is reported (requires holding mutex 'mu_')"

# 2. the daemon's translation units, with the release build's include paths and defines; one
# clang-tidy per unit, as many at once as there are CPUs.
mapfile -t cmds < <(/usr/bin/python3 "$SRC/tests/support/compile_units.py" "$B/compile_commands.json" "$SRC")
((${#cmds[@]} > 0)) || { echo "FAIL: no common/, dataplane/ or server/ unit in $B/compile_commands.json"; exit 1; }
findings=$(printf '%s\n' "${cmds[@]}" | ONLY="${SKBNF_FS_ONLY:-}" xargs -d '\n' -P "$(nproc)" -I{} \
  bash -c 'IFS=$'"'"'\t'"'"' read -r dir file args <<<"$1"
           [ -n "$ONLY" ] && [[ "$file" != *"$ONLY"* ]] && exit 0
           if ! out=$(cd "$dir" && eval "\"$TIDY\" --quiet --config=\"\$CONFIG\" $TS_ARGS \
                        --header-filter=\"$2\" \"$file\" -- $args" 2>&1); then
             # a finding, or a unit clang cannot parse (also a failure: nothing was checked)
             grep -E "(error|warning):|note: [0-9]+ lines|requires|note: mutex" <<<"$out" || echo "FAIL: $file: $out"
           fi' _ {} "$HEADERS" | sort -u)
n=${#cmds[@]}
if [ -n "$findings" ]; then
  echo "$findings"
  echo "function-size + thread-safety: $n translation units; functions over 120 lines: $(grep -c 'exceeds' <<<"$findings" || true); lock findings: $(grep -c 'thread-safety' <<<"$findings" || true)"
  exit 1
fi
echo "function-size + thread-safety: $n translation units, no function over 120 lines, no lock finding"
