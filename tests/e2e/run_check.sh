#!/usr/bin/env bash
# End-to-end driver for one model, run by ctest:
#   run_check.sh TOOL STRIP WORKDIR model      MODEL.onnx MANIFEST.json [TOOL_ARG...]
#   run_check.sh TOOL STRIP WORKDIR required   MODEL.onnx MANIFEST.json [TOOL_ARG...]
#   run_check.sh TOOL STRIP WORKDIR stream     MODEL.onnx MANIFEST.json [TOOL_ARG...]
#   run_check.sh TOOL STRIP WORKDIR backend    TESTDIR [TOOL_ARG...]
#   run_check.sh TOOL STRIP WORKDIR reference  MODEL.onnx DATADIR MANIFEST.json [TOOL_ARG...]
#   run_check.sh TOOL STRIP WORKDIR structural MODEL.onnx [TOOL_ARG...]
# It rewrites the model with the CLI (--json report, validated against
# docs/report.schema.json, and --check), checks that rewriting the output
# again changes nothing (idempotence), makes the copy without state defaults
# that onnxruntime-node needs to honour state feeds, and runs the checks in
# ONNX Runtime:
#   model      check_model.js: same outputs as the original with no state fed;
#              the sequence in chunks with the state fed back equals one run
#   required   the same with --state-inputs=required: no defaults, so no
#              stripped copy; the caller's zeros start the stream
#   backend    backend_check.js: an ONNX backend test model reproduces its
#              reference outputs after rewriting
#   reference  for models ONNX Runtime cannot run as exported (layout=1, with
#              --to-layout0): the rewritten model reproduces reference outputs
#              computed outside ONNX Runtime (backend test layout in DATADIR),
#              and streams like check_model.js's (ii)
#   structural for models ONNX Runtime cannot run at all (float64 LSTM, a
#              quantized LSTM without hidden_size): rewrite, --check, idempotence
#   stream     stream_check.js, the generic streaming check: with
#              --state-inputs=required, every reported pair fed back over
#              three calls (no idempotence check: the other kinds make it)
# Exit status: 0 pass, 1 fail, 77 skipped (model or npm packages absent).
set -euo pipefail
tool=$1 strip=$2 work=$3 kind=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)

case "$kind" in
  backend) dir=$1 model=$1/model.onnx name=backend-$(basename "$1"); shift ;;
  reference) model=$1 dir=$2 manifest=$3 name=reference-$(basename "$1" .onnx); shift 3 ;;
  structural) model=$1 name=structural-$(basename "$1" .onnx); shift ;;
  model | required | stream) model=$1 manifest=$2 name=$(basename "$1" .onnx); shift 2 ;;
  *) echo "run_check.sh: unknown kind '$kind'" >&2; exit 2 ;;
esac
tool_args=("$@")
mode=optional
if [ "$kind" = required ] || [ "$kind" = stream ]; then
  mode=required name=$kind-$name
fi
if [ ! -f "$model" ]; then
  echo "SKIP: $model is not here (../shared/models is only in the project's workplace)"
  exit 77
fi
# skipped (77) without them, failed when RNNSTATE_REQUIRE_NPM=1
source "$here/need_npm.sh" "$here:onnxruntime-node,ajv"

out=$work/$name
rm -rf "$out" && mkdir -p "$out"
rewritten=$out/rewritten.onnx stripped=$out/stripped.onnx report=$out/report.json

"$tool" "$model" -o "$rewritten" --json --check --state-inputs="$mode" "${tool_args[@]}" > "$report"
echo "rewrote $model -> $rewritten (--state-inputs=$mode ${tool_args[*]})"

if [ "$kind" = stream ]; then
  converted=()
  case " ${tool_args[*]} " in *" --to-layout0 "*) converted=(--converted) ;; esac
  exec node "$here/stream_check.js" --original "$model" --rewritten "$rewritten" --report "$report" \
    --manifest "$manifest" --entry "$(basename "$model")" "${converted[@]}"
fi

# Idempotence: the tool run on its own output changes nothing and says so.
"$tool" "$rewritten" -o "$out/again.onnx" --json --state-inputs="$mode" "${tool_args[@]}" > "$out/again.json"
node "$here/validate_report.js" "$report" "$out/again.json"
node -e '
  const r = require(process.argv[1]).models[0];
  if (r.status !== "unchanged") { console.error("second run: status " + r.status); process.exit(1); }
  for (const n of r.nodes) if (n.status === "updated") { console.error("second run updated " + n.name); process.exit(1); }
' "$out/again.json"
cmp "$rewritten" "$out/again.onnx"
echo "PASS idempotent: a second run reports 'unchanged' and writes identical bytes"

if [ "$kind" = structural ]; then
  echo "PASS structural: --check verified the rewritten model (ONNX Runtime cannot run it)"
  exit 0
fi
if [ "$kind" = required ]; then
  exec node "$here/check_model.js" --state-inputs required --original "$model" --rewritten "$rewritten" \
    --report "$report" --manifest "$manifest" --entry "$(basename "$model")"
fi

# The state inputs that got a default lose it in the stripped copy.
mapfile -t defaults < <(node -e '
  for (const p of require(process.argv[1]).models[0].state) if (p.optional && p.added) console.log(p.input);
' "$report")
"$strip" "$rewritten" "$stripped" "${defaults[@]}"

if [ "$kind" = backend ] || [ "$kind" = reference ]; then
  # The original runs in ORT unless it has layout=1 nodes; then the converted
  # model stands in for it, and only the reference data judges.
  original=$model
  case " ${tool_args[*]} " in *" --to-layout0 "*) original=$rewritten ;; esac
  node "$here/backend_check.js" --original "$original" --rewritten "$rewritten" --data "$dir"
  [ "$kind" = backend ] && exit 0
  exec node "$here/check_model.js" --original "$rewritten" --rewritten "$rewritten" \
    --stripped "$stripped" --report "$report" --manifest "$manifest" --entry "$(basename "$model")"
fi
exec node "$here/check_model.js" --original "$model" --rewritten "$rewritten" --stripped "$stripped" \
  --report "$report" --manifest "$manifest" --entry "$(basename "$model")"
