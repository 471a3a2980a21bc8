#!/usr/bin/env bash
# The warning set (issue 23 item 7) is on for each target given:
#   warnings.sh "NAME=OPTIONS;..."...   (OPTIONS: the target's COMPILE_OPTIONS)
# With -DRNNSTATE_WERROR=ON (the README's test command, CI) the build itself
# proves the code clean under it.
source "$(dirname "$0")/../cli/lib.sh"
want=(-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wundef)
for arg in "$@"; do
  name=${arg%%=*} opts=";${arg#*=};"
  missing=()
  for w in "${want[@]}"; do
    [[ $opts == *";$w;"* ]] || missing+=("$w")
  done
  if [ ${#missing[@]} -eq 0 ]; then pass "$name: ${want[*]}"; else fail "$name" "missing ${missing[*]}"; fi
done
finish
