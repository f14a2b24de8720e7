#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# clang's thread-safety analysis over the daemon's code (tests/run_all.sh runs it as a stage):
#   1. every translation unit of common/, dataplane/ and server/, as the release build compiles it
#      (compile_commands.json), checked by clang++-14 -fsyntax-only -Wthread-safety with its
#      findings as errors: the locks annotated with ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_
#      REQUIRED (absl::Mutex; libstdc++'s std::mutex carries no capability attributes) must be
#      held where the annotations say;
#   2. a planted violation (planted_violation.cc) must FAIL to compile under the same flags, or
#      the check itself is not working.
# Other warnings clang prints are not this stage's business (GCC's -Werror build owns them).
# Usage: check.sh <release build dir> [--planted-only]   (SKBNF_TS_ONLY=<part of a path>: only the
# units it names). tests/run_all.sh passes --planted-only: there the units' analysis runs inside
# the function-size stage's clang-tidy (tests/function_size/check.sh), one parse per unit.
set -euo pipefail
B=${1:?usage: check.sh <build dir>}
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
CLANG=${SKBNF_CLANGXX:-clang++-14}
FLAGS=(-fsyntax-only -Wthread-safety -Werror=thread-safety-analysis
       -Werror=thread-safety-attributes -Werror=thread-safety-precise)
command -v "$CLANG" >/dev/null || { echo "FAIL: $CLANG not found (deploy/deps.sh installs clang-14)"; exit 1; }

# 2. the planted violation first: a check that cannot fail proves nothing.
if "$CLANG" -std=c++20 "${FLAGS[@]}" "$SRC/tests/thread_safety/planted_violation.cc" \
    >/tmp/skbnf-planted.$$ 2>&1; then
  echo "FAIL: the planted violation compiled: -Wthread-safety is not checking"
  exit 1
fi
grep -q "requires holding mutex 'mu_'" /tmp/skbnf-planted.$$ || {
  cat /tmp/skbnf-planted.$$; rm -f /tmp/skbnf-planted.$$
  echo "FAIL: the planted violation failed for another reason"; exit 1; }
rm -f /tmp/skbnf-planted.$$
echo "ok: the planted violation is refused (requires holding mutex 'mu_')"
if [ "${2:-}" = --planted-only ]; then exit 0; fi

# 1. the daemon's translation units, with the release build's include paths and defines.
mapfile -t cmds < <(/usr/bin/python3 "$SRC/tests/support/compile_units.py" "$B/compile_commands.json" "$SRC")
((${#cmds[@]} > 0)) || { echo "FAIL: no common/, dataplane/ or server/ unit in $B/compile_commands.json"; exit 1; }
# One clang per unit, as many at once as there are CPUs; -Wno-everything first, so only the
# thread-safety diagnostics (enabled after it) are reported, as errors.
export CLANG
fails=$(printf '%s\n' "${cmds[@]}" | ONLY="${SKBNF_TS_ONLY:-}" xargs -d '\n' -P "$(nproc)" -I{} \
  bash -c 'IFS=$'"'"'\t'"'"' read -r dir file args <<<"$1"
           [ -n "$ONLY" ] && [[ "$file" != *"$ONLY"* ]] && exit 0
           if ! out=$(cd "$dir" && eval "\"$CLANG\" $args -Wno-everything $2 \"$file\"" 2>&1); then
             echo "$out" | grep -E "error" | head -20 >&2
             echo "FAIL: $file" >&2
             echo x
           fi' _ {} "${FLAGS[*]}" | wc -l)
echo "thread-safety: ${#cmds[@]} translation units, $fails with findings"
[ "$fails" -eq 0 ]
