#!/usr/bin/python3
"""Checks that docs/design.md tells the truth about src/ (issue 23).

    check_design.py ROOT              check the tree at ROOT
    check_design.py --self-test ROOT  prove the check fails where it must, on
                                      temporary copies of ROOT's docs and src

What it checks, driven by design.md alone (files may move: only the map
says where they are):
  - the module map (the table under "## Module map") names every .c and .h
    file of src/; a header counts as named when its .c beside it is (the
    module is the pair), a header-only module is named itself;
  - every path the map names exists;
  - every row names its layer, one of the layers design.md lists on its
    "Layers, top to bottom:" line;
  - the layering rule: a file includes ("...") only files of its own layer
    or of a layer below. An include that resolves to no file of src/ (the
    public include/rnnstate.h, the generated onnx.pb-c.h and
    rnnstate_version.h) is allowed everywhere;
  - a header with a .c beside it declares only functions that .c defines
    (no header speaks for another file).
Failures are printed one per line, naming the file; the exit status is 1
when there is any (2 for a design.md it cannot read)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

LAYERS_LINE = "Layers, top to bottom:"


def read_map(design_path):
    """(layers top to bottom, {path: layer}) from design.md."""
    with open(design_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    layers = None
    entries = {}
    in_map = False
    for line in lines:
        if LAYERS_LINE in line and layers is None:
            layers = re.findall(r"`([a-z_]+)`", line.split(LAYERS_LINE, 1)[1])
        if line.startswith("## "):
            in_map = line.strip() == "## Module map"
            continue
        if not in_map or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("Module",) or set(cells[0]) <= set("-: "):
            continue
        for path in re.findall(r"`([^`]+)`", cells[0]):
            entries[path] = cells[1].strip("`")
    if not layers:
        raise ValueError(f"{design_path}: no '{LAYERS_LINE}' line naming the layers")
    if not entries:
        raise ValueError(f"{design_path}: no module map (a table under '## Module map')")
    return layers, entries


def src_files(root):
    out = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        for n in names:
            if n.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(out)


def module_of(path, entries):
    """The map entry naming `path`: itself, or for a header its .c."""
    if path in entries:
        return path
    if path.endswith(".h") and path[:-2] + ".c" in entries:
        return path[:-2] + ".c"
    return None


def resolve(root, including, name, files):
    """The src/ file an #include "name" in `including` means, or None."""
    for cand in (os.path.normpath(os.path.join("src", name)),
                 os.path.normpath(os.path.join(os.path.dirname(including), name))):
        if cand in files:
            return cand
    base = [f for f in files if os.path.basename(f) == os.path.basename(name)]
    return base[0] if len(base) == 1 else None


