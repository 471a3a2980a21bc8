#!/usr/bin/env bash
# Runs the JavaScript streaming example of docs/streaming.md
# (readme_example.js) on models/denoiser_gru.onnx rewritten in both
# --state-inputs modes, the way the doc tells. Run by ctest:
#   run_readme_example.sh TOOL MODELS_DIR WORKDIR
set -euo pipefail
tool=$1 models=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
package=$here/../../js/rnnstate
# skipped (77) without them, failed when RNNSTATE_REQUIRE_NPM=1
source "$here/need_npm.sh" "$here:onnxruntime-node,ajv" "$package:onnxruntime-node"
rm -rf "$work" && mkdir -p "$work/optional" "$work/required"
for mode in optional required; do
  "$tool" --state-inputs=$mode --json "$models/denoiser_gru.onnx" \
    -o "$work/$mode/denoiser_gru.stateful.onnx" > "$work/$mode/denoiser_gru.report.json"
  node "$here/validate_report.js" "$work/$mode/denoiser_gru.report.json"
done
exec node "$here/readme_example.js" --original "$models/denoiser_gru.onnx" --dir "$work"
