#!/usr/bin/env bash
# failing_io.sh TOOL SHIM MODELS_DIR [MAKE_BAD_MODELS [MALLOC_SHIM]]
# Failing disks, simulated with the LD_PRELOAD shim tests/tools/failing_io.c:
# write(), fsync(), close(), rename(), linkat(), open(O_TMPFILE), open(O_CREAT)
# and fchmod() fail with a chosen errno. After every failure: exit 1, one
# message with the errno's text, no output and no temporary file, a previous
# output and the input untouched. Then the process is killed mid-write
# (SIGKILL, SIGTERM, SIGINT): nothing may be left behind either.
set -u
tool=$1 shim=$2 models=$3 gen=${4:-} malloc_shim=${5:-}
source "$(dirname "$0")/lib.sh"

# gcc's ASan runtime insists on coming first in the library list; the shim
# is not sanitized and forwards to it, so the check can go.
export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0"

src=$models/gru_1layer_fixed.onnx
"$tool" "$src" -o "$work/reference.onnx" -q || { echo "cannot make the reference output"; exit 1; }
log=$work/shim.log

# shim_run FAIL_IO ARGS...: runs the tool with the shim; $status, $out, $err.
shim_run() {
  local spec=$1; shift
  : > "$log"
  (
    export LD_PRELOAD=$shim FAIL_IO=$spec FAIL_IO_LOG=$log FAIL_IO_SHORT_WRITES=${SHORT:-0}
    timeout -k 5 "$RUN_TIMEOUT" "$tool" "$@"
    exit $?
  ) > "$work/stdout" 2> "$work/stderr"
  status=$? out=$(cat "$work/stdout") err=$(cat "$work/stderr")
}

# fails NAME FAIL_IO ERRNO_TEXT [inplace|existing]: the write must fail
fails() {
  local name=$1 spec=$2 text=$3 mode=${4:-new}
  fresh_dir
  cp "$src" "$d/in.onnx"
  local target=$d/out.onnx
  case "$mode" in
    inplace) target=$d/in.onnx ;;
    existing) printf 'previous output\n' > "$target" ;;
  esac
  shim_run "$spec" "$d/in.onnx" -o "$target" ${EXTRA:-}
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  if [ ! -s "$log" ]; then fail "$name" "the shim injected nothing (is the tool statically linked or built with clang's static ASan?)"; return; fi
  if [ "$status" -ne 1 ]; then fail "$name" "exit status $status, expected 1; stderr: $err"; return; fi
  case "$err" in
    "rnnstate-rewrite: $target: cannot write output: $text") ;;
    *) fail "$name" "stderr '$err', expected '...: cannot write output: $text'"; return ;;
  esac
  if [ -n "$(temp_files "$d")" ]; then fail "$name" "temporary file left: $(temp_files "$d")"; return; fi
  if ! cmp -s "$src" "$d/in.onnx"; then fail "$name" "the input changed"; return; fi
  case "$mode" in
    new) if [ -e "$target" ]; then fail "$name" "an output was written"; return; fi ;;
    existing) if [ "$(cat "$target")" != "previous output" ]; then fail "$name" "the previous output was damaged"; return; fi ;;
  esac
  if [ "$(leftovers "$d" | grep -cv -e '^in\.onnx$' -e '^out\.onnx$')" -ne 0 ]; then
    fail "$name" "left behind: $(leftovers "$d")"; return
  fi
  pass "$name ($(sort -u "$log" | tr '\n' ' '))"
}

# succeeds NAME FAIL_IO: the failure is one the tool works around; the output
# must be byte-identical to a normal run's
succeeds() {
  local name=$1 spec=$2
  fresh_dir
  shim_run "$spec" "$src" -o "$d/out.onnx"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  if [ ! -s "$log" ]; then fail "$name" "the shim injected nothing"; return; fi
  if [ "$status" -ne 0 ]; then fail "$name" "exit status $status; stderr: $err"; return; fi
  if ! cmp -s "$work/reference.onnx" "$d/out.onnx"; then fail "$name" "output differs from a normal run"; return; fi
  if [ "$(leftovers "$d")" != "out.onnx" ]; then fail "$name" "left behind: $(leftovers "$d")"; return; fi
  local mode; mode=$(stat -c %a "$d/out.onnx")
  local want; want=$(printf '%o' $((0666 & ~0$(umask))))
  if [ "$mode" != "$want" ]; then fail "$name" "output mode $mode, expected $want"; return; fi
  pass "$name ($(sort -u "$log" | tr '\n' ' '))"
}

