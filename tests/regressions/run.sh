#!/usr/bin/env bash
# run.sh TOOL [MAKE_BAD_MODELS]: replays every reproducer under tests/regressions/ through the
# command line. Each case is a directory holding
#   README     one line: what the input triggered (and where it came from)
#   model.onnx the input (a fuzzer artifact, or a make-bad-models case)
#   args       optional: extra command-line arguments, one per line
#   run        instead of model.onnx, for inputs that are not a file or too
#              big to keep: a bash script run as `bash run TOOL DIR` (DIR: an
#              empty scratch directory; $GEN: make-bad-models) that ends by
#              running the tool
#   crash-*    optional: the fuzzer's artifact, replayed by fuzz_replay
#   expect     lines of:  status 0|1|0,1       allowed exit statuses
#                         stderr TEXT          stderr must contain TEXT
#                         stdout TEXT          stdout must contain TEXT
# Every case must also finish without a crash, a hang or a sanitizer report
# (run it under the ASan build: tests/ci_extra.sh does), and leave no
# temporary file; when it exits 0 the written model must pass --check.
# The fuzz inputs are also replayed through fuzz_replay (fuzz.replay test).
set -u
tool=$1
export GEN=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../bad_input/lib.sh"

for dir in "$here"/*/; do
  [ -f "$dir/model.onnx" ] || [ -f "$dir/run" ] || continue
  name=$(basename "$dir")
  args=()
  if [ -f "$dir/args" ]; then
    while IFS= read -r a; do [ -n "$a" ] && args+=("$a"); done < "$dir/args"
  fi
  fresh_dir
  if [ -f "$dir/run" ]; then
    (timeout -k 5 "$RUN_TIMEOUT" bash "$dir/run" "$tool" "$d") > "$work/stdout" 2> "$work/stderr"
    status=$? out=$(cat "$work/stdout") err=$(cat "$work/stderr")
  else
    run_tool "$dir/model.onnx" -o "$d/out.onnx" --check "${args[@]}"
  fi
  why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why ($(cat "$dir/README" 2>/dev/null))"; grep -m12 -E 'Sanitizer|runtime error|#[0-9] ' "$work/stderr"; continue; fi
  ok=1
  while read -r kind text; do
    case "$kind" in
      status)
        case ",$text," in *",$status,"*) ;; *) fail "$name" "exit status $status, expected $text; stderr: $err"; ok=0 ;; esac ;;
      stderr)
        case "$err" in *"$text"*) ;; *) fail "$name" "stderr lacks '$text': $err"; ok=0 ;; esac ;;
      stdout)
        case "$out" in *"$text"*) ;; *) fail "$name" "stdout lacks '$text': $out"; ok=0 ;; esac ;;
    esac
    [ $ok -eq 1 ] || break
  done < "$dir/expect"
  [ $ok -eq 1 ] || continue
  if [ -n "$(temp_files "$d")" ]; then fail "$name" "temporary file left: $(temp_files "$d")"; continue; fi
  if [ "$status" -ne 0 ] && [ ! -f "$dir/run" ] && [ -n "$(leftovers "$d")" ]; then fail "$name" "output left after a failure"; continue; fi
  pass "$name"
done
finish
