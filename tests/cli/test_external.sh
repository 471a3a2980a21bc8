#!/usr/bin/env bash
# External data (initializers in a separate file, as for models over 2 GB):
# a model written to another directory still finds its weights: copied
# beside it (--external-data=copy, the default), hard-linked (link), or
# referenced where they are (reference, which never reads them). Proven in
# ONNX Runtime: the rewritten model, loaded from its new directory, computes
# what the original computes, and rnnstate-verify and StatefulSession load it
# by path (its state defaults left out in memory) from any working directory.
#   test_external.sh TOOL TO_EXTERNAL STRIP LAZY_EQUIVALENCE MODELS_DIR E2E_DIR WORK JS_DIR
tool=$1 to_external=$2 strip=$3 lazy_equivalence=$4 models=$5 e2e=$6 js=$8
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)
work=$7 # kept after the run, for a look at what failed
rm -rf "$work" && mkdir -p "$work/models/ext" "$work/elsewhere"

ext=$work/models/ext
"$to_external" "$models/denoiser_gru.onnx" "$ext" || { echo "to-external failed"; exit 1; }
[ -s "$ext/weights.bin" ] && pass "weights moved to weights.bin" || fail "weights" "no weights.bin"

# --external-data=reference: the weight file is never read: unreadable to the
# tool, the rewrite still works. Written one directory up, the locations gain
# the subdirectory, and nothing is copied.
chmod 000 "$ext/weights.bin"
out=$("$tool" "$ext/model.onnx" -o "$work/models/model.onnx" --external-data=reference --json 2>/dev/null)
status=$?
chmod 644 "$ext/weights.bin"
[ $status -eq 0 ] && pass "reference: rewritten without reading weights.bin" || fail "reference" "exit $status"
printf '%s' "$out" > "$work/report.json"
locations=$("$to_external" --locations "$work/models/model.onnx" | sort -u)
[ "$locations" = "ext/weights.bin" ] && [ ! -e "$work/models/weights.bin" ] &&
  pass "reference: locations rewritten for the new directory, nothing copied" ||
  fail "reference locations" "got '$locations'"

"$tool" "$ext/model.onnx" -o "$ext/rewritten.onnx" -q
locations=$("$to_external" --locations "$ext/rewritten.onnx" | sort -u)
[ "$locations" = "weights.bin" ] && pass "same directory: locations unchanged" ||
  fail "same directory" "got '$locations'"

# ONNX Runtime reads no external file outside the model's directory: such a
# reference is refused, naming the file and the fix, and nothing is written.
err=$("$tool" "$ext/model.onnx" -o "$work/elsewhere/model.onnx" --external-data=reference 2>&1 >/dev/null)
case "$err" in *"external file 'weights.bin', which would lie outside the output's directory"*"--external-data=copy"*)
  [ ! -e "$work/elsewhere/model.onnx" ] && pass "reference into a sibling directory: refused, nothing written" ||
    fail "sibling directory" "file written" ;;
  *) fail "reference into a sibling directory" "$err" ;; esac

# The default (copy): the weights go beside the output, under the same
# location, as a file of their own; the locations are unchanged.
"$tool" "$ext/model.onnx" -o "$work/elsewhere/model.onnx" --json > "$work/copy.json" 2>/dev/null
status=$?
locations=$("$to_external" --locations "$work/elsewhere/model.onnx" | sort -u)
if [ $status -eq 0 ] && [ "$locations" = "weights.bin" ] && cmp -s "$ext/weights.bin" "$work/elsewhere/weights.bin" &&
   [ "$(stat -c %i "$ext/weights.bin")" != "$(stat -c %i "$work/elsewhere/weights.bin")" ]; then
  pass "copy (default): weights.bin copied beside the output, locations unchanged"
else
  fail "copy" "exit $status, locations '$locations', $(ls "$work/elsewhere")"
