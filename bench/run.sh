#!/usr/bin/env bash
# Benchmark: rnnstate-rewrite on large models and large graphs against
# `cat in > out` and the Python onnx load-modify-save route, all in one run;
# prints the figures, their ratios, the scaling exponents, and one line per
# target. See bench/README.md.
#
#   bash bench/run.sh [--sizes 128M,512M,1G] [--hidden 2048] [--banks 6000,15000]
#                     [--grus 12500,50000] [--chain 250000,1000000] [--batch 1000]
#                     [--gru-chain 12500,50000] [--lstm-chain 250000,1000000]
#                     [--ifs 10000,40000] [--vi-grus 10000,40000] [--dir DIR] [--keep]
# An empty list skips its workload (--sizes '' --banks '' ... --batch 0).
#
# Needs cc, cmake, protoc-c/libprotobuf-c (as for the project) and GNU time at
# /usr/bin/time (Debian: apt-get install -y time). The Python column needs
# Debian's python3-onnx in /usr/bin/python3; it is skipped otherwise.
# Exit status: 0 when every target passes, 1 when one fails, 2 on a setup error.
set -euo pipefail

sizes=128M,512M,1G
hidden=2048
banks=6000,15000        # GRUs with their own 64 KiB W and R: large-tensor count
small_grus=12500,50000  # small GRUs side by side: recurrent-node count
chain=250000,1000000    # nodes in a chain: graph size
batch=1000              # small models in one directory, for -j
# the shapes of issue 24
gru_chain=12500,50000   # chained GRUs, each with its own W, R, B
lstm_chain=250000,1000000 # two LSTMs, then alternating Add/Identity: nodes
ifs=10000,40000         # a chain of If nodes with one-node branches
vi_grus=10000,40000     # chained GRUs with a value_info for every value
base=${TMPDIR:-/tmp}
keep=0
reps=5       # rounds for the large LSTMs (issue 11 asks for the median of 5)
graph_reps=5 # rounds for the graphs: short runs, more noise
batch_reps=9 # rounds for the batch: a tenth of a second each, the noisiest
usage() { sed -n '2,17s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --sizes=*) sizes=${1#*=}; shift ;;
    --hidden) hidden=$2; shift 2 ;;
    --hidden=*) hidden=${1#*=}; shift ;;
    --banks) banks=$2; shift 2 ;;
    --banks=*) banks=${1#*=}; shift ;;
    --grus) small_grus=$2; shift 2 ;;
    --grus=*) small_grus=${1#*=}; shift ;;
    --chain) chain=$2; shift 2 ;;
    --chain=*) chain=${1#*=}; shift ;;
    --batch) batch=$2; shift 2 ;;
    --batch=*) batch=${1#*=}; shift ;;
    --gru-chain) gru_chain=$2; shift 2 ;;
    --gru-chain=*) gru_chain=${1#*=}; shift ;;
    --lstm-chain) lstm_chain=$2; shift 2 ;;
    --lstm-chain=*) lstm_chain=${1#*=}; shift ;;
    --ifs) ifs=$2; shift 2 ;;
    --ifs=*) ifs=${1#*=}; shift ;;
    --vi-grus) vi_grus=$2; shift 2 ;;
    --vi-grus=*) vi_grus=${1#*=}; shift ;;
    --dir) base=$2; shift 2 ;;
    --dir=*) base=${1#*=}; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=/usr/bin/python3

# GNU time gives wall time (%e) and peak RSS in KiB (%M).
if ! /usr/bin/time -f '%e %M' true >/dev/null 2>&1; then
  echo "run.sh: GNU time is missing at /usr/bin/time; install it with: apt-get install -y time" >&2
  exit 2
fi

# ---- sizes -> layers (one layer of hidden H is 32*H^2 bytes of weights) ------
to_bytes() {
  local s=$1 n=${1%[KkMmGg]}
  case $s in
    *[Kk]) echo $((n * 1024)) ;;
    *[Mm]) echo $((n * 1024 * 1024)) ;;
    *[Gg]) echo $((n * 1024 * 1024 * 1024)) ;;
    *) echo "$n" ;;
  esac
}
per_layer=$((32 * hidden * hidden))
labels=() layers=()
IFS=, read -r -a size_list <<< "$sizes"
for s in "${size_list[@]}"; do
  [[ $s =~ ^[0-9]+[KkMmGg]?$ ]] || { echo "run.sh: bad size '$s'" >&2; exit 2; }
  b=$(to_bytes "$s")
  l=$(((b + per_layer / 2) / per_layer)); [ "$l" -ge 1 ] || l=1
  if [ $((l * per_layer)) -ge $((2 * 1024 * 1024 * 1024 - 1024 * 1024)) ]; then
    echo "run.sh: size $s is at the 2 GiB protobuf limit; use sizes below 2G" >&2; exit 2
  fi
  labels+=("$s") layers+=("$l")