def declared_functions(header_text):
    """Names of the functions a header declares (not defines inline)."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*?(?<!\\)$", " ", text, flags=re.M | re.S)
    # drop brace blocks (struct bodies, inline functions, initializers)
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
            if depth == 1:
                out.append(";")
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    names = []
    for stmt in "".join(out).split(";"):
        stmt = " ".join(stmt.split())
        if "(" not in stmt or stmt.startswith(("typedef", "extern \"C\"")) or "(*" in stmt:
            continue
        m = re.match(r"^(?:[A-Za-z_]\w*[\s\*]+)+\**([A-Za-z_]\w*)\s*\(", stmt)
        if m and not stmt.startswith(("static inline", "_Static_assert")):
            names.append(m.group(1))
    return names


def defines(c_text, name):
    return re.search(r"^[A-Za-z_][^;\n]*\b" + re.escape(name) + r"\s*\(", c_text, re.M) is not None


def check(root):
    design = os.path.join(root, "docs", "design.md")
    try:
        layers, entries = read_map(design)
    except (OSError, ValueError) as e:
        print(f"check_design: {e}")
        return 2
    rank = {name: i for i, name in enumerate(reversed(layers))}  # util = 0
    problems = []
    for path, layer in sorted(entries.items()):
        if not os.path.exists(os.path.join(root, path)):
            problems.append(f"{path}: named in docs/design.md's module map, but no such file")
        if path.startswith("src/") and layer not in rank:
            problems.append(f"{path}: layer '{layer}' in docs/design.md's module map is none "
                            f"of {', '.join(layers)}")
    files = src_files(root)
    fileset = set(files)
    for path in files:
        if module_of(path, entries) is None:
            problems.append(f"{path}: not in docs/design.md's module map")
    for path in files:
        mod = module_of(path, entries)
        if mod is None or entries[mod] not in rank:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            target = resolve(root, path, name, fileset)
            if target is None:
                continue
            tmod = module_of(target, entries)
            if tmod is None or entries[tmod] not in rank:
                continue  # reported above
            if rank[entries[tmod]] > rank[entries[mod]]:
                problems.append(f"{path}: includes \"{name}\" ({target}, layer "
                                f"{entries[tmod]}) from layer {entries[mod]}, below it")
    for path in files:
        c = path[:-2] + ".c"
        if not path.endswith(".h") or c not in fileset:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            header = f.read()
        with open(os.path.join(root, c), encoding="utf-8", errors="replace") as f:
            source = f.read()
        for name in declared_functions(header):
            if not defines(source, name):
                problems.append(f"{path}: declares {name}(), which {c} does not define")
    for p in problems:
        print(p)
    if not problems:
        print(f"check_design: {len(files)} files of src/ in the map, the layering rule holds")
    return 1 if problems else 0


def self_test(root):
    """Each breakage is made on a fresh copy of docs/, include/ and src/ and must fail,
    naming the file; the untouched copy must pass."""
    me = os.path.abspath(__file__)
    failures = 0

    def copy():
        d = tempfile.mkdtemp(prefix="check_design.")
        shutil.copytree(os.path.join(root, "docs"), os.path.join(d, "docs"))
        shutil.copytree(os.path.join(root, "src"), os.path.join(d, "src"))
        if os.path.isdir(os.path.join(root, "include")):
            shutil.copytree(os.path.join(root, "include"), os.path.join(d, "include"))
        return d

    def run(d):
        r = subprocess.run([sys.executable, me, d], capture_output=True, text=True)
        return r.returncode, r.stdout

    layers, entries = read_map(os.path.join(root, "docs", "design.md"))
    rank = {name: i for i, name in enumerate(reversed(layers))}
    mapped = sorted(p for p in entries if p.endswith(".c") and entries[p] in rank)
    lowest = min(mapped, key=lambda p: rank[entries[p]])
    top_headers = [p[:-2] + ".h" for p in mapped
                   if rank[entries[p]] > rank[entries[lowest]] and
                   os.path.exists(os.path.join(root, p[:-2] + ".h"))]
    upper = max(top_headers, key=lambda p: rank[entries[p[:-2] + ".c"]])

    def unmapped(d):
        with open(os.path.join(d, "src", "unmapped_module.c"), "w") as f:
            f.write("int unmapped_module(void);\n")
        return "src/unmapped_module.c"

    def upward(d):
        with open(os.path.join(d, lowest), "a") as f:
            f.write(f'#include "{os.path.relpath(upper, "src")}"\n')
        return lowest

    def missing(d):
        os.remove(os.path.join(d, mapped[0]))
        return mapped[0]

    paired = sorted(p[:-2] + ".h" for p in mapped if os.path.exists(os.path.join(root, p[:-2] + ".h")))

    def foreign(d):
        with open(os.path.join(d, paired[0]), "a") as f:
            f.write("int defined_in_another_file(const char *s);\n")
        return paired[0]

    cases = [("the tree as it is", None), ("a file of src/ the map does not name", unmapped),
             (f"{paired[0]} declaring a function its .c does not define", foreign),
             (f"{lowest} including {upper}", upward),
             ("a file the map names, removed", missing)]
    for why, breakage in cases:
        d = copy()
        try:
            named = breakage(d) if breakage else None
            status, out = run(d)
        finally:
            shutil.rmtree(d)
        ok = status == 0 if named is None else status == 1 and named in out
        print(f"{'PASS' if ok else 'FAIL'} {why}: exit {status}" +
              ("" if ok else f", output:\n{out}"))
        failures += not ok
    return 1 if failures else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return self_test(argv[2])
    if len(argv) == 2:
        return check(argv[1])
    print(__doc__.splitlines()[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