fi
"$tool" -q "$ext/model.onnx" -o "$work/elsewhere/again.onnx" && cmp -s "$ext/weights.bin" "$work/elsewhere/weights.bin" &&
  pass "copy: a copy already there is kept" || fail "copy again" "refused its own copy"
if ls -A "$work/elsewhere" | grep -q '^\.rnnstate\.tmp'; then fail "copy" "a temporary file was left"
else pass "copy: no temporary file left"; fi

mkdir -p "$work/linked"
"$tool" -q "$ext/model.onnx" -o "$work/linked/model.onnx" --external-data=link &&
  [ "$(stat -c %i "$ext/weights.bin")" = "$(stat -c %i "$work/linked/weights.bin")" ] &&
  pass "link: weights.bin hard-linked beside the output" || fail "link" "$(ls -i "$work/linked" "$ext")"

# Another file in the copy's place is never replaced: refused, nothing written.
mkdir -p "$work/taken" && echo "another model's weights" > "$work/taken/weights.bin"
err=$("$tool" "$ext/model.onnx" -o "$work/taken/model.onnx" 2>&1 >/dev/null)
status=$?
case "$err" in *"taken/weights.bin' is already there and is not a copy of external data file 'weights.bin'"*)
  [ $status -eq 1 ] && [ ! -e "$work/taken/model.onnx" ] && grep -q "another" "$work/taken/weights.bin" &&
    pass "copy: another file in the way refused, exit 1, nothing written or replaced" || fail "taken" "exit $status" ;;
  *) fail "copy onto another file" "$err" ;; esac

# A weight file that cannot be read cannot be copied: exit 1, nothing written
# (root reads it anyway: the check needs another user).
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$work/unreadable"
  chmod 000 "$ext/weights.bin"
  err=$("$tool" "$ext/model.onnx" -o "$work/unreadable/model.onnx" 2>&1 >/dev/null)
  status=$?
  chmod 644 "$ext/weights.bin"
  case "$err" in *"external data file 'weights.bin' of tensor"*"cannot be read (Permission denied)"*)
    [ $status -eq 1 ] && [ -z "$(ls -A "$work/unreadable")" ] && pass "copy: unreadable weights refused, nothing written" ||
      fail "unreadable" "exit $status, $(ls -A "$work/unreadable")" ;;
    *) fail "copy of unreadable weights" "$err" ;; esac
fi

# A save that fails after the copy removes it (the output is a directory).
mkdir -p "$work/fails/model.onnx"
"$tool" -q "$ext/model.onnx" -o "$work/fails/model.onnx" 2>/dev/null
status=$?
[ $status -eq 1 ] && [ ! -e "$work/fails/weights.bin" ] && pass "a failed save removes the weights it copied" ||
  fail "failed save" "exit $status, $(ls -A "$work/fails")"

# A location with directories: they are made beside the output (and removed
# with the copy when the save fails).
mkdir -p "$work/nested/src/data" "$work/nested/out" "$work/nested/fails/model.onnx"
"$to_external" "$models/denoiser_gru.onnx" "$work/nested/src" data/w.bin || fail "nested" "to-external"
"$tool" -q "$work/nested/src/model.onnx" -o "$work/nested/out/model.onnx" &&
  cmp -s "$work/nested/src/data/w.bin" "$work/nested/out/data/w.bin" &&
  pass "copy: data/w.bin copied with its directory" || fail "nested" "$(ls -R "$work/nested/out")"
"$tool" -q "$work/nested/src/model.onnx" -o "$work/nested/fails/model.onnx" 2>/dev/null
[ ! -e "$work/nested/fails/data" ] && pass "a failed save removes the directory it made" ||
  fail "nested failed save" "$(ls -R "$work/nested/fails")"

