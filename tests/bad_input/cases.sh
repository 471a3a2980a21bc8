#!/usr/bin/env bash
# cases.sh TOOL MAKE_BAD_MODELS MODELS_DIR
# Hostile and malformed inputs, unwritable outputs. Every case asserts the
# exit status, a fragment of the message, and what is left in the output
# directory: nothing at all after a failure (no output, no .rnnstate.tmp-PID-RANDOM),
# exactly the output after a success. A run that crashes, hangs, or makes a
# sanitizer report fails whatever its status.
set -u
tool=$1 gen=$2 models=$3
source "$(dirname "$0")/lib.sh"

# Outside sanitizers, every run gets at most 2 GiB of address space: a state
# of 2^72 bytes must be refused, not attempted.
if ! is_sanitized "$tool"; then TOOL_VMEM_KB=2097152; fi

cases=$work/cases
mkdir -p "$cases"
"$gen" --all "$cases" || { echo "make-bad-models failed"; exit 1; }
"$gen" nested-if "$cases/nested-if.onnx" 100000
"$gen" nested-sequence "$cases/nested-sequence.onnx" 100000
"$gen" nested-if-ok "$cases/nested-if-ok.onnx" 40
good=$work/good.onnx
cp "$models/lstm_2layer_dynamic.onnx" "$good"

# refused NAME FILE FRAGMENT [ARGS...]: exit 1, one line on stderr naming FILE
# and containing FRAGMENT, nothing written.
refused() {
  local name=$1 file=$2 frag=$3; shift 3
  local d; fresh_dir
  run_tool "$file" -o "$d/out.onnx" "$@"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  if [ "$status" -ne 1 ]; then fail "$name" "exit status $status, expected 1; stderr: $err"; return; fi
  if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then fail "$name" "expected one line on stderr: $err"; return; fi
  case "$err" in
    "rnnstate-rewrite: $file: "*"$frag"*) ;;
    *) fail "$name" "stderr '$err' does not name the file with '$frag'"; return ;;
  esac
  if [ -n "$(leftovers "$d")" ]; then fail "$name" "left behind: $(leftovers "$d")"; return; fi
  pass "$name"
}

# rewritten NAME FILE FRAGMENT [ARGS...]: exit 0 with --check (without it
# when REWRITE_CHECK is set empty), stdout contains FRAGMENT, the output (and
# nothing else) written, and small: nothing absurd was allocated into it.
rewritten() {
  local name=$1 file=$2 frag=$3; shift 3
  local d; fresh_dir
  run_tool "$file" -o "$d/out.onnx" ${REWRITE_CHECK---check} "$@"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  if [ "$status" -ne 0 ]; then fail "$name" "exit status $status, expected 0; stderr: $err"; return; fi
  case "$out" in
    *"$frag"*) ;;
    *) fail "$name" "stdout lacks '$frag': $out"; return ;;
  esac
  if [ "$(leftovers "$d")" != "out.onnx" ]; then fail "$name" "output directory holds: $(leftovers "$d")"; return; fi
  local size; size=$(stat -c %s "$d/out.onnx")
  if [ "$size" -gt 1048576 ]; then fail "$name" "output of $size bytes"; return; fi
  last_out=$d/out.onnx
  pass "$name"
}

# ---- not models -----------------------------------------------------------------
: > "$work/empty.onnx"
refused "empty file" "$work/empty.onnx" "empty file, not an ONNX model"
printf 'ir_version: 8\ngraph { node { op_type: "LSTM" } }\n' > "$work/text.onnx"
refused "text file (a .pbtxt)" "$work/text.onnx" "not an ONNX model"
refused "TensorProto instead of a ModelProto" "$cases/tensor-proto.onnx" "not an ONNX model"
refused "model without a graph" "$cases/no-graph.onnx" "not an ONNX model: it has no graph"
refused "model without ir_version" "$cases/no-ir-version.onnx" "it has no ir_version"
refused "length field claiming 2^60 bytes" "$cases/exabyte-length.onnx" \
  "not an ONNX model: truncated or corrupt (a field at byte 2 runs past its message"
