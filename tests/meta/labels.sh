#!/usr/bin/env bash
# Every registered test carries exactly one kind label (tests/labels.cmake:
# unit, cli, e2e, memcheck, slow), so that `ctest -L unit` is the fast run
# and `ctest -LE slow` (the README's test command) leaves out only the slow
# suites, which tests/ci_extra.sh runs. Run by ctest:
#   labels.sh CTEST BUILD_DIR SOURCE_DIR
source "$(dirname "$0")/../cli/lib.sh"
ctest=$1 build=$2 src=$3

# One line per test, "NAME LABEL...", from `ctest -N -V`, which prints a
# test's "Labels: ..." line before its "Test #N: NAME" line.
"$ctest" --test-dir "$build" -N -V > "$work/list" || { fail "ctest -N -V" "status $?"; finish; }
awk '/^Labels:/ { sub(/^Labels: */, ""); labels = $0; next }
     /^ *Test *#[0-9]+: / { sub(/^ *Test *#[0-9]+: */, ""); print $0, labels; labels = "" }' \
  "$work/list" > "$work/labels"
n_all=$(grep -c . "$work/labels")
[ "$n_all" -gt 50 ] || fail "tests found" "only $n_all in $build"

# the tests without exactly one kind, with their labels
bad=$(awk '{ k = 0; for (i = 2; i <= NF; i++) if ($i ~ /^(unit|cli|e2e|memcheck|slow)$/) k++
             if (k != 1) printf "%s [%s]; ", $1, (NF > 1 ? $0 : "no label") }' "$work/labels")
if [ -z "$bad" ]; then
  pass "each of the $n_all tests has one kind label (unit, cli, e2e, memcheck, slow)"
else
  fail "one kind label per test (tests/labels.cmake)" "$bad"
fi

# with_label LABEL: the names of the tests that carry LABEL
with_label() { awk -v l="$1" '{ for (i = 2; i <= NF; i++) if ($i == l) print $1 }' "$work/labels"; }

# the fast run is the unit tests and these checks: no e2e, bad input or valgrind
unit=$(with_label unit)
odd=$(echo "$unit" | grep -vE '^(unit|meta|docs)\.' ; echo "$unit" | grep -E '\.memcheck$')
if [ -n "$unit" ] && [ -z "$odd" ]; then
  pass "label unit: $(echo "$unit" | grep -c .) tests, unit.*, meta.* and docs.* only, none under valgrind"
else
  fail "label unit" "also: $(echo $odd)"
fi

# the suites that a loaded machine stretches past their limits are slow
slow=$(with_label slow)
for t in bad_input.corruption bad_input.scaling verify.fuzz_reader; do
  if grep -q "^$t " "$work/labels" && ! echo "$slow" | grep -qx "$t"; then
    fail "$t is slow" "it is not labelled slow"
  fi
done
[ -n "$slow" ] && pass "label slow: $(echo $slow)"

# the README's test command (what .ci/run runs) leaves them out, and
# tests/ci_extra.sh runs them
readme_cmd=$(awk '/<!-- test-command -->/ { getline; getline; print; exit }' "$src/README.md")
case $readme_cmd in
  *"ctest "*"-LE slow"*) pass "the README's test command runs ctest -LE slow" ;;
  *) fail "the README's test command leaves out label slow" "${readme_cmd##*&& }" ;;
esac
if grep -q "ctest .*-L '^slow\$'" "$src/tests/ci_extra.sh"; then pass "tests/ci_extra.sh runs ctest -L '^slow\$'"; else
  fail "tests/ci_extra.sh runs the slow tests" "no ctest -L '^slow\$' in it"; fi
finish