# ---- the O_TMPFILE route -------------------------------------------------------------
# A new output is linked straight to its name; a replaced one is linked to a
# temporary name, then renamed; fsync only with --sync.
fails "write: ENOSPC" "write:ENOSPC" "No space left on device"
fails "write: EDQUOT" "write:EDQUOT" "Disk quota exceeded"
SHORT=1 fails "write: EIO after three short writes" "write:EIO:3" "Input/output error"
EXTRA=--sync fails "--sync: fsync EIO" "fsync:EIO" "Input/output error"
# the second fsync is the directory's, after linkat() made the name (issue
# 26): its failure fails the model, and the new name is removed
EXTRA=--sync fails "--sync: the directory's fsync EIO" "fsync:EIO:1" "Input/output error"
fails "open(O_TMPFILE): EACCES" "tmpfile:EACCES" "Permission denied"
fails "open(O_TMPFILE): EROFS" "tmpfile:EROFS" "Read-only file system"
fails "open(O_TMPFILE): ENOSPC" "tmpfile:ENOSPC" "No space left on device"
fails "linkat (naming the file): EACCES" "linkat:EACCES" "Permission denied"
fails "linkat: EIO" "linkat:EIO" "Input/output error"
fails "linkat: ENOSPC" "linkat:ENOSPC" "No space left on device"
fails "linkat to a temporary name: EIO, over an existing output" "linkat:EIO" "Input/output error" existing
fails "rename: EIO over an existing output" "rename:EIO" "Input/output error" existing
fails "rename: EXDEV over an existing output" "rename:EXDEV" "Invalid cross-device link" existing
fails "fchmod (keeping the mode): EPERM" "fchmod:EPERM" "Operation not permitted" existing
fails "write: ENOSPC over an existing output" "write:ENOSPC" "No space left on device" existing
fails "write: ENOSPC, in-place rewrite" "write:ENOSPC" "No space left on device" inplace
fails "rename: EIO, in-place rewrite" "rename:EIO" "Input/output error" inplace
succeeds "short writes are completed" "write:short"
SHORT=1 succeeds "every write short" "write:short"
succeeds "write interrupted (EINTR) is retried" "write:EINTR"

# ---- the fallback route (no O_TMPFILE: a named temporary file) ---------------------------
succeeds "no O_TMPFILE (EOPNOTSUPP): named temporary file" "tmpfile:EOPNOTSUPP"
succeeds "no O_TMPFILE (EISDIR, old kernels)" "tmpfile:EISDIR"
succeeds "linkat EPERM (no /proc): named temporary file" "linkat:EPERM"
# linkat(AT_EMPTY_PATH) refused as kernels before 6.10 refuse it without
# CAP_DAC_READ_SEARCH: the file is named through /proc instead (not through a
# named temporary file, whose creation is made to fail here)
succeeds "linkat(AT_EMPTY_PATH) refused (ENOENT): named through /proc" "flink:ENOENT,create:EIO"
fails "linkat(AT_EMPTY_PATH): EIO is an error, not a refusal" "flink:EIO" "Input/output error"
fails "linkat(AT_EMPTY_PATH) refused, then EIO through /proc" "flink:ENOENT,linkat:EIO" "Input/output error"