refused "length past the end of its message" "$cases/inner-length-overrun.onnx" \
  "(a field at byte 8 runs past its message"
refused "varint longer than 10 bytes" "$cases/overlong-varint.onnx" "truncated or corrupt"
for seed in 1 2 3; do
  "$gen" random "$work/random-$seed.onnx" "$seed"
  refused "random bytes (seed $seed)" "$work/random-$seed.onnx" "not an ONNX model"
done

# ---- limits -----------------------------------------------------------------------
refused "100000 nested If branches" "$cases/nested-if.onnx" \
  "nested too deeply: more than 256 levels of nested messages"
refused "100000 nested sequence types" "$cases/nested-sequence.onnx" "nested too deeply"
rewritten "40 nested If branches, LSTM at the bottom" "$cases/nested-if-ok.onnx" \
  "LSTM 'deep_lstm': updated"
size=$(stat -c %s "$good")
refused "--max-model-size below the file's size" "$good" \
  "larger than the limit of 1024 bytes (see --max-model-size)" --max-model-size 1K
fresh_dir
run_tool - -o "$d/out.onnx" --max-model-size 1K < <(cat "$good")
case "$status:$err" in
  "1:rnnstate-rewrite: <stdin>: larger than the limit of 1024 bytes"*) pass "--max-model-size on a pipe" ;;
  *) fail "--max-model-size on a pipe" "status $status: $err" ;;
esac
truncate -s 3G "$work/sparse-3G.onnx"
refused "3 GiB file (sparse), over the default limit" "$work/sparse-3G.onnx" \
  "larger than the limit of 2147483648 bytes"
rm -f "$work/sparse-3G.onnx"

# ---- absurd sizes: skipped with a reason, never allocated -------------------------
too_large="skipped (the state is too large"
rewritten "LSTM with batch 2^30, hidden_size 2^40" "$cases/huge-dims.onnx" "$too_large"
rewritten "bidirectional GRU, batch and hidden 2^62 (overflow)" "$cases/huge-overflow.onnx" "$too_large"
rewritten "RNN, dynamic batch, hidden_size 2^40" "$cases/huge-hidden.onnx" "$too_large"
rewritten "LSTM, hidden_size INT64_MAX" "$cases/hidden-int64-max.onnx" "$too_large"
rewritten "ConstantOfShape/Expand to [1,2^30,2^40] as initial state" \
  "$cases/constant-huge-shape.onnx" "LSTM 'rnn': updated"
rewritten "initial_h initializer with dims [1,2^40,2^40] and no data" \
  "$cases/initializer-huge-dims.onnx" "unexpected shape"

# ---- hidden_size and dims --------------------------------------------------------
no_hidden="skipped (hidden_size is missing and R's shape is unknown)"
rewritten "negative hidden_size" "$cases/hidden-negative.onnx" "$no_hidden"
rewritten "hidden_size 0" "$cases/hidden-zero.onnx" "$no_hidden"
rewritten "no hidden_size, R without shape" "$cases/hidden-missing.onnx" "$no_hidden"
rewritten "no hidden_size, R with a negative dim" "$cases/r-negative-dim.onnx" "$no_hidden"
rewritten "no hidden_size, taken from R's shape" "$cases/hidden-from-r.onnx" "GRU 'rnn': updated"
rewritten "negative hidden_size, R's shape known" "$cases/hidden-negative-r-known.onnx" "GRU 'rnn': updated"
rewritten "X with negative dims (batch becomes symbolic)" "$cases/x-negative-dims.onnx" \
  "state LSTM_0_initial_h -> LSTM_0_Y_h [1,LSTM_0_batch,8]"
rewritten "X without a shape" "$cases/x-no-shape.onnx" "RNN 'rnn': updated"
rewritten "X of rank 1" "$cases/x-rank1.onnx" "GRU 'rnn': updated"
rewritten "X without a type" "$cases/x-no-type.onnx" "GRU 'gru': updated"

