#!/usr/bin/env bash
# Files and streams: what the tool does to the files around it.
#   test_files.sh TOOL MODELS_DIR MAKE_BAD_MODELS
# Replaced files keep their mode and owner, new ones get 0666 & ~umask; the
# longest legal names work; symbolic links to devices are not followed;
# inputs are never replaced by accident; --sync writes the same bytes; a lost
# report is an error; streams are refused at the first bad byte.
tool=$1 models=$2 gen=$3
source "$(dirname "$0")/../bad_input/lib.sh" # the harness (lib.sh) and run_tool, crash_report
# check NAME COMMAND...: passes when the command succeeds
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name" "${why:-}"; fi; why=; }

src=$models/gru_1layer_fixed.onnx
"$tool" "$src" -o "$work/reference.onnx" -q || { echo "cannot make the reference output"; exit 1; }
same_as_reference() { cmp -s "$work/reference.onnx" "$1"; }

# ---- modes and owners ----------------------------------------------------------
d=$work/modes && mkdir -p "$d"
printf 'old\n' > "$d/private.onnx" && chmod 600 "$d/private.onnx"
"$tool" "$src" -o "$d/private.onnx" -q
why="mode $(stat -c %a "$d/private.onnx")"
check "a replaced 0600 output stays 0600" [ "$(stat -c %a "$d/private.onnx")" = 600 ]
printf 'old\n' > "$d/group.onnx" && chmod 640 "$d/group.onnx"
"$tool" "$src" -o "$d/group.onnx" -q
why="mode $(stat -c %a "$d/group.onnx")"
check "a replaced 0640 output stays 0640" [ "$(stat -c %a "$d/group.onnx")" = 640 ]
cp "$src" "$d/inplace.onnx" && chmod 604 "$d/inplace.onnx"
"$tool" "$d/inplace.onnx" -o "$d/inplace.onnx" -q
why="mode $(stat -c %a "$d/inplace.onnx")"
check "an in-place rewrite keeps the mode (0604)" [ "$(stat -c %a "$d/inplace.onnx")" = 604 ]
(umask 027 && "$tool" "$src" -o "$d/new.onnx" -q)
why="mode $(stat -c %a "$d/new.onnx")"
check "a new output gets 0666 & ~umask (umask 027: 0640)" [ "$(stat -c %a "$d/new.onnx")" = 640 ]
if [ "$(id -u)" = 0 ] && getent passwd nobody > /dev/null && getent group nogroup > /dev/null; then
  cp "$src" "$d/owned.onnx" && chown nobody:nogroup "$d/owned.onnx" && chmod 600 "$d/owned.onnx"
  "$tool" "$d/owned.onnx" -o "$d/owned.onnx" -q
  why="$(stat -c '%U:%G %a' "$d/owned.onnx")"
  check "an in-place rewrite by root keeps nobody:nogroup 0600" [ "$why" = "nobody:nogroup 600" ]
else
  echo "SKIP owner kept: needs root and the nobody user"
fi
check "no temporary file left" [ -z "$(ls -A "$d" | grep '^\.')" ]

# ---- extended attributes and ACLs (issue 26) -------------------------------------
# A replaced file keeps its extended attributes, its POSIX ACL among them:
# without it the owning group (---) would get the mask (rw-) and the named
# user would lose its entry. Set with python3 (no setfacl needed); skipped
# where the file system keeps neither.
xattr_py() { /usr/bin/python3 -c "$1" "${@:2}" 2> /dev/null; }
set_attrs='
import os, struct, sys
f = sys.argv[1]
os.setxattr(f, "user.origin", b"model zoo")
entry = lambda tag, perm, who=0xffffffff: struct.pack("<HHI", tag, perm, who)
acl = struct.pack("<I", 2) + entry(1, 6) + entry(2, 6, 65534) + entry(4, 0) + entry(0x10, 6) + entry(0x20, 0)
os.setxattr(f, "system.posix_acl_access", acl)'
show_attrs='
import os, sys
f = sys.argv[1]
print(" ".join("%s=%s" % (n, os.getxattr(f, n).hex()) for n in sorted(os.listxattr(f))), oct(os.stat(f).st_mode & 0o777))'
d=$work/xattrs && mkdir -p "$d"
printf 'old\n' > "$d/acl.onnx" && chmod 600 "$d/acl.onnx"
if xattr_py "$set_attrs" "$d/acl.onnx"; then
  before=$(xattr_py "$show_attrs" "$d/acl.onnx")
  "$tool" "$src" -o "$d/acl.onnx" -q
  after=$(xattr_py "$show_attrs" "$d/acl.onnx")
  why="before: $before; after: $after"
  attrs_kept() { [ -n "$before" ] && [ "$before" = "$after" ] && same_as_reference "$d/acl.onnx"; }
  check "a replaced file keeps its ACL (group ---, user nobody rw-) and extended attributes" attrs_kept
