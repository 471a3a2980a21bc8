#!/usr/bin/env bash
# tests/ci_extra.sh: the checks that need more than the plain build.
#   1. installs what they need (Debian packages), when missing;
#   2. builds everything with ASan+UBSan (-DRNNSTATE_SANITIZE=ON) and runs the
#      unit, command-line, bad-input, regression and fuzz-replay tests under it;
#   3. builds without sanitizers and runs the command line under valgrind
#      (memcheck, full leak check) on representative models: PyTorch exports,
#      ONNX backend test models, weights left in the file, corrupt and hostile
#      files; then the tests labelled slow, which the README's test command
#      leaves out (tests/labels.cmake): each allocation of a run failed in
#      turn on a few models (bad_input.oom_sweep), corruption (bad_input.corruption), the
#      linear-time check (bad_input.scaling: callgrind instruction counts),
#      the JS readers' short fuzz (verify.fuzz_reader), one at a time with an
#      hour each;
#   4. builds the libFuzzer target with clang and fuzzes for FUZZ_SECONDS
#      (default 120) from the seed corpus, and fuzzes the JS readers of
#      rnnstate-verify as long (where node is installed); any finding
#      fails the run.
# Prints one PASS/FAIL line per step and closes with 'N passed, N failed';
# exits non-zero when a step failed. Takes about 20 minutes on 2 cores.
#
# Environment: FUZZ_SECONDS (default 120; 0 skips fuzzing), FUZZ_SEED (default 1:
# the same exploration on every run, so CI does not fail by chance; 0 lets
# libFuzzer pick one), BUILD_ROOT (default
# $TMPDIR/rnnstate-ci-extra), JOBS (default: the number of cores), KEEP=1 keeps
# BUILD_ROOT (fuzzer artifacts are copied to $BUILD_ROOT/../rnnstate-fuzz-findings).
set -u
cd "$(dirname "$0")/.."
root=$PWD
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
FUZZ_SEED=${FUZZ_SEED:-1}
BUILD_ROOT=${BUILD_ROOT:-${TMPDIR:-/tmp}/rnnstate-ci-extra}
JOBS=${JOBS:-$(nproc 2> /dev/null || echo 2)}
TESTDATA=/usr/share/libonnx-testdata/data/node
passed=0 failed=0
t0=$SECONDS

log() { echo "ci_extra: $*"; }

# step NAME COMMAND...: runs one step, counts it
step() {
  local name=$1; shift
  local start=$SECONDS
  echo
  echo "==== $name"
  if "$@"; then
    passed=$((passed + 1)); echo "PASS $name ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); echo "FAIL $name ($((SECONDS - start)) s)"
  fi
}

# ---- 1. packages ------------------------------------------------------------------
install_packages() {
  local pkgs=(cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev libonnx-dev
              libonnx-testdata libcmocka-dev clang-14 libclang-rt-14-dev valgrind strace
              e2fsprogs util-linux coreutils)
  local missing=() p
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then log "all packages present"; return 0; fi
  log "installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then log "not root: cannot install ${missing[*]}"; return 1; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" > "$BUILD_ROOT/apt.log" 2>&1 || { tail -20 "$BUILD_ROOT/apt.log"; return 1; }
}

# ---- builds -------------------------------------------------------------------------
# build DIR CMAKE_ARGS... -- TARGETS...: configures and builds quietly
build() {
  local dir=$1; shift
  local args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  targets=("$@")
  cmake -S "$root" -B "$dir" -DRNNSTATE_BUILD_TESTS=ON -DRNNSTATE_WERROR=ON "${args[@]}" > "$dir.configure.log" 2>&1 ||
    { tail -30 "$dir.configure.log"; return 1; }
  local t=()
  for x in "${targets[@]}"; do t+=(--target "$x"); done
  cmake --build "$dir" -j "$JOBS" "${t[@]}" > "$dir.build.log" 2>&1 ||
    { grep -E 'error|Error' "$dir.build.log" | head -30; return 1; }
}

# ---- 2. ASan + UBSan -----------------------------------------------------------------
asan=$BUILD_ROOT/asan
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

asan_ctest() {
  # valgrind cannot run sanitized binaries: the *.memcheck variants are left
  # to the plain build; e2e needs ONNX Runtime and is not about memory
  (cd "$asan" && ctest --output-on-failure -j "$JOBS" -R "$1" -E 'memcheck|^e2e\.|^install$' \
     --timeout 1500) > "$asan.ctest-$2.log" 2>&1
  local st=$?
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed' "$asan.ctest-$2.log"
  if [ $st -ne 0 ]; then
    grep -E '^FAIL|ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY' "$asan.ctest-$2.log" | head -40
  fi
  return $st
}