# ---- malformed nodes ---------------------------------------------------------------
malformed="skipped (malformed node: X, W and R are required)"
rewritten "LSTM with two inputs" "$cases/too-few-inputs.onnx" "$malformed"
rewritten "GRU without inputs" "$cases/no-inputs.onnx" "$malformed"
rewritten "LSTM whose X is ''" "$cases/empty-x.onnx" "$malformed"
rewritten "GRU without outputs" "$cases/no-outputs.onnx" "GRU 'rnn': updated"
rewritten "attributes of the wrong types" "$cases/wrong-attr-types.onnx" "LSTM 'rnn': updated"
rewritten "attribute type and field disagree" "$cases/attr-type-mismatch.onnx" "GRU 'rnn': updated"
rewritten "direction 'sideways', layout 7" "$cases/direction-bogus.onnx" "RNN 'rnn'"
rewritten "NULL names, op_type, domain" "$cases/null-strings.onnx" "LSTM '': updated"
# cycles: the node is skipped, and --check refuses the output (not topologically sorted)
REWRITE_CHECK= rewritten "initial_h is the node's own Y_h (cycle)" "$cases/cycle-self.onnx" \
  "skipped (initial_h is computed from data"
refused "the same, with --check" "$cases/cycle-self.onnx" \
  "check failed: nodes are not in topological order: node 'rnn' of graph 'g' reads 'Y_h' before node 'rnn' produces it" --check
REWRITE_CHECK= rewritten "initial_h and X from Identity/Relu cycles" "$cases/cycle-identity.onnx" \
  "skipped (initial_h is computed from data"
refused "the same, with --check" "$cases/cycle-identity.onnx" \
  "check failed: nodes are not in topological order: node 'i1' of graph 'g' reads 'b' before node 'i2' produces it" --check
rewritten "initial_h initializer with short raw_data" "$cases/initializer-bad-data.onnx" "GRU 'rnn'"
refused "external data location ../../../etc/shadow" "$cases/initializer-external.onnx" \
  "is stored in external file '../../../../../../../../etc/shadow', outside the model's directory: it cannot be placed beside the output"
refused "the same, --external-data=reference" "$cases/initializer-external.onnx" \
  "is stored in external file '../../../../../../../../etc/shadow', which would lie outside the output's directory" \
  --external-data=reference
refused "external data file missing" "$cases/external-missing.onnx" \
  "external data file 'no-such-weights.bin' of tensor 'h0' cannot be found"
rewritten "external data at an absolute path (never read)" "$cases/external-absolute.onnx" "GRU 'rnn'"
rewritten "initial_h STRING, initial_c INT64" "$cases/initializer-wrong-type.onnx" "LSTM 'rnn'"
rewritten "no opset_import" "$cases/no-opset.onnx" "GRU 'rnn'"
rewritten "ir_version 3, opset 7" "$cases/old-opset.onnx" "LSTM 'rnn'"
rewritten "LSTM inside an If branch" "$cases/rnn-in-subgraph.onnx" \
  "main/if_0.then_branch LSTM 'deep_lstm': updated"
# an If without its else_branch: the LSTM inside is skipped (the leaks this
# once caused are counted in tests/unit/test_rewrite.c)
no_else="skipped (inside an If node that lacks a then_branch or else_branch (an invalid model))"
rewritten "LSTM in an If without else_branch" "$cases/if-missing-else.onnx" \
  "main/if_0.then_branch LSTM 'deep_lstm': $no_else"
rewritten "the same, one If further out" "$cases/if-missing-else-nested.onnx" \
  "main/if_1.then_branch/if_0.then_branch LSTM 'deep_lstm': $no_else"

