#!/usr/bin/env bash
# replay.sh FUZZ_REPLAY MAKE_BAD_MODELS MODELS_DIR TESTDATA_DIR REGRESSIONS_DIR
# Runs the fuzz target's checks (fuzz_replay) over the seed corpus and over
# every input kept under tests/regressions/: the fuzzer's invariants hold in
# every build, sanitized or not, without clang.
set -u
replay=$1 gen=$2 models=$3 testdata=$4 regressions=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"

bash "$(dirname "$0")/make_corpus.sh" "$work/corpus" "$gen" "$models" "$testdata" > /dev/null
run() {
  local name=$1; shift
  if timeout -k 5 600 "$replay" "$@" > "$work/log" 2>&1; then
    passed=$((passed + 1)); echo "PASS $name ($(tail -1 "$work/log"))"
  else
    failed=$((failed + 1)); echo "FAIL $name:"; tail -40 "$work/log"
  fi
}
run "seed corpus" "$work/corpus"
inputs=()
while IFS= read -r f; do inputs+=("$f"); done < <(find "$regressions" -type f \
  \( -name '*.onnx' -o -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) | sort)
if [ ${#inputs[@]} -gt 0 ]; then
  run "regression inputs" "${inputs[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