else
  echo "SKIP extended attributes and ACLs: the file system here keeps neither"
fi

# ---- names of NAME_MAX bytes ------------------------------------------------------
long=$(printf 'm%.0s' $(seq 250)).onnx   # 255 bytes
"$tool" "$src" -o "$work/$long" -q
why="status $?"
check "an output name of 255 bytes is written" same_as_reference "$work/$long"
printf 'old\n' > "$work/$long"
"$tool" "$src" -o "$work/$long" -q
check "and replaced" same_as_reference "$work/$long"

# ---- symbolic links at the output -------------------------------------------------
d=$work/links && mkdir -p "$d"
ln -s /dev/null "$d/to-device.onnx"
"$tool" "$src" -o "$d/to-device.onnx" 2> "$work/stderr"
status=$? err=$(cat "$work/stderr")
why="status $status: $err"
check "a symbolic link to a device is refused (status 1)" [ "$status" -eq 1 ]
case "$err" in
  "rnnstate-rewrite: $d/to-device.onnx: cannot write output: a symbolic link to a device, FIFO or socket is not followed (name the device itself)") pass "with a message saying so" ;;
  *) fail "symlink message" "$err" ;;
esac
check "the link is left as it was" [ "$(readlink "$d/to-device.onnx")" = /dev/null ]
mkfifo "$d/fifo" && ln -s fifo "$d/to-fifo.onnx"
timeout 10 "$tool" "$src" -o "$d/to-fifo.onnx" 2> /dev/null
status=$?
why="status $status (124: it opened the FIFO and waited for a reader)"
check "a symbolic link to a FIFO is refused without opening it" [ "$status" -eq 1 ]
printf 'target\n' > "$d/target.onnx" && ln -s target.onnx "$d/to-file.onnx"
"$tool" "$src" -o "$d/to-file.onnx" -q
check "a symbolic link to a regular file is replaced, like mv does" same_as_reference "$d/to-file.onnx"
check "and its target is left alone" [ "$(cat "$d/target.onnx")" = target ] && [ ! -L "$d/to-file.onnx" ]
"$tool" "$src" -o /dev/null -q
why="status $?"
check "a device itself is written in place (-o /dev/null)" [ -c /dev/null ]

# ---- inputs never replaced by accident ----------------------------------------------
# refused_onto_input NAME DIR ARGS...: exit 1, a message, the input unchanged
refused_onto_input() {
  local name=$1 input=$2; shift 2
  local sum; sum=$(sha256sum "$input" | cut -d' ' -f1)
  "$tool" "$@" > /dev/null 2> "$work/stderr"
  local status=$? err; err=$(cat "$work/stderr")
  if [ "$status" -ne 1 ]; then fail "$name" "status $status: $err"; return; fi
  case "$err" in
    *"not written: the output "*" is the input "*"(the same file); only -o rewrites a model in place"*) ;;
    *) fail "$name" "message: $err"; return ;;
  esac
  if [ "$(sha256sum "$input" | cut -d' ' -f1)" != "$sum" ]; then fail "$name" "the input changed"; return; fi
  pass "$name"
}
d=$work/inputs && mkdir -p "$d/sub"
cp "$src" "$d/model.onnx"
refused_onto_input "-d onto the input's own directory" "$d/model.onnx" "$d/model.onnx" -d "$d"
refused_onto_input "-d with .. onto the input" "$d/model.onnx" "$d/model.onnx" -d "$d/sub/.."
cp "$src" "$d/sub/inner.onnx"
refused_onto_input "-r DIR -d DIR" "$d/sub/inner.onnx" -r "$d" -d "$d"
# the first job writes a new file; the second's output is its own input
mkdir -p "$d/later" && cp "$src" "$d/later/x.onnx"
refused_onto_input "a later job's output is its input" "$d/later/x.onnx" "$src" "$d/later/x.onnx" -d "$d/later"
refused_onto_input "a later job's output is its input, -j 2" "$d/later/x.onnx" -j 2 "$src" "$d/later/x.onnx" \
  -d "$d/later"
