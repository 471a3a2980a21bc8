#!/usr/bin/env bash
# `cmake --install` into a temporary prefix puts in place everything a user
# needs, and other programs can use the installed library. Run by ctest:
#   test_install.sh BUILD_DIR SOURCE_DIR BINDIR LIBDIR INCLUDEDIR MANDIR DATADIR DOCDIR
# Checks: every installed file; the shared library's soname and version; the
# example of examples/ built from the installed files with pkg-config and with
# find_package(rnnstate), then run on a model of models/; the static library
# linked into a program that defines symbols named like the library's
# internals (tests/install/clash.c); a project taking the source tree with
# add_subdirectory() builds rnnstate::rnnstate and gets no tests.
set -u
build=$1 src=$2 bindir=$3 libdir=$4 includedir=$5 mandir=$6 datadir=$7 docdir=$8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
version=$(sed -n 's/^project(rnnstate-rewrite VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major=${version%%.*}
model=$src/models/denoiser_gru.onnx

if ! cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1; then
  cat "$work/install.log"; echo "FAIL cmake --install"; exit 1
fi

# ---- the files ----------------------------------------------------------------
for f in "$bindir/rnnstate-rewrite" "$libdir/librnnstate.so.$version" "$libdir/librnnstate.so.$major" \
         "$libdir/librnnstate.so" "$libdir/librnnstate.a" "$includedir/rnnstate.h" \
         "$includedir/rnnstate_version.h" "$libdir/pkgconfig/rnnstate.pc" \
         "$libdir/cmake/rnnstate/rnnstateConfig.cmake" "$libdir/cmake/rnnstate/rnnstateConfigVersion.cmake" \
         "$libdir/cmake/rnnstate/rnnstateTargets.cmake" "$mandir/man1/rnnstate-rewrite.1" \
         "$datadir/bash-completion/completions/rnnstate-rewrite" \
         "$datadir/rnnstate-rewrite/report.schema.json" "$docdir/examples/rewrite_model.c"; do
  if [ -e "$prefix/$f" ]; then pass "installed $f"; else fail "installed $f" "missing"; fi
done
if ls -R "$prefix" | grep -q 'onnx.pb-c\|protobuf'; then
  fail "no protobuf-c headers installed" "$(ls -R "$prefix" | grep 'onnx.pb-c\|protobuf')"
else
  pass "no protobuf-c headers installed"
fi
soname=$(readelf -d "$prefix/$libdir/librnnstate.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" = "librnnstate.so.$major" ]; then pass "soname $soname"; else fail "soname" "'$soname'"; fi
out=$("$prefix/$bindir/rnnstate-rewrite" --version)
if [ "$out" = "rnnstate-rewrite $version" ]; then pass "installed program runs: $out"; else
  fail "installed program --version" "'$out', expected 'rnnstate-rewrite $version'"; fi
if grep -q "\"rnnstate-rewrite $version\"" "$prefix/$mandir/man1/rnnstate-rewrite.1"; then
  pass "man page names version $version"
else
  fail "man page version" "$(grep '^\.TH' "$prefix/$mandir/man1/rnnstate-rewrite.1")"
fi

# run_example ID NAME PROGRAM: the example rewrites the model; its output loads
run_example() {
  local id=$1 name=$2 program=$3 out=$work/$1.onnx
  if ! LD_LIBRARY_PATH=$prefix/$libdir "$program" "$model" "$out" > "$work/$id.out" 2>&1; then
    fail "$name" "$(cat "$work/$id.out")"; return
  fi
  if ! grep -q "^librnnstate $version (compiled against $version)" "$work/$id.out" ||
     ! grep -q '^pair GRU_0_initial_h -> GRU_0_Y_h (float32, rank 3, required)' "$work/$id.out"; then
    fail "$name" "unexpected output: $(cat "$work/$id.out")"; return
  fi
  if ! "$prefix/$bindir/rnnstate-rewrite" -n -q "$out" > /dev/null 2> "$work/$id.err" ||
     ! LD_LIBRARY_PATH=$prefix/$libdir "$program" "$out" "$work/$id.again.onnx" | grep -q 'already exposed'; then
    fail "$name" "the written model does not load as a rewritten one: $(cat "$work/$id.err")"; return
  fi
  pass "$name"
}

# ---- pkg-config ------------------------------------------------------------------
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
flags=$(pkg-config --cflags --libs rnnstate)
if cc "$src/examples/rewrite_model.c" $flags -o "$work/example-pkgconfig" 2> "$work/cc.log"; then
  run_example pkgconfig "example built with pkg-config ($flags)" "$work/example-pkgconfig"
else
  fail "example built with pkg-config" "$(cat "$work/cc.log")"
fi
if pkg-config --cflags rnnstate | grep -q protobuf; then
  fail "pkg-config --cflags" "protobuf-c leaks into the application: $(pkg-config --cflags rnnstate)"
fi

# ---- the static library: no clash with the application's own symbols ----------
# (docs/library.md's line)
static_flags="$(pkg-config --cflags rnnstate) -L$(pkg-config --variable=libdir rnnstate) -l:librnnstate.a -lprotobuf-c"
if cc "$src/tests/install/clash.c" $static_flags -o "$work/clash" 2> "$work/clash.log"; then
  if "$work/clash" "$model" > "$work/clash.out" 2>&1 && grep -q 'own symbols intact' "$work/clash.out"; then
    pass "static library linked into a program defining set_error, strmap_get, onnx__model_proto__*"
  else
    fail "clash program" "$(cat "$work/clash.out")"
  fi
  if ldd "$work/clash" | grep -q librnnstate; then fail "clash program" "linked the shared library"; fi
else
  fail "static library linked into a program with clashing symbols" "$(grep -m3 'multiple definition\|error' "$work/clash.log")"
fi

# ---- find_package ------------------------------------------------------------------
if cmake -S "$src/examples" -B "$work/example-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
     > "$work/cmake.log" 2>&1 && cmake --build "$work/example-cmake" >> "$work/cmake.log" 2>&1; then
  run_example cmake "example built with find_package(rnnstate)" "$work/example-cmake/rewrite_model"
else
  fail "example built with find_package(rnnstate)" "$(tail -20 "$work/cmake.log")"
fi

# ---- add_subdirectory ----------------------------------------------------------------
if cmake -S "$src/tests/install" -B "$work/subdir" -DRNNSTATE_SOURCE_DIR="$src" \
     > "$work/subdir.log" 2>&1 && cmake --build "$work/subdir" -j2 >> "$work/subdir.log" 2>&1; then
  tests=$(cd "$work/subdir" && ctest -N 2> /dev/null | sed -n 's/^Total Tests: //p')
  if grep -qi cmocka "$work/subdir/CMakeCache.txt" || [ "${tests:-0}" != 0 ]; then
    fail "add_subdirectory" "the tests came along ($tests tests; cmocka looked up)"
  elif "$work/subdir/rewrite_model" "$model" "$work/subdir.onnx" > /dev/null 2>&1; then
    pass "add_subdirectory: rnnstate::rnnstate builds and runs, no tests, no cmocka"
  else
    fail "add_subdirectory" "the example does not run"
  fi
else
  fail "add_subdirectory" "$(grep -m5 -i 'error' "$work/subdir.log")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
