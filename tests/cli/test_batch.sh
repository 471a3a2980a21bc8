#!/usr/bin/env bash
# The command line for pipelines (issue 3): many models, directories, -d,
# standard input and output, reports (--json validated against
# docs/report.schema.json, -q, -v), exit statuses 0/1/2/3, --fail-on-skip,
# --include/--exclude, --name-template, the rnnstate.state metadata, --check
# and --state-inputs=required. Run by ctest:
#   test_batch.sh TOOL MODELS_DIR FIXTURES_DIR
# Needs node; validating the reports needs tests/e2e's ajv (skipped without it).
tool=$1 models=$2 fixtures=$3
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
e2e=$root/tests/e2e
io=$(mktemp -d) && cleanup+=("$io")

# Validating reports needs ajv (tests/e2e's npm packages): without it those
# checks are skipped, unless RNNSTATE_REQUIRE_NPM=1 makes that a failure.
have_ajv=0
have_npm "$e2e:ajv" && have_ajv=1

# run NAME EXPECTED_STATUS ARGS...: runs the tool, keeps stdout/stderr in
# $io/stdout, $io/stderr and $out/$err (outside $work, whose snapshots
# must not see them).
run() {
  local name=$1 want=$2; shift 2
  "$tool" "$@" > "$io/stdout" 2> "$io/stderr" < /dev/null
  status=$?
  out=$(cat "$io/stdout") err=$(cat "$io/stderr")
  if [ "$status" -ne "$want" ]; then
    fail "$name" "exit status $status, expected $want; stderr: $err"
    return 1
  fi
  return 0
}

# eq NAME GOT WANT: exact comparison.
eq() {
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got [$2], expected [$3]"; fi
}

# has NAME TEXT PART / hasnt NAME TEXT PART
has() { case "$2" in *"$3"*) pass "$1" ;; *) fail "$1" "[$3] not in [${2:0:600}]" ;; esac; }
hasnt() { case "$2" in *"$3"*) fail "$1" "[$3] unexpectedly in [${2:0:600}]" ;; *) pass "$1" ;; esac; }

# js FILE EXPR [ARG...]: the value of the JavaScript expression EXPR, where
# r is the JSON document in FILE (strings printed raw, anything else as
# JSON); the ARGs are process.argv[3...].
js() {
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const v = eval(process.argv[2]);
    console.log(typeof v === "string" ? v : JSON.stringify(v));' "$@"
}

# info MODEL > JSON: inputs, outputs (with shapes), initializers, metadata.
info() { node "$e2e/model_info.js" "$1"; }

# valid NAME REPORT: the report validates against docs/report.schema.json.
valid() {
  local v
  if [ $have_ajv = 0 ]; then echo "SKIP $1 (ajv is not installed)"; return; fi
  if v=$(node "$e2e/validate_report.js" "$2" 2>&1); then pass "$1"; else fail "$1" "$v"; fi
}

# files DIR: every file below DIR, relative, sorted, one line each.
files() { (cd "$1" && find . -type f | sort); }