ln -s model.onnx "$d/model.updated.onnx"
refused_onto_input "a symbolic link at the default output pointing to the input" "$d/model.onnx" "$d/model.onnx"
rm "$d/model.updated.onnx"
cp "$src" "$d/a.onnx" && cp "$src" "$d/b.onnx"
"$tool" "$d/a.onnx" "$d/b.onnx" -d "$d" > /dev/null 2> "$work/stderr"
status=$?
why="status $status: $(cat "$work/stderr")"
check "two inputs onto themselves: both refused, exit 1" [ "$status" -eq 1 ] && [ "$(grep -c 'not written' "$work/stderr")" -eq 2 ]
cp "$src" "$d/explicit.onnx"
"$tool" "$d/explicit.onnx" -o "$d/explicit.onnx" -q
why="status $?"
check "an explicit -o naming the input rewrites it in place" same_as_reference "$d/explicit.onnx"

# ---- --sync ---------------------------------------------------------------------------
"$tool" "$src" -o "$work/synced.onnx" -q --sync
check "--sync writes the same bytes" same_as_reference "$work/synced.onnx"
"$tool" "$src" -o "$work/nosync.onnx" -q --no-sync
check "--no-sync is accepted and writes the same bytes" same_as_reference "$work/nosync.onnx"
# the name is durable too (issue 26): the directory is fsynced after the
# linkat() that names a new output and after the rename() over an old one
# synced_name NAME: strace's record of a --sync save to $work/sync/NAME shows
# an fsync of the directory after the call that made the name (LeakSanitizer
# cannot run under ptrace: a sanitized build traces without it)
synced_name() {
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o "$work/strace" -e trace=linkat,rename,renameat,renameat2,openat,fsync \
    "$tool" "$src" -o "$work/sync/$1" -q --sync || return 1
  awk -v dir="\"$work/sync\"" '
    /(linkat|rename)[a-z0-9]*\(/ && /= 0$/ { named = 1; next }
    named && /openat\(/ && index($0, dir ",") && /O_DIRECTORY/ { split($0, a, "= "); fd = a[2]; next }
    named && fd != "" && $0 ~ ("fsync\\(" fd "\\) += 0") { found = 1 }
    END { exit !found }' "$work/strace"
}
if command -v strace > /dev/null && strace -o /dev/null true 2> /dev/null; then
  mkdir -p "$work/sync"
  check "--sync fsyncs the directory after linking a new output" synced_name new.onnx
  check "--sync fsyncs the directory after renaming over an old output" synced_name new.onnx
  # stale temporary files are looked for once per output directory (issue
  # 26): outputs alternating between two directories open each for listing
  # once, not once per model
  mkdir -p "$work/alt/a" "$work/alt/b"
  alternating=()
  for i in 1 2 3 4 5 6; do
    cp "$src" "$work/alt/a/m$i.onnx" && cp "$src" "$work/alt/b/m$i.onnx"
    alternating+=("$work/alt/a/m$i.onnx" "$work/alt/b/m$i.onnx")
  done
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o "$work/strace" -e trace=openat "$tool" -q -j 1 "${alternating[@]}"
  listings=$(grep -c -e "\"$work/alt/[ab]\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY" "$work/strace")
  why="$listings listings of the two directories for 12 models"
  check "stale-file cleanup lists each output directory once (alternating a/ b/)" [ "$listings" -eq 2 ]
else
  echo "SKIP --sync directory fsync, cleanup once per directory: strace is not usable here"
fi

# ---- reports that cannot be delivered ---------------------------------------------------
lost_report() {
  local name=$1 where=$2; shift 2
  case "$where" in
    closed) "$@" 2> "$work/stderr" >&- ;;
    full) "$@" 2> "$work/stderr" > /dev/full ;;
  esac
  local status=$? err; err=$(tail -n 1 "$work/stderr")
  if [ "$status" -ne 1 ]; then fail "$name" "status $status"; return; fi
  case "$err" in
    "rnnstate-rewrite: cannot write the "*"to standard output: "*" (the models were processed: 1 rewritten, 0 unchanged, 0 failed)") ;;
    *) fail "$name" "message: $err"; return ;;
  esac
  if ! same_as_reference "$work/lost.onnx"; then fail "$name" "the output was not written"; return; fi
  rm -f "$work/lost.onnx"
  pass "$name: status 1, $err"
}
lost_report "text report to a closed standard output" closed "$tool" "$src" -o "$work/lost.onnx"
lost_report "text report to /dev/full" full "$tool" "$src" -o "$work/lost.onnx"
lost_report "--json to a closed standard output" closed "$tool" "$src" -o "$work/lost.onnx" --json
# --json is written as the run goes: in a batch whose document outgrows
# stdio's buffer the write fails midway, and its cause is still the one named
mkdir -p "$work/json-full"
for i in $(seq 1 40); do ln -f "$src" "$work/json-full/m$i.onnx"; done
"$tool" "$work/json-full" -d "$work/json-full.out" --json 2> "$work/stderr" > /dev/full
status=$? err=$(tail -n 1 "$work/stderr")
why="status $status: $err"
check "--json of a 40-model batch to /dev/full: status 1, ENOSPC named, the models written" \
  [ "$status:$err:$(ls "$work/json-full.out" | wc -l)" = "1:rnnstate-rewrite: cannot write the JSON report to standard output: No space left on device (the models were processed: 40 rewritten, 0 unchanged, 0 failed):40" ]

