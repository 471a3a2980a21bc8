# bash completion for rnnstate-rewrite (installed as
# share/bash-completion/completions/rnnstate-rewrite). Every option of
# `rnnstate-rewrite --help`; tests/cli/test_completion.sh checks that none
# is missing.

_rnnstate_rewrite()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        -o | --output)
            _filedir onnx
            return
            ;;
        -d | --output-dir)
            _filedir -d
            return
            ;;
        --state-inputs)
            COMPREPLY=($(compgen -W 'optional required' -- "$cur"))
            return
            ;;
        --external-data)
            COMPREPLY=($(compgen -W 'copy link reference' -- "$cur"))
            return
            ;;
        --max-model-size)
            COMPREPLY=($(compgen -W '500M 1G 2G' -- "$cur"))
            return
            ;;
        -j | --jobs)
            COMPREPLY=($(compgen -W "1 2 $(nproc 2>/dev/null)" -- "$cur"))
            return
            ;;
        --include | --exclude | --name-template)
            # a glob or a template: nothing to offer
            return
            ;;
        -h | --help | -V | --version)
            return
            ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '-o --output -d --output-dir -r --recursive -n --dry-run
            --check --sync --no-sync --external-data= --state-inputs= --include --exclude --to-layout0 --time --no-context-caches
            --name-template --max-model-size --json -q --quiet -v --verbose
            --fail-on-skip -j --jobs -h --help -V --version' -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
        return
    fi
    _filedir onnx
} &&
    complete -F _rnnstate_rewrite rnnstate-rewrite
