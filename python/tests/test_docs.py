"""Runs the Python code blocks of docs/python.md, in order, in one namespace,
in a scratch directory, as a reader would paste them (ctest python.docs):

    test_docs.py CLI LIBRARY SOURCE_DIR WORK_DIR

A block followed by a plain code block must print that text (a line ending
in "..." matches any line that starts like it). The blocks that import
onnxruntime run on ONNX Runtime's Python package when it is installed, else
through tests/ort_bridge (a stand-in whose run() is onnxruntime-node's, from
tests/e2e/node_modules), else they are skipped and said to be. Exits 77 (skip)
without torch or onnx (Debian: python3-torch, python3-onnx).
"""

import contextlib
import io
import os
import re
import shutil
import sys

cli, library, source, work = sys.argv[1:5]
try:
    import onnx  # noqa: F401
    import torch  # noqa: F401
except ImportError as e:
    print("SKIP: %s for %s (apt-get install python3-torch python3-onnx)" % (e, sys.executable))
    sys.exit(77)

os.environ["RNNSTATE_LIBRARY"] = library
sys.path.insert(0, os.path.join(source, "python"))

try:
    import onnxruntime  # noqa: F401
    runtime = "ONNX Runtime for Python %s" % onnxruntime.__version__
except ImportError:
    node_ort = os.path.join(source, "tests", "e2e", "node_modules", "onnxruntime-node")
    if shutil.which("node") and os.path.isdir(node_ort):
        os.environ["RNNSTATE_ORT_NODE"] = node_ort
        sys.path.insert(0, os.path.join(source, "python", "tests", "ort_bridge"))
        runtime = "onnxruntime-node through tests/ort_bridge (no ONNX Runtime for Python here)"
    else:
        runtime = None

doc_path = os.path.join(source, "docs", "python.md")
lines = open(doc_path).read().split("\n")
blocks = []  # (line number, language, text)
i = 0
while i < len(lines):
    m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
    if m:
        indent, lang, start = m.group(1), m.group(2), i + 1
        i += 1
        body = []
        while not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):])
            i += 1
        blocks.append((start, lang, "\n".join(body) + "\n"))
    i += 1

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
namespace = {"__name__": "__docs__"}
passed = failed = skipped = 0
for n, (line, lang, text) in enumerate(blocks):
    if lang != "python":
        continue
    expected = None
    if n + 1 < len(blocks) and blocks[n + 1][1] == "":
        between = lines[line + text.count("\n"):blocks[n + 1][0] - 1]
        if all(not x.strip() or x.strip() == "```" for x in between):
            expected = blocks[n + 1][2]
    where = "docs/python.md:%d" % line
    if "import onnxruntime" in text and runtime is None:
        print("SKIP %s: no onnxruntime (Python) and no onnxruntime-node in tests/e2e" % where)
        skipped += 1
        continue
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(text, where, "exec"), namespace)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("FAIL %s: %s: %s\n%s" % (where, type(e).__name__, e, out.getvalue()))
        continue
    printed = out.getvalue()
    if expected is not None:
        want, got = expected.rstrip("\n").split("\n"), printed.rstrip("\n").split("\n")
        ok = len(want) == len(got) and all(
            g == w or (w.endswith("...") and g.startswith(w[:-3])) for w, g in zip(want, got))
        if not ok:
            failed += 1
            print("FAIL %s prints\n%s\ninstead of\n%s" % (where, printed, expected))
            continue
    passed += 1
    print("PASS %s%s" % (where, " (output as shown)" if expected is not None else ""))
print("streaming blocks run on: %s" % (runtime or "nothing (skipped)"))
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed else 0)