# snapshot DIR: names, sizes, times and checksums of everything below DIR.
snapshot() {
  (cd "$1" && find . -printf '%p %y %s %T@ %m\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

m_gru=$models/gru_1layer_fixed.onnx       # rewritten: 1 pair
m_den=$models/denoiser_gru.onnx           # rewritten: 2 pairs, dynamic batch
m_lstm=$models/lstm_classifier.onnx       # rewritten: LSTM, h and c
m_user=$models/gru_user_h0.onnx           # annotated: state already exposed
f_skip=$fixtures/lstm_data_state.onnx     # its LSTM's initial_h comes from data: skipped
f_freq=$fixtures/gru_time_and_freq.onnx   # time_gru (dynamic time) + freq_gru (fixed length 5)
f_h0=$fixtures/gru_nonzero_h0.onnx        # initial_h: an initializer of 0.5s

# A file that is not a model, and a truncated model.
printf 'not a model\n' > "$work/corrupt.bin"
head -c 100 "$m_den" > "$work/truncated.bin"

# ---- several models at once ---------------------------------------------------
mkdir "$work/many"
cp "$m_gru" "$work/many/a.onnx"; cp "$m_lstm" "$work/many/b.onnx"; cp "$m_user" "$work/many/c.onnx"
run "several models" 0 "$work/many/a.onnx" "$work/many/b.onnx" "$work/many/c.onnx" &&
  eq "several models: each written beside its input" "$(files "$work/many")" \
"./a.onnx
./a.updated.onnx
./b.onnx
./b.updated.onnx
./c.onnx
./c.updated.onnx"
eq "several models: summary line closes the run" "$(tail -n 1 "$io/stdout")" \
  "rnnstate-rewrite: 3 models: 2 rewritten, 1 annotated, 0 unchanged, 0 failed"
has "several models: one report per model" "$out" "$work/many/b.onnx: 1 recurrent node: 1 updated, 0 already exposed, 0 skipped; model rewritten"
has "several models: each output named" "$out" "$work/many/c.onnx: wrote $work/many/c.updated.onnx"
"$tool" -q "$work/many/c.updated.onnx" -o "$work/many-c-again.onnx"
cmp -s "$work/many/c.updated.onnx" "$work/many-c-again.onnx" && pass "annotated model: a second run writes the same bytes" ||
  fail "annotated model: a second run writes the same bytes" "many-c-again.onnx differs from c.updated.onnx"
"$tool" -q "$m_gru" -o "$work/a.single.onnx"
cmp -s "$work/a.single.onnx" "$work/many/a.updated.onnx" && pass "batch output equals single-model output" ||
  fail "batch output equals single-model output" "differs"
run "one model: no summary line" 0 "$m_gru" -n && hasnt "one model: no summary line" "$out" "models:"

# ---- directories, -r, -d --------------------------------------------------------
tree=$work/tree
mkdir -p "$tree/sub/deeper" "$tree/empty"
cp "$m_gru" "$tree/a.onnx"; cp "$m_lstm" "$tree/sub/b.onnx"; cp "$m_den" "$tree/sub/deeper/c.onnx"
cp "$m_user" "$tree/old.updated.onnx"; cp "$m_user" "$tree/sub/also.updated.onnx"
printf 'readme\n' > "$tree/README.txt"
run "directory" 0 -n --json "$tree" > /dev/null
cp "$io/stdout" "$work/dir.json"
eq "directory: its *.onnx, not below, not *.updated.onnx" "$(js "$work/dir.json" 'r.models.map(m => m.input).join(" ")')" \
  "$tree/a.onnx"
run "directory -r" 0 -n --json -r "$tree" && cp "$io/stdout" "$work/dir-r.json"
eq "directory -r: every *.onnx below, sorted, *.updated.onnx left out" \
  "$(js "$work/dir-r.json" 'r.models.map(m => m.input).join(" ")')" \
  "$tree/a.onnx $tree/sub/b.onnx $tree/sub/deeper/c.onnx"
valid "directory -r: report validates" "$work/dir-r.json"
run "--recursive" 0 -n --json --recursive "$tree/" &&
  eq "--recursive, trailing slash" "$(js "$io/stdout" 'r.models.map(m => m.input).join(" ")')" \
    "$tree/a.onnx $tree/sub/b.onnx $tree/sub/deeper/c.onnx"

# what a listing takes: regular files and links to them; directories, but
# not through links; nothing that a link leads nowhere from
links=$work/links
mkdir -p "$links/sub" "$links/dir.onnx"
cp "$m_gru" "$links/real.onnx"; cp "$m_gru" "$links/sub/d.onnx"; cp "$m_gru" "$links/dir.onnx/e.onnx"
ln -s real.onnx "$links/link.onnx"; ln -s sub "$links/dirlink"; ln -s sub "$links/dirlink.onnx"
ln -s missing.onnx "$links/dangling.onnx"
run "directory -r with links" 0 -n --json -r "$links" &&
  eq "directory -r: links to models taken, linked directories not followed" \
    "$(js "$io/stdout" 'r.models.map(m => m.input).join(" ")')" \
    "$links/dir.onnx/e.onnx $links/link.onnx $links/real.onnx $links/sub/d.onnx"
run "directory with links" 0 -n --json "$links" &&
  eq "directory: a link to a model is a model, a directory named *.onnx is not" \
    "$(js "$io/stdout" 'r.models.map(m => m.input).join(" ")')" "$links/link.onnx $links/real.onnx"

snap=$(snapshot "$tree")
run "-r -d" 0 -r "$tree" -d "$work/out" &&
  eq "-d mirrors the layout below the directory" "$(files "$work/out")" \
"./a.onnx
./sub/b.onnx
./sub/deeper/c.onnx"
eq "-d leaves the input directory alone" "$(snapshot "$tree")" "$snap"
cmp -s "$work/out/a.onnx" "$work/a.single.onnx" && pass "-d output equals -o output" ||
  fail "-d output equals -o output" "differs"
run "--output-dir with files" 0 "$m_gru" "$tree/sub/b.onnx" --output-dir "$work/out2" &&
  eq "-d with file arguments: their base names" "$(files "$work/out2")" \
"./b.onnx
./gru_1layer_fixed.onnx"
run "-r default outputs" 0 -q -r "$tree"
run "-r default outputs, again" 0 -q --json -r "$tree" &&
  eq "running twice does not stack outputs" "$(js "$io/stdout" 'r.models.length')" "3"
eq "-r without -d: <stem>.updated.onnx beside each" "$(files "$tree" | grep -v README)" \
"./a.onnx
./a.updated.onnx
./old.updated.onnx
./sub/also.updated.onnx
./sub/b.onnx
./sub/b.updated.onnx
./sub/deeper/c.onnx
./sub/deeper/c.updated.onnx"
run "empty directory" 1 "$tree/empty" &&
  eq "empty directory: message" "$err" \
    "rnnstate-rewrite: $tree/empty: no *.onnx models found (use -r to look in subdirectories)"
run "empty directory among models" 1 "$m_gru" "$tree/empty" -d "$work/out3" &&
  { [ -f "$work/out3/gru_1layer_fixed.onnx" ] && pass "empty directory does not stop the others" ||
      fail "empty directory does not stop the others" "not written"; }

# ---- usage errors: exit 2, nothing written -------------------------------------
before=$(snapshot "$work")
run "-o with several models" 2 "$m_gru" "$m_lstm" -o "$work/x.onnx" &&
  eq "-o with several models: message" "$err" \
"rnnstate-rewrite: -o names one output: give one MODEL, or use -d DIR
Try 'rnnstate-rewrite --help' for more information."
run "-o with a directory of several models" 2 -r "$tree" -o "$work/x.onnx"
mkdir -p "$work/p" "$work/q"; cp "$m_gru" "$work/p/m.onnx"; cp "$m_gru" "$work/q/m.onnx"
for m in p/b p/a q/b q/a; do cp "$m_gru" "$work/$m.onnx"; done
before=$(snapshot "$work")
run "-d: two models, one output name" 2 "$work/p/m.onnx" "$work/q/m.onnx" -d "$work/pq" &&
  has "-d: two models, one output name: message" "$err" "two models would be written to $work/pq/m.onnx"
# several shared names: the message names the first job, in argument order,
# that has a later twin (b.onnx), not the first in sorted order (a.onnx)
run "-d: two pairs of models share names" 2 "$work/p/b.onnx" "$work/p/a.onnx" "$work/q/b.onnx" \
  "$work/q/a.onnx" -d "$work/pq" &&
  has "-d: two pairs share names: the first in argument order" "$err" \
    "two models would be written to $work/pq/b.onnx"
run "two standard inputs" 2 - - && has "two standard inputs: message" "$err" "standard input (-) is one model"
run "standard input with -d" 2 - -d "$work/sd" && has "standard input with -d: message" "$err" "standard input (-) is one model"
run "-o - with --json" 2 "$m_gru" -o - --json && has "-o - with --json: message" "$err" "both want standard output"
# '-' alone writes the model to standard output, so --json has no room there either.
"$tool" - --json < "$m_gru" > "$io/stdout" 2> "$io/stderr"
eq "- with --json (model to stdout): usage error" "$?" "2"
eq "- with --json: nothing on stdout" "$(stat -c %s "$io/stdout")" "0"
run "--state-inputs bad value" 2 "$m_gru" --state-inputs=maybe
run "--max-model-size bad value" 2 "$m_gru" --max-model-size=lots &&
  has "--max-model-size bad value: message" "$err" "--max-model-size takes a size"
run "--max-model-size past 2G" 2 "$m_gru" --max-model-size=3G &&
  has "--max-model-size past 2G: says that 2G is the most" "$err" "--max-model-size '3G' is more than 2G, the most it can be"
eq "usage errors write nothing" "$(snapshot "$work")" "$before"

# ---- one corrupt file among good ones -------------------------------------------
batch=$work/batch
mkdir "$batch"
cp "$m_gru" "$batch/1-good.onnx"; cp "$work/truncated.bin" "$batch/2-bad.onnx"; cp "$m_lstm" "$batch/3-good.onnx"
run "corrupt among good: text" 1 "$batch"
eq "corrupt among good: good ones written, bad one not" "$(files "$batch")" \
"./1-good.onnx
./1-good.updated.onnx
./2-bad.onnx
./3-good.onnx
./3-good.updated.onnx"
# (the loader's exact wording is tested in test_cli.sh and tests/bad_input)
eq "corrupt among good: one error line on stderr" "$(printf '%s\n' "$err" | wc -l)" "1"
has "corrupt among good: the error names the file" "$err" "rnnstate-rewrite: $batch/2-bad.onnx: not an ONNX model"
bad_message=${err#rnnstate-rewrite: }
eq "corrupt among good: summary line" "$(tail -n 1 "$io/stdout")" \
  "rnnstate-rewrite: 3 models: 2 rewritten, 0 annotated, 0 unchanged, 1 failed"
has "corrupt among good: the model after the bad one ran" "$out" "$batch/3-good.onnx: wrote $batch/3-good.updated.onnx"
rm -f "$batch"/*.updated.onnx
run "corrupt among good: --json" 1 "$batch" --json -d "$work/batch-out" && cp "$io/stdout" "$work/batch.json"
valid "corrupt among good: report with an error validates" "$work/batch.json"
eq "corrupt among good: statuses" "$(js "$work/batch.json" 'r.models.map(m => m.status).join(" ")')" "rewritten error rewritten"
eq "corrupt among good: the error entry (input, no output, the message printed, no nodes)" \
  "$(js "$work/batch.json" 'const m = r.models[1];
       [m.input === process.argv[3], m.output, m.error === process.argv[4], m.nodes, m.state, m.notes]' \
       "$batch/2-bad.onnx" "$bad_message")" '[true,null,true,[],[],[]]'

eq "corrupt among good: outputs in the report" "$(js "$work/batch.json" 'r.models.map(m => m.output).join(" ")')" \
  "$work/batch-out/1-good.onnx  $work/batch-out/3-good.onnx"
eq "corrupt among good: JSON summary" "$(js "$work/batch.json" 'r.summary')" \
  '{"models":3,"rewritten":2,"annotated":0,"unchanged":0,"errors":1}'
has "corrupt among good: --json puts the text on stderr" "$err" "$batch/1-good.onnx: 1 recurrent node"
has "corrupt among good: --json keeps the summary line on stderr" "$err" \
  "rnnstate-rewrite: 3 models: 2 rewritten, 0 annotated, 0 unchanged, 1 failed"
eq "corrupt among good: -d writes the good ones" "$(files "$work/batch-out")" \
"./1-good.onnx
./3-good.onnx"
run "not-a-model file alone" 1 "$work/corrupt.bin" -o "$work/never.onnx" &&
  { [ ! -e "$work/never.onnx" ] && pass "failed model leaves no output" || fail "failed model leaves no output" "written"; }

# ---- --dry-run on a folder --------------------------------------------------------
dry=$work/dry
mkdir -p "$dry/sub"
cp "$m_gru" "$dry/a.onnx"; cp "$m_den" "$dry/sub/b.onnx"; cp "$work/truncated.bin" "$dry/sub/bad.onnx"
touch -d '2001-02-03 04:05:06' "$dry/a.onnx" "$dry/sub/b.onnx" "$dry/sub/bad.onnx" "$dry/sub" "$dry"
snap=$(snapshot "$dry")
run "--dry-run on a folder" 1 --dry-run -r "$dry" &&
  eq "--dry-run leaves the folder byte for byte untouched" "$(snapshot "$dry")" "$snap"
has "--dry-run says so per model" "$out" "$dry/sub/b.onnx: dry run, nothing written"
eq "--dry-run: summary line" "$(tail -n 1 "$io/stdout")" "rnnstate-rewrite: 3 models: 2 rewritten, 0 annotated, 0 unchanged, 1 failed"
run "-n -d on a folder" 0 -n -r "$dry/sub/b.onnx" "$dry/a.onnx" -d "$work/dry-out" --json &&
  { [ ! -e "$work/dry-out" ] && pass "-n with -d creates nothing" || fail "-n with -d creates nothing" "created"; }
eq "-n: the same report, output null" "$(js "$io/stdout" 'r.models.map(m => [m.status, m.output, m.state.length])')" \
  '[["rewritten",null,2],["rewritten",null,1]]'
eq "--dry-run leaves the folder untouched (with -d)" "$(snapshot "$dry")" "$snap"

# ---- standard input and output --------------------------------------------------
"$tool" -q "$m_den" -o "$work/den.file.onnx"
"$tool" - -o - < "$m_den" > "$work/den.pipe.onnx" 2> "$work/pipe.err"
eq "- -o -: exit status" "$?" "0"
cmp -s "$work/den.pipe.onnx" "$work/den.file.onnx" && pass "- -o -: same bytes as the file route" ||
  fail "- -o -: same bytes as the file route" "differs"
has "- -o -: the report goes to stderr, labelled <stdin>" "$(cat "$work/pipe.err")" \
  "<stdin>: 2 recurrent nodes: 2 updated, 0 already exposed, 0 skipped; model rewritten"
"$tool" - < "$m_den" > "$work/den.pipe2.onnx" 2> /dev/null
eq "- alone: exit status" "$?" "0"
cmp -s "$work/den.pipe2.onnx" "$work/den.file.onnx" && pass "- alone writes the model to stdout" ||
  fail "- alone writes the model to stdout" "differs"
"$tool" "$m_den" -o - > "$work/den.pipe3.onnx" 2> /dev/null
cmp -s "$work/den.pipe3.onnx" "$work/den.file.onnx" && pass "file to -o -: same bytes" || fail "file to -o -" "differs"
"$tool" -q - -o "$work/den.pipe4.onnx" < "$m_den"
cmp -s "$work/den.pipe4.onnx" "$work/den.file.onnx" && pass "- to -o FILE: same bytes" || fail "- to -o FILE" "differs"
"$tool" - -o - --check < "$m_den" > "$work/den.pipe5.onnx" 2> /dev/null
eq "- -o - --check: exit status" "$?" "0"
cmp -s "$work/den.pipe5.onnx" "$work/den.file.onnx" && pass "- -o - --check: same bytes" || fail "- -o - --check" "differs"
"$tool" - -o - < "$work/truncated.bin" > "$work/trunc.out" 2> "$work/trunc.err"
eq "corrupt standard input: exit 1" "$?" "1"
eq "corrupt standard input: nothing on stdout" "$(stat -c %s "$work/trunc.out")" "0"
has "corrupt standard input: message names <stdin>" "$(cat "$work/trunc.err")" "rnnstate-rewrite: <stdin>: not an ONNX model"
if command -v script > /dev/null; then # a terminal on standard output
  tty_out=$(script -qec "'$tool' - -o - < '$m_gru'" /dev/null < /dev/null | tr -d '\r')
  eq "-o - to a terminal: refused" "$tty_out" "rnnstate-rewrite: <stdout>: refusing to write a binary model to a terminal"
fi
"$tool" - -n --json < "$m_den" > "$work/stdin.json" 2> /dev/null
eq "- -n --json: input is -" "$(js "$work/stdin.json" 'r.models[0].input + " " + r.models[0].output')" "- null"

# ---- -q, -v, --json ----------------------------------------------------------------
run "-q: success" 0 -q "$m_gru" "$m_lstm" -d "$work/quiet" && eq "-q: nothing printed on success" "$out$err" ""
run "-q: a failure" 1 -q "$m_gru" "$work/truncated.bin" -d "$work/quiet2" &&
  { eq "-q: stdout empty" "$out" ""
    eq "-q: only the error on stderr" "$err" "rnnstate-rewrite: ${bad_message/$batch\/2-bad.onnx/$work/truncated.bin}"; }
run "-q --json" 0 -q --json -n "$m_gru" && { eq "-q --json: no text" "$err" ""; eq "-q --json: still the report" "$(js "$io/stdout" 'r.models.length')" "1"; }

for m in "$m_lstm" "$f_freq"; do
  name=$(basename "$m")
  run "-v $name" 0 -v -n "$m" && printf '%s\n' "$out" > "$work/v.txt"
  run "--json $name" 0 --json -n "$m" && cp "$io/stdout" "$work/v.json"
  # every decision of the report, in order, is a "LABEL:   decision" line of -v
  want=$(js "$work/v.json" 'r.models[0].nodes.flatMap(n => n.decisions).map(d => process.argv[3] + ":   " + d).join("\n")' "$m")
  eq "-v prints every decision of $name (as in the JSON report)" "$(grep -F "$m:   " "$work/v.txt" | grep -v ':   warning: ')" "$want"
  run "no -v $name" 0 -n "$m" && hasnt "without -v no decisions for $name" "$out" "initial_h: "
done
has "-v says what the state was and what it is now" "$(cat "$work/v.txt")" "$f_freq:   initial_h: not given (the node started from zeros); now graph input GRU_0_initial_h (zero default)"
hasnt "-v speaks no internal jargon" "$(cat "$work/v.txt")" ": case "

run "--verbose" 0 --verbose -n "$m_gru" && has "--verbose = -v" "$out" "$m_gru:   Y_h: "
run "--json: one document on stdout" 0 --json -n "$m_gru" "$m_user" "$f_skip" "$f_freq" && cp "$io/stdout" "$work/four.json"
valid "--json: four models validate" "$work/four.json"
eq "--json: tool and version" "$(js "$work/four.json" 'r.tool + " " + r.version')" "rnnstate-rewrite $("$tool" --version | cut -d' ' -f2)"
eq "--json: statuses" "$(js "$work/four.json" 'r.models.map(m => m.status).join(" ")')" "rewritten annotated unchanged rewritten"
eq "--json: node statuses" "$(js "$work/four.json" 'r.models.map(m => m.nodes.map(n => n.op + ":" + n.status).join(",")).join(" ")')" \
  "GRU:updated GRU:already-exposed,GRU:already-exposed LSTM:skipped GRU:updated,GRU:updated"
eq "--json: a pair already in the model" "$(js "$work/four.json" 'r.models[1].state')" \
  '[{"input":"h0","output":"hn","shape":[2,"batch",16],"dtype":"float32","batch_axis":1,"optional":false,"kind":"recurrent","added":false}]'
eq "--json: fixed sequence length flagged" "$(js "$work/four.json" 'r.models[3].nodes.map(n => [n.name, n.fixed_sequence_length, n.warnings.length])')" \
  '[["time_gru",null,0],["freq_gru",5,1]]'
has "--json: the flag's warning" "$(js "$work/four.json" 'r.models[3].nodes[1].warnings[0]')" "the sequence length is fixed at 5"
eq "--json: inputs and outputs added" "$(js "$work/four.json" 'r.models[0].nodes[0].inputs_added.concat(r.models[0].nodes[0].outputs_added)')" \
  '["GRU_0_initial_h","GRU_0_Y_h"]'

# ---- --fail-on-skip ---------------------------------------------------------------
run "skipped node without --fail-on-skip: exit 0" 0 "$f_skip" -o "$work/skip.onnx" --json &&
  cp "$io/stdout" "$work/skip.json"
valid "skipped node: report validates" "$work/skip.json"
eq "skipped node: status and reason" "$(js "$work/skip.json" 'const n = r.models[0].nodes[0]; [r.models[0].status, n.name, n.status, n.reason]')" \
  "[\"unchanged\",\"data_lstm\",\"skipped\",\"initial_h is computed from data by Add node 'h0_from_data'\"]"
cmp -s "$work/skip.onnx" "$f_skip" && pass "skipped node: model written unchanged" || fail "skipped node: model written unchanged" "differs"
run "--fail-on-skip: exit 3" 3 --fail-on-skip "$f_skip" -o "$work/skip2.onnx" &&
  { cmp -s "$work/skip2.onnx" "$f_skip" && pass "--fail-on-skip still writes the output" || fail "--fail-on-skip still writes the output" "missing or different"; }
has "--fail-on-skip: the skip is reported" "$out" "$f_skip: main LSTM 'data_lstm': skipped (initial_h is computed from data by Add node 'h0_from_data')"
run "--fail-on-skip with --dry-run: exit 3" 3 --fail-on-skip -n "$f_skip"
run "--fail-on-skip in a batch: exit 3" 3 --fail-on-skip "$m_gru" "$f_skip" -d "$work/skipbatch" &&
  eq "--fail-on-skip in a batch: every model written" "$(files "$work/skipbatch")" \
"./gru_1layer_fixed.onnx
./lstm_data_state.onnx"
run "--fail-on-skip with a failed model: exit 1 wins" 1 --fail-on-skip "$f_skip" "$work/truncated.bin" -n
run "--fail-on-skip, nothing skipped: exit 0" 0 --fail-on-skip "$m_gru" "$f_freq" -n

# ---- --include / --exclude --------------------------------------------------------
run "--exclude" 0 --json --exclude '*freq*' "$f_freq" -o "$work/excl.onnx" && cp "$io/stdout" "$work/excl.json"
valid "--exclude: report validates" "$work/excl.json"
eq "--exclude: the matching node is skipped with a reason" \
  "$(js "$work/excl.json" 'r.models[0].nodes.map(n => [n.name, n.status, n.reason])')" \
  "[[\"time_gru\",\"updated\",null],[\"freq_gru\",\"skipped\",\"excluded by pattern '*freq*'\"]]"
eq "--exclude: only the other node's pair" "$(js "$work/excl.json" 'r.models[0].state.map(p => p.input + ">" + p.output)')" \
  '["GRU_0_initial_h>GRU_0_Y_h"]'
eq "--exclude: the excluded node is still flagged" "$(js "$work/excl.json" 'r.models[0].nodes[1].fixed_sequence_length')" "5"
eq "--exclude: the model keeps the excluded node's zero state" \
  "$(info "$work/excl.onnx" | js /dev/stdin 'r.inputs.map(i => i.name).concat(r.outputs.map(o => o.name))')" \
  '["x","spec","GRU_0_initial_h","y","f","GRU_0_Y_h"]'
run "--exclude + --fail-on-skip: exit 3" 3 --fail-on-skip --exclude '*freq*' "$f_freq" -n
run "--include" 0 --json -n --include 'time_*' "$f_freq" &&
  eq "--include: the other node is skipped" "$(js "$io/stdout" 'r.models[0].nodes.map(n => [n.name, n.status, n.reason])')" \
    '[["time_gru","updated",null],["freq_gru","skipped","matches no include pattern"]]'
run "--include + --fail-on-skip: exit 3" 3 --fail-on-skip --include 'time_*' "$f_freq" -n
run "--include repeated" 0 --json -n --include 'time_*' --include 'freq_*' "$f_freq" &&
  eq "--include repeated: either pattern selects" "$(js "$io/stdout" 'r.models[0].nodes.map(n => n.status).join(" ")')" "updated updated"
run "--exclude repeated" 0 --json -n --exclude 'time_*' --exclude 'freq_*' "$f_freq" &&
  eq "--exclude repeated: either pattern leaves out" "$(js "$io/stdout" 'r.models[0].status + " " + r.models[0].nodes.map(n => n.status).join(" ")')" \
    "unchanged skipped skipped"
run "--include and --exclude" 0 --json -n --include '*' --exclude 'freq_gru' "$f_freq" &&
  eq "--exclude wins over --include" "$(js "$io/stdout" 'r.models[0].nodes.map(n => n.status).join(" ")')" "updated skipped"
run "--exclude over a batch" 0 --json -n --exclude '/rnn/GRU_1' "$m_den" "$m_gru" &&
  eq "--exclude applies to every model" "$(js "$io/stdout" 'r.models.map(m => m.nodes.map(n => n.status).join(",")).join(" ")')" \
    "updated,skipped updated"
# a pattern that matches no node of any model: a warning naming it, status 4
# (the models are still processed); one that matches in any model of a batch
# is fine
run "--include matching nothing: exit 4" 4 --json -n --include 'tiem_*' "$f_freq" &&
  has "--include matching nothing: a warning names it" "$err" "warning: --include 'tiem_*' matched the name of no recurrent node" &&
  eq "--include matching nothing: the model is still processed" "$(js "$io/stdout" 'r.models[0].nodes.map(n => n.status).join(" ")')" "skipped skipped"
run "--exclude matching nothing: exit 4" 4 -n --exclude 'nothing' --exclude '*freq*' "$f_freq" &&
  has "--exclude matching nothing: a warning names it" "$err" "warning: --exclude 'nothing' matched the name of no recurrent node" &&
  hasnt "--exclude: the pattern that matched is not named" "$err" "'*freq*'"
run "--include matching nothing, -q: exit 4, silent" 4 -q -n --include 'tiem_*' "$f_freq" &&
  eq "-q: no warning" "$err" ""
run "a pattern matching in one model of a batch: exit 0" 0 -n --include 'time_*' "$m_gru" "$f_freq"
run "a failed model wins over an unmatched pattern: exit 1" 1 -n --include 'nope' "$f_freq" "$work/no-such-model.onnx"

# ---- --name-template, metadata ------------------------------------------------------
run "--name-template" 0 --json --name-template 'state_{k}_{slot}_{op}' "$m_lstm" -o "$work/tmpl.onnx" &&
  cp "$io/stdout" "$work/tmpl.json"
valid "--name-template: report validates" "$work/tmpl.json"
# every added name follows the template, also Y_h, which the model reads
# inside as /rnn/LSTM_output_1 (issue 25)
eq "--name-template: names in the report" "$(js "$work/tmpl.json" 'r.models[0].state.map(p => p.input + ">" + p.output)')" \
  '["state_0_initial_h_LSTM>state_0_Y_h_LSTM","state_0_initial_c_LSTM>state_0_Y_c_LSTM"]'
info "$work/tmpl.onnx" > "$work/tmpl.info"
eq "--name-template: names in the model" "$(js "$work/tmpl.info" 'r.inputs.map(i => i.name).concat(r.outputs.map(o => o.name))')" \
  '["x","state_0_initial_h_LSTM","state_0_initial_c_LSTM","logits","y","state_0_Y_h_LSTM","state_0_Y_c_LSTM"]'
run "--name-template {name}" 0 --json -n --name-template '{name}.{slot}' "$f_freq" &&
  eq "--name-template {name}" "$(js "$io/stdout" 'r.models[0].state.map(p => p.input + ">" + p.output)')" \
    '["time_gru.initial_h>time_gru.Y_h","freq_gru.initial_h>freq_gru.Y_h"]'
for bad in 'x_{k}' '{op}_{slot}' ''; do
  run "invalid --name-template '$bad': usage error" 2 --name-template "$bad" "$m_gru" -o "$work/badtmpl.onnx" &&
    { has "invalid --name-template '$bad': message" "$err" "must contain {slot}"
      [ ! -e "$work/badtmpl.onnx" ] && pass "invalid --name-template '$bad': nothing written" ||
        fail "invalid --name-template '$bad': nothing written" "written"; }
done

# rnnstate.state in the written model equals the report's pairs (without "added").
meta_matches() { # NAME MODEL REPORT
  info "$2" > "$work/meta.info"
  local got want
  got=$(js "$work/meta.info" 'JSON.parse(r.metadata["rnnstate.state"])')
  want=$(js "$3" 'r.models[0].state.map(({ added, ...p }) => p)')
  if [ -n "$want" ] && [ "$got" = "$want" ]; then pass "$1"; else fail "$1" "metadata [$got], report [$want]"; fi
}
meta_matches "metadata rnnstate.state = report pairs (template)" "$work/tmpl.onnx" "$work/tmpl.json"
for m in "$m_gru" "$m_den" "$m_lstm" "$f_freq"; do
  for mode in optional required; do
    "$tool" "$m" --state-inputs=$mode -o "$work/meta.onnx" --json > "$work/meta.json" 2> /dev/null
    meta_matches "metadata rnnstate.state = report pairs ($(basename "$m"), $mode)" "$work/meta.onnx" "$work/meta.json"
  done
done
eq "metadata: 'optional' says required" "$(info "$work/meta.onnx" | js /dev/stdin 'JSON.parse(r.metadata["rnnstate.state"]).map(p => p.optional)')" "[false,false]"
eq "annotated model: its pair in the metadata" "$(info "$work/many/c.updated.onnx" | js /dev/stdin 'r.metadata["rnnstate.state"]')" \
  '[{"input": "h0", "output": "hn", "shape": [2, "batch", 16], "dtype": "float32", "batch_axis": 1, "optional": false, "kind": "recurrent"}]'
eq "model without state pairs: no metadata added" "$(info "$work/skip.onnx" | js /dev/stdin 'Object.keys(r.metadata)')" "[]"

# ---- --check ---------------------------------------------------------------------
run "--check" 0 --check -r "$models" -d "$work/checked" &&
  eq "--check: every written model checked" "$(grep -c ': wrote .* (checked)$' "$io/stdout")" \
    "$(find "$models" -name '*.onnx' | wc -l)"
run "--check --json" 0 --check --json "$m_den" "$f_freq" -d "$work/checked2" && valid "--check --json validates" "$io/stdout"
run "--check with --dry-run" 0 --check -n "$m_gru" && hasnt "--check with --dry-run checks nothing" "$out" "(checked)"

# ---- --state-inputs ----------------------------------------------------------------
for m in "$m_den" "$m_lstm" "$m_gru"; do
  name=$(basename "$m")
  "$tool" "$m" --state-inputs=required -o "$work/req.onnx" --json > "$work/req.json" 2> /dev/null
  info "$work/req.onnx" > "$work/req.info"
  eq "required ($name): pairs are not optional" "$(js "$work/req.json" 'r.models[0].state.every(p => p.optional === false)')" "true"
  eq "required ($name): no initializer for any state input" \
    "$(node -e '
      const fs = require("fs");
      const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), i = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
      console.log(r.models[0].state.filter(p => i.initializers.includes(p.input)).map(p => p.input).join(" ") || "none");' \
      "$work/req.json" "$work/req.info")" "none"
  eq "required ($name): inputs declared with the pair shapes" \
    "$(node -e '
      const fs = require("fs");
      const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), i = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
      console.log(r.models[0].state.every(p => JSON.stringify(i.inputs.find(x => x.name === p.input).shape) === JSON.stringify(p.shape)));' \
      "$work/req.json" "$work/req.info")" "true"
  "$tool" "$m" -o "$work/opt.onnx" --json > "$work/opt.json" 2> /dev/null
  eq "optional ($name): every added state input has a default" \
    "$(info "$work/opt.onnx" | node -e '
      const fs = require("fs");
      const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), i = JSON.parse(fs.readFileSync(0, "utf8"));
      console.log(r.models[0].state.every(p => p.optional && i.initializers.includes(p.input)));' "$work/opt.json")" "true"
done
# A non-zero initial state (an initializer of 0.5s): optional keeps its value
# as the default of a new input named by the template (not h0_half: the
# exporter's name); required drops it, so the caller must pass it, not zeros,
# on the first call, and the report must say so.
"$tool" "$f_h0" -o "$work/h0opt.onnx" --json > "$work/h0opt.json" 2> /dev/null
eq "non-zero initial state, optional: a template-named input with a default" \
  "$(info "$work/h0opt.onnx" | js /dev/stdin 'r.inputs.map(i => i.name).filter(n => r.initializers.includes(n)).join(" ")')" "GRU_0_initial_h"
has "non-zero initial state, optional: the default is the initializer's value" \
  "$(js "$work/h0opt.json" 'r.models[0].nodes[0].decisions[0]')" "was initializer 'h0_half'; now graph input GRU_0_initial_h (default: the exporter's constant)"
"$tool" "$f_h0" -o "$work/h0req.onnx" --json --state-inputs=required > "$work/h0req.json" 2> /dev/null
valid "non-zero initial state, required: report validates" "$work/h0req.json"
eq "non-zero initial state, required: no default left" \
  "$(info "$work/h0req.onnx" | js /dev/stdin 'r.initializers.includes(process.argv[3])' "$(js "$work/h0req.json" 'r.models[0].state[0].input')")" "false"
eq "non-zero initial state, required: the report warns that zeros are not the start" \
  "$(js "$work/h0req.json" 'r.models[0].nodes[0].warnings.length > 0')" "true"

run "--state-inputs=optional explicitly" 0 -q --state-inputs=optional "$m_gru" -o "$work/opt2.onnx" &&
  { cmp -s "$work/opt2.onnx" "$work/a.single.onnx" && pass "optional is the default" || fail "optional is the default" "differs"; }

# ---- --help and the docs name every option ----------------------------------------
run "--help" 0 --help
help=$out
for opt in --output --output-dir --recursive --dry-run --check --state-inputs --include --exclude \
           --name-template --json --quiet --verbose --fail-on-skip --max-model-size --help --version; do
  has "--help lists $opt" "$help" "$opt"
  has "the man page documents $opt" "$(sed 's/\\-/-/g' "$root/docs/rnnstate-rewrite.1")" "$opt"
  has "docs/usage.md documents $opt" "$(cat "$root/docs/usage.md")" "$opt"
done
has "the man page names this version" "$(head -n 3 "$root/docs/rnnstate-rewrite.1")" \
  "\"rnnstate-rewrite $("$tool" --version | cut -d' ' -f2)\""
for code in "0  " "1  " "2  " "3  "; do has "--help lists exit status ${code% }" "$help" "  $code"; done
if command -v groff > /dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$root/docs/rnnstate-rewrite.1" 2>&1)
  eq "the man page renders without warnings" "$warnings" ""
fi

finish
