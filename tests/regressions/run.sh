#!/usr/bin/env bash
# run.sh TOOL [MAKE_BAD_MODELS [STRICT_LIBC [FAILING_IO]]]: replays every reproducer under
# tests/regressions/ through the command line. Each case is a directory holding
#   README     one line: what the input triggered (and where it came from)
#   model.onnx the input (a fuzzer artifact, or a make-bad-models case)
#   args       optional: extra command-line arguments, one per line
#   run        instead of model.onnx, for inputs that are not a file or too
#              big to keep: a bash script run as `bash run TOOL DIR` (DIR: an
#              empty scratch directory; $GEN: make-bad-models; $FAILING_IO:
#              the shim of tests/tools/failing_io.c, which the script may add
#              to LD_PRELOAD) that ends by running the tool
#   crash-*    optional: the fuzzer's artifact, replayed by fuzz_replay
#   expect     lines of:  status N              the exit status (one value)
#                         stderr TEXT          stderr must contain TEXT
#                         stdout TEXT          stdout must contain TEXT
#                         timeout SECONDS      a hang detector tighter than
#                                              the default (quadratic cases)
# Every case must fail here, under plain ctest, without its fix: the expected
# status and output are exact, the tool runs with 2 GiB of address space (an
# absurd allocation fails) and with STRICT_LIBC preloaded (tests/tools/
# strict_libc.c: undefined libc calls abort, and so does asking for more
# than 1 GiB at once, which no case needs). Leaks are caught by the unit
# tests (tests/unit/test_rewrite.c counts the heap). Every case must also
# finish without a crash, a hang or a sanitizer report (the ASan build in
# tests/ci_extra.sh), and leave no temporary file; when it exits 0 the written
# model must pass --check. The fuzz inputs are also replayed through
# fuzz_replay (fuzz.replay test).
set -u
real_tool=$1
export GEN=${2:-}
strict_libc=${3:-}
export FAILING_IO=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../bad_input/lib.sh"

# The tool as every case runs it (also from `run` scripts): the shim and
# the address-space cap apply outside sanitizers, which do both themselves.
tool=$work/tool
{
  echo '#!/usr/bin/env bash'
  if ! is_sanitized "$real_tool"; then
    echo 'ulimit -v 2097152 || exit 99'
    [ -n "$strict_libc" ] &&
      printf 'export LD_PRELOAD=%q${LD_PRELOAD:+:$LD_PRELOAD} STRICT_LIBC_MALLOC_LIMIT_MB=1024\n' "$strict_libc"
  fi
  printf 'exec %q "$@"\n' "$real_tool"
} > "$tool"
chmod +x "$tool"
default_timeout=$RUN_TIMEOUT

for dir in "$here"/*/; do
  [ -f "$dir/model.onnx" ] || [ -f "$dir/run" ] || continue
  name=$(basename "$dir")
  args=()
  if [ -f "$dir/args" ]; then
    while IFS= read -r a; do [ -n "$a" ] && args+=("$a"); done < "$dir/args"
  fi
  RUN_TIMEOUT=$(awk '$1 == "timeout" { print $2 }' "$dir/expect")
  RUN_TIMEOUT=${RUN_TIMEOUT:-$default_timeout}
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
        # one status: a case that accepts "0 or 1" cannot fail without its fix
        case "$text" in *[!0-9]*|'') fail "$name" "expect: 'status $text' is not one exit status"; ok=0 ;;
          "$status") ;; *) fail "$name" "exit status $status, expected $text; stderr: $err"; ok=0 ;; esac ;;
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