# ---- 3. valgrind ------------------------------------------------------------------------
plain=$BUILD_ROOT/plain
# vg NAME EXPECTED_STATUS ARGS...: the command line under memcheck. valgrind's
# own errors (invalid reads, uninitialised values, leaks) exit 99
# (--error-exitcode=99, not 1: the tool itself exits 1 on a refused model)
vg() {
  local name=$1 want=$2; shift 2
  local out=$BUILD_ROOT/vg-out
  rm -rf "$out"; mkdir -p "$out"
  (cd "$out" && timeout 600 valgrind --quiet --error-exitcode=99 --leak-check=full \
     --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
     --track-origins=yes "$plain/rnnstate-rewrite" "$@") > "$BUILD_ROOT/vg.log" 2>&1
  local st=$?
  if [ $st -eq "$want" ]; then
    echo "  ok   $name (status $st)"
    return 0
  fi
  echo "  FAIL $name: status $st, expected $want (99: valgrind found errors)"
  grep -E '==[0-9]+==' "$BUILD_ROOT/vg.log" | head -40
  return 1
}

valgrind_runs() {
  local w=$BUILD_ROOT/vg-models gen=$plain/tests/bad_input/make-bad-models bad=0
  rm -rf "$w"; mkdir -p "$w"
  head -c 9000 "$root/models/lstm_2layer_dynamic.onnx" > "$w/truncated.onnx"
  "$gen" --flip "$root/models/denoiser_gru.onnx" "$w/flipped.onnx" 40 3
  "$gen" big-weights "$w/big-weights.onnx" 2
  "$gen" nested-if "$w/nested-if.onnx" 100000
  "$gen" rnn-in-subgraph "$w/rnn-in-subgraph.onnx"
  "$gen" collide "$w/collide.onnx"
  "$gen" huge-dims "$w/huge-dims.onnx"
  "$gen" dup-value "$w/dup-value.onnx"
  vg "PyTorch GRU export, --check --json" 0 "$root/models/denoiser_gru.onnx" -o out.onnx --check --json || bad=1
  vg "PyTorch 2-layer LSTM, required state inputs" 0 "$root/models/lstm_2layer_dynamic.onnx" \
     -o out.onnx --state-inputs=required --check -v || bad=1
  vg "all of models/ into a directory" 0 "$root/models" -d outdir --check || bad=1
  for t in test_lstm_with_peepholes test_gru_seq_length test_simple_rnn_batchwise; do
    [ -f "$TESTDATA/$t/model.onnx" ] || continue
    vg "backend test model $t" 0 "$TESTDATA/$t/model.onnx" -o out.onnx --check || bad=1
  done
  vg "weights left in the file (lazy), in place" 0 "$w/big-weights.onnx" -o "$w/big-weights.onnx" --check || bad=1
  vg "LSTM inside an If branch" 0 "$w/rnn-in-subgraph.onnx" -o out.onnx --check || bad=1
  vg "generated names colliding" 0 "$w/collide.onnx" -o out.onnx --check || bad=1
  vg "huge dims (skipped)" 0 "$w/huge-dims.onnx" -o out.onnx || bad=1
  vg "truncated model (refused)" 1 "$w/truncated.onnx" -o out.onnx || bad=1
  vg "bit-flipped PyTorch export (still a model)" 0 "$w/flipped.onnx" -o out.onnx || bad=1
  vg "100000 nested If (refused)" 1 "$w/nested-if.onnx" -o out.onnx || bad=1
  vg "duplicate value names (refused)" 1 "$w/dup-value.onnx" -o out.onnx || bad=1
  vg "standard input to standard output" 0 - -o /dev/null < "$root/models/gru_1layer_fixed.onnx" || bad=1
  # Slice bounds folded from an empty initializer (issue 26: read uninitialised memory)
  vg "Slice bound Add(empty, [0])" 0 "$root/tests/regressions/slice-empty-bound/model.onnx" -o out.onnx --check || bad=1
  return $bad
}