# A weight file that is a symbolic link out of the model's directory is not
# copied (a model from elsewhere must not make the save copy any file).
mkdir -p "$work/planted/model" "$work/planted/out" && cp "$ext/model.onnx" "$work/planted/model/"
echo secret > "$work/planted/secret" && ln -s ../secret "$work/planted/model/weights.bin"
err=$("$tool" "$work/planted/model/model.onnx" -o "$work/planted/out/model.onnx" 2>&1 >/dev/null)
status=$?
case "$err" in *"external file 'weights.bin', a symbolic link to '"*"planted/secret' outside the model's directory: refused"*)
  [ $status -eq 1 ] && [ -z "$(ls -A "$work/planted/out")" ] && pass "copy: a link out of the model's directory refused" ||
    fail "planted link" "exit $status, $(ls -A "$work/planted/out")" ;;
  *) fail "planted link" "$err" ;; esac

err=$("$tool" "$ext/model.onnx" -o "$work/x.onnx" --external-data=move 2>&1 >/dev/null)
[ $? -eq 2 ] && [[ "$err" == *"--external-data takes 'copy', 'link' or 'reference', not 'move'"* ]] &&
  pass "--external-data=move: usage error" || fail "bad mode" "$err"

err=$("$tool" - -o "$work/models/stdin.onnx" < "$ext/model.onnx" 2>&1 >/dev/null)
case "$err" in *"external files ('weights.bin')"*"give the model's path"*)
  [ ! -e "$work/models/stdin.onnx" ] && pass "from stdin: refused, nothing written" ||
    fail "stdin" "file written" ;;
  *) fail "from stdin" "$err" ;; esac

"$lazy_equivalence" "$ext" "$ext/model.onnx" > "$work/lazy.log" 2>&1 &&
  pass "lazy and full-decode paths write the same model" || fail "lazy path" "$(cat "$work/lazy.log")"

# ONNX Runtime resolves ext/weights.bin from the rewritten model's directory
# (tests/e2e's onnxruntime-node: without it this part is skipped).
have_npm "$e2e:onnxruntime-node" || finish
mapfile -t defaults < <(node -e '
  for (const p of require(process.argv[1]).models[0].state) if (p.optional && p.added) console.log(p.input);
' "$work/report.json")
"$strip" "$work/models/model.onnx" "$work/models/stripped.onnx" "${defaults[@]}"
if node "$e2e/check_model.js" --original "$ext/model.onnx" --rewritten "$work/models/model.onnx" \
     --stripped "$work/models/stripped.onnx" --report "$work/report.json" \
     --manifest "$models/manifest.json" --entry denoiser_gru.onnx > "$work/check.log" 2>&1; then
  pass "ONNX Runtime runs the relocated model: same outputs, streaming equals whole sequence"
else
  fail "ONNX Runtime" "$(tail -5 "$work/check.log")"
fi

# rnnstate-verify and StatefulSession load the copied model by path, from
# another working directory (its state defaults are left out in memory: ONNX
# Runtime must be told where the weights are), and an output whose weights
# were not put beside it fails with the fix in the message.
have_npm "$js:onnxruntime-node" || finish
if (cd / && node "$js/bin/rnnstate-verify.js" "$ext/model.onnx" "$work/elsewhere/model.onnx") > "$work/verify.log" 2>&1; then
  pass "rnnstate-verify on the copied model: every check passes"
else
  fail "rnnstate-verify" "$(grep -E 'FAIL' "$work/verify.log" | head -3)"
fi
if out=$(cd / && node "$e2e/session_check.js" "$js" "$work/elsewhere/model.onnx" 2>&1); then
  pass "StatefulSession on the copied model: chunks 4+6 equal the whole sequence ($out)"
else
  fail "StatefulSession" "$out"
fi
mkdir -p "$work/lonely" && cp "$work/elsewhere/model.onnx" "$work/lonely/"
out=$(cd / && node "$js/bin/rnnstate-verify.js" "$ext/model.onnx" "$work/lonely/model.onnx" 2>&1)
if [[ "$out" == *"FAIL no-state"*"rnnstate-rewrite copies them beside its output by default"* ]]; then
  pass "a model without its weights: rnnstate-verify says how to fix it"
else
  fail "lonely" "$(echo "$out" | grep FAIL)"
fi

finish
