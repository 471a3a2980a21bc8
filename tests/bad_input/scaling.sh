#!/usr/bin/env bash
# scaling.sh TOOL MAKE_BAD_MODELS [FAILING_IO_SHIM]
# Big graphs must take linear time. Wall-clock assertions are flaky on a
# shared machine, so the check counts instead, on a graph of N and of 4N
# nodes, and the ratio must stay below 6 (linear: about 4; N log N: about
# 4.6; quadratic: about 16). Two counts, both deterministic whatever the
# machine's load:
#   - instructions, under valgrind's callgrind: any super-linear algorithm;
#   - bytes copied by realloc() when every realloc moves its block (the shim
#     tests/tools/failing_io.c, FAIL_IO_REALLOC_STATS): arrays grown one
#     element at a time. glibc hides that cost by growing large blocks in
#     place (mremap), which ASan, musl and other allocators do not.
# Shapes:
#   chain      X -> N Relu -> GRU, initial_h -> N Identity: the analysis walks
#              both chains (batch inference, state tracing)
#   many-grus  N GRU nodes side by side: N state pairs to name and add
#   same-name  N GRU nodes all named "g", --name-template '{name}_{slot}':
#              every new name collides with the previous ones
#   concat     initial_h from a chain of N Concat(c, c) nodes: a walk that
#              revisits both inputs takes 2^N steps (N=12: 4096, 4N: 2^48)
#   colliding  N value names that collide in the low 20 bits of unkeyed
#              FNV-1a: quadratic probing in any unkeyed table of that kind
#   if-grus    N If nodes, a GRU in each then_branch: each state is threaded
#              out of its If (sibling-branch lookups)
#   if-h0      the same with a zero Constant as each GRU's initial_h: N values
#              to detach and clean up, each in its own scope
#   value-info N GRUs whose unused Y_h is declared in value_info: each is
#              renamed and its value_info entry removed
#   batch      N models in one run (missing files, so that each job stops at
#              once): what grows is the run's own bookkeeping, such as
#              checking that no two jobs write the same output
# And memory: a batch of 4N models may hold only a little more heap than one
# of N (its list of jobs, under 512 bytes a model; massif's peak heap), with
# -j 1 and -j 2, with and without --json: a report is freed once it is
# counted, or once its entry of the JSON report is written.
# And directory operations (strace): each new output of a batch is looked up
# at most twice before it is created (the command line's check of what is
# there, and the save's). In a batch the lookup of a name not yet there is a
# directory operation that the other workers' file creations wait for. Each
# input is looked at once through its descriptor (fstat).
# Then a graph of 400,000 nodes must simply finish (within ctest's timeout).
# Without valgrind, or with a sanitized binary (valgrind cannot run those),
# the ratios are skipped and only the big graph runs.
set -u
tool=$1 gen=$2 shim=${3:-}
source "$(dirname "$0")/lib.sh"
export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0"

# sizes can be lowered for a quick run: SCALE_CHAIN, SCALE_GRUS, SCALE_SAME
chain_n=${SCALE_CHAIN:-5000} grus_n=${SCALE_GRUS:-1000} same_n=${SCALE_SAME:-200}
concat_n=${SCALE_CONCAT:-12} colliding_n=${SCALE_COLLIDING:-2000} if_n=${SCALE_IF:-2000}
value_info_n=${SCALE_VALUE_INFO:-2000} if_h0_n=${SCALE_IF_H0:-500} batch_n=${SCALE_BATCH:-1000}
heap_n=${SCALE_HEAP:-500}
RUN_TIMEOUT=600

# counted STATUS ARGS...: the instruction count of one run of the tool with
# ARGS, which must exit with STATUS
counted() {
  local want=$1; shift
  timeout -k 5 "$RUN_TIMEOUT" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$tool" "$@" 2> "$work/cg.log" > /dev/null
  local st=$?
  if [ "$st" -ne "$want" ]; then
    echo "callgrind run exited with status $st, not $want: $(tail -3 "$work/cg.log")" >&2
    return 1
  fi
  sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$work/cg.log" | tail -1
}

