#!/usr/bin/env bash
# End-to-end driver for one model, run by ctest:
#   run_check.sh TOOL STRIP WORKDIR model MODEL.onnx MANIFEST.json
#   run_check.sh TOOL STRIP WORKDIR required MODEL.onnx MANIFEST.json
#   run_check.sh TOOL STRIP WORKDIR backend TESTDIR
# It rewrites the model with the CLI (--json report, validated against
# docs/report.schema.json), checks that rewriting the output again changes
# nothing (idempotence), makes the copy without state defaults that
# onnxruntime-node needs to honour state feeds, and runs the checks in ONNX
# Runtime (check_model.js or backend_check.js). `required` rewrites with
# --state-inputs=required instead: no defaults, so no stripped copy; the
# caller's zeros start the stream (check_model.js --state-inputs required).
# Exit status: 0 pass, 1 fail, 77 skipped (model absent).
set -euo pipefail
tool=$1 strip=$2 work=$3 kind=$4
here=$(cd "$(dirname "$0")" && pwd)

if [ "$kind" = backend ]; then
  dir=$5 model=$5/model.onnx
  name=backend-$(basename "$dir")
else
  model=$5 manifest=$6
  name=$(basename "$model" .onnx)
fi
mode=optional
if [ "$kind" = required ]; then
  mode=required name=required-$name
fi
if [ ! -f "$model" ]; then
  echo "SKIP: $model is not here (../shared/models is only in the project's workplace)"
  exit 77
fi
if [ ! -d "$here/node_modules/onnxruntime-node" ] || [ ! -d "$here/node_modules/ajv" ]; then
  echo "onnxruntime-node or ajv is not installed: run 'npm ci --onnxruntime-node-install=skip' in $here" >&2
  exit 1
fi

out=$work/$name
rm -rf "$out" && mkdir -p "$out"
rewritten=$out/rewritten.onnx stripped=$out/stripped.onnx report=$out/report.json

"$tool" "$model" -o "$rewritten" --json --state-inputs="$mode" > "$report"
echo "rewrote $model -> $rewritten (--state-inputs=$mode)"

# Idempotence: the tool run on its own output changes nothing and says so.
"$tool" "$rewritten" -o "$out/again.onnx" --json --state-inputs="$mode" > "$out/again.json"
node "$here/validate_report.js" "$report" "$out/again.json"
node -e '
  const r = require(process.argv[1]).models[0];
  if (r.status !== "unchanged") { console.error("second run: status " + r.status); process.exit(1); }
  for (const n of r.nodes) if (n.status === "updated") { console.error("second run updated " + n.name); process.exit(1); }
' "$out/again.json"
cmp "$rewritten" "$out/again.onnx"
echo "PASS idempotent: a second run reports 'unchanged' and writes identical bytes"

if [ "$kind" = required ]; then
  exec node "$here/check_model.js" --state-inputs required --original "$model" --rewritten "$rewritten" \
    --report "$report" --manifest "$manifest" --entry "$(basename "$model")"
fi

# The state inputs that got a default lose it in the stripped copy.
mapfile -t defaults < <(node -e '
  for (const p of require(process.argv[1]).models[0].state) if (p.optional && p.added) console.log(p.input);
' "$report")
"$strip" "$rewritten" "$stripped" "${defaults[@]}"

if [ "$kind" = backend ]; then
  exec node "$here/backend_check.js" --original "$model" --rewritten "$rewritten" --data "$dir"
fi
exec node "$here/check_model.js" --original "$model" --rewritten "$rewritten" --stripped "$stripped" \
  --report "$report" --manifest "$manifest" --entry "$(basename "$model")"