# ---- weights left in the file (over 64 KiB: lazy_scan.c) ------------------------------
"$gen" big-weights "$cases/big-weights.onnx" 1
"$gen" lazy-corrupt-initializer "$cases/lazy-corrupt.onnx"
# eager_ok FILE: protobuf-c parses the whole file, weights included
eager_ok() { "$gen" --names "$1" > /dev/null 2>&1; }
rewritten "a 384 KiB initializer, copied from the file" "$cases/big-weights.onnx" "GRU 'gru0': updated"
eager_ok "$last_out" && pass "its output parses in full" || fail "big weights" "protobuf-c cannot parse the output"
fresh_dir
cp "$cases/big-weights.onnx" "$d/model.onnx"
run_tool "$d/model.onnx" -o "$d/model.onnx" --check
why=$(crash_report "$status" "$work/stderr")
if [ -n "$why" ]; then fail "in-place rewrite with weights left in the file" "$why"
elif [ "$status" -ne 0 ] || [ "$(leftovers "$d")" != model.onnx ]; then
  fail "in-place rewrite with weights left in the file" "status $status, left: $(leftovers "$d"): $err"
elif ! eager_ok "$d/model.onnx"; then fail "in-place rewrite with weights left in the file" "result does not parse"
else pass "in-place rewrite with weights left in the file"; fi
# a malformed initializer must be refused whichever way the file is read
# (protobuf-c refuses it: make-bad-models --names shows that)
if eager_ok "$cases/lazy-corrupt.onnx"; then
  fail "lazy-corrupt test model" "protobuf-c parses it: the case no longer tests anything"
fi
refused "a malformed data field in an initializer left in the file" "$cases/lazy-corrupt.onnx" \
  "not an ONNX model" --check
fresh_dir
run_tool - -o "$d/out.onnx" < <(cat "$cases/lazy-corrupt.onnx")
case "$status:$err" in
  "1:rnnstate-rewrite: <stdin>: not an ONNX model"*) pass "the same, read from a pipe" ;;
  *) fail "a malformed data field, read from a pipe" "status $status: $err" ;;
esac

# unknown fields (a newer ONNX) survive
rewritten "unknown fields are kept" "$cases/unknown-fields.onnx" "GRU 'rnn': updated"
if [ -n "${last_out:-}" ] && grep -q canary-unknown-field "$last_out"; then
  pass "unknown field present in the output"
else
  fail "unknown fields" "field 99 lost in the rewrite"
fi

# ---- names ---------------------------------------------------------------------------
refused "a value produced twice" "$cases/dup-value.onnx" "invalid model: value produced 'x' appears twice"
refused "a value produced twice inside an If branch" "$cases/dup-value-in-branch.onnx" "invalid model: value produced 'twice' appears twice"
refused "If branches with different output counts" "$cases/if-branch-outputs-differ.onnx" "invalid model: the branches of If 'if' have 1 and 2 outputs"
refused "a graph input declared twice" "$cases/dup-input.onnx" "invalid model: graph input 'X' appears twice"
refused "an initializer declared twice" "$cases/dup-initializer.onnx" "invalid model: initializer 'W' appears twice"
refused "a graph output declared twice" "$cases/dup-output.onnx" "invalid model: graph output 'Y' appears twice"
refused "a node writes a graph input" "$cases/node-overwrites-input.onnx" \
  "invalid model: value produced 'X' appears twice"

# names_of FILE: "input NAME" / "output NAME" / ... lines
names_of() { "$gen" --names "$1"; }
collision() {
  local name=$1 file=$2 in=$3 out_name=$4
  rewritten "$name" "$file" "inputs added $in; outputs added $out_name" || return
  local names; names=$(names_of "$last_out")
  if printf '%s\n' "$names" | grep -qx "input $in" && printf '%s\n' "$names" | grep -qx "output $out_name"; then
    pass "$name: $in and $out_name are a graph input and output"
  else
    fail "$name" "graph lacks input $in or output $out_name: $names"
  fi
}
collision "GRU_0_initial_h and GRU_0_Y_h already used" "$cases/collide.onnx" GRU_0_initial_h_1 GRU_0_Y_h_1
collision "GRU_0_initial_h_1 used too" "$cases/collide-twice.onnx" GRU_0_initial_h_2 GRU_0_Y_h_1
collision "names used inside an If branch" "$cases/collide-subgraph.onnx" GRU_0_initial_h_1 GRU_0_Y_h_1
if printf '%s\n' "$(names_of "$cases/collide.onnx")" | grep -qx "input GRU_0_initial_h"; then
  pass "the model's own GRU_0_initial_h input is kept"
