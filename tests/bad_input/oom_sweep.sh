#!/usr/bin/env bash
# oom_sweep.sh TOOL MALLOC_SHIM MODELS_DIR [CASE...]
# Running out of memory never changes an answer. For each case (a model
# under MODELS_DIR and the tool's options, e.g. "denoiser_gru.onnx --json"),
# a first run with tests/tools/failing_malloc.c counting (FAIL_MALLOC_NTH=0)
# gives the reference: its exit status, report (stdout, stderr) and output
# bytes, and the number of allocations it makes. Then the case is run once
# per allocation with that allocation failing (FAIL_MALLOC_NTH=N), and each
# run must be either
#   - the same: the same status, report and output bytes, or
#   - a clean out-of-memory error: exit status 1, one line on stderr that
#     says so ("out of memory", or the errno text "Cannot allocate memory";
#     with --json after the text report's lines so far), no output file and
#     nothing else left in the directory (no temporary file), and a report
#     that is the reference's cut short (what was written before memory ran
#     out) or, with --json, gives the model's error as out of memory;
# never a different answer, a crash or a hang.
#
# Cost: one run per allocation, a few hundred to about 1,400 per model here
# (a run takes 10 to 30 ms on an idle machine, several times that on a busy
# one): about 7,500 runs for the default cases. SWEEP_STRIDE=K (default 1)
# tries every Kth allocation after the first SWEEP_FIRST (default 300) and
# the last 50, for a quicker pass; SWEEP_MAX_FAILS (default 20) stops a case
# after that many failures. Unsanitized tools only: the shim forwards to
# glibc's allocator (a sanitized tool is skipped, status 77).
#
# To see where the Nth allocation is, break in the shim's
# failing_malloc_refused() (tests/tools/failing_malloc.c shows the gdb line).
set -u
tool=$(realpath "$1") shim=$(realpath "$2") models=$(realpath "$3")
shift 3
source "$(dirname "$0")/lib.sh"

STRIDE=${SWEEP_STRIDE:-1}
FIRST=${SWEEP_FIRST:-300}
MAX_FAILS=${SWEEP_MAX_FAILS:-20}

if is_sanitized "$tool"; then
  echo "SKIP: $tool is sanitized; the shim stands in for glibc's allocator only"
  exit 77
fi

