#!/usr/bin/env bash
# Runs the README's JavaScript streaming example (readme_example.js) on
# models/denoiser_gru.onnx rewritten with --state-inputs=required, the way
# the README tells. Run by ctest: run_readme_example.sh TOOL MODELS_DIR WORKDIR
set -euo pipefail
tool=$1 models=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  echo "onnxruntime-node is not installed: run 'npm ci --onnxruntime-node-install=skip' in $here" >&2
  exit 1
fi
rm -rf "$work" && mkdir -p "$work"
"$tool" --state-inputs=required --json "$models/denoiser_gru.onnx" \
  -o "$work/denoiser_gru.stateful.onnx" > "$work/denoiser_gru.report.json"
node "$here/validate_report.js" "$work/denoiser_gru.report.json"
exec node "$here/readme_example.js" --original "$models/denoiser_gru.onnx" \
  --model "$work/denoiser_gru.stateful.onnx" --report "$work/denoiser_gru.report.json"