# judge NAME N SMALL LARGE LIMIT: the counts at N and 4N; their ratio must
# stay below LIMIT/100
judge() {
  local name=$1 n=$2 small=$3 large=$4 limit=$5
  if [ -z "$small" ] || [ -z "$large" ] || [ "$small" -eq 0 ]; then
    fail "$name" "no instruction count in callgrind's output"; return
  fi
  # ratio with two decimals, in integer arithmetic
  local ratio100=$((large * 100 / small))
  local ratio="$((ratio100 / 100)).$(printf '%02d' $((ratio100 % 100)))"
  local bound="$((limit / 100)).$(printf '%02d' $((limit % 100)))"
  if [ "$ratio100" -lt "$limit" ]; then
    pass "$name: N=$n: $small instructions, 4N: $large (x$ratio < $bound)"
  else
    fail "$name" "N=$n: $small instructions, 4N: $large: x$ratio, not linear (< $bound)"
  fi
}

# [LIMIT=R100] linear NAME CASE N [ARGS...]: compares N and 4N; the ratio
# must stay below R100/100 (default 6)
linear() {
  local name=$1 case=$2 n=$3; shift 3
  "$gen" "$case" "$work/small.onnx" "$n"
  "$gen" "$case" "$work/large.onnx" $((4 * n))
  local small large
  small=$(counted 0 "$work/small.onnx" -o "$work/out.onnx" -q "$@") ||
    { fail "$name" "run on $n failed"; return; }
  large=$(counted 0 "$work/large.onnx" -o "$work/out.onnx" -q "$@") ||
    { fail "$name" "run on $((4 * n)) failed"; return; }
  judge "$name" "$n" "$small" "$large" "${LIMIT:-600}"
}

# batch_linear NAME N: one run over N jobs and one over 4N, each job a
# missing model (exit status 1, one error line per job)
batch_linear() {
  local name=$1 n=$2 i small large few=() many=()
  for ((i = 0; i < 4 * n; i++)); do many+=("$work/missing/model$i.onnx"); done
  few=("${many[@]:0:n}")
  small=$(counted 1 -j 1 -q "${few[@]}" -d "$work/batch-out") ||
    { fail "$name" "run on $n jobs failed"; return; }
  large=$(counted 1 -j 1 -q "${many[@]}" -d "$work/batch-out") ||
    { fail "$name" "run on $((4 * n)) jobs failed"; return; }
  judge "$name" "$n" "$small" "$large" 600
}

# peak_heap OUT_DIR ARGS...: the peak heap (bytes asked for, plus malloc's
# overhead) of a run of the tool under valgrind's massif, OUT_DIR removed
# before it. The save's write buffer (256 KiB a worker, from sink_room() in
# src/model/model_write.c) is left out: with -j 2, whether both workers hold theirs
# at the peak is a matter of timing, worth up to 170 bytes a model here.
peak_heap() {
  local out=$1; shift
  rm -rf "$out"
  timeout -k 5 "$RUN_TIMEOUT" valgrind --tool=massif --ignore-fn=sink_room \
    --massif-out-file="$work/massif.out" "$tool" "$@" > /dev/null 2> "$work/massif.log" || return 1
  awk -F= '/^mem_heap_B=/ { heap = $2 } /^mem_heap_extra_B=/ { if (heap + $2 > peak) peak = heap + $2 }
           END { print peak + 0 }' "$work/massif.out"
}

