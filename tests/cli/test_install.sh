#!/usr/bin/env bash
# `cmake --install` puts the program and its man page in place. Run by ctest:
#   test_install.sh BUILD_DIR PREFIX BINDIR MANDIR
set -eu
build=$1 prefix=$2 bindir=$3 mandir=$4
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
test -x "$prefix/$bindir/rnnstate-rewrite" || { echo "FAIL no $prefix/$bindir/rnnstate-rewrite"; exit 1; }
test -f "$prefix/$mandir/man1/rnnstate-rewrite.1" || { echo "FAIL no $prefix/$mandir/man1/rnnstate-rewrite.1"; exit 1; }
"$prefix/$bindir/rnnstate-rewrite" --version
echo "PASS installed $bindir/rnnstate-rewrite and $mandir/man1/rnnstate-rewrite.1"
