#!/usr/bin/env bash
# repro.sh BUILD_DIR FILE...: reproduces fuzzer findings outside libFuzzer.
# For each FILE (a crash-*, leak-*, oom-* or timeout-* artifact):
#   1. fuzz_replay FILE: the exact route fuzz_rewrite took (gdb-friendly:
#      gdb --args BUILD_DIR/tests/fuzz/fuzz_replay FILE);
#   2. the command line with the options the route stands for: the last
#      byte's bit 0 picks --state-inputs (1: required); bit 1 means the fuzzer
#      loaded the model from a file with a 16-byte lazy threshold, which the
#      command line (64 KiB) only matches for big initializers.
# Use an ASan build (-DRNNSTATE_SANITIZE=ON) to see where memory goes wrong.
set -u
build=$1; shift
for f in "$@"; do
  last=$(tail -c 1 "$f" | od -An -tu1 | tr -d ' ')
  last=${last:-0}
  mode=optional; [ $((last & 1)) -eq 1 ] && mode=required
  route="from memory"; [ $((last & 2)) -eq 2 ] && route="from a file, lazy threshold 16 bytes"
  echo "== $f: state inputs $mode, loaded $route"
  echo "-- fuzz_replay"
  "$build/tests/fuzz/fuzz_replay" "$f"
  echo "   status $?"
  echo "-- rnnstate-rewrite $f -o /tmp/repro-out.onnx --check --state-inputs=$mode"
  "$build/rnnstate-rewrite" "$f" -o /tmp/repro-out.onnx --check --state-inputs=$mode
  echo "   status $?"
done