else
  fail "collide" "input GRU_0_initial_h is gone"
fi

# ---- hostile names: carried byte for byte, escaped in every report ---------------------
# (make_bad_models.c, hostile_names_model: CSI, OSC, BEL, a newline, bytes that
# are not UTF-8, a C1 CSI and a right-to-left override; docs/reliability.md)
safe_output() { python3 "$(dirname "$0")/safe_output.py" "$@"; }
hostile=$cases/hostile-names.onnx
fresh_dir
run_tool "$hostile" -o "$d/out.onnx" --check -v --name-template '{name}_{slot}'
why=$(crash_report "$status" "$work/stderr")
expected=$(sed "s|^|$hostile: |" <<'EOF'
main GRU 'gru\x1b[31mRED\xff\xfe': updated; inputs added gru\x1b[31mRED\xff\xfe_initial_h; outputs added gru\x1b[31mRED\xff\xfe_Y_h
  initial_h: not given (the node started from zeros); now graph input gru\x1b[31mRED\xff\xfe_initial_h (zero default)
  Y_h: not used by the model; now graph output gru\x1b[31mRED\xff\xfe_Y_h
state gru\x1b[31mRED\xff\xfe_initial_h -> gru\x1b[31mRED\xff\xfe_Y_h [1,batch\u009b2J\u202e,8] float32, optional
time axis x\x1b]0;pwned\x07bell:0 (the sequence axis of the recurrent nodes)
stream: exact: chunks of any length, every state pair fed back, give the whole-sequence outputs
1 recurrent node: 1 updated, 0 already exposed, 0 skipped; model rewritten
EOF
)
expected="$expected
$hostile: wrote $d/out.onnx (checked)"
if [ -n "$why" ] || [ "$status" -ne 0 ]; then fail "hostile names, text report" "status $status $why: $err"
elif [ "$out" != "$expected" ]; then fail "hostile names, text report" "got:
$out
expected:
$expected"
elif ! why=$(safe_output text "$work/stdout"); then fail "hostile names, text report" "$why"
else pass "hostile names: the text report escapes them exactly"; fi
# the names themselves are the model's bytes, in the model and in new names
if names_of "$d/out.onnx" > "$work/names" &&
   grep -qxF "$(printf 'node GRU gru\033[31mRED\377\376')" "$work/names" &&
   grep -qxF "$(printf 'input gru\033[31mRED\377\376_initial_h')" "$work/names" &&
   grep -qxF "$(printf 'input x\033]0;pwned\007bell')" "$work/names" &&
   grep -qxF "$(printf 'initializer r\355\240\200')" "$work/names"; then
  pass "hostile names: carried byte for byte into the output"
else
  fail "hostile names" "names changed in the output: $(cat -v "$work/names")"
fi
if why=$(safe_output metadata "$work/names"); then pass "hostile names: the metadata (rnnstate.state, rnnstate.time) is safe JSON"
else fail "hostile names, metadata" "$why"; fi
run_tool "$hostile" -o "$d/out.onnx" --json --name-template '{name}_{slot}'
if ! why=$(safe_output json "$work/stdout"); then fail "hostile names, JSON report" "$why"
elif ! python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["models"][0]
want = "gru\x1b[31mRED\\xff\\xfe"
assert m["nodes"][0]["name"] == want, m["nodes"][0]["name"]
assert m["state"][0]["input"] == want + "_initial_h", m["state"][0]
assert m["state"][0]["shape"] == [1, "batch\x9b2J\u202e", 8], m["state"][0]
' "$work/stdout"; then fail "hostile names, JSON report" "names not as documented: $(cat "$work/stdout")"
else pass "hostile names: strict JSON, names decoded as documented"; fi
refused "hostile names in an error message" "$cases/hostile-names-dup.onnx" \
  "invalid model: value produced 'y\nrnnstate-rewrite: forged line' appears twice"
# a file name is as untrusted as the names inside the file
evil=$work/$(printf 'evil\033]0;t\007\377').onnx
cp "$hostile" "$evil"
fresh_dir
run_tool "$evil" -o "$d/out.onnx" --json
if ! why=$(safe_output json "$work/stdout") || ! why=$(safe_output text "$work/stderr"); then
  fail "hostile file name" "$why"
else
  case "$err" in
    "$work/evil\x1b]0;t\x07\xff.onnx: main GRU"*) pass "hostile file name: escaped in the text and JSON reports" ;;
    *) fail "hostile file name" "text report: $(cat -v "$work/stderr")" ;;
  esac
fi
cp "$cases/hostile-names-dup.onnx" "$evil"
run_tool "$evil" -o "$d/out.onnx"
case "$status:$err" in
  "1:rnnstate-rewrite: $work/evil\x1b]0;t\x07\xff.onnx: invalid model: value produced 'y\n"*) pass "hostile file name: escaped in an error" ;;
  *) fail "hostile file name in an error" "status $status: $(cat -v "$work/stderr")" ;;
esac
rm -f "$evil"

# ---- inputs that are not files ---------------------------------------------------------
refused "missing input path" "$work/nope.onnx" "cannot open: No such file or directory"
mkdir -p "$work/empty-dir" "$work/dir.onnx"
refused "a directory without models" "$work/empty-dir" "no *.onnx models found"
refused "a directory named like a model" "$work/dir.onnx" "no *.onnx models found"
fresh_dir
run_tool - -o "$d/out.onnx" < /dev/null
case "$status:$err" in
  "1:rnnstate-rewrite: <stdin>: empty file, not an ONNX model") [ -z "$(leftovers "$d")" ] && pass "empty standard input" || fail "empty stdin" "left: $(leftovers "$d")" ;;
  *) fail "empty standard input" "status $status: $err" ;;
