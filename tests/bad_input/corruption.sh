#!/usr/bin/env bash
# corruption.sh TOOL MAKE_BAD_MODELS MODELS_DIR [ONNX_TESTDATA_NODE_DIR]
# Damaged copies of real models: truncated at every 1/64th of their size,
# with single bits flipped at many positions, and random bytes. Any exit
# status 0 or 1 is acceptable; a crash (status >= 128), a hang, a sanitizer
# report or another status is not. After exit 1 the message is one line
# naming the file and nothing is written; after exit 0 the output passed
# --check. Either way no temporary file is left.
# Run it under the ASan build (tests/ci_extra.sh does) to catch memory errors
# that do not crash.
set -u
tool=$1 gen=$2 models=$3 testdata=${4:-/usr/share/libonnx-testdata/data/node}
source "$(dirname "$0")/lib.sh"

# FLIPS: bit flips per model (default 64)
FLIPS=${FLIPS:-64}

src=$work/src
mkdir -p "$src"
cp "$models/lstm_2layer_dynamic.onnx" "$src/torch-lstm_2layer_dynamic.onnx"
cp "$models/denoiser_gru.onnx" "$src/torch-denoiser_gru.onnx"
for t in test_gru_defaults test_lstm_with_peepholes; do
  [ -f "$testdata/$t/model.onnx" ] && cp "$testdata/$t/model.onnx" "$src/backend-$t.onnx"
done
"$gen" good-lstm "$src/gen-good-lstm.onnx"
"$gen" rnn-in-subgraph "$src/gen-rnn-in-subgraph.onnx"
"$gen" collide-subgraph "$src/gen-collide-subgraph.onnx"
# weights above 64 KiB stay in the file (lazy_scan.c) and are copied from it
"$gen" big-weights "$src/gen-big-weights.onnx" 2

# check_one LABEL FILE [ARGS...]: one damaged file; returns 0 when fine
check_one() {
  local label=$1 file=$2; shift 2
  fresh_dir
  run_tool "$file" -o "$d/out.onnx" --check "$@"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then
    fail "$label" "$why"
    grep -m 15 -E 'Sanitizer|runtime error|#[0-9]+ ' "$work/stderr" | sed 's/^/    /'
    local keep=${TMPDIR:-/tmp}/rnnstate-crash-$(basename "$file")
    cp "$file" "$keep" && echo "    input kept as $keep (see tests/fuzz/README.md: a crash becomes a regression test)"
    return 1
  fi
  if [ -n "$(temp_files "$d")" ]; then fail "$label" "temporary file left"; return 1; fi
  case "$status" in
    0)
      if [ "$(leftovers "$d")" != out.onnx ]; then fail "$label" "exit 0 but output dir holds: $(leftovers "$d")"; return 1; fi ;;
    1)
      if [ -n "$(leftovers "$d")" ]; then fail "$label" "exit 1 but left: $(leftovers "$d")"; return 1; fi
      if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then fail "$label" "several lines on stderr: $err"; return 1; fi
      case "$err" in
        "rnnstate-rewrite: $file: "*) ;;
        *) fail "$label" "message does not name the file: $err"; return 1 ;;
      esac ;;
    *) fail "$label" "exit status $status; stderr: $err"; return 1 ;;
  esac
  return 0
}

# group NAME: counts the files of one group; summary printed by end_group
group_start() { g_name=$1 g_ok=0 g_bad=0 g_zero=0 g_one=0; }
group_add() {
  if check_one "$@"; then
    g_ok=$((g_ok + 1)) passed=$((passed + 1))
    [ "$status" -eq 0 ] && g_zero=$((g_zero + 1)) || g_one=$((g_one + 1))
  else
    g_bad=$((g_bad + 1))
  fi
}
group_end() {
  if [ "$g_bad" -eq 0 ]; then
    echo "PASS $g_name: $g_ok files ($g_one refused, $g_zero rewritten)"
  else
    echo "---- $g_name: $g_bad of $((g_ok + g_bad)) files failed"
  fi
}

for f in "$src"/*.onnx; do
  base=$(basename "$f" .onnx)
  size=$(stat -c %s "$f")

  group_start "$base: truncated at k/64 of $size bytes, and at 1, 2, size-1"
  for k in $(seq 0 63) x1 x2 xlast; do
    case "$k" in
      x1) len=1 ;; x2) len=2 ;; xlast) len=$((size - 1)) ;; *) len=$((size * k / 64)) ;;
    esac
    cut=$work/$base.cut$len.onnx
    head -c "$len" "$f" > "$cut"
    if [ $((len % 2)) -eq 1 ]; then mode=required; else mode=optional; fi
    group_add "$base truncated to $len bytes" "$cut" --state-inputs=$mode
    rm -f "$cut"
  done
  group_end

  group_start "$base: $FLIPS single-bit flips"
  for i in $(seq 0 $((FLIPS - 1))); do
    # half spread over the file, half in its first and last 2 KiB (the
    # structure of a model with big weights is there)
    case $((i % 4)) in
      0|1) pos=$(( (i * 2654435761) % size )) ;;
      2) pos=$(( (i * 40503) % (size < 2048 ? size : 2048) )) ;;
      3) pos=$(( size - 1 - (i * 40503) % (size < 2048 ? size : 2048) )) ;;
    esac
    bit=$((i % 8))
    flipped=$work/$base.flip$pos.$bit.onnx
    "$gen" --flip "$f" "$flipped" "$pos" "$bit"
    if [ $((i % 2)) -eq 1 ]; then mode=required; else mode=optional; fi
    group_add "$base with bit $bit of byte $pos flipped" "$flipped" --state-inputs=$mode
    rm -f "$flipped"
  done
  group_end
done

group_start "random bytes and random wire-format fields (20 seeds each)"
for seed in $(seq 1 20); do
  "$gen" random "$work/random-$seed.onnx" "$seed"
  group_add "random bytes, seed $seed" "$work/random-$seed.onnx"
  "$gen" random-wire "$work/random-wire-$seed.onnx" "$seed"
  group_add "random wire-format fields, seed $seed" "$work/random-wire-$seed.onnx"
done
group_end

finish