# ...and once refused, it is not tried again in the run: two models, the
# second replacing an output already there (a temporary name, then rename)
flink_refused_once() {
  local name="linkat(AT_EMPTY_PATH) refused: tried once a run; an existing output replaced through /proc"
  fresh_dir
  cp "$src" "$d/a.onnx"
  cp "$src" "$d/b.onnx"
  mkdir "$d/out"
  printf 'previous output\n' > "$d/out/b.onnx"
  shim_run "flink:ENOENT,create:EIO" -j 1 -q "$d/a.onnx" "$d/b.onnx" -d "$d/out"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  if [ "$status" -ne 0 ]; then fail "$name" "exit status $status; stderr: $err"; return; fi
  local tries; tries=$(grep -c '^flink' "$log")
  if [ "$tries" -ne 1 ]; then fail "$name" "linkat(AT_EMPTY_PATH) refused $tries times, expected once"; return; fi
  local m
  for m in a b; do
    if ! cmp -s "$work/reference.onnx" "$d/out/$m.onnx"; then fail "$name" "out/$m.onnx differs from a normal run"; return; fi
  done
  if [ "$(leftovers "$d/out" | tr '\n' ' ')" != "a.onnx b.onnx " ]; then fail "$name" "left behind: $(leftovers "$d/out")"; return; fi
  pass "$name"
}
flink_refused_once
fails "fallback: write ENOSPC" "tmpfile:EOPNOTSUPP,write:ENOSPC" "No space left on device"
SHORT=1 fails "fallback: write EIO after short writes" "tmpfile:EOPNOTSUPP,write:EIO:2" "Input/output error"
EXTRA=--sync fails "fallback, --sync: fsync EIO" "tmpfile:EOPNOTSUPP,fsync:EIO" "Input/output error"
EXTRA=--sync fails "fallback, --sync: the directory's fsync EIO" "tmpfile:EOPNOTSUPP,fsync:EIO:1" "Input/output error"
fails "fallback: close EIO (NFS)" "tmpfile:EOPNOTSUPP,close:EIO" "Input/output error"
fails "fallback: fchmod EPERM" "tmpfile:EOPNOTSUPP,fchmod:EPERM" "Operation not permitted" existing
fails "fallback: creating the file: EACCES" "tmpfile:EOPNOTSUPP,create:EACCES" "Permission denied"
fails "fallback: rename EIO" "tmpfile:EOPNOTSUPP,rename:EIO" "Input/output error"
fails "fallback: rename EIO over an existing output" "tmpfile:EOPNOTSUPP,rename:EIO" "Input/output error" existing
fails "fallback: write ENOSPC, in-place rewrite" "tmpfile:EOPNOTSUPP,write:ENOSPC" "No space left on device" inplace

# ---- extended attributes that cannot be kept (issue 26) --------------------------------
# A replaced file's extended attributes (ACLs) go to the new file; where one
# cannot be set, the replace is refused with a message naming it, and the
# previous file stays as it was (both routes).
xattr_refused() {
  local name=$1 spec=$2
  fresh_dir
  printf 'previous output\n' > "$d/out.onnx"
  if ! /usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.origin", b"zoo")' "$d/out.onnx" 2> /dev/null; then
    echo "SKIP $name: no user extended attributes here"; return
  fi
  shim_run "$spec" "$src" -o "$d/out.onnx"
  local why; why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  local want="rnnstate-rewrite: $d/out.onnx: not replaced: its extended attribute 'user.origin' cannot be kept (Operation not supported); the file is as it was"
  if [ "$status" -ne 1 ] || [ "$err" != "$want" ]; then fail "$name" "status $status, stderr '$err'"; return; fi
  if [ "$(cat "$d/out.onnx")" != "previous output" ]; then fail "$name" "the previous output was damaged"; return; fi
  if [ -n "$(temp_files "$d")" ]; then fail "$name" "temporary file left: $(temp_files "$d")"; return; fi
  pass "$name"
}
xattr_refused "an extended attribute that cannot be kept refuses the replace" "fsetxattr:EOPNOTSUPP"
xattr_refused "the same on the named route" "tmpfile:EOPNOTSUPP,fsetxattr:EOPNOTSUPP"