esac

# ---- outputs that cannot be written ----------------------------------------------------------
run_tool "$good" -o "$work/missing-dir/out.onnx"
case "$status:$err" in
  "1:rnnstate-rewrite: $work/missing-dir/out.onnx: cannot write output: No such file or directory")
    [ ! -e "$work/missing-dir" ] && pass "output into a missing directory" ||
      fail "output into a missing directory" "the directory was created" ;;
  *) fail "output into a missing directory" "status $status: $err" ;;
esac
mkdir -p "$work/not-a-dir-parent"; : > "$work/not-a-dir-parent/file"
run_tool "$good" -d "$work/not-a-dir-parent/file/sub"
case "$status:$err" in
  "1:rnnstate-rewrite: $work/not-a-dir-parent/file/sub/"*"cannot create its directory: Not a directory") pass "-d below a regular file" ;;
  *) fail "-d below a regular file" "status $status: $err" ;;
esac
mkdir -p "$work/outdir"
run_tool "$good" -o "$work/outdir"
case "$status:$err" in
  "1:rnnstate-rewrite: $work/outdir: cannot write output: is a directory") pass "output path is a directory" ;;
  *) fail "output path is a directory" "status $status: $err" ;;
esac
[ -z "$(leftovers "$work/outdir")" ] || fail "output path is a directory" "left: $(leftovers "$work/outdir")"

# /dev/full: the write fails with ENOSPC; nothing is left in /dev
before=$(ls -A /dev | grep -c '\.tmp-' || true)
run_tool "$good" -o /dev/full
case "$status:$err" in
  "1:rnnstate-rewrite: /dev/full: cannot write output: No space left on device") pass "-o /dev/full: ENOSPC" ;;
  *) fail "-o /dev/full" "status $status: $err" ;;
esac
after=$(ls -A /dev | grep -c '\.tmp-' || true)
[ -c /dev/full ] && [ "$before" = "$after" ] && pass "/dev/full still a device, no temp file in /dev" ||
  fail "/dev/full" "temp file in /dev or /dev/full replaced"
run_tool "$good" -o /dev/null
[ "$status" -eq 0 ] && [ -c /dev/null ] && pass "-o /dev/null" || fail "-o /dev/null" "status $status: $err"