# batch_memory N JOBS [ARGS...]: the peak heap of a batch of N copies of a
# small model and of 4N; each model past N may add at most 512 bytes
batch_memory() {
  local n=$1 jobs=$2 i few many; shift 2
  local name="heap per model in a batch, -j $jobs${1:+ $*}"
  few=$work/heap-few many=$work/heap-many
  if [ ! -d "$many" ]; then
    "$gen" many-grus "$work/heap-model.onnx" 2
    mkdir -p "$few" "$many"
    for ((i = 0; i < 4 * n; i++)); do
      ln "$work/heap-model.onnx" "$many/m$i.onnx"
      [ "$i" -lt "$n" ] && ln "$work/heap-model.onnx" "$few/m$i.onnx"
    done
  fi
  local small large
  small=$(peak_heap "$work/heap-out" -j "$jobs" -q "$@" "$few" -d "$work/heap-out") ||
    { fail "$name" "run on $n models failed: $(tail -3 "$work/massif.log")"; return; }
  large=$(peak_heap "$work/heap-out" -j "$jobs" -q "$@" "$many" -d "$work/heap-out") ||
    { fail "$name" "run on $((4 * n)) models failed: $(tail -3 "$work/massif.log")"; return; }
  local per_model=$(((large - small) / (3 * n)))
  if [ "$per_model" -lt 512 ]; then
    pass "$name: peak heap $small bytes for $n models, $large for $((4 * n)): $per_model a model"
  else
    fail "$name" "peak heap $small bytes for $n models, $large for $((4 * n)): $per_model bytes a model, not under 512 (are reports kept to the end?)"
  fi
}

# output_lookups: stat-family calls naming each output of a batch of three
# new outputs, at most 2 each; and on each input's descriptor, 1 each
output_lookups() {
  local name="lookups of each new output in a batch" i
  "$gen" many-grus "$work/lookup-model.onnx" 2
  mkdir -p "$work/lookup-in"
  for i in 0 1 2; do ln -f "$work/lookup-model.onnx" "$work/lookup-in/m$i.onnx"; done
  rm -rf "$work/lookup-out"
  if ! timeout -k 5 "$RUN_TIMEOUT" strace -f -qq -y -e trace=%%stat -o "$work/strace.log" \
       "$tool" -j 1 -q "$work/lookup-in" -d "$work/lookup-out" 2> "$work/stderr"; then
    fail "$name" "the run failed: $(head -3 "$work/stderr")"; return
  fi
  local counts=() most=0 c
  for i in 0 1 2; do
    c=$(grep -c "\"$work/lookup-out/m$i.onnx\"" "$work/strace.log")
    counts+=("$c")
    [ "$c" -gt "$most" ] && most=$c
  done
  if [ "$most" -ge 1 ] && [ "$most" -le 2 ]; then
    pass "$name: ${counts[*]} stat calls"
  else
    fail "$name" "${counts[*]} stat calls naming the three outputs, expected 1 or 2 each"
  fi
  # and each input, opened once, is looked at through its descriptor twice:
  # at load, and before its weights are copied back at save (they stay in
  # the file, initializers of 128 bytes and more: model_write.c checks that
  # the file did not change in between) (strace -y shows the path behind a
  # descriptor as <path>)
  name="fstat calls on each input in a batch" counts=()
  for i in 0 1 2; do
    counts+=("$(grep -c "lookup-in/m$i.onnx>" "$work/strace.log")")
  done
  if [ "${counts[*]}" = "2 2 2" ]; then
    pass "$name: ${counts[*]}"
  else
    fail "$name" "${counts[*]} stat calls on the descriptors of the three inputs, expected 2 each (load, and the check before the weights are copied)"
  fi
}

# copied NAME CASE N [ARGS...]: realloc's copy volume at N and 4N
copied() {
  local name=$1 case=$2 n=$3; shift 3
  "$gen" "$case" "$work/small.onnx" "$n"
  "$gen" "$case" "$work/large.onnx" $((4 * n))
  local size counts=()
  for size in small large; do
    rm -f "$work/realloc.txt"
    timeout -k 5 "$RUN_TIMEOUT" env LD_PRELOAD="$shim" FAIL_IO_REALLOC_STATS="$work/realloc.txt" \
      "$tool" "$work/$size.onnx" -o "$work/out.onnx" -q "$@" > /dev/null 2> "$work/stderr"
    local st=$?
    if [ $st -ne 0 ]; then fail "$name" "run on the $size graph: status $st: $(head -3 "$work/stderr")"; return; fi
    counts+=("$(sed -n 's/^realloc_bytes_copied //p' "$work/realloc.txt" 2> /dev/null | tail -1)")
  done
  local small=${counts[0]:-} large=${counts[1]:-}
  if [ -z "$small" ] || [ -z "$large" ]; then fail "$name" "the shim reported nothing"; return; fi
  # below 16 MiB at 4N, growth is not worth a ratio
  if [ "$large" -lt 16777216 ] || [ $((large * 100 / (small + 1))) -lt 600 ]; then
    pass "$name: realloc copied $small bytes at N=$n, $large at 4N"
  else
    local r=$((large * 100 / (small + 1)))
    fail "$name" "realloc copied $small bytes at N=$n, $large at 4N: x$((r / 100)).$(printf '%02d' $((r % 100))): an array grows one element at a time"
  fi
}

