#!/usr/bin/env bash
# The npm packages a test needs, checked before it runs:
#   need_npm.sh DIR:PKG[,PKG...] [DIR:PKG...] [-- COMMAND ARGS...]
# With node and every PKG installed under DIR/node_modules, runs COMMAND
# (exec; with no COMMAND, exits 0). Otherwise the test is skipped: exit 77
# (ctest's SKIP_RETURN_CODE) with one line saying what to install, unless
# RNNSTATE_REQUIRE_NPM=1 (.ci/run sets it, so that CI cannot skip them
# silently), when it fails (exit 1) with the same line.
# Sourced by a script (`source need_npm.sh DIR:PKG...`), it returns instead of
# exiting when everything is there.
set -u
need_npm_missing=""
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  need_npm_dir=${1%%:*}
  for need_npm_pkg in $(echo "${1#*:}" | tr ',' ' '); do
    if [ ! -d "$need_npm_dir/node_modules/$need_npm_pkg" ]; then
      need_npm_missing+="${need_npm_missing:+; }$need_npm_pkg (run 'npm ci --onnxruntime-node-install=skip' in $need_npm_dir)"
    fi
  done
  shift
done
[ $# -gt 0 ] && shift
if ! command -v node > /dev/null; then
  need_npm_missing="node (apt-get install nodejs npm)${need_npm_missing:+; }$need_npm_missing"
fi
if [ -n "$need_npm_missing" ]; then
  if [ "${RNNSTATE_REQUIRE_NPM:-0}" = 1 ]; then
    echo "FAIL: not installed, and RNNSTATE_REQUIRE_NPM=1: $need_npm_missing" >&2
    exit 1
  fi
  echo "SKIP: not installed: $need_npm_missing"
  exit 77
fi
unset need_npm_dir need_npm_pkg need_npm_missing
if [ $# -gt 0 ]; then
  exec "$@"
fi
# sourced: go back to the script; run: done
return 0 2> /dev/null || exit 0
