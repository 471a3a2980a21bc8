#!/usr/bin/env bash
# tests/e2e/need_npm.sh, the rule of the e2e and verify tests: without their
# npm packages they are skipped (77), unless RNNSTATE_REQUIRE_NPM=1 (CI),
# when they fail; with them the command runs. Run by ctest: need_npm.sh NEED_NPM
source "$(dirname "$0")/../cli/lib.sh"
need=$1
mkdir -p "$work/with/node_modules/pkg" "$work/without"
# status WANT NAME ARGS...: runs need_npm.sh, compares its exit status
status() {
  local want=$1 name=$2; shift 2
  local got
  out=$(bash "$need" "$@" 2>&1)
  got=$?
  if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "status $got, expected $want: $out"; fi
}
if command -v node > /dev/null; then
  RNNSTATE_REQUIRE_NPM=0 status 77 "absent: skipped (77)" "$work/without:pkg" -- true
  case $out in "SKIP: not installed: pkg (run 'npm ci"*) pass "the skip says what to install" ;;
    *) fail "skip message" "$out" ;; esac
  RNNSTATE_REQUIRE_NPM=1 status 1 "absent, RNNSTATE_REQUIRE_NPM=1: failed" "$work/without:pkg" -- true
  RNNSTATE_REQUIRE_NPM=1 status 0 "present: the command runs" "$work/with:pkg" -- true
  RNNSTATE_REQUIRE_NPM=0 status 3 "present: the command's own status" "$work/with:pkg" -- sh -c 'exit 3'
  RNNSTATE_REQUIRE_NPM=1 status 1 "one of two absent: failed" "$work/with:pkg" "$work/without:pkg" -- true
  out=$(env -u RNNSTATE_REQUIRE_NPM bash "$need" "$work/with:pkg,other" -- true 2>&1)
  [ $? = 77 ] && pass "absent, variable unset: skipped" || fail "variable unset" "$out"
else
  RNNSTATE_REQUIRE_NPM=0 status 77 "no node: skipped (77)" "$work/with:pkg" -- true
fi
# sourced by a script: returns into it when everything is there
out=$(bash -c 'source "$1" "$2"; echo after' _ "$need" "$work/with:pkg" 2>&1)
if ! command -v node > /dev/null || [ "$out" = after ]; then pass "sourced: returns to the script"; else
  fail "sourced" "$out"; fi
finish