# the default cases: the skipped GRU of issue 23 (denoiser_gru), --json,
# context caches (dpcrn_cache, chomp_conv_gru, crn2d_unet), If branches, and
# the models where the sweep found answers that changed (slices of a state,
# a bidirectional node's stream reason)
if [ $# -eq 0 ]; then
  set -- "denoiser_gru.onnx" "denoiser_gru.onnx --json" "dpcrn_cache.onnx" \
    "if_nested_one_branch.onnx" "if_slice_state.onnx" "half_stateful_gru.onnx" \
    "bidirectional_lstm.onnx" "stream/chomp_conv_gru.onnx" "stream/crn2d_unet.onnx"
fi

shopt -s dotglob nullglob

# slurp FILE VAR: reads FILE into VAR without a fork
slurp() { IFS= read -r -d '' "$2" < "$1" || true; }

# sweep_run N ARGS...: runs the tool on $d/in.onnx, writing $d/out.onnx,
# with the Nth allocation failing (0: none); $status, $out and $err
sweep_run() {
  local nth=$1; shift
  # preloaded into the tool only: timeout's own allocations do not count
  FAIL_MALLOC_NTH=$nth timeout -k 5 "$RUN_TIMEOUT" env LD_PRELOAD="$shim" \
    "$tool" "$d/in.onnx" -o "$d/out.onnx" "$@" > "$work/stdout" 2> "$work/stderr"
  status=$?
  slurp "$work/stdout" out
  slurp "$work/stderr" err
}

# verdict JSON: sets $why to nothing when the run is the same as the
# reference or a clean out-of-memory error, else to what is wrong
verdict() {
  local json=$1 files
  why=
  if [ "$status" -ge 124 ] || [[ $err == *Sanitizer* || $err == *"runtime error:"* ]]; then
    why=$(crash_report "$status" "$work/stderr"); [ -n "$why" ] && return
  fi
  files=("$d"/*)
  if [ "$status" -eq "$ref_status" ] && [ "$out" == "$ref_out" ] && [ "$err" == "$ref_err" ]; then
    if [ -e "$work/ref.onnx" ]; then
      cmp -s "$d/out.onnx" "$work/ref.onnx" || why="same report, different output bytes"
    elif [ ${#files[@]} -ne 1 ]; then
      why="left files the reference did not: ${files[*]##*/}"
    fi
    return
  fi
  if [ "$status" -ne 1 ]; then
    why="status $status (reference $ref_status): $(diff "$work/ref.stdout" "$work/stdout" | head -4 | tr '\n' ' ')$(head -c 300 "$work/stderr")"
    return
  fi
  # one message, the last line of stderr (with --json, the text report
  # goes to stderr before it)
  local last=${err%$'\n'} rest=
  [[ $last == *$'\n'* ]] && rest=${last%$'\n'*}$'\n' last=${last##*$'\n'}
  if ! [[ $last == *"out of memory"* || $last == *"Cannot allocate memory"* ]] ||
     { [ "$json" = 0 ] && [ -n "$rest" ]; } || [ "${ref_err:0:${#rest}}" != "$rest" ]; then
    why="status 1 without one out-of-memory message: ${err:0:300}"; return
  fi
  if [ ${#files[@]} -ne 1 ]; then
    why="out of memory, but left: ${files[*]##*/}"; return
  fi
  # the report so far, or (JSON) one whose model failed for want of memory
  [ "${ref_out:0:${#out}}" == "$out" ] && return
  if [ "$json" = 1 ] &&
     [[ $out =~ \"status\":\ \"error\",\ \"error\":\ \"[^\"]*(out of memory|Cannot allocate memory) ]]; then
    return
  fi
  why="out of memory, but the report differs: $(diff "$work/ref.stdout" "$work/stdout" | head -4 | tr '\n' ' ')"
}

total_runs=0
for case in "$@"; do
  read -r model opts <<< "$case"
  # shellcheck disable=SC2206
  args=($opts)
  json=0
  case " $opts " in *" --json "*) json=1 ;; esac
  # the reference, counting allocations
  fresh_dir
  cp "$models/$model" "$d/in.onnx"
  rm -f "$work/ref.onnx" "$work/count"
  FAIL_MALLOC_COUNT=$work/count sweep_run 0 "${args[@]}"
  ref_status=$status ref_out=$out ref_err=$err
  cp "$work/stdout" "$work/ref.stdout"
  [ -e "$d/out.onnx" ] && mv "$d/out.onnx" "$work/ref.onnx"
  total=$(cat "$work/count" 2> /dev/null || echo 0)
  if [ "$total" -eq 0 ] || [ -n "$(crash_report "$ref_status" "$work/stderr")" ]; then
    fail "$case" "the reference run failed (status $ref_status, $total allocations)"
    continue
  fi
  n_same=0 n_oom=0 n_bad=0 n_runs=0
  for ((nth = 1; nth <= total; nth++)); do
    if [ "$STRIDE" -gt 1 ] && [ "$nth" -gt "$FIRST" ] && [ "$nth" -le $((total - 50)) ] &&
       [ $(((nth - FIRST) % STRIDE)) -ne 0 ]; then
      continue
    fi
    sweep_run "$nth" "${args[@]}"
    n_runs=$((n_runs + 1))
    verdict "$json"
    if [ -z "$why" ]; then
      if [ "$status" -eq "$ref_status" ] && [ "$out" == "$ref_out" ]; then
        n_same=$((n_same + 1))
      else
        n_oom=$((n_oom + 1))
      fi
    else
      n_bad=$((n_bad + 1))
      echo "  $case: allocation $nth failing: $why"
      [ "$n_bad" -ge "$MAX_FAILS" ] && { echo "  (stopping this case after $MAX_FAILS failures)"; break; }
    fi
    files=("$d"/*)
    for f in "${files[@]}"; do [ "$f" = "$d/in.onnx" ] || rm -f "$f"; done
  done
  total_runs=$((total_runs + n_runs))
  if [ "$n_bad" -eq 0 ]; then
    pass "$case: $n_runs of $total allocations failed in turn: $n_same the same answer, $n_oom out of memory"
  else
    fail "$case" "$n_bad of $n_runs runs gave another answer or no clean out-of-memory error"
  fi
done
echo "$total_runs runs"
finish
