#!/usr/bin/env bash
# Command-line behaviour of rnnstate-rewrite: options, exit codes, messages,
# and bad input. Run by ctest: test_cli.sh TOOL MODELS_DIR MAKE_BAD_MODELS
# (random inputs come from make-bad-models' seeded generator, so that every
# run tests the same bytes)
# Every bad-input case asserts the exit status, a one-line error on stderr
# that names the file, and that no output file exists afterwards.
tool=$1 models=$2 gen=$3
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)

# run NAME EXPECTED_STATUS ARGS...: runs the tool, keeps stdout/stderr in $out/$err
run() {
  local name=$1 want=$2; shift 2
  "$tool" "$@" > "$work/stdout" 2> "$work/stderr"
  status=$?
  out=$(cat "$work/stdout") err=$(cat "$work/stderr")
  if [ "$status" -ne "$want" ]; then
    fail "$name" "exit status $status, expected $want; stderr: $err"
    return 1
  fi
  return 0
}

# bad_input NAME FILE EXPECTED_MESSAGE_PART
bad_input() {
  local name=$1 file=$2 part=$3
  run "$name" 1 "$file" -o "$work/out.onnx" || return
  local lines
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ "$lines" -ne 1 ]; then fail "$name" "expected one line on stderr, got $lines: $err"; return; fi
  case "$err" in
    "rnnstate-rewrite: $file: "*"$part"*) ;;
    *) fail "$name" "stderr '$err' does not name '$file' with '$part'"; return ;;
  esac
  if [ -e "$work/out.onnx" ] || ls -a "$work" | grep -q '\.tmp-'; then
    fail "$name" "an output file was left behind"; return
  fi
  pass "$name"
}

cp "$models/gru_1layer_fixed.onnx" "$work/model.onnx"
good=$work/model.onnx
sum_before=$(sha256sum "$good" | cut -d' ' -f1)

# ---- bad input --------------------------------------------------------------
bad_input "missing file" "$work/nope.onnx" "cannot open: No such file or directory"
: > "$work/empty.onnx"
bad_input "empty file" "$work/empty.onnx" "empty file, not an ONNX model"
printf 'hello, this is not a model\n' > "$work/text.onnx"
bad_input "text file" "$work/text.onnx" "not an ONNX model"
"$gen" random "$work/random.onnx" 7  # seed 7: the same bytes every run
# random bytes that happen to parse as a protobuf still have no graph
bad_input "random bytes" "$work/random.onnx" "not an ONNX model"
size=$(stat -c %s "$good")
head -c $((size / 2)) "$good" > "$work/truncated.onnx"
bad_input "truncated model" "$work/truncated.onnx" "not an ONNX model: truncated or corrupt"
# a serialized TensorProto: dims=[3] (field 1), data_type=1 (field 2)
printf '\x08\x03\x10\x01' > "$work/tensor.onnx"
bad_input "tensor instead of model" "$work/tensor.onnx" "not an ONNX model: it looks like a tensor (an ONNX TensorProto, float32 [3])"
# a backend test's input: a named float32 [1,2] tensor in raw_data
printf '\x08\x01\x08\x02\x10\x01\x42\x01x\x4a\x08\x00\x00\x80\x3f\x00\x00\x00\x40' > "$work/input_0.pb"
bad_input "a test's input_0.pb" "$work/input_0.pb" "it looks like a tensor (an ONNX TensorProto 'x', float32 [1,2]), such as a test's input_0.pb"
head -c 4096 /dev/zero > "$work/zeros.onnx"
bad_input "a zero-filled file" "$work/zeros.onnx" "not an ONNX model: it starts with a zero byte"
head -c 4096 /dev/zero | "$tool" - -o "$work/out.onnx" > /dev/null 2> "$work/stderr"
case "$(cat "$work/stderr")" in
  *"<stdin>: not an ONNX model: it starts with a zero byte"*) pass "zeros on standard input: said plainly" ;;
  *) fail "zeros on standard input: said plainly" "$(cat "$work/stderr")" ;;
esac
case "$(cat "$work/stderr")" in *"2147483648"*) fail "zeros on stdin: no size limit posing as the size" "$(cat "$work/stderr")" ;;
  *) pass "zeros on stdin: no size limit posing as the size" ;; esac
# a ModelProto with ir_version 8 and no graph
printf '\x08\x08' > "$work/nograph.onnx"
bad_input "model without graph" "$work/nograph.onnx" "it has no graph"
mkdir "$work/adir"
bad_input "directory without models" "$work/adir" "no *.onnx models found"

