#!/usr/bin/env bash
# The Debian package, built with the commands of docs/library.md, in a
# scratch build directory:
#   cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DRNNSTATE_BUILD_TESTS=OFF
#   cmake --build build-deb -j2 && (cd build-deb && cpack -G DEB)
# Checks its control fields (Depends: only libc6 and Debian's libprotobuf-c1,
# computed by dpkg-shlibdeps), its contents, and, unpacked into a scratch
# root with dpkg -x, that the program runs and the example compiles against
# it with pkg-config. Run by ctest: test_deb.sh SOURCE_DIR. Exits 77 (skip)
# without dpkg-deb, dpkg-shlibdeps or cpack.
set -u
src=$1
for t in dpkg-deb dpkg-shlibdeps cpack; do
  command -v "$t" > /dev/null || { echo "SKIP: no $t (apt-get install dpkg-dev)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
version=$(sed -n 's/^project(rnnstate-rewrite VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
b=$work/build-deb

if ! { cmake -S "$src" -B "$b" -DCMAKE_INSTALL_PREFIX=/usr -DRNNSTATE_BUILD_TESTS=OFF &&
       cmake --build "$b" -j2 && (cd "$b" && cpack -G DEB); } > "$work/build.log" 2>&1; then
  tail -30 "$work/build.log"; echo "FAIL building the package"; exit 1
fi
deb=$(ls "$b"/rnnstate-rewrite_*.deb 2> /dev/null)
arch=$(dpkg --print-architecture)
if [ "$(basename "$deb")" = "rnnstate-rewrite_${version}_$arch.deb" ]; then pass "built $(basename "$deb")"; else
  fail "package file" "'$deb'"; exit 1; fi

# ---- control fields --------------------------------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = rnnstate-rewrite ] && [ "$(field Version)" = "$version" ] &&
  [ "$(field Architecture)" = "$arch" ] && pass "Package, Version, Architecture" ||
  fail "control fields" "$(dpkg-deb -f "$deb")"
depends=$(field Depends)
others=$(echo "$depends" | tr ',' '\n' | sed 's/^ *\([^ ]*\).*/\1/' | grep -vx 'libc6\|libprotobuf-c1')
if echo "$depends" | grep -q 'libprotobuf-c1' && [ -z "$others" ]; then
  pass "Depends: $depends"
else
  fail "Depends only on libc6 and libprotobuf-c1" "'$depends'"
fi
if dpkg-deb -I "$deb" shlibs 2> /dev/null | grep -q "^librnnstate ${version%%.*} rnnstate-rewrite" &&
   dpkg-deb -I "$deb" triggers 2> /dev/null | grep -q ldconfig; then
  pass "shlibs file and ldconfig trigger"
else
  fail "shlibs and triggers" "$(dpkg-deb -I "$deb" shlibs 2>&1; dpkg-deb -I "$deb" triggers 2>&1)"
fi

# ---- contents ---------------------------------------------------------------------
dpkg-deb -c "$deb" | awk '{ print $6 }' > "$work/contents"
multiarch=$(sed -n 's|^\./usr/lib/\(.*\)/librnnstate\.so\.0$|\1|p' "$work/contents")
lib=usr/lib/$multiarch
missing=0
for f in usr/bin/rnnstate-rewrite "$lib/librnnstate.so.$version" "$lib/librnnstate.so.0" "$lib/librnnstate.so" \
         "$lib/librnnstate.a" usr/include/rnnstate.h usr/include/rnnstate_version.h \
         "$lib/pkgconfig/rnnstate.pc" "$lib/cmake/rnnstate/rnnstateConfig.cmake" \
         usr/share/man/man1/rnnstate-rewrite.1 usr/share/bash-completion/completions/rnnstate-rewrite \
         usr/share/rnnstate-rewrite/report.schema.json usr/share/doc/rnnstate-rewrite/examples/rewrite_model.c; do
  grep -qx "\./$f" "$work/contents" || { fail "package holds /$f" "missing"; missing=1; }
done
[ "$missing" -eq 0 ] && pass "package holds program, libraries, header, pkg-config and CMake files, man page, completion, schema, example"

# ---- unpacked into a scratch root ------------------------------------------------------
root=$work/root
dpkg -x "$deb" "$root"
if readelf -d "$root/usr/bin/rnnstate-rewrite" | grep -q 'RPATH\|RUNPATH'; then
  fail "no RPATH in the packaged program" "$(readelf -d "$root/usr/bin/rnnstate-rewrite" | grep PATH)"
fi
export LD_LIBRARY_PATH=$root/$lib
out=$("$root/usr/bin/rnnstate-rewrite" --version)
[ "$out" = "rnnstate-rewrite $version" ] && pass "unpacked program: $out" || fail "--version" "'$out'"
if "$root/usr/bin/rnnstate-rewrite" -q "$src/models/lstm_2layer_dynamic.onnx" -o "$work/out.onnx" --check &&
   [ -s "$work/out.onnx" ]; then
  pass "unpacked program rewrites models/lstm_2layer_dynamic.onnx (--check)"
else
  fail "unpacked program rewrites a model" "status $?"
fi
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/$lib/pkgconfig pkg-config --cflags --libs rnnstate)
if cc "$src/examples/rewrite_model.c" $flags -o "$work/example" 2> "$work/cc.log" &&
   "$work/example" "$src/models/denoiser_gru.onnx" "$work/example.onnx" | grep -q '^wrote '; then
  pass "example compiled against the unpacked package ($flags) rewrites a model"
else
  fail "example against the package" "$(cat "$work/cc.log")"
fi

# The Python module (issue 25): in Debian's dist-packages, finding the unpacked
# library through its _install.py.
pydir=usr/lib/python3/dist-packages/rnnstate
if grep -qx "\./$pydir/__init__.py" "$work/contents" && grep -qx "\./$pydir/_install.py" "$work/contents"; then
  out=$(cd "$work" && env -u LD_LIBRARY_PATH -u RNNSTATE_LIBRARY PYTHONPATH=$root/usr/lib/python3/dist-packages \
        python3 -c 'import sys, rnnstate; print(rnnstate.library_path());
print(rnnstate.rewrite(sys.argv[1]).report["status"])' "$src/models/denoiser_gru.onnx" 2>&1)
  if [ "$(echo "$out" | head -1)" -ef "$root/$lib/librnnstate.so.0" ] && [ "$(echo "$out" | sed -n 2p)" = rewritten ]; then
    pass "/$pydir imports, loads the package's library and rewrites a model"
  else
    fail "the packaged Python module" "$out"
  fi
else
  fail "package holds /$pydir" "missing"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