# ---- the input shrinks while it is being rewritten ----------------------------------------
# Initializers over 64 KiB are copied from the input file at save time
# (lazy_scan.c). The shim holds the first write; meanwhile the input is
# truncated; the copy then comes up short and must fail cleanly. Four GRUs
# (2.3 MB of weights) overflow the writer's 256 KiB buffer, so that its first
# write comes before the copy is done.
fresh_dir
[ -n "$gen" ] && "$gen" big-weights "$d/in.onnx" 4 || cp "$src" "$d/in.onnx"
if [ "$(stat -c %s "$d/in.onnx")" -gt 65536 ]; then
  : > "$log"
  LD_PRELOAD=$shim FAIL_IO=write:sleep FAIL_IO_LOG=$log FAIL_IO_SLEEP=2 \
    "$tool" "$d/in.onnx" -o "$d/out.onnx" > /dev/null 2> "$work/stderr" &
  pid=$!
  for i in $(seq 100); do grep -q 'write sleep' "$log" 2> /dev/null && break; sleep 0.1; done
  truncate -s 1000 "$d/in.onnx"
  wait "$pid"
  status=$? err=$(cat "$work/stderr")
  why=$(crash_report "$status" "$work/stderr")
  if [ -n "$why" ]; then fail "input truncated during the save" "$why"
  elif [ "$status" -ne 1 ]; then fail "input truncated during the save" "exit status $status: $err"
  elif [ -n "$(leftovers "$d" | grep -v '^in\.onnx$')" ]; then fail "input truncated during the save" "left: $(leftovers "$d")"
  else
    case "$err" in
      "rnnstate-rewrite: $d/in.onnx: cannot read its weights back: the file shrank since it was loaded: nothing written")
        pass "input truncated during the save: the message names the input: $err" ;;
      *) fail "input truncated during the save" "message: $err" ;;
    esac
  fi
else
  echo "SKIP input truncated during the save: no make-bad-models beside the tool"
fi

# ---- the input changes between load and save -----------------------------------------------
# The shim holds the creation of the output's temporary file; meanwhile the
# input is touched (same size, new modification time). Its large weights
# would be copied from a file that is no longer the one that was parsed:
# refused, naming the input, nothing written.
fresh_dir
if [ -n "$gen" ]; then
  "$gen" big-weights "$d/in.onnx"
  : > "$log"
  LD_PRELOAD=$shim FAIL_IO=tmpfile:sleep FAIL_IO_LOG=$log FAIL_IO_SLEEP=2 \
    "$tool" "$d/in.onnx" -o "$d/out.onnx" > /dev/null 2> "$work/stderr" &
  pid=$!
  for i in $(seq 100); do grep -q 'tmpfile sleep' "$log" 2> /dev/null && break; sleep 0.1; done
  touch -d '2001-01-01 00:00:01' "$d/in.onnx"
  wait "$pid"
  status=$? err=$(cat "$work/stderr")
  case "$status:$err" in
    "1:rnnstate-rewrite: $d/in.onnx: the file changed since it was loaded (its size or modification time differs), so its weights cannot be copied: nothing written")
      [ "$(leftovers "$d")" = in.onnx ] && pass "input changed between load and save: refused, naming the input" ||
        fail "input changed between load and save" "left: $(leftovers "$d")" ;;
    *) fail "input changed between load and save" "status $status: $err" ;;
  esac
fi

# ---- out of memory while parsing -------------------------------------------------------------
# A model with a 1 MiB constant; failing_malloc.so refuses allocations of
# 1 MiB: the message says memory, not a corrupt file. (Not under a
# sanitizer, whose allocator the shim cannot stand in for.)
fresh_dir
if [ -n "$gen" ] && [ -n "$malloc_shim" ] && ! is_sanitized "$tool"; then
  "$gen" big-constant "$d/in.onnx"
  : > "$log"
  (LD_PRELOAD=$malloc_shim FAIL_IO_LOG=$log timeout -k 5 "$RUN_TIMEOUT" "$tool" "$d/in.onnx" -o "$d/out.onnx") \
    > /dev/null 2> "$work/stderr"
  status=$? err=$(cat "$work/stderr")
  case "$status:$err" in
    "1:rnnstate-rewrite: $d/in.onnx: out of memory while parsing the model ("*" bytes)")
      [ -s "$log" ] && [ "$(leftovers "$d")" = in.onnx ] && pass "out of memory while parsing is reported as such" ||
        fail "out of memory while parsing" "left: $(leftovers "$d"), shim log: $(cat "$log")" ;;
    *) fail "out of memory while parsing" "status $status: $err" ;;
  esac
