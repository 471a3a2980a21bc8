"""The Python module against the command line, run by ctest (python.module):

    test_module.py CLI LIBRARY SOURCE_DIR GENERATED_INCLUDE_DIR WORK_DIR

For every model of models/, models/stream/ and ../shared/models (where
present), with the default options and
with state_inputs="required" (and the manifest's own arguments, e.g.
--time), and a few more option sets on the models they concern:
rewrite(path, output=...) writes the very bytes ``rnnstate-rewrite -o``
writes and returns the report entry of its --json, equal as a dict;
rewrite(bytes) returns the same bytes and report (input "<bytes>", output
None); rewrite(ModelProto) returns a ModelProto equal to the command line's
output, and leaves the one given alone. Errors: corrupt and missing files
raise the command line's message with its status; bad options raise
TypeError or ArgumentError. The ctypes structs match rnnstate.h (offsets
from the C compiler, when there is one). The library is found by
$RNNSTATE_LIBRARY, next to the module, or not at all with a message.
Exits 77 (skip) without onnx (Debian: python3-onnx).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

cli, library, source, generated_include, work = sys.argv[1:6]
try:
    import onnx
except ImportError:
    print("SKIP: no onnx module for %s (apt-get install python3-onnx)" % sys.executable)
    sys.exit(77)

os.environ["RNNSTATE_LIBRARY"] = library
sys.path.insert(0, os.path.join(source, "python"))
import rnnstate  # noqa: E402

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
passed = failed = 0


def check(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s%s" % (name, ": " + detail if detail else ""))
    return ok


def cli_args(kw):
    """The command line's arguments for rewrite()'s keyword options."""
    args = []
    for k, v in kw.items():
        if k == "state_inputs":
            args.append("--state-inputs=" + v)
        elif k in ("include", "exclude"):
            for g in ([v] if isinstance(v, str) else v):
                args += ["--" + k, g]
        elif k == "name_template":
            args += ["--name-template", v]
        elif k == "to_layout0" and v:
            args.append("--to-layout0")
        elif k == "time_axes":
            for name, axis in v:
                args += ["--time", "%s:%d" % (name, axis)]
        elif k == "context_caches" and not v:
            args.append("--no-context-caches")
        elif k == "max_model_size":
            args += ["--max-model-size", str(v)]
        elif k == "check" and v:
            args.append("--check")
        elif k == "dry_run" and v:
            args.append("-n")
        else:
            raise AssertionError("no command-line form for %s=%r" % (k, v))
    return args


def options_of(args):
    """rewrite()'s options for a manifest's command-line arguments."""
    kw, i = {}, 0
    while i < len(args):
        if args[i] == "--time":
            name, axis = args[i + 1].rsplit(":", 1)
            kw.setdefault("time_axes", []).append((name, int(axis)))
            i += 2
        elif args[i] == "--to-layout0":
            kw["to_layout0"] = True
            i += 1
        else:
            raise AssertionError("unknown manifest argument %s" % args[i])
    return kw


def run_cli(model, out, kw):
    """(entry of --json, bytes written or None)."""
    if os.path.exists(out):
        os.remove(out)
    args = [cli, model, "--json", "-q"] + cli_args(kw)
    if not kw.get("dry_run"):
        args += ["-o", out]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    doc = json.loads(p.stdout.decode())
    data = open(out, "rb").read() if os.path.exists(out) else None
    return doc["models"][0], data


proto_identical = proto_total = 0


def compare(model, kw, name):
    """The three forms against the command line for one model and options."""
    global proto_identical, proto_total
    out_cli = os.path.join(work, "cli.onnx")
    out_py = os.path.join(work, "py.onnx")
    entry, cli_bytes = run_cli(model, out_cli, kw)
    if entry["status"] == "error":
        try:
            rnnstate.rewrite(model, output=out_py, **kw)
            check(False, name, "the command line failed (%s), the module did not" % entry["error"])
        except rnnstate.Error as e:
            check(e.message == entry["error"], name + " error", "%r != %r" % (e.message, entry["error"]))
        return
    # a path, written to a file
    if os.path.exists(out_py):
        os.remove(out_py)
    dry = kw.get("dry_run")
    res = rnnstate.rewrite(model, **(kw if dry else dict(kw, output=out_py)))
    rep = json.loads(json.dumps(entry))
    rep["output"] = None if dry else out_py
    check(res.report == rep, name + " path: report", "\n%s\n%s" % (res.report, rep))
    if dry:
        check(res.model is None and not os.path.exists(out_py), name + " dry_run writes nothing")
        return
    check(res.model == out_py, name + " path: returns output", repr(res.model))
    check(open(out_py, "rb").read() == cli_bytes, name + " path: bytes identical to the command line")
    # bytes
    data = open(model, "rb").read()
    res = rnnstate.rewrite(data, **kw)
    check(isinstance(res.model, bytes) and res.model == cli_bytes, name + " bytes: identical")
    rep_b = dict(rep, input="<bytes>", output=None)
    check(res.report == rep_b, name + " bytes: report",
          "\n%s\n%s" % (res.report, rep_b))
    # a path without output: bytes
    res = rnnstate.rewrite(model, **kw)
    check(res.model == cli_bytes, name + " path without output: bytes identical")
    check(res.report == dict(rep, output=None), name + " path without output: report")
    # ModelProto
    given = onnx.load_from_string(data)
    before = given.SerializeToString()
    res = rnnstate.rewrite(given, **kw)
    expected = onnx.load_from_string(cli_bytes)
    check(isinstance(res.model, onnx.ModelProto) and res.model == expected,
          name + " ModelProto: equal to the command line's")
    check(given.SerializeToString() == before, name + " ModelProto: the given one unchanged")
    check(res.report == dict(rep, input="<ModelProto>", output=None), name + " ModelProto: report")
    proto_total += 1
    proto_identical += res.model.SerializeToString() == cli_bytes


models = sorted(glob.glob(os.path.join(source, "models", "*.onnx")))
stream_manifest = json.load(open(os.path.join(source, "models", "stream", "manifest.json")))
stream = [(os.path.join(source, "models", "stream", m["file"]), options_of(m["args"]))
          for m in stream_manifest["models"]]
# the third-party models of ../shared/models, where present (as tests/CMakeLists.txt)
shared = sorted(glob.glob(os.path.join(source, "..", "shared", "models", "*.onnx")))
runs = 0
for model, base in [(m, {}) for m in models] + stream + [(m, {}) for m in shared]:
    short = os.path.basename(model) if model in shared else os.path.relpath(model, os.path.join(source, "models"))
    for extra in ({}, {"state_inputs": "required"}):
        kw = dict(base, **extra)
        compare(model, kw, "%s %s" % (short, kw or "defaults"))
        runs += 1
print("%d models x 2 modes: path, bytes and ModelProto forms compared with the command line "
      "(ModelProto re-serialized byte for byte: %d of %d); %d checks failed so far"
      % (len(models) + len(stream) + len(shared), proto_identical, proto_total, failed))

M = lambda name: os.path.join(source, "models", name)  # noqa: E731
for model, kw in [
    (M("denoiser_gru.onnx"), {"name_template": "{name}_{slot}"}),
    (M("denoiser_gru.onnx"), {"include": "*GRU_1"}),
    (M("denoiser_gru.onnx"), {"exclude": ["*GRU_1", "nothing*"]}),
    (M("denoiser_gru.onnx"), {"include": ["/rnn/*"], "exclude": "*GRU"}),
    (M("batchfirst_gru.onnx"), {"to_layout0": True}),
    (M("batchfirst_lstm.onnx"), {"to_layout0": True, "state_inputs": "required"}),
    (M("stream/pad_conv_gru.onnx"), {"context_caches": False}),
    (M("stream/tcn_residual.onnx"), {"time_axes": [("x", 2)], "name_template": "s_{k}_{op}_{slot}"}),
    (M("lstm_2layer_dynamic.onnx"), {"check": True}),
    (M("lstm_2layer_dynamic.onnx"), {"dry_run": True}),
    (M("denoiser_gru.onnx"), {"max_model_size": "1K"}),
    (M("denoiser_gru.onnx"), {"max_model_size": 64 << 10}),
]:
    compare(model, kw, "%s %s" % (os.path.basename(model), kw))
    runs += 1
print("option sets compared: name_template, include, exclude, to_layout0, context_caches, time_axes, "
      "check, dry_run, max_model_size; %d checks failed so far" % failed)

# sync=True writes the same bytes
res = rnnstate.rewrite(M("denoiser_gru.onnx"), output=os.path.join(work, "sync.onnx"), sync=True)
check(open(os.path.join(work, "sync.onnx"), "rb").read() == rnnstate.rewrite(M("denoiser_gru.onnx")).model,
      "sync=True writes the same bytes")

# external_data: a model whose weights are in a file of their own, written
# into another directory, gets its file beside the output (copy, the default;
# link), or keeps it where it is (reference, from a directory above it).
ext_dir = os.path.join(work, "ext", "model")
os.makedirs(ext_dir)
ext_model = os.path.join(ext_dir, "model.onnx")
onnx.save_model(onnx.load(M("denoiser_gru.onnx")), ext_model, save_as_external_data=True,
                all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
weights = open(os.path.join(ext_dir, "w.bin"), "rb").read()
for mode in ("copy", "link"):
    out_dir = os.path.join(work, "ext", mode)
    os.makedirs(out_dir)
    kw = {} if mode == "copy" else {"external_data": mode}
    rnnstate.rewrite(ext_model, output=os.path.join(out_dir, "m.onnx"), **kw)
    placed = os.path.join(out_dir, "w.bin")
    same_inode = os.path.exists(placed) and os.path.samefile(placed, os.path.join(ext_dir, "w.bin"))
    check(os.path.exists(placed) and open(placed, "rb").read() == weights
          and same_inode == (mode == "link"),
          "external_data=%s puts w.bin beside the output (%s)" % (mode, "linked" if mode == "link" else "copied"))
    cli_out = os.path.join(out_dir, "cli.onnx")
    subprocess.run([cli, "-q", ext_model, "-o", cli_out, "--external-data=" + mode], check=True)
    check(open(cli_out, "rb").read() == open(os.path.join(out_dir, "m.onnx"), "rb").read(),
          "external_data=%s: the command line's bytes" % mode)
rnnstate.rewrite(ext_model, output=os.path.join(work, "ext", "up.onnx"), external_data="reference")
locations = {e.value for t in onnx.load(os.path.join(work, "ext", "up.onnx"), load_external_data=False).graph.initializer
             for e in t.external_data if e.key == "location"}
check(locations == {"model/w.bin"} and not os.path.exists(os.path.join(work, "ext", "w.bin")),
      "external_data=reference rewrites the locations, copies nothing", repr(locations))
try:
    rnnstate.rewrite(ext_model, output=os.path.join(work, "ext", "copy", "x.onnx"), external_data="move")
    check(False, "external_data='move' is refused")
except rnnstate.ArgumentError as e:
    check("external_data" in str(e), "external_data='move' is refused", str(e))
try:
    rnnstate.rewrite(ext_model, output=os.path.join(work, "ext", "copy", "r.onnx"), external_data="reference")
    check(False, "reference into a sibling directory is refused")
except rnnstate.InvalidModelError as e:
    check("outside the output's directory" in str(e) and not os.path.exists(os.path.join(work, "ext", "copy", "r.onnx")),
          "reference into a sibling directory is refused, nothing written", str(e))

# Threads: the library has no global state and ctypes releases the GIL, so
# rewrites in parallel threads give what serial ones give.
import concurrent.futures  # noqa: E402
serial = [rnnstate.rewrite(m, **kw) for m, kw in [(m, {}) for m in models] + stream]
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    parallel = list(pool.map(lambda mk: rnnstate.rewrite(mk[0], **mk[1]),
                             [(m, {}) for m in models] + stream))
check(parallel == serial, "%d models rewritten in 4 threads give the serial results" % len(serial))

# time_axes in each of its forms
tcn = M("stream/tcn_residual.onnx")
ref = rnnstate.rewrite(tcn, time_axes=[("x", 2)])
for form in ({"x": 2}, ["x:2"], "x:2", [("x", 2)]):
    res = rnnstate.rewrite(tcn, time_axes=form)
    check(res.model == ref.model and res.report == ref.report, "time_axes=%r" % (form,))
check(ref.report["time_axes"] == [{"input": "x", "axis": 2}], "time_axes in the report",
      repr(ref.report["time_axes"]))

# A PathLike and a label
import pathlib  # noqa: E402
res = rnnstate.rewrite(pathlib.Path(M("denoiser_gru.onnx")), output=pathlib.Path(work) / "p.onnx",
                       label="denoiser")
check(isinstance(res.model, pathlib.Path) and res.report["input"] == "denoiser" and
      res.report["output"] == os.path.join(work, "p.onnx"), "PathLike input and output, label",
      repr(res))
res = rnnstate.rewrite(bytearray(open(M("denoiser_gru.onnx"), "rb").read()))
check(isinstance(res.model, bytes) and res.report["status"] == "rewritten", "bytearray input")

# ---- errors ---------------------------------------------------------------------
corrupt = os.path.join(work, "corrupt.onnx")
with open(corrupt, "wb") as f:
    f.write(b"\x0f\xff garbage, not a model")
truncated = os.path.join(work, "truncated.onnx")
with open(truncated, "wb") as f:
    f.write(open(M("denoiser_gru.onnx"), "rb").read()[:1000])
missing = os.path.join(work, "missing.onnx")
for path, cls, status in ((corrupt, rnnstate.NotModelError, rnnstate.Status.NOT_MODEL),
                          (truncated, rnnstate.NotModelError, rnnstate.Status.NOT_MODEL),
                          (missing, rnnstate.IoError, rnnstate.Status.IO)):
    entry, _ = run_cli(path, os.path.join(work, "x.onnx"), {})
    try:
        rnnstate.rewrite(path)
        check(False, "error for %s" % os.path.basename(path), "no exception")
    except rnnstate.Error as e:
        check(type(e) is cls and e.status == status and e.status == int(status) and
              str(e) == e.message == entry["error"],
              "%s raises %s, status %s, the command line's message" % (os.path.basename(path),
                                                                        cls.__name__, status.name),
              "%r vs %r" % (e, entry["error"]))
for data, what in ((b"\x0f\xff garbage", "corrupt bytes"), (b"", "empty bytes"),
                   (open(M("denoiser_gru.onnx"), "rb").read()[:1000], "truncated bytes")):
    try:
        rnnstate.rewrite(data)
        check(False, what, "no exception")
    except rnnstate.NotModelError as e:
        check(e.status == rnnstate.Status.NOT_MODEL and e.message.startswith("<bytes>: "),
              what + " raise NotModelError", repr(e))
try:
    rnnstate.rewrite(onnx.ModelProto())
    check(False, "an empty ModelProto", "no exception")
except rnnstate.NotModelError as e:
    check(e.message.startswith("<ModelProto>: "), "an empty ModelProto raises NotModelError", repr(e))


def raises(exc, name, f, *args, **kw):
    try:
        f(*args, **kw)
        check(False, name, "no exception")
        return None
    except exc as e:
        check(True, name)
        return e
    except Exception as e:  # noqa: BLE001
        check(False, name, "raised %r" % e)
        return None


d = M("denoiser_gru.onnx")
e = raises(TypeError, "unknown option: TypeError", rnnstate.rewrite, d, statinputs="required")
check(e is not None and "'statinputs'" in str(e) and "did you mean 'state_inputs'" in str(e),
      "unknown option named, with a suggestion", str(e))
e = raises(rnnstate.ArgumentError, "bad state_inputs: ArgumentError", rnnstate.rewrite, d,
           state_inputs="sometimes")
check(isinstance(e, ValueError) and e.status == rnnstate.Status.ARGUMENT, "ArgumentError is a ValueError")
raises(rnnstate.ArgumentError, "bad name_template", rnnstate.rewrite, d, name_template="{op}")
raises(TypeError, "to_layout0='yes'", rnnstate.rewrite, d, to_layout0="yes")
raises(TypeError, "include=3", rnnstate.rewrite, d, include=3)
raises(rnnstate.ArgumentError, "time_axes='x'", rnnstate.rewrite, d, time_axes="x")
raises(rnnstate.ArgumentError, "time_axes={'x': -1}", rnnstate.rewrite, d, time_axes={"x": -1})
raises(rnnstate.ArgumentError, "max_model_size='3G'", rnnstate.rewrite, d, max_model_size="3G")
raises(rnnstate.ArgumentError, "output with dry_run", rnnstate.rewrite, d, output="x.onnx",
       dry_run=True)
raises(TypeError, "a model of type int", rnnstate.rewrite, 42)
e = raises(rnnstate.IoError, "output into a missing directory", rnnstate.rewrite, d,
           output=os.path.join(work, "no", "such", "dir", "x.onnx"))

# ---- the structs against rnnstate.h (when there is a C compiler) -----------------
cc = shutil.which("cc") or shutil.which("gcc")
if cc:
    from rnnstate import _lib  # noqa: E402
    structs = {"rnnstate_error": _lib.ErrorStruct, "rnnstate_limits": _lib.Limits,
               "rnnstate_save_options": _lib.SaveOptions, "rnnstate_time_axis": _lib.TimeAxis,
               "rnnstate_options": _lib.Options, "rnnstate_model_result": _lib.ModelResult}
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "rnnstate.h"', "int main(void) {"]
    for cname, st in structs.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for field, _ in st._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, field, cname, field))
    lines.append("return 0; }")
    src = os.path.join(work, "layout.c")
    with open(src, "w") as f:
        f.write("\n".join(lines))
    exe = os.path.join(work, "layout")
    subprocess.run([cc, "-I", os.path.join(source, "include"), "-I", generated_include, src, "-o", exe],
                   check=True)
    want = dict(line.split() for line in subprocess.run([exe], stdout=subprocess.PIPE,
                                                         check=True).stdout.decode().splitlines())
    got = {}
    for cname, st in structs.items():
        got[cname] = str(__import__("ctypes").sizeof(st))
        for field, _ in st._fields_:
            got["%s.%s" % (cname, field)] = str(getattr(st, field).offset)
    check(got == want, "ctypes structs match rnnstate.h (sizes and offsets of %d fields)" % len(want),
          "\n".join("%s: C %s, ctypes %s" % (k, want[k], got.get(k)) for k in want if want[k] != got.get(k)))
    # every field the module sets is one the library reads
    o = _lib.init_struct(rnnstate._lib.load()[0].rnnstate_options_init, _lib.Options)
    check(o.struct_size == __import__("ctypes").sizeof(_lib.Options) and o.context_caches and
          not o.to_layout0 and o.state_inputs == 0, "options_init's defaults read back")
else:
    print("no C compiler: struct layout not compared")

# ---- finding the library -------------------------------------------------------------
env = dict(os.environ)
env["RNNSTATE_LIBRARY"] = os.path.join(work, "nowhere.so")
p = subprocess.run([sys.executable, "-c", "import rnnstate; rnnstate.rewrite(%r)" % d],
                   env=dict(env, PYTHONPATH=os.path.join(source, "python")),
                   stderr=subprocess.PIPE, stdout=subprocess.PIPE)
check(p.returncode != 0 and b"OSError: rnnstate: RNNSTATE_LIBRARY=" in p.stderr and
      b"no such file" in p.stderr, "a missing $RNNSTATE_LIBRARY is an OSError naming it",
      p.stderr.decode()[-300:])
copy = os.path.join(work, "copy")
shutil.copytree(os.path.join(source, "python", "rnnstate"), os.path.join(copy, "rnnstate"),
                ignore=shutil.ignore_patterns("__pycache__"))
shutil.copy(library, os.path.join(copy, "rnnstate", "librnnstate.so.0"))
del env["RNNSTATE_LIBRARY"]
env.pop("LD_LIBRARY_PATH", None)
p = subprocess.run([sys.executable, "-c", "import rnnstate; print(rnnstate.library_path()); "
                    "print(rnnstate.rewrite(%r).report['status'])" % d],
                   env=dict(env, PYTHONPATH=copy), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
check(p.stdout.decode().split() == [os.path.join(copy, "rnnstate", "librnnstate.so.0"), "rewritten"],
      "the library next to the module is found", p.stdout.decode() + p.stderr.decode())
# a library older than the module (its structs lack fields the module sets) is refused
if cc:
    fake = os.path.join(work, "fake")
    os.makedirs(fake)
    with open(os.path.join(fake, "fake.c"), "w") as f:
        f.write('const char *rnnstate_version(void) { return "0.1.9"; }\n')
    subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(fake, "librnnstate.so.0"),
                    os.path.join(fake, "fake.c")], check=True)
    p = subprocess.run([sys.executable, "-c", "import rnnstate; rnnstate.library_path()"],
                       env=dict(env, PYTHONPATH=os.path.join(source, "python"),
                                RNNSTATE_LIBRARY=os.path.join(fake, "librnnstate.so.0")),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode != 0 and b"is librnnstate 0.1.9, while this module (%s) needs librnnstate 0.2 or a later 0.x"
          % rnnstate.__version__.encode() in p.stderr, "an older library is refused",
          p.stderr.decode()[-300:])
check(rnnstate._lib.compatible("0.2.0") and rnnstate._lib.compatible("0.2.7") and rnnstate._lib.compatible("0.3.0")
      and not rnnstate._lib.compatible("0.1.9") and not rnnstate._lib.compatible("1.2.0")
      and not rnnstate._lib.compatible("0"), "compatible versions: the same major, this minor or later")
check(rnnstate.library_version() == rnnstate.__version__, "module and library versions agree",
      "%s vs %s" % (rnnstate.library_version(), rnnstate.__version__))

print("%d passed, %d failed (%d rewrites compared with the command line)" % (passed, failed, runs))
sys.exit(1 if failed else 0)
