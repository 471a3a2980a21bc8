#!/usr/bin/env bash
# make_corpus.sh OUT_DIR MAKE_BAD_MODELS MODELS_DIR [ONNX_TESTDATA_NODE_DIR]
# Fills OUT_DIR with the fuzzing seed corpus:
#   - every models/*.onnx (PyTorch exports);
#   - the ONNX backend test models of the recurrent ops
#     (/usr/share/libonnx-testdata/data/node/test_{lstm,gru,rnn,simple_rnn}_*);
#   - every small hand-made edge case of make-bad-models (--all), plus
#     shallow nesting (just past the limit) and a few random wire-format files;
#   - of every real model, copies ending in an unknown field 99 = 0, 1, 2, 3
#     (protobuf keeps unknown fields), so that every route of fuzz_rewrite.c
#     is seeded: it picks the state-input mode (bit 0) and loading from
#     memory or from a file with lazy tensors (bit 1) from the last byte.
# File names say where each seed comes from. Deterministic: the same inputs
# give the same corpus.
set -euo pipefail
out=$1 gen=$2 models=$3 testdata=${4:-/usr/share/libonnx-testdata/data/node}
mkdir -p "$out"

# routes SRC DST_PREFIX: DST_PREFIX.route0.onnx ... route3.onnx, each SRC plus
# an unknown varint field 99 (key bytes 0x98 0x06) whose value is the route
routes() {
  local r
  for r in 0 1 2 3; do
    cp "$1" "$2.route$r.onnx"
    printf "\230\006\\00$r" >> "$2.route$r.onnx"
  done
}

for f in "$models"/*.onnx; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .onnx)
  routes "$f" "$out/models-$name"
done
for dir in "$testdata"/test_lstm_* "$testdata"/test_gru_* "$testdata"/test_rnn_* \
           "$testdata"/test_simple_rnn_*; do
  [ -f "$dir/model.onnx" ] || continue
  name=$(basename "$dir")
  routes "$dir/model.onnx" "$out/backend-$name"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" --all "$tmp"
for f in "$tmp"/*.onnx; do
  name=$(basename "$f" .onnx)
  cp "$f" "$out/edge-$name.onnx"
done
for f in good-gru good-lstm collide rnn-in-subgraph unknown-fields initializer-huge-dims; do
  routes "$tmp/$f.onnx" "$out/edge-$f"
done
"$gen" nested-if "$out/edge-nested-if-90.onnx" 90
"$gen" nested-sequence "$out/edge-nested-sequence-130.onnx" 130
"$gen" nested-if-ok "$out/edge-nested-if-ok-60.onnx" 60
"$gen" chain "$out/edge-chain-200.onnx" 200
"$gen" many-grus "$out/edge-many-grus-50.onnx" 50
for seed in 1 2 3 4 5 6 7 8; do
  "$gen" random-wire "$out/edge-random-wire-$seed.onnx" "$seed"
done
echo "make_corpus.sh: $(ls "$out" | wc -l) seeds in $out"