if [ -z "$shim" ] || [ ! -f "$shim" ]; then
  echo "SKIP realloc copy volume: no failing_io shim given"
elif is_sanitized "$tool"; then
  echo "SKIP realloc copy volume: $tool is sanitized (its realloc is the sanitizer's)"
else
  copied "realloc copies, chain of Relu and Identity nodes" chain "$chain_n"
  copied "realloc copies, GRU nodes side by side" many-grus "$grus_n"
fi

if ! command -v strace > /dev/null; then
  echo "SKIP lookups of each new output: strace is not installed (apt-get install strace)"
elif ! strace -f -qq -e trace=%%stat -o /dev/null true 2> /dev/null; then
  echo "SKIP lookups of each new output: strace cannot trace here (no ptrace, or no %%stat class)"
elif is_sanitized "$tool"; then
  echo "SKIP lookups of each new output: $tool is sanitized (its start-up makes calls of its own)"
else
  output_lookups
fi

if ! command -v valgrind > /dev/null; then
  echo "SKIP instruction-count ratios: valgrind is not installed (apt-get install valgrind)"
elif is_sanitized "$tool"; then
  echo "SKIP instruction-count ratios: $tool is sanitized (valgrind cannot run it)"
else
  linear "chain of Relu and Identity nodes" chain "$chain_n"
  linear "GRU nodes side by side" many-grus "$grus_n"
  linear "GRU nodes sharing one name, --name-template '{name}_{slot}'" many-grus-same-name \
    "$same_n" --name-template '{name}_{slot}'
  linear "initial_h from a chain of Concat(c, c) nodes" concat-chain "$concat_n"
  linear "value names colliding under unkeyed FNV-1a" colliding-names "$colliding_n"
  # a lookup per If that scans every scope adds a quadratic term of x4.7 here
  LIMIT=450 linear "GRU nodes inside If branches, side by side" if-grus "$if_n"
  linear "GRU nodes in If branches with zero initial states to clean up" if-grus-zero-h0 "$if_h0_n"
  linear "GRU nodes whose unused Y_h is declared in value_info" value-info-grus "$value_info_n"
  batch_linear "models in one run (-d DIR, every output name checked)" "$batch_n"
  batch_memory "$heap_n" 1
  batch_memory "$heap_n" 2
  batch_memory "$heap_n" 1 --json
  batch_memory "$heap_n" 2 --json
fi

# hundreds of thousands of nodes: must finish, and produce a valid model
"$gen" chain "$work/big.onnx" 200000
run_tool "$work/big.onnx" -o "$work/big.out.onnx" --check -q
why=$(crash_report "$status" "$work/stderr")
if [ -n "$why" ]; then fail "400,000-node graph" "$why"
elif [ "$status" -ne 0 ]; then fail "400,000-node graph" "exit status $status: $err"
else pass "400,000-node graph rewritten and checked"; fi
# many recurrent nodes (fewer under sanitizers, whose realloc always copies:
# the realloc check above is the one that tells linear from quadratic)
grus=50000
is_sanitized "$tool" && grus=5000
"$gen" many-grus "$work/grus.onnx" "$grus"
run_tool "$work/grus.onnx" -o "$work/grus.out.onnx" --check -q
why=$(crash_report "$status" "$work/stderr")
if [ -n "$why" ]; then fail "$grus GRU nodes" "$why"
elif [ "$status" -ne 0 ]; then fail "$grus GRU nodes" "exit status $status: $err"
else pass "$grus GRU nodes rewritten and checked"; fi

finish
