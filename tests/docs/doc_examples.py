#!/usr/bin/env python3
"""Runs the shell examples of README.md and docs/*.md as a newcomer would.

    doc_examples.py REPO BUILD_DIR WORK_DIR

Every fenced block without a language (or `console`, `sh`, `shell`, `bash`)
is one of:
  - an example: lines starting with `$ ` are commands, the lines after each
    its expected output (stdout and stderr as a terminal shows them). The
    command runs with `bash -c` in WORK_DIR, where `models`, `js` and
    `tests` link to the repository's and the build directory is first on
    PATH (the docs write `rnnstate-rewrite` as if it were installed). The
    output must be the expected lines exactly; a line `...` stands for any
    number of lines. Files the examples write stay in WORK_DIR, so a later
    example can use them, in document order.
  - something this check does not run: the block is preceded (within the
    three lines before it) by `<!-- doc-test: REASON -->` naming where it is
    tested or why it cannot run here (installing packages, a compiler line
    of docs/library.md run by tests/cli/test_install.sh, ...);
  - program text (lines with no `$ ` and a language such as js, c, python,
    cmake): not run here; python blocks of docs/python.md run in python.docs.
An unmarked block without `$ ` lines fails the check: every shell line of
the docs is either run or says why not. An example whose command needs a
tool that is absent (`npx` without the npm packages, `jq`) is skipped with
a message. Exit status 0 all pass, 1 a failure.
"""
import os
import re
import shutil
import subprocess
import sys

SHELL_LANGS = {"", "console", "sh", "shell", "bash"}
MARK = re.compile(r"<!--\s*doc-test:\s*(.+?)\s*-->")
# The README's two set-up commands: .ci/run runs the test command on a clean
# machine; the try command installs packages (not run here).
SETUP = re.compile(r"<!--\s*(try|test)-command\s*-->")


def blocks(path):
    """Yields (line_no, lang, lines, mark) for each fenced block."""
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    i = 0
    while i < len(text):
        m = re.match(r"^```\s*([A-Za-z0-9_+-]*)\s*$", text[i])
        if not m:
            i += 1
            continue
        start, lang, body = i, m.group(1).lower(), []
        i += 1
        while i < len(text) and not text[i].startswith("```"):
            body.append(text[i])
            i += 1
        mark = None
        for back in text[max(0, start - 3):start]:
            found = MARK.search(back)
            if found:
                mark = found.group(1)
            elif SETUP.search(back):
                mark = "the README's set-up command (.ci/run runs the test command on a clean machine)"
        yield start + 1, lang, body, mark
        i += 1


def examples(body):
    """Splits a block into (command, expected lines)."""
    out = []
    for line in body:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def matches(expected, got):
    """Expected lines against got, `...` matching any run of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and matches(expected[1:], got[1:])


def needed_tools(command, repo):
    missing = []
    if "jq" in re.findall(r"\b[\w-]+\b", command) and not shutil.which("jq"):
        missing.append("jq")
    if "npx" in command and not os.path.isdir(os.path.join(repo, "js/rnnstate/node_modules/onnxruntime-node")):
        missing.append("js/rnnstate's npm packages")
    return missing


def main():
    repo, build, work = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name in ("models", "js", "tests"):
        os.symlink(os.path.join(repo, name), os.path.join(work, name))
    env = dict(os.environ, PATH=build + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
    docs = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    failed = ran = 0
    for doc in docs:
        for line, lang, body, mark in blocks(os.path.join(repo, doc)):
            where = f"{doc}:{line}"
            cases = examples(body)
            if lang not in SHELL_LANGS:
                continue
            if mark:
                print(f"SKIP {where}: {mark}")
                continue
            if not cases:
                print(f"FAIL {where}: a shell block with no '$ ' example and no <!-- doc-test: REASON --> mark")
                failed += 1
                continue
            for command, expected in cases:
                missing = needed_tools(command, repo)
                if missing:
                    print(f"SKIP {where}: {command} (needs {', '.join(missing)})")
                    continue
                r = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                   timeout=600)
                got = (r.stdout + r.stderr).rstrip("\n").split("\n") if (r.stdout + r.stderr).strip() else []
                ran += 1
                if matches(expected, got):
                    print(f"PASS {where}: {command}")
                else:
                    failed += 1
                    print(f"FAIL {where}: {command}\n  expected:\n    " + "\n    ".join(expected)
                          + "\n  got (status %d):\n    " % r.returncode + "\n    ".join(got))
    print(f"{ran} examples run, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
