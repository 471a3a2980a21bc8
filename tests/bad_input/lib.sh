# Shared by the bad-input scripts (sourced). On the harness of every test
# script (tests/cli/lib.sh: a scratch directory $work, pass, fail, finish),
# adds helpers that run the tool and check what it left behind. Every run
# goes through `timeout`, so a hang is a failure, and its stderr is searched
# for sanitizer and valgrind reports.
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

# How long one run may take before it counts as a hang (seconds).
RUN_TIMEOUT=${RUN_TIMEOUT:-120}

# Sanitizers must abort with a distinct status and report in stderr.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"

# True when the binary carries a sanitizer runtime (valgrind and ulimit -v
# do not mix with it).
is_sanitized() {
  grep -qa -e '__asan_init' -e '__ubsan_handle' "$1"
}

# crash_report STATUS STDERR_FILE: prints why the run counts as a crash, or
# nothing.
crash_report() {
  local st=$1 errfile=$2
  if [ "$st" -eq 124 ]; then echo "timed out after ${RUN_TIMEOUT}s (hang)"; return; fi
  if [ "$st" -ge 128 ]; then echo "killed by signal $((st - 128))"; return; fi
  if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|==[0-9]+== (Invalid|Conditional|Syscall param|Mismatched)|definitely lost: [1-9]' "$errfile"; then
    echo "sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error:|==[0-9]+==' "$errfile")"
  fi
}

# run_tool ARGS...: runs "$tool" (under $TOOL_PREFIX when set), leaving the
# exit status in $status and the output in $out, $err ($work/stdout, stderr).
# With TOOL_VMEM_KB set, the run's address space is capped (ulimit -v): a
# tool that tried to allocate an absurd state would fail instead of passing.
run_tool() {
  (
    if [ -n "${TOOL_VMEM_KB:-}" ]; then ulimit -v "$TOOL_VMEM_KB" || exit 99; fi
    timeout -k 5 "$RUN_TIMEOUT" ${TOOL_PREFIX:-} "$tool" "$@"
    exit $?
  ) > "$work/stdout" 2> "$work/stderr"
  status=$?
  out=$(cat "$work/stdout") err=$(cat "$work/stderr")
}

# leftovers DIR: lists anything in DIR (temporary files included).
leftovers() {
  ls -A "$1" 2>/dev/null
}

# temp_files DIR: lists temporary files the tool may have left in DIR.
temp_files() {
  ls -A "$1" 2>/dev/null | grep -E '^\..*\.tmp-' || true
}

# fresh_dir: sets $d to a new empty directory under $work (not in a
# subshell: call it as a command, then use $d).
n_dirs=0
fresh_dir() {
  n_dirs=$((n_dirs + 1))
  d=$work/d$n_dirs
  mkdir -p "$d"
}
