#!/usr/bin/env bash
# `pip install` of python/ into a virtual environment, offline, as docs/python.md
# says: python3 -m venv --system-site-packages, then pip install
# --no-build-isolation --no-index (setuptools and wheel from Debian's
# python3-setuptools and python3-wheel). Checks that the module lands in the
# venv's site-packages (nothing left in the source folder: it is built from a
# copy), that its version is the project's, that it rewrites a model to the
# command line's bytes with the library from $RNNSTATE_LIBRARY, and that pip
# uninstalls it. Run by ctest (python.venv):
#   test_venv.sh PYTHON SOURCE_DIR CLI LIBRARY
# Exits 77 (skip) without venv, setuptools or wheel for PYTHON.
set -u
py=$1 src=$2 cli=$3 library=$4
"$py" -c 'import venv, ensurepip, setuptools, wheel' 2> /dev/null ||
  { echo "SKIP: $py lacks venv, ensurepip, setuptools or wheel (apt-get install python3-venv python3-setuptools python3-wheel)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
version=$(sed -n 's/^project(rnnstate-rewrite VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
model=$src/models/lstm_2layer_dynamic.onnx

cp -r "$src/python" "$work/src"
rm -rf "$work/src/build" "$work/src/"*.egg-info
if ! "$py" -m venv --system-site-packages "$work/venv" > "$work/venv.log" 2>&1; then
  cat "$work/venv.log"; echo "FAIL python3 -m venv"; exit 1
fi
if "$work/venv/bin/pip" install --no-build-isolation --no-index "$work/src" > "$work/pip.log" 2>&1; then
  pass "pip install --no-build-isolation --no-index python/"
else
  tail -30 "$work/pip.log"; fail "pip install" "see above"
fi
cd "$work"  # not the source folder: the venv's copy is imported
where=$("$work/venv/bin/python" -c 'import rnnstate; print(rnnstate.__file__)' 2>&1)
case $where in
  "$work"/venv/lib/python3*/site-packages/rnnstate/__init__.py) pass "installed into the venv: ${where#$work/}" ;;
  *) fail "module location" "$where" ;;
esac
got=$("$work/venv/bin/pip" show rnnstate 2> /dev/null | sed -n 's/^Version: //p')
pyversion=$("$work/venv/bin/python" -c 'import rnnstate; print(rnnstate.__version__)')
[ "$got" = "$version" ] && [ "$pyversion" = "$version" ] && pass "version $version (pip show, __version__)" ||
  fail "version" "pip show: '$got', __version__: '$pyversion', project: $version"
"$cli" -q "$model" -o "$work/cli.onnx" || fail "command line" "status $?"
if RNNSTATE_LIBRARY=$library "$work/venv/bin/python" -c '
import sys, rnnstate
res = rnnstate.rewrite(sys.argv[1], output=sys.argv[2])
print(res.report["status"], [p["input"] for p in res.report["state"]])' "$model" "$work/py.onnx" > "$work/run.out" 2>&1 &&
   cmp -s "$work/cli.onnx" "$work/py.onnx"; then
  pass "the venv's module rewrites $(basename "$model") to the command line's bytes: $(cat "$work/run.out")"
else
  fail "rewrite in the venv" "$(cat "$work/run.out")"
fi
if "$work/venv/bin/pip" uninstall -y rnnstate > /dev/null 2>&1 &&
   ! "$work/venv/bin/python" -c 'import rnnstate' 2> /dev/null; then
  pass "pip uninstall removes it"
else
  fail "pip uninstall" "the module is still importable"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