else
  echo "SKIP out of memory while parsing: no failing_malloc.so, or a sanitized tool"
fi

# ---- standard output ------------------------------------------------------------------------
(timeout 60 "$tool" "$src" -o - > /dev/full) 2> "$work/stderr"
status=$? err=$(cat "$work/stderr")
case "$status:$err" in
  "1:rnnstate-rewrite: <stdout>: cannot write: No space left on device") pass "-o - into /dev/full" ;;
  *) fail "-o - into /dev/full" "status $status: $err" ;;
esac

# ---- killed mid-write ----------------------------------------------------------------------
# killed NAME SIGNAL FAIL_IO [inplace]: the shim makes a write sleep (5 s);
# the test waits until it does, kills the tool, and looks for leftovers. The
# tool may die at once or hold a catchable signal until its write is over
# and then clean up: both are fine, a file left behind is not.
killed() {
  local name=$1 sig=$2 spec=$3 mode=${4:-new}
  fresh_dir
  cp "$src" "$d/in.onnx"
  local target=$d/out.onnx
  [ "$mode" = inplace ] && target=$d/in.onnx
  : > "$log"
  # a background job of a script starts with SIGINT ignored: env restores
  # the default dispositions
  LD_PRELOAD=$shim FAIL_IO=$spec FAIL_IO_LOG=$log FAIL_IO_SLEEP=5 \
    env --default-signal=INT,TERM,HUP "$tool" "$d/in.onnx" -o "$target" > /dev/null 2> "$work/stderr" &
  local pid=$! i
  for i in $(seq 100); do
    grep -q 'write sleep' "$log" 2> /dev/null && break
    sleep 0.1
  done
  if ! grep -q 'write sleep' "$log"; then
    kill -KILL "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
    fail "$name" "the tool never reached its write"; return
  fi
  kill "-$sig" "$pid"
  wait "$pid" 2> /dev/null
  local st=$?
  # dying by the signal (>= 128) or cleaning up and exiting non-zero are both fine
  if [ "$st" -eq 0 ]; then fail "$name" "exit status 0: the tool finished despite SIG$sig"; return; fi
  if [ -n "$(temp_files "$d")" ]; then fail "$name" "temporary file left after SIG$sig: $(temp_files "$d")"; return; fi
  if ! cmp -s "$src" "$d/in.onnx"; then fail "$name" "the input changed"; return; fi
  if [ "$mode" = new ] && [ -e "$target" ]; then fail "$name" "an output appeared"; return; fi
  pass "$name"
}
killed "SIGKILL during the write" KILL "write:sleep"
killed "SIGKILL during an in-place rewrite" KILL "write:sleep" inplace
killed "SIGTERM during the write" TERM "write:sleep"
killed "SIGINT during the write" INT "write:sleep"
# Without O_TMPFILE the temporary file has a name from the start: a signal
# that can be caught must still remove it (SIGKILL cannot be, and is not
# tested on this route).
killed "fallback: SIGTERM during the write" TERM "tmpfile:EOPNOTSUPP,write:sleep"
killed "fallback: SIGINT during the write" INT "tmpfile:EOPNOTSUPP,write:sleep"
killed "fallback: SIGHUP during the write" HUP "tmpfile:EOPNOTSUPP,write:sleep"

# ---- killed between naming a replacement and renaming it ----------------------------------
# Replacing a file, the unnamed file gets a temporary name, then is renamed:
# the one instant a temporary file has a name on the O_TMPFILE route. The
# shim makes rename() sleep there. SIGKILL leaves the temporary file, and the
# next run into the directory removes it; a catchable signal waits for the
# rename, then takes effect: nothing is left.
in_rename_window() {
  local sig=$1
  fresh_dir
  cp "$src" "$d/in.onnx"
  printf 'previous output\n' > "$d/out.onnx"
  : > "$log"
  LD_PRELOAD=$shim FAIL_IO=rename:sleep FAIL_IO_LOG=$log FAIL_IO_SLEEP=3 \
    env --default-signal=INT,TERM,HUP "$tool" "$d/in.onnx" -o "$d/out.onnx" > /dev/null 2> "$work/stderr" &
  local pid=$! i
  for i in $(seq 100); do grep -q 'rename sleep' "$log" 2> /dev/null && break; sleep 0.1; done
  kill "-$sig" "$pid"
  wait "$pid" 2> /dev/null
  window_status=$?
}
in_rename_window KILL
left=$(temp_files "$d")
case "$left" in
  .rnnstate.tmp-[0-9]*-*) pass "SIGKILL between link and rename leaves one temporary file ($left)" ;;
  *) fail "SIGKILL between link and rename" "expected one temporary file, found: '$left'" ;;