done
max_layers=0 sum_layers=0
for l in "${layers[@]}"; do
  [ "$l" -gt "$max_layers" ] && max_layers=$l
  sum_layers=$((sum_layers + l))
done

# ---- scratch directory and free space ----------------------------------------
mkdir -p "$base"
work=$(mktemp -d "$base/rnnstate-bench.XXXXXX")
cleanup() {
  if [ "$keep" = 1 ]; then
    echo "kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# At any time: one input plus three outputs (cat, rewrite, python) of the
# largest size; with --keep every input stays, plus the last outputs.
if [ "$keep" = 1 ]; then
  need=$(((sum_layers + 3 * max_layers) * per_layer))
else
  need=$((4 * max_layers * per_layer))
fi
# the largest bank of GRUs (131,424 bytes of weights each) with its 3 outputs
max_bank=0
IFS=, read -r -a bank_list <<< "$banks"
for b in "${bank_list[@]}"; do [ "$b" -gt "$max_bank" ] && max_bank=$b; done
[ $((4 * max_bank * 131424)) -gt "$need" ] && need=$((4 * max_bank * 131424))
need=$((need + need / 20 + 64 * 1024 * 1024))
avail=$(df -P -B1 "$work" | awk 'NR==2 {print $4}')
echo "scratch: $work ($(df -P -h "$work" | awk 'NR==2 {print $1}'), $((avail >> 20)) MiB free, needs about $((need >> 20)) MiB)"
if [ "$avail" -lt "$need" ]; then
  echo "run.sh: not enough free space in $base: $((avail >> 20)) MiB free, about $((need >> 20)) MiB needed" >&2
  echo "run.sh: pick smaller --sizes or another --dir on a disk with more room" >&2
  exit 2
fi

# ---- build ----------------------------------------------------------------
echo "building (Release) ..."
cc -std=c11 -O2 -Wall -Wextra -o "$work/make_large_model" "$repo/bench/make_large_model.c"
cc -std=c11 -O2 -Wall -Wextra -pthread -o "$work/dir_create" "$repo/bench/dir_create.c"
cmake -S "$repo" -B "$work/build" -DRNNSTATE_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >"$work/build.log" 2>&1 &&
  cmake --build "$work/build" -j"$(nproc)" >>"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; echo "run.sh: build failed" >&2; exit 2; }
tool=$work/build/rnnstate-rewrite

python_ok=0
if "$PY" -c 'import onnx' 2>/dev/null; then
  python_ok=1
  # The Python route: load everything, expose each recurrent node's state as
  # a graph input and output (the same kind of change the tool makes), save.
  cat >"$work/python_route.py" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper

src, dst = sys.argv[1], sys.argv[2]
m = onnx.load(src)
g = m.graph
k = 0
for n in g.node:
    if n.op_type not in ("LSTM", "GRU", "RNN"):
        continue
    h = next(a.i for a in n.attribute if a.name == "hidden_size")
    slots = (("h", (5, 1)), ("c", (6, 2))) if n.op_type == "LSTM" else (("h", (5, 1)),)
    while len(n.input) < 5 + len(slots):
        n.input.append("")
    while len(n.output) < 1 + len(slots):
        n.output.append("")
    for slot, (i, o) in slots:
        name = f"{n.op_type}_{k}_initial_{slot}"
        g.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, "batch", h]))
        n.input[i] = name
        if not n.output[o]:
            n.output[o] = f"{n.op_type}_{k}_Y_{slot}_out"
        g.output.append(helper.make_tensor_value_info(n.output[o], TensorProto.FLOAT, [1, "batch", h]))
    k += 1