# ---- output -----------------------------------------------------------------
run "unwritable output directory" 1 "$good" -o "$work/missing-dir/out.onnx" &&
  case "$err" in
    *"$work/missing-dir/out.onnx: cannot write output: No such file or directory"*) [ ! -e "$work/missing-dir" ] && pass "unwritable output directory" || fail "unwritable output directory" "directory appeared" ;;
    *) fail "unwritable output directory" "message: $err" ;;
  esac

run "default output name" 0 "$good" &&
  { [ -f "$work/model.updated.onnx" ] && pass "default output name" ||
      fail "default output name" "no $work/model.updated.onnx"; }
case "$out" in *"wrote $work/model.updated.onnx"*) pass "report names the output" ;;
  *) fail "report names the output" "$out" ;; esac

run "-o" 0 "$good" -o "$work/explicit.onnx" &&
  { [ -f "$work/explicit.onnx" ] && pass "-o writes the named file" || fail "-o" "missing"; }
cmp -s "$work/explicit.onnx" "$work/model.updated.onnx" && pass "same output either way" ||
  fail "same output either way" "outputs differ"
[ "$(sha256sum "$good" | cut -d' ' -f1)" = "$sum_before" ] && pass "input never modified" ||
  fail "input never modified" "checksum changed"
ls -a "$work" | grep -q '\.tmp-' && fail "no temporary files left" "$(ls -a "$work")" ||
  pass "no temporary files left"

before=$(ls -a "$work" | sort)
run "--dry-run" 0 "$good" --dry-run &&
  { [ "$(ls -a "$work" | sort)" = "$before" ] && pass "--dry-run writes nothing" ||
      fail "--dry-run writes nothing" "directory changed"; }
case "$out" in *"GRU '/rnn/GRU': updated"*"dry run, nothing written"*) pass "--dry-run prints the report" ;;
  *) fail "--dry-run prints the report" "$out" ;; esac
run "-n" 0 "$good" -n -o "$work/never.onnx" && { [ ! -e "$work/never.onnx" ] && pass "-n with -o writes nothing" || fail "-n" "file written"; }

# ---- report formats ---------------------------------------------------------
run "--json" 0 "$good" --json -n &&
  if printf '%s' "$out" | /usr/bin/env node -e '
      const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const m = r.models[0];
      const ok = m.status === "rewritten" && m.output === null && m.nodes.length === 1 &&
        m.nodes[0].status === "updated" && m.state.length === 1 &&
        m.state[0].input === "GRU_0_initial_h" && m.state[0].output === "GRU_0_Y_h" &&
        JSON.stringify(m.state[0].shape) === "[1,1,16]" && m.state[0].optional === true;
      process.exit(ok ? 0 : 1);' 2>/dev/null; then pass "--json report"; else fail "--json report" "$out"; fi
case "$err" in *"GRU '/rnn/GRU': updated"*) pass "--json sends the text to stderr" ;;
  *) fail "--json sends the text to stderr" "$err" ;; esac
run "-q" 0 "$good" -q -n && { [ -z "$out$err" ] && pass "-q prints nothing on success" || fail "-q" "$out$err"; }
run "-v" 0 "$good" -v -n && case "$out" in *"initial_h: was a constant (zeros) computed by ConstantOfShape"*"zero default"*"Y_h: not used by the model; now graph output GRU_0_Y_h"*) pass "-v explains decisions" ;;
  *) fail "-v explains decisions" "$out" ;; esac
case "$out" in *": case "[a-g]:*) fail "-v in plain words (no 'case e:')" "$out" ;; *) pass "-v in plain words" ;; esac
run "required" 0 "$good" -n --json --state-inputs=required &&
  case "$out" in *'"optional": false'*) pass "--state-inputs=required" ;; *) fail "--state-inputs=required" "$out" ;; esac

# ---- usage ------------------------------------------------------------------
run "--help" 0 --help && case "$out" in *"Usage: rnnstate-rewrite"*"Exit status"*) pass "--help" ;; *) fail "--help" "$out" ;; esac
run "--version" 0 --version && case "$out" in "rnnstate-rewrite "[0-9]*) pass "--version" ;; *) fail "--version" "$out" ;; esac
run "no model" 2 && case "$err" in *"no model given"*"--help"*) pass "no model: exit 2" ;; *) fail "no model" "$err" ;; esac
run "unknown option" 2 --frobnicate "$good" && case "$err" in *"unknown option '--frobnicate'"*) pass "unknown option: exit 2" ;; *) fail "unknown option" "$err" ;; esac
run "missing value" 2 "$good" -o && case "$err" in *"needs a value"*) pass "missing option value: exit 2" ;; *) fail "missing value" "$err" ;; esac
run "bad mode" 2 "$good" --state-inputs=sometimes && case "$err" in *"'optional' or 'required'"*) pass "bad --state-inputs: exit 2" ;; *) fail "bad mode" "$err" ;; esac

finish
