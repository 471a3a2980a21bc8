#!/usr/bin/env bash
# The libraries export the API and nothing else: the shared library's
# dynamic symbols and the static library's global symbols are exactly the
# functions include/rnnstate.h declares with RNNSTATE_API (no internals such
# as set_error or strmap_get, no onnx__* protobuf-c bindings). Run by ctest:
#   test_exports.sh SHARED_LIB STATIC_LIB RNNSTATE_H
shared=$1 static=$2 header=$3
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)

api=$(grep '^RNNSTATE_API' "$header" | grep -o 'rnnstate_[a-z0-9_]*(' | tr -d '(' | sort)
if [ "$(echo "$api" | wc -l)" -lt 15 ]; then
  fail "API functions found in $header" "only: $api"
fi
# functions a caller relies on to free, compare and classify what the
# library returns (issue 23): declared, hence exported (checked below)
for f in rnnstate_string_free rnnstate_version_number rnnstate_report_model_status \
         rnnstate_buffer_free rnnstate_report_free rnnstate_model_free; do
  if echo "$api" | grep -qx "$f"; then pass "$f is in the API"; else fail "$f is in the API" "missing from $header"; fi
done

# check NAME SYMBOLS: SYMBOLS (one per line) are exactly the API
check() {
  local name=$1 symbols=$2
  local extra missing
  extra=$(comm -13 <(echo "$api") <(echo "$symbols"))
  missing=$(comm -23 <(echo "$api") <(echo "$symbols"))
  if [ -n "$extra" ]; then
    fail "$name exports only the API" "$(echo "$extra" | wc -l) more: $(echo $extra | cut -c1-300)"
  elif [ -n "$missing" ]; then
    fail "$name exports the whole API" "missing: $(echo $missing)"
  else
    pass "$name: exactly the $(echo "$api" | wc -l) rnnstate_* functions of rnnstate.h"
  fi
}

check "shared library (nm -D --defined-only)" \
  "$(nm -D --defined-only "$shared" | awk '{ print $3 }' | sort -u)"
check "static library (nm -g --defined-only)" \
  "$(nm -g --defined-only "$static" | awk 'NF == 3 { print $3 }' | sort -u)"

finish