# a reader that stops early (| head) stops neither the batch nor a save: the
# write fails with EPIPE, every model is written, and the lost report is named
rm -rf "$work/json-pipe.out"
"$tool" "$work/json-full" -d "$work/json-pipe.out" --json 2> "$work/stderr" | head -c 100 > /dev/null
status=${PIPESTATUS[0]} err=$(tail -n 1 "$work/stderr")
why="status $status: $err"
check "--json of a 40-model batch into '| head -c 100': status 1, EPIPE named, all 40 models written" \
  [ "$status:$err:$(ls "$work/json-pipe.out" | wc -l)" = "1:rnnstate-rewrite: cannot write the JSON report to standard output: Broken pipe (the models were processed: 40 rewritten, 0 unchanged, 0 failed):40" ]

# ---- streams -----------------------------------------------------------------------------
"$tool" - -o "$work/stdin.onnx" <&- 2> "$work/stderr"
status=$? err=$(cat "$work/stderr")
why="status $status: $err"
check "closed standard input: 'cannot read: Bad file descriptor'" \
  [ "$status:$err" = "1:rnnstate-rewrite: <stdin>: cannot read: Bad file descriptor" ]
cat "$src" | "$tool" - -o "$work/piped.onnx" -q
check "a model piped on standard input is rewritten like the file" same_as_reference "$work/piped.onnx"
# Weights kept in memory (below 64 MiB) or spooled to disk (above): the
# output is the file route's, byte for byte.
for n in 8 120; do
  "$gen" big-weights "$work/big.onnx" "$n"
  cat "$work/big.onnx" | "$tool" - -o "$work/big-piped.onnx" -q
  "$tool" "$work/big.onnx" -o "$work/big-file.onnx" -q
  check "a piped model of $(($(stat -c %s "$work/big.onnx") >> 20)) MiB is rewritten like the file" \
    cmp -s "$work/big-piped.onnx" "$work/big-file.onnx"
  rm -f "$work/big.onnx" "$work/big-piped.onnx" "$work/big-file.onnx"
done
# 100 bytes that prove at byte 92 that they are no model, then a pipe that
# stalls for 30 s: the refusal must not wait for the end of the stream
start=$(date +%s)
{ printf '\x08\x07'; head -c 90 /dev/zero | tr '\0' 'A'; printf '\x0f'; head -c 7 /dev/zero; sleep 30; } |
  timeout 20 "$tool" - -o "$work/stalled.onnx" 2> "$work/stderr"
status=${PIPESTATUS[1]} err=$(cat "$work/stderr")
why="status $status after $(( $(date +%s) - start )) s: $err"
check "a stalled pipe of 100 bad bytes is refused at once" \
  [ "$status:$err" = "1:rnnstate-rewrite: <stdin>: not an ONNX model: unexpected wire type 7 at byte 92" ]
timeout 20 "$tool" /dev/urandom -o "$work/random.onnx" 2> "$work/stderr"
status=$? err=$(cat "$work/stderr")
why="status $status: $err"
case "$status:$err" in
  "1:rnnstate-rewrite: /dev/urandom: not an ONNX model: "*) pass "/dev/urandom is refused at its first bad bytes: $err" ;;
  *) fail "/dev/urandom" "$why" ;;
esac
check "nothing written for either" [ ! -e "$work/stalled.onnx" ] && [ ! -e "$work/random.onnx" ]

finish