# a file-size limit (RLIMIT_FSIZE): the write fails with EFBIG half way; the
# unnamed temporary file disappears with the process's descriptor
fresh_dir
(
  trap '' XFSZ
  ulimit -f 4   # 4 KiB; the model is bigger
  exec timeout 60 "$tool" "$good" -o "$d/out.onnx"
) > "$work/stdout" 2> "$work/stderr"
status=$? err=$(cat "$work/stderr")
case "$status:$err" in
  "1:rnnstate-rewrite: $d/out.onnx: cannot write output: File too large") 
    [ -z "$(leftovers "$d")" ] && pass "file-size limit reached mid-write (EFBIG)" ||
      fail "EFBIG" "left: $(leftovers "$d")" ;;
  *) fail "file-size limit reached mid-write" "status $status: $err" ;;
esac

# read-only directories, three ways (each skipped where the machine cannot)
ro_case() {
  local name=$1 frag=$2 dir=$3; shift 3
  cp "$good" "$dir/model.onnx" 2>/dev/null || true
  local sum; sum=$(sha256sum "$good" | cut -d' ' -f1)
  "$@" > "$work/stdout" 2> "$work/stderr"
  status=$? err=$(cat "$work/stderr")
  case "$status:$err" in
    "1:rnnstate-rewrite: "*"cannot write output: $frag") pass "$name" ;;
    *) fail "$name" "status $status: $err"; return ;;
  esac
  local left; left=$(ls -A "$dir" | grep -v '^model\.onnx$' || true)
  [ -z "$left" ] && pass "$name: nothing left" || fail "$name" "left: $left"
}

# (1) as an unprivileged user, a directory without write permission: EACCES
if command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2> /dev/null; then
  ro=$work/ro-perm
  mkdir -p "$ro" "$work/bin"
  cp "$good" "$ro/model.onnx"
  cp "$tool" "$work/bin/tool"
  chmod 755 "$work/bin" "$work/bin/tool"
  chmod 555 "$ro"
  ro_case "read-only directory, unprivileged user (EACCES)" "Permission denied" "$ro" \
    setpriv --reuid=65534 --regid=65534 --clear-groups timeout 60 "$work/bin/tool" "$ro/model.onnx" -o "$ro/out.onnx"
  ro_case "in-place rewrite in a read-only directory (EACCES)" "Permission denied" "$ro" \
    setpriv --reuid=65534 --regid=65534 --clear-groups timeout 60 "$work/bin/tool" "$ro/model.onnx" -o "$ro/model.onnx"
  cmp -s "$good" "$ro/model.onnx" && pass "input untouched after a failed in-place rewrite" ||
    fail "in-place rewrite" "the input changed"
  chmod 755 "$ro"
else
  echo "SKIP read-only directory as an unprivileged user: setpriv cannot drop privileges here"
fi

# (2) a read-only bind mount: EROFS
if unshare -m true 2> /dev/null; then
  ro=$work/ro-mount
  mkdir -p "$ro"
  cp "$good" "$ro/model.onnx"
  ro_case "read-only file system (EROFS)" "Read-only file system" "$ro" \
    unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec timeout 60 "$2" "$1/model.onnx" -o "$1/out.onnx"' \
    sh "$ro" "$tool"
else
  echo "SKIP read-only bind mount: unshare -m not permitted here"
fi

# (3) an immutable directory (chattr +i), which stops root too: EPERM
ro=$work/ro-immutable
mkdir -p "$ro"
cp "$good" "$ro/model.onnx"
if chattr +i "$ro" 2> /dev/null; then
  ro_case "immutable directory (EPERM, even for root)" "Operation not permitted" "$ro" \
    timeout 60 "$tool" "$ro/model.onnx" -o "$ro/model.onnx"
  chattr -i "$ro"
  cmp -s "$good" "$ro/model.onnx" && pass "input untouched in an immutable directory" ||
    fail "immutable directory" "the input changed"
else
  echo "SKIP immutable directory: chattr +i not supported on $(df -T "$work" | awk 'NR==2 { print $2 }')"
fi

finish
