#!/usr/bin/env bash
# External data (initializers in a separate file, as for models over 2 GB):
# the rewriter never reads the weight file, and a model written to another
# directory still finds it. Proven in ONNX Runtime: the rewritten model,
# loaded from its new directory, computes what the original computes.
#   test_external.sh TOOL TO_EXTERNAL STRIP LAZY_EQUIVALENCE MODELS_DIR E2E_DIR WORK
tool=$1 to_external=$2 strip=$3 lazy_equivalence=$4 models=$5 e2e=$6
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)
work=$7 # kept after the run, for a look at what failed
rm -rf "$work" && mkdir -p "$work/models/ext" "$work/elsewhere"

ext=$work/models/ext
"$to_external" "$models/denoiser_gru.onnx" "$ext" || { echo "to-external failed"; exit 1; }
[ -s "$ext/weights.bin" ] && pass "weights moved to weights.bin" || fail "weights" "no weights.bin"

# The weight file is never read: unreadable to the tool, the rewrite still works.
# Written one directory up, the locations gain the subdirectory.
chmod 000 "$ext/weights.bin"
out=$("$tool" "$ext/model.onnx" -o "$work/models/model.onnx" --json 2>/dev/null)
status=$?
chmod 644 "$ext/weights.bin"
[ $status -eq 0 ] && pass "rewritten without reading weights.bin" || fail "rewrite" "exit $status"
printf '%s' "$out" > "$work/report.json"
locations=$("$to_external" --locations "$work/models/model.onnx" | sort -u)
[ "$locations" = "ext/weights.bin" ] && pass "locations rewritten for the new directory" ||
  fail "locations" "got '$locations'"

"$tool" "$ext/model.onnx" -o "$ext/rewritten.onnx" -q
locations=$("$to_external" --locations "$ext/rewritten.onnx" | sort -u)
[ "$locations" = "weights.bin" ] && pass "same directory: locations unchanged" ||
  fail "same directory" "got '$locations'"

# ONNX Runtime reads no external file outside the model's directory: such an
# output is refused, naming the file, and nothing is written.
err=$("$tool" "$ext/model.onnx" -o "$work/elsewhere/model.onnx" 2>&1 >/dev/null)
case "$err" in *"external file 'weights.bin', which would lie outside the output's directory"*)
  [ ! -e "$work/elsewhere/model.onnx" ] && pass "sibling directory: refused, nothing written" ||
    fail "sibling directory" "file written" ;;
  *) fail "sibling directory" "$err" ;; esac

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

finish
