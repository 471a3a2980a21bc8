#!/usr/bin/env bash
# -j N (issue 11): models processed in parallel give exactly what a serial
# run gives: the same output files byte for byte, the same text report (also
# with -v and with failures) on stdout and stderr, the same JSON report in
# input order, the same exit status. Run by ctest:
#   test_jobs.sh TOOL MODELS_DIR
tool=$(realpath "$1") models=$(realpath "$2")
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)

# The input directory: the sample models three times over (under names that
# sort apart, so that slow and fast models alternate), plus two that fail.
mkdir -p "$work/in/sub"
for m in "$models"/*.onnx; do
  base=$(basename "$m" .onnx)
  for copy in a b; do cp "$m" "$work/in/${copy}_$base.onnx"; done
  cp "$m" "$work/in/sub/$base.onnx"
done
printf 'not a model' > "$work/in/m_garbage.onnx"
: > "$work/in/sub/empty.onnx"

# run J NAME ARGS...: runs in $work/J-NAME with paths relative to it, so that
# runs with different -j print the same paths.
run() {
  local j=$1 name=$2; shift 2
  local dir="$work/$j-$name"
  mkdir -p "$dir"
  (cd "$dir" && "$tool" -j "$j" "$@" > stdout 2> stderr; echo $? > status)
}

# same NAME: the -j 1 and -j 2 runs of NAME left identical trees.
same() {
  local name=$1
  if ! diff -r "$work/1-$name" "$work/2-$name" > "$work/diff" 2>&1; then
    fail "$name" "-j 1 and -j 2 differ: $(head -c 600 "$work/diff")"
  elif [ ! -s "$work/1-$name/stdout" ] && [ ! -s "$work/1-$name/stderr" ] && [ ! -s "$work/1-$name/log" ]; then
    fail "$name" "the runs printed nothing"
  else
    pass "$name: -j 2 identical to -j 1 (outputs, reports, status $(cat "$work/1-$name/status"))"
  fi
}

for j in 1 2; do
  run "$j" text ../in -r -d out
  run "$j" verbose ../in -r -d out -v --check
  run "$j" json ../in -r -d out --json
  run "$j" dry ../in -r -n -v
done
# standard input to standard output among other models: the run stays serial,
# so the model's bytes and the reports come out as with -j 1
mkdir -p "$work/solo"
first=$(ls "$models"/*.onnx | head -1)
cp "$first" "$work/solo/m.onnx"
for j in 1 2; do
  run "$j" stdout "$work/solo/m.onnx" - < "$first"
done
# chains (issue 26): one job's output is a later job's input (x), and a job
# reads what a later job writes (y.updated.onnx, absent: -j 1 fails to open
# it, then writes it); -j 2 waits where -j 1 would have
for j in 1 2; do
  mkdir -p "$work/$j-chain" && cp "$first" "$work/$j-chain/x.onnx" && cp "$first" "$work/$j-chain/y.onnx"
  run "$j" chain x.onnx x.updated.onnx y.updated.onnx y.onnx
done
# stdout and stderr into one file: each model's lines whole and in input
# order, the failures' messages among them (-j 1 flushes per model too)
for j in 1 2; do
  mkdir -p "$work/$j-log"
  (cd "$work/$j-log" && "$tool" -j "$j" ../in -r -d out > log 2>&1; echo $? > status)
done
for name in text verbose json dry stdout chain log; do same "$name"; done
[ -f "$work/1-chain/x.updated.updated.onnx" ] && [ -f "$work/1-chain/y.updated.onnx" ] &&
  pass "a chain is written through (x -> x.updated -> x.updated.updated)" ||
  fail "chain" "-j 1 did not write the chain: $(cat "$work/1-chain/stderr")"

# the statuses are those of a failed model, and every model was written
[ "$(cat "$work/2-json/status")" = 1 ] && pass "status 1 with failures" ||
  fail "status" "got $(cat "$work/2-json/status"), expected 1"
n_models=$(find "$work/in" -name '*.onnx' | wc -l)
n_out=$(find "$work/2-text/out" -name '*.onnx' | wc -l)
[ "$n_out" -eq $((n_models - 2)) ] && pass "every good model written ($n_out)" ||
  fail "outputs" "$n_out outputs for $n_models models (2 bad)"

# a bad -j is a usage error
for bad in 0 -1 x 1025 ''; do
  "$tool" -j "$bad" "$work/in" -n > /dev/null 2> "$work/err"
  st=$?
  [ "$st" -eq 2 ] && pass "-j '$bad' refused" || fail "-j '$bad'" "status $st, expected 2"
done

finish