onnx.save(m, dst)
EOF
else
  echo "note: $PY has no onnx module; the Python columns are skipped (Debian: apt-get install -y python3-onnx)"
fi

# ---- measuring ----------------------------------------------------------------
# The routes are measured in rounds: each round runs every route once, in the
# same order, so that a slow spell of the shared disk or CPU hits them all
# alike rather than whichever route happened to run then. Before each run its
# output is deleted and the disk synced (untimed).
# run_once KEY [--stdout] OUT CMD...: one timed run; records wall time, peak
# RSS and CPU time (user + system) under KEY.
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
declare -A times kbs cpus users
run_once() {
  local key=$1; shift
  local to=
  if [ "$1" = --stdout ]; then to=$2; shift; fi
  local out=$1; shift
  rm -rf "$out"; sync
  # wall time from bash's microsecond clock (GNU time's %e counts in steps
  # of 10 ms, too coarse for the smaller runs); peak RSS and CPU from GNU time
  local t0=$EPOCHREALTIME t1
  if [ -n "$to" ]; then
    /usr/bin/time -f '%e %M %U %S' -o "$work/time.txt" "$@" >"$to"
  else
    /usr/bin/time -f '%e %M %U %S' -o "$work/time.txt" "$@"
  fi
  t1=$EPOCHREALTIME
  read -r t k u sy < <(tail -n 1 "$work/time.txt")
  [ -z "$t0" ] || t=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
  times[$key]+="$t "
  kbs[$key]+="$k "
  cpus[$key]+="$(awk -v u="$u" -v s="$sy" 'BEGIN {printf "%.2f", u + s}') "
  users[$key]+="$u "
}
med_time() { printf '%s\n' ${times[$1]} | median; }
min_time() { printf '%s\n' ${times[$1]} | sort -n | head -n 1; }
med_kb() { printf '%s\n' ${kbs[$1]} | median; }
med_cpu() { printf '%s\n' ${cpus[$1]} | median; }
med_user() { printf '%s\n' ${users[$1]} | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
# exponent T1 N1 T2 N2: the slope of log(time) against log(size)
exponent() { awk -v a="$1" -v n="$2" -v b="$3" -v m="$4" \
  'BEGIN {if (a > 0 && b > 0 && n > 0 && m > n) printf "%.2f", log(b / a) / log(m / n); else print "n/a"}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "n/a" && a + 0 <= b + 0)}'; }

# Until the tool writes without fsync by default (issue 11, item 1), the
# durable run is the default one and --no-sync is the like-for-like one.
if "$tool" --help | grep -q -- '--sync '; then
  fast_args=() durable_args=(--sync)
else
  fast_args=(--no-sync) durable_args=()
  echo "note: this build has no --sync: 'default' below is measured with --no-sync (no fsync, like cat), 'durable' with the build's default (fsync)"
fi

results=() fail=0
# target NAME VERDICT DETAIL: one line of the summary
target() {
  results+=("$(printf '%-4s %s: %s' "$2" "$1" "$3")")
  [ "$2" = FAIL ] && fail=1
  return 0
}
verdict() { if "$@"; then echo PASS; else echo FAIL; fi; }
start=$SECONDS

# ---- 1. large LSTMs: time against size -----------------------------------------
rows=()
lstm_bytes=() lstm_fast=() lstm_fast_min=()
big_fast="" big_cat="" big_durable="" big_catsync="" big_kb="" big_py=""
for idx in "${!layers[@]}"; do
  l=${layers[$idx]}
  in=$work/lstm_L${l}_H${hidden}.onnx
  echo "LSTM ${labels[$idx]}: generating $l layer(s), hidden $hidden ..."
  info=$("$work/make_large_model" "$in" "$l" "$hidden")
  bytes=$(sed -n 's/.*bytes=\([0-9]*\) weight.*/\1/p' <<<"$info")
  cat "$in" >/dev/null # warm the page cache
  times=() kbs=() cpus=() users=()
  for ((r = 0; r < reps; r++)); do
    run_once cat --stdout "$work/out.cat" cat "$in"
    run_once fast "$work/out.rewrite.onnx" "$tool" "$in" -o "$work/out.rewrite.onnx" -q "${fast_args[@]}"
    run_once catsync "$work/out.cat" sh -c 'cat "$1" >"$2" && sync "$2"' sh "$in" "$work/out.cat"
    run_once durable "$work/out.rewrite.onnx" "$tool" "$in" -o "$work/out.rewrite.onnx" -q "${durable_args[@]}"
    if [ "$python_ok" = 1 ]; then
      run_once python "$work/out.python.onnx" "$PY" "$work/python_route.py" "$in" "$work/out.python.onnx"
    fi
  done
  rm -f "$work/out.cat" "$work/out.python.onnx"
  if ! "$tool" "$in" -o "$work/out.rewrite.onnx" -q --check; then
    echo "run.sh: rnnstate-rewrite --check failed on $in" >&2; fail=1
  fi
  if [ "$python_ok" = 1 ] && [ "$idx" = 0 ]; then
    if "$PY" - "$work/out.rewrite.onnx" <<'EOF'
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
ins = [i.name for i in m.graph.input]
outs = [o.name for o in m.graph.output]
assert any("initial_h" in n for n in ins) and any("Y_c" in n for n in outs), (ins, outs)
print(f"python onnx.checker: rewritten model OK ({len(ins)} inputs, {len(outs)} outputs)")
EOF
    then :; else echo "run.sh: onnx.checker rejected the rewritten model" >&2; fail=1; fi
  fi
  rm -f "$work/out.rewrite.onnx"
  kb=$(med_kb fast); [ "$(med_kb durable)" -gt "$kb" ] && kb=$(med_kb durable)
  py_s=-; [ "$python_ok" = 1 ] && py_s=$(med_time python)
  rows+=("$(printf '%-6s %6s %7s %8s %6s %8s %8s %6s %7s %9s %7s' "${labels[$idx]}" "$((bytes >> 20))" \
    "$(med_time cat)" "$(med_time fast)" "$(ratio "$(med_time fast)" "$(med_time cat)")" \
    "$(med_time catsync)" "$(med_time durable)" "$(ratio "$(med_time durable)" "$(med_time catsync)")" \
    "$(awk -v k="$kb" 'BEGIN {printf "%.1f", k / 1024}')" "$py_s" \
    "$([ "$py_s" = - ] && echo - || ratio "$py_s" "$(med_time fast)")")")
  lstm_bytes+=("$bytes") lstm_fast+=("$(med_time fast)") lstm_fast_min+=("$(min_time fast)")
  if [ "$bytes" -ge 1000000000 ]; then
    big_fast=$(med_time fast) big_cat=$(med_time cat) big_durable=$(med_time durable)
    big_catsync=$(med_time catsync) big_kb=$kb big_py=$py_s
  fi
  [ "$keep" = 1 ] || rm -f "$in"
done

# ---- 2. graphs: time against large-tensor count, recurrent nodes, nodes ---------
# measure_graph KEY FILE: cat, the rewrite (like-for-like, no fsync) and
# Python, in rounds; sets g_cat, g_rw, g_rw_cpu, g_kb, g_py, g_py_cpu
measure_graph() {
  local key=$1 in=$2
  cat "$in" >/dev/null
  times=() kbs=() cpus=() users=()
  for ((r = 0; r < graph_reps; r++)); do
    run_once cat --stdout "$work/out.cat" cat "$in"
    run_once rw "$work/out.rewrite.onnx" "$tool" "$in" -o "$work/out.rewrite.onnx" -q "${fast_args[@]}"
    if [ "$python_ok" = 1 ]; then
      run_once py "$work/out.python.onnx" "$PY" "$work/python_route.py" "$in" "$work/out.python.onnx"
    fi
  done
  if ! "$tool" "$in" -o "$work/out.rewrite.onnx" -q --check; then
    echo "run.sh: rnnstate-rewrite --check failed on $in ($key)" >&2; fail=1
  fi
  rm -f "$work/out.cat" "$work/out.python.onnx" "$work/out.rewrite.onnx"
  g_cat=$(med_time cat) g_rw=$(med_time rw) g_rw_cpu=$(med_cpu rw) g_kb=$(med_kb rw)
  g_rw_user=$(med_user rw) g_rw_min=$(min_time rw) g_cat_min=$(min_time cat)
  g_py=- g_py_cpu=- g_py_kb=-
  if [ "$python_ok" = 1 ]; then g_py=$(med_time py) g_py_cpu=$(med_cpu py) g_py_kb=$(med_kb py); fi
}
graph_rows=()
# graph_row LABEL N BYTES: one line of the graph table from measure_graph
graph_row() {
  graph_rows+=("$(printf '%-22s %9s %6s %6s %7s %6s %7s %8s %7s %7s' "$1" "$2" \
    "$(awk -v b="$3" 'BEGIN {printf "%.1f", b / 1048576}')" "$g_cat" \
    "$g_rw" "$(ratio "$g_rw" "$g_cat")" "$g_rw_cpu" "$(awk -v k="$g_kb" 'BEGIN {printf "%.1f", k / 1024}')" \
    "$g_py" "$([ "$g_py" = - ] && echo - || ratio "$g_rw" "$g_py")")")
}
file_size() { stat -c %s "$1"; }

# series NAME LABEL LIST MODE [ARG]: for each N in the comma-separated LIST,
# a model from `make_large_model MODE FILE N [ARG]`, measured; the results
# go to rw_of, cat_of and py_of under "NAME:N", and N to NAME_list.
declare -A rw_of cat_of py_of user_of rwmin_of catmin_of kb_of pykb_of bytes_of
series() {
  local name=$1 label=$2 list=$3 mode=$4 n in; shift 4
  local -n ns=${name}_list
  IFS=, read -r -a ns <<< "$list"
  for n in "${ns[@]}"; do
    in=$work/${name}_$n.onnx
    echo "$label, N=$n: generating ..."
    "$work/make_large_model" "$mode" "$in" "$n" "$@" >/dev/null
    measure_graph "$name$n" "$in"
    graph_row "$label" "$n" "$(file_size "$in")"
    rw_of[$name:$n]=$g_rw cat_of[$name:$n]=$g_cat py_of[$name:$n]=$g_py user_of[$name:$n]=$g_rw_user
    rwmin_of[$name:$n]=$g_rw_min catmin_of[$name:$n]=$g_cat_min
    kb_of[$name:$n]=$g_kb pykb_of[$name:$n]=$g_py_kb bytes_of[$name:$n]=$(file_size "$in")
    rm -f "$in"
  done
}
bank_list=() grus_list=() chain_list=() exposed_list=()
series bank "GRUs, 64 KiB weights" "$banks" --grus 74
series grus "small GRUs" "$small_grus" --small-grus
series chain "chain (nodes)" "$chain" --chain
series exposed "chain, state exposed" "$chain" --chain-exposed
# issue 24: the shapes real models have
gchain_list=() lchain_list=() ifs_list=() vigru_list=()
series gchain "GRU chain, own weights" "$gru_chain" --gru-chain
series lchain "Add/Identity chain" "$lstm_chain" --lstm-chain
series ifs "If nodes" "$ifs" --ifs
series vigru "GRU chain, value_info" "$vi_grus" --vi-grus

# ---- 3. many small models: -j 2 against -j 1 ------------------------------------
batch_serial=- batch_parallel=- batch_processes=- create_serial=- create_parallel=-
if [ "$batch" -gt 0 ]; then
  echo "$batch small models in one directory ..."
  mkdir -p "$work/batch"
  samples=("$repo"/models/*.onnx)
  for ((i = 0; i < batch; i++)); do
    cp "${samples[$((i % ${#samples[@]}))]}" "$work/batch/$(printf 'm%05d' "$i").onnx"
  done
  # the same models split between two directories (hard links), for two
  # separate -j 1 processes at once: two workers that share no memory, no
  # allocator and no lock of the tool's, only the machine and the output
  # directory
  mkdir -p "$work/batch.a" "$work/batch.b"
  for ((i = 0; i < batch; i++)); do
    half=a; [ "$i" -lt $((batch / 2)) ] || half=b
    ln "$work/batch/$(printf 'm%05d' "$i").onnx" "$work/batch.$half/"
  done
  # bash -c "$two_processes" _ TOOL HALF_A HALF_B OUT [ARGS...]: fails when either fails
  two_processes='"$1" -j 1 -q "${@:5}" "$2" -d "$4" & a=$!
    "$1" -j 1 -q "${@:5}" "$3" -d "$4"; b=$?
    wait "$a" && exit "$b"'
  # the outputs' file creation alone, as many files of the models' mean size
  mean_bytes=$(cat "$work"/batch/*.onnx | wc -c | awk -v n="$batch" '{printf "%d", $1 / n}')
  times=() kbs=() cpus=() users=()
  for ((r = 0; r < batch_reps; r++)); do
    run_once serial "$work/batch.out" "$tool" -j 1 -q "${fast_args[@]}" "$work/batch" -d "$work/batch.out"
    run_once parallel "$work/batch.out" "$tool" -j 2 -q "${fast_args[@]}" "$work/batch" -d "$work/batch.out"
    run_once processes "$work/batch.out" bash -c "$two_processes" two "$tool" "$work/batch.a" "$work/batch.b" "$work/batch.out" "${fast_args[@]}"
    run_once create1 "$work/batch.out" "$work/dir_create" "$work/batch.out" "$batch" 1 "$mean_bytes"
    run_once create2 "$work/batch.out" "$work/dir_create" "$work/batch.out" "$batch" 2 "$mean_bytes"
  done
  batch_serial=$(med_time serial) batch_parallel=$(med_time parallel)
  batch_processes=$(med_time processes)
  create_serial=$(med_time create1) create_parallel=$(med_time create2)
  rm -rf "$work/batch" "$work/batch.a" "$work/batch.b" "$work/batch.out"
fi

# ---- report ---------------------------------------------------------------------
cpu_name=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo
echo "rnnstate-rewrite benchmark: medians of $reps (LSTMs), $graph_reps (graphs) and $batch_reps (batch) interleaved rounds, page cache warm; $(nproc) CPUs, $cpu_name; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Large LSTMs (hidden $hidden). default: ${fast_args[*]:-the default}; durable: ${durable_args[*]:-the default (fsync)}"
printf '%-6s %6s %7s %8s %6s %8s %8s %6s %7s %9s %7s\n' size MiB "cat s" "rw s" "x cat" "cat+sync" "durable" "x c+s" "rw MB" "python s" "py/rw"
printf '%s\n' "${rows[@]}"
echo
echo "Graphs (rw without fsync, like cat and Python; cpu: user + system seconds of the rewrite)"
printf '%-22s %9s %6s %6s %7s %6s %7s %8s %7s %7s\n' workload N MiB "cat s" "rw s" "x cat" "rw cpu" "rw MB" "py s" "rw/py"
printf '%s\n' "${graph_rows[@]}"
mem_rows=()
for name in gchain lchain ifs vigru; do
  local_list="${name}_list[@]"
  for n in "${!local_list}"; do
    mem_rows+=("$(printf '%-22s %9s %7s %8s %8s %7s %8s' "$name" "$n" \
      "$(awk -v b="${bytes_of[$name:$n]}" 'BEGIN {printf "%.1f", b / 1048576}')" \
      "$(awk -v k="${kb_of[$name:$n]}" 'BEGIN {printf "%.1f", k / 1024}')" \
      "$([ "${pykb_of[$name:$n]}" = - ] && echo - || awk -v k="${pykb_of[$name:$n]}" 'BEGIN {printf "%.1f", k / 1024}')" \
      "$([ "${pykb_of[$name:$n]}" = - ] && echo - || ratio "${kb_of[$name:$n]}" "${pykb_of[$name:$n]}")" \
      "$(awk -v k="${kb_of[$name:$n]}" -v b="${bytes_of[$name:$n]}" 'BEGIN {printf "%.1f", k * 1024 / b}')")")
  done
done
if [ "${#mem_rows[@]}" -gt 0 ]; then
  echo
  echo "Peak memory (issue 24 shapes; medians): the rewrite's against Python's and against the model's size"
  printf '%-22s %9s %7s %8s %8s %7s %8s\n' workload N MiB "rw MB" "py MB" "rw/py" "rw/model"
  printf '%s\n' "${mem_rows[@]}"
fi
if [ "$batch" -gt 0 ]; then
  echo
  echo "$batch small models in one directory: -j 1 ${batch_serial} s, -j 2 ${batch_parallel} s ($(ratio "$batch_parallel" "$batch_serial")x)"
  # the share of the serial run that is file creation, and how well two
  # threads overlap that part on this file system
  share=$(awk -v s="$batch_serial" -v c="$create_serial" 'BEGIN {printf "%.0f", 100 * c / s}')
  # what two workers that share nothing of the tool's reach on this machine,
  # in the same rounds (they start twice and split the models in halves
  # beforehand, so -j 2 may also be a little faster)
  echo "  two separate -j 1 processes at once, half the models each, into the same directory: ${batch_processes} s ($(ratio "$batch_processes" "$batch_serial")x -j 1; -j 2 takes $(ratio "$batch_parallel" "$batch_processes")x of it)"
  echo "  their outputs' file creation alone ($batch files of $mean_bytes bytes, no model work): 1 thread ${create_serial} s (${share}% of -j 1), 2 threads ${create_parallel} s ($(ratio "$create_parallel" "$create_serial")x)"
fi
echo

# ---- targets (issue 11) ----------------------------------------------------------
if [ -n "$big_fast" ]; then
  target "1 GB LSTM, default <= 1.5x cat" "$(verdict le "$(ratio "$big_fast" "$big_cat")" 1.5)" \
    "$(ratio "$big_fast" "$big_cat")x"
  target "1 GB LSTM, durable <= 1.2x cat && sync" "$(verdict le "$(ratio "$big_durable" "$big_catsync")" 1.2)" \
    "$(ratio "$big_durable" "$big_catsync")x"
  target "1 GB LSTM, peak RSS <= 16 MB" "$(verdict le "$big_kb" 16384)" "$(awk -v k="$big_kb" 'BEGIN {printf "%.1f MB", k / 1024}')"
  if [ "$big_py" != - ]; then
    target "1 GB LSTM, >= 10x the Python route" "$(verdict le 10 "$(ratio "$big_py" "$big_fast")")" \
      "$(ratio "$big_py" "$big_fast")x"
  fi
fi
for n in "${bank_list[@]}"; do
  r=$(ratio "${rw_of[bank:$n]}" "${cat_of[bank:$n]}")
  target "$n GRUs with 64 KiB weights <= 3x cat" "$(verdict le "$r" 3)" "${r}x"
done
if [ "$python_ok" = 1 ]; then
  for name in grus chain exposed; do
    local_list="${name}_list[@]"
    ns=("${!local_list}")
    [ "${#ns[@]}" -gt 0 ] || continue
    n=${ns[$((${#ns[@]} - 1))]} # the largest: the last
    case $name in
      grus) what="$n small GRUs" ;;
      chain) what="$n-node chain" ;;
      *) what="$n-node chain, state exposed" ;;
    esac
    r=$(ratio "${rw_of[$name:$n]}" "${py_of[$name:$n]}")
    target "$what <= 0.5x Python" "$(verdict le "$r" 0.5)" "${r}x"
  done
fi
# issue 24: time <= 0.3x Python's; memory <= 0.5x Python's (the chains) or
# <= 10x the model's size (If nodes, value_info'd GRUs)
for name in gchain lchain ifs vigru; do
  local_list="${name}_list[@]"
  ns=("${!local_list}")
  [ "${#ns[@]}" -gt 0 ] || continue
  case $name in
    gchain) sel=("${ns[@]}") what="chained GRUs, own weights" ;;
    lchain) sel=("${ns[$((${#ns[@]} - 1))]}") what="node Add/Identity chain after two LSTMs" ;;
    ifs) sel=("${ns[$((${#ns[@]} - 1))]}") what="If nodes" ;;
    *) sel=("${ns[$((${#ns[@]} - 1))]}") what="value_info'd GRUs" ;;
  esac
  for n in "${sel[@]}"; do
    if [ "$python_ok" = 1 ]; then
      r=$(ratio "${rw_of[$name:$n]}" "${py_of[$name:$n]}")
      target "$n $what <= 0.3x Python" "$(verdict le "$r" 0.3)" "${r}x"
    fi
    case $name in
      gchain|lchain)
        if [ "$python_ok" = 1 ]; then
          r=$(ratio "${kb_of[$name:$n]}" "${pykb_of[$name:$n]}")
          target "$n $what, peak memory <= 0.5x Python's" "$(verdict le "$r" 0.5)" \
            "${r}x ($((${kb_of[$name:$n]} / 1024)) MB against $((${pykb_of[$name:$n]} / 1024)) MB)"
        fi ;;
      *)
        r=$(awk -v k="${kb_of[$name:$n]}" -v b="${bytes_of[$name:$n]}" 'BEGIN {printf "%.2f", k * 1024 / b}')
        target "$n $what, peak memory <= 10x the model" "$(verdict le "$r" 10)" \
          "${r}x ($((${kb_of[$name:$n]} / 1024)) MB for $(awk -v b="${bytes_of[$name:$n]}" 'BEGIN {printf "%.1f", b / 1048576}') MiB)" ;;
    esac
  done
done
if [ "$batch" -gt 0 ]; then
  target "$batch small models, -j 2 <= 0.6x -j 1" "$(verdict le "$(ratio "$batch_parallel" "$batch_serial")" 0.6)" \
    "$(ratio "$batch_parallel" "$batch_serial")x"
fi
# exponents: between the smallest and the largest of each series, from each
# command's fastest round. What slows a round down on a shared virtual
# machine only ever adds time: the disk, and system time that varies for the
# same command (cat alone took 0.7 s to 3.8 s of system time to copy the same
# 2 GB to tmpfs; one likely cause is the kernel handing freed pages back to
# the host, which the next large write faults back in). The fastest round
# shows the tool's own scaling; the exponent from the medians is printed
# beside.
exp_line() { # NAME MIN1 N1 MIN2 N2 MED1 MED2 [CATMIN1 CATMIN2 USER1 USER2]: for a
  # series bound by the disk, cat's exponent and that of the rewrite's user CPU
  # time beside
  local e note; e=$(exponent "$2" "$3" "$4" "$5")
  note="; from the medians: $(exponent "$6" "$3" "$7" "$5")"
  [ -z "${8:-}" ] ||
    note+="; cat in the same run: $(exponent "$8" "$3" "$9" "$5"); the rewrite's user time: $(exponent "${10}" "$3" "${11}" "$5")"
  target "exponent, time against $1 <= 1.1" "$(verdict le "$e" 1.1)" "$e ($3 -> $5, fastest rounds$note)"
}
if [ "${#lstm_bytes[@]}" -ge 2 ]; then
  last=$((${#lstm_bytes[@]} - 1))
  exp_line "model size (LSTM)" "${lstm_fast_min[0]}" "${lstm_bytes[0]}" \
    "${lstm_fast_min[$last]}" "${lstm_bytes[$last]}" "${lstm_fast[0]}" "${lstm_fast[$last]}"
fi
for spec in "bank:large-tensor count" "grus:recurrent-node count" "chain:node count" \
  "exposed:node count, state exposed" "gchain:chained GRUs (own weights)" \
  "lchain:node count, Add/Identity chain" "ifs:If count" "vigru:value_info'd GRUs"; do
  name=${spec%%:*}
  local_list="${name}_list[@]"
  ns=("${!local_list}")
  [ "${#ns[@]}" -ge 2 ] || continue
  a=${ns[0]} b=${ns[$((${#ns[@]} - 1))]}
  args=("${spec#*:}" "${rwmin_of[$name:$a]}" "$a" "${rwmin_of[$name:$b]}" "$b"
    "${rw_of[$name:$a]}" "${rw_of[$name:$b]}")
  if [ "$name" = bank ]; then # bound by the disk: cat's scaling is the floor
    args+=("${catmin_of[$name:$a]}" "${catmin_of[$name:$b]}" "${user_of[$name:$a]}" "${user_of[$name:$b]}")
  fi
  exp_line "${args[@]}"
done
printf '%s\n' "${results[@]}"
echo "(took $((SECONDS - start)) s after the build)"
exit "$fail"
