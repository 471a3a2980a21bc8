#!/usr/bin/env bash
# `cmake --install` into a temporary prefix installs the Python module into
# PYTHON_DIR under it, where it finds the library of the same install (through
# _install.py: no RNNSTATE_LIBRARY, no LD_LIBRARY_PATH) and rewrites a model to
# the installed command line's bytes. Run by ctest (python.install):
#   test_install.sh BUILD_DIR SOURCE_DIR PYTHON PYTHON_DIR LIBDIR BINDIR
set -u
build=$1 src=$2 py=$3 pydir=$4 libdir=$5 bindir=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
prefix=$work/prefix
model=$src/models/denoiser_gru.onnx
if ! cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1; then
  cat "$work/install.log"; echo "FAIL cmake --install"; exit 1
fi
case $pydir in /*) moddir=$pydir/rnnstate ;; *) moddir=$prefix/$pydir/rnnstate ;; esac
missing=
for f in __init__.py _lib.py _install.py; do [ -f "$moddir/$f" ] || missing="$missing $f"; done
[ -z "$missing" ] && pass "installed ${moddir#$prefix/}/{__init__,_lib,_install}.py" ||
  fail "installed module" "missing:$missing in $moddir"
cd "$work"
out=$(env -u RNNSTATE_LIBRARY -u LD_LIBRARY_PATH PYTHONPATH="${moddir%/rnnstate}" "$py" -c '
import sys, rnnstate
print(rnnstate.library_path())
res = rnnstate.rewrite(sys.argv[1], output=sys.argv[2])
print(res.report["status"])' "$model" "$work/py.onnx" 2>&1)
want=$(cd "$prefix/$libdir" && pwd)/librnnstate.so.0
if [ "$(echo "$out" | head -1)" -ef "$want" ] && [ "$(echo "$out" | sed -n 2p)" = rewritten ]; then
  pass "the installed module loads the installed library (${want#$prefix/}) and rewrites a model"
else
  fail "the installed module" "$out (expected $want)"
fi
LD_LIBRARY_PATH=$prefix/$libdir "$prefix/$bindir/rnnstate-rewrite" -q "$model" -o "$work/cli.onnx"
cmp -s "$work/cli.onnx" "$work/py.onnx" && pass "same bytes as the installed rnnstate-rewrite" ||
  fail "bytes" "the module's output differs from the command line's"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
