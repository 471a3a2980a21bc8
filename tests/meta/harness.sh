#!/usr/bin/env bash
# One harness for every test script: each tests/cli/*.sh and the bad-input
# and regression runners source tests/cli/lib.sh (directly or through
# tests/bad_input/lib.sh) and define no pass, fail or finish of their own,
# so that their copies cannot drift apart. Run by ctest: harness.sh TESTS_DIR
source "$(dirname "$0")/../cli/lib.sh"
tests=$1
scripts=("$tests"/cli/test_*.sh "$tests"/bad_input/{cases,corruption,failing_io,scaling}.sh
         "$tests"/regressions/run.sh)
[ "${#scripts[@]}" -ge 14 ] || fail "scripts found" "${#scripts[@]}"
for s in "${scripts[@]}"; do
  name=${s#"$tests"/}
  if ! grep -qE '^source "\$\(dirname "\$0"\)/(lib\.sh|\.\./cli/lib\.sh|\.\./bad_input/lib\.sh)"|^source "\$here/\.\./bad_input/lib\.sh"' "$s"; then
    fail "$name sources the harness" "no 'source .../lib.sh' line"
  elif grep -qE '^\s*(pass|fail|finish|skip_test)\s*\(\)' "$s"; then
    fail "$name uses the harness's helpers" "defines $(grep -oE '^\s*(pass|fail|finish|skip_test)\s*\(\)' "$s" | tr -d ' ()' | tr '\n' ' ')"
  elif grep -qE '^(passed|failed)=0' "$s"; then
    fail "$name uses the harness's counters" "sets its own"
  else
    pass "$name"
  fi
done
# the harness's own behaviour: counts, exit statuses, the scratch directory
out=$(bash -c 'source "$1"; pass a; fail b why; echo "$work" > "$2"; finish' _ "$tests/cli/lib.sh" "$work/dir")
st=$?
if [ $st -eq 1 ] && [ "$(echo "$out" | tail -1)" = "1 passed, 1 failed" ] && ! [ -d "$(cat "$work/dir")" ]; then
  pass "lib.sh: finish exits 1 on a failure, prints the counts, removes \$work"
else
  fail "lib.sh" "status $st, output: $out"
fi
out=$(bash -c 'source "$1"; pass a; finish' _ "$tests/cli/lib.sh")
[ $? -eq 0 ] && pass "lib.sh: finish exits 0 when all passed" || fail "lib.sh: all passed" "$out"
finish