# ---- 4. fuzzing ----------------------------------------------------------------------------
fuzz=$BUILD_ROOT/fuzz
fuzz_run() {
  local w=$BUILD_ROOT/fuzz-work
  rm -rf "$w"; mkdir -p "$w/corpus" "$w/artifacts"
  bash "$root/tests/fuzz/make_corpus.sh" "$w/seeds" "$fuzz/tests/bad_input/make-bad-models" \
    "$root/models" "$TESTDATA" || return 1
  # libFuzzer's own ASan/UBSan settings: stop at the first finding
  ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    timeout -k 10 $((FUZZ_SECONDS + 120)) "$fuzz/fuzz_rewrite" -max_total_time="$FUZZ_SECONDS" \
    -max_len=65536 -timeout=30 -rss_limit_mb=2048 -dict="$root/tests/fuzz/onnx.dict" \
    -seed="$FUZZ_SEED" -print_final_stats=1 -artifact_prefix="$w/artifacts/" \
    "$w/corpus" "$w/seeds" > "$w/log" 2>&1
  local st=$?
  grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' "$w/log" | sed 's/^/  /'
  local found; found=$(ls "$w/artifacts")
  if [ $st -eq 0 ] && [ -z "$found" ]; then return 0; fi
  echo "  fuzz_rewrite exited with status $st; findings: ${found:-none}"
  grep -E 'BUG:|ERROR:|SUMMARY|^ +#[0-9]+ .* in ' "$w/log" | grep -v 'fuzzer::' | head -30
  local keep=$BUILD_ROOT/../rnnstate-fuzz-findings
  mkdir -p "$keep" && cp "$w/artifacts"/* "$w/log" "$keep/" 2> /dev/null &&
    echo "  artifacts and log copied to $keep (see tests/fuzz/README.md: reproduce, then add a regression test)"
  return 1
}

# ---- the run -----------------------------------------------------------------------------------
mkdir -p "$BUILD_ROOT"
step "packages (clang-14, libclang-rt-14-dev, valgrind, build dependencies)" install_packages

step "ASan+UBSan build" build "$asan" -DRNNSTATE_SANITIZE=ON
step "ASan+UBSan: unit tests" asan_ctest '^unit\.' unit
step "ASan+UBSan: command-line tests" asan_ctest '^(cli|cli\..*|lazy\..*)$' cli
step "ASan+UBSan: bad input, failing I/O, regressions, fuzz replay" asan_ctest '^(bad_input|fuzz)\.' bad_input

# the targets of the valgrind runs and of the slow tests (label slow)
step "plain build" build "$plain" -DRNNSTATE_SANITIZE=OFF -- rnnstate-rewrite make-bad-models failing_io \
  failing_malloc

# The slow tests (tests/labels.cmake), left out of the README's test command:
# one at a time, so that they do not stretch each other, within their own
# limits (an hour each: only a hang reaches it).
slow_ctest() {
  (cd "$plain" && ctest --output-on-failure -j 1 -L '^slow$') > "$plain.ctest-slow.log" 2>&1
  local st=$?
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed' "$plain.ctest-slow.log"
  if ! grep -q 'bad_input.scaling' "$plain.ctest-slow.log"; then
    echo "  the slow tests did not include bad_input.scaling"; st=1
  fi
  [ $st -eq 0 ] || grep -E '^FAIL' "$plain.ctest-slow.log" | head -40
  return $st
}
if command -v valgrind > /dev/null; then
  step "valgrind memcheck on representative models" valgrind_runs
  step "slow tests (ctest -L slow): corruption, linear time and memory (callgrind, massif, realloc copy volume, strace), JS readers' fuzz" \
    slow_ctest
else
  echo "valgrind missing: valgrind steps not run"; failed=$((failed + 1))
fi

# The JS readers of rnnstate-verify (tests/verify/fuzz_reader.js), in Node.
js_fuzz_run() {
  local w=$BUILD_ROOT/js-fuzz
  mkdir -p "$w"
  timeout -k 10 $((FUZZ_SECONDS + 120)) node "$root/tests/verify/fuzz_reader.js" --seconds "$FUZZ_SECONDS" \
    --seed "$FUZZ_SEED" --work "$w" > "$w/log" 2>&1
  local st=$?
  tail -12 "$w/log"
  if [ $st -ne 0 ]; then
    local keep=$BUILD_ROOT/../rnnstate-fuzz-findings/js
    mkdir -p "$keep" && cp "$w"/finding-* "$w/log" "$keep/" 2> /dev/null
    echo "  fuzz_reader exited with status $st (124: a hang); findings copied to $keep"
  fi
  return $st
}

if [ "$FUZZ_SECONDS" -gt 0 ] && command -v node > /dev/null; then
  step "fuzz_reader (JS readers of rnnstate-verify) for $FUZZ_SECONDS s" js_fuzz_run
fi

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  if command -v clang-14 > /dev/null; then
    step "libFuzzer build (clang-14)" build "$fuzz" -DCMAKE_C_COMPILER=clang-14 -DRNNSTATE_FUZZ=ON \
      -- fuzz_rewrite make-bad-models
    step "fuzz_rewrite for $FUZZ_SECONDS s from the seed corpus" fuzz_run
  else
    echo "clang-14 missing: fuzzing not run"; failed=$((failed + 1))
  fi
fi

[ "${KEEP:-0}" = 1 ] || rm -rf "$BUILD_ROOT"
echo
echo "ci_extra: $((SECONDS - t0)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