esac
"$tool" "$src" -o "$d/other.onnx" -q
[ -z "$(temp_files "$d")" ] && [ "$(cat "$d/out.onnx")" = "previous output" ] &&
  pass "the next run into the directory removes it, the previous output intact" ||
  fail "stale temporary file" "left: $(leftovers "$d")"
# while it waits between link and rename, a live run holds the lock on its
# temporary file: a run in another PID namespace, which cannot see the
# process, still does not take the file for a stale one
if command -v flock > /dev/null; then
  fresh_dir
  cp "$src" "$d/in.onnx"
  printf 'previous output\n' > "$d/out.onnx"
  : > "$log"
  LD_PRELOAD=$shim FAIL_IO=rename:sleep FAIL_IO_LOG=$log FAIL_IO_SLEEP=2 \
    "$tool" "$d/in.onnx" -o "$d/out.onnx" > /dev/null 2> "$work/stderr" &
  pid=$!
  for i in $(seq 100); do grep -q 'rename sleep' "$log" 2> /dev/null && break; sleep 0.1; done
  held=$(temp_files "$d")
  if [ -n "$held" ] && ! flock -n "$d/$held" true; then locked=yes; else locked=no; fi
  wait "$pid"
  st=$?
  if [ "$locked" = yes ] && [ "$st" -eq 0 ] && cmp -s "$d/out.onnx" "$work/reference.onnx"; then
    pass "between link and rename the temporary file ($held) is locked"
  else
    fail "lock between link and rename" "temporary file '$held', locked: $locked, status $st"
  fi
else
  echo "SKIP lock between link and rename: no flock(1)"
fi
in_rename_window TERM
if [ "$window_status" -eq 143 ] && [ -z "$(temp_files "$d")" ] && cmp -s "$d/out.onnx" "$work/reference.onnx"; then
  pass "SIGTERM between link and rename: held until the rename, then fatal; nothing left"
else
  fail "SIGTERM between link and rename" "status $window_status, left: $(leftovers "$d")"
fi

# Stale files are recognised by name and free lock alone (issue 26): a live
# run's file (its lock held, as by a run in another PID namespace) and files
# of other programs stay; an unlocked one goes even when the PID in its name
# is alive (here this shell's: a live run always holds its lock).
fresh_dir
sh -c 'exit 0' & dead=$!; wait "$dead"
: > "$d/.rnnstate.tmp-$dead-0a0a0a"
: > "$d/.rnnstate.tmp-$dead-0b0b0b"
: > "$d/.rnnstate.tmp-$$-0c0c0c"
: > "$d/.other.tmp-$dead-0d0d0d"
if command -v flock > /dev/null; then
  flock "$d/.rnnstate.tmp-$dead-0b0b0b" sleep 30 & holder=$!
  for i in $(seq 50); do [ -e /proc/$holder ] && break; sleep 0.1; done
  sleep 0.3
else
  holder=; rm -f "$d/.rnnstate.tmp-$dead-0b0b0b"
fi
"$tool" "$src" -o "$d/out.onnx" -q
want=".other.tmp-$dead-0d0d0d${holder:+ .rnnstate.tmp-$dead-0b0b0b} out.onnx"
got=$(ls -A "$d" | sort | tr '\n' ' ' | sed 's/ $//')
want=$(printf '%s\n' $want | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] && pass "only unlocked temporary files are removed, whatever their PID" ||
  fail "stale temporary files" "left '$got', expected '$want'"
[ -n "$holder" ] && { kill "$holder" 2> /dev/null; wait "$holder" 2> /dev/null; }

finish
