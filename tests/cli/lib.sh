# The harness of every test script (sourced by tests/cli/*.sh, and through
# tests/bad_input/lib.sh by the bad-input scripts; tests/check_harness.sh
# checks that none defines its own):
#   $work       a scratch directory (mode 0755, so that a run as another user
#               can reach it), removed at exit with whatever the test put in
#               it, read-only parts included; more directories to remove at
#               exit go in the array cleanup (cleanup+=("$dir"))
#   pass NAME   counts and prints a passed check:  PASS NAME
#   fail NAME WHY  counts and prints a failed one: FAIL NAME: WHY
#   finish      prints 'N passed, N failed' and exits, non-zero on a failure
#   skip_test WHY  exits 77 (ctest's SKIP_RETURN_CODE) printing SKIP: WHY
#   have_npm DIR:PKG[,PKG]...  true when node and the npm packages are
#               installed; otherwise prints SKIP (false), or, when
#               RNNSTATE_REQUIRE_NPM=1, counts a failure (false): for a part
#               of a test that needs them (tests/e2e/need_npm.sh has the rule)
set -u
passed=0 failed=0
work=$(mktemp -d "${TMPDIR:-/tmp}/rnnstate-test.XXXXXX")
chmod 755 "$work"
lib_work=$work
cleanup=()
lib_cleanup() {
  local d
  for d in "$lib_work" "${cleanup[@]}"; do
    chmod -R u+w "$d" 2> /dev/null
    rm -rf "$d"
  done
}
trap lib_cleanup EXIT

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

skip_test() {
  echo "SKIP: $1"
  exit 77
}

lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
have_npm() {
  local msg st
  msg=$(bash "$lib_dir/../e2e/need_npm.sh" "$@" 2>&1)
  st=$?
  case $st in
    0) return 0 ;;
    77) echo "$msg" ;;
    *) fail "npm packages" "$msg" ;;
  esac
  return 1
}
