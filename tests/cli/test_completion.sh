#!/usr/bin/env bash
# The bash completion offers every option `rnnstate-rewrite --help` lists,
# and the values of --state-inputs. Run by ctest:
#   test_completion.sh TOOL COMPLETION_FILE
# The completion itself runs only where bash-completion is installed (it
# provides _init_completion); the option list is checked everywhere.
tool=$1 completion=$2
source "$(dirname "$0")/lib.sh" # $work, pass, fail, finish (the harness of every test script)

# the options of --help: "-o, --output FILE", "--state-inputs=MODE", ...
options=$("$tool" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z0-9-]+' | tr ',' '\n' | tr -d ' ' | sort -u)
if [ "$(echo "$options" | wc -l)" -lt 20 ]; then
  fail "options read from --help" "$(echo $options)"
fi
# the word list after `compgen -W '-o`, up to its closing quote
words=$(sed -n "/compgen -W '-o/,/' -- /p" "$completion" | tr '\n' ' ' |
        sed "s/.*compgen -W '\([^']*\)'.*/\1/" | tr -s " =" '\n' | grep '^-' | sort -u)
missing=$(comm -23 <(echo "$options") <(echo "$words"))
unknown=$(comm -13 <(echo "$options") <(echo "$words"))
if [ -n "$missing" ]; then
  fail "every option of --help is completed" "missing: $(echo $missing)"
elif [ -n "$unknown" ]; then
  fail "only options of --help are completed" "not in --help: $(echo $unknown)"
else
  pass "the $(echo "$options" | wc -l) options of --help are completed, and no others"
fi

# complete LINE: what bash completes for LINE (words split on spaces)
complete_line() {
  bash -c '
    source /usr/share/bash-completion/bash_completion
    source "$1"
    COMP_LINE=$2 COMP_POINT=${#2}
    read -ra COMP_WORDS <<< "$2"
    [[ $2 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _rnnstate_rewrite rnnstate-rewrite "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
  ' _ "$completion" "$1"
}

if [ -f /usr/share/bash-completion/bash_completion ]; then
  got=$(complete_line "rnnstate-rewrite --state-inputs ")
  if [ "$got" = "optional required " ]; then pass "--state-inputs completes to: $got"; else
    fail "--state-inputs values" "'$got'"; fi
  got=$(complete_line "rnnstate-rewrite --to")
  if [ "$got" = "--to-layout0 " ]; then pass "--to completes to --to-layout0"; else
    fail "--to" "'$got'"; fi
  got=$(complete_line "rnnstate-rewrite --state-inputs=req")
  if [ "$got" = "required " ]; then pass "--state-inputs=req completes to required"; else
    fail "--state-inputs=req" "'$got'"; fi
else
  echo "SKIP running the completion: bash-completion is not installed"
fi

finish
