"""rnnstate: expose the hidden state of ONNX recurrent layers (RNN, GRU, LSTM)
as graph inputs and outputs, from Python.

A thin ctypes layer over the C library librnnstate (the same code as the
``rnnstate-rewrite`` command line): nothing is compiled, the library is all
it needs. ``onnx`` is optional (imported by nobody here: a ``ModelProto`` is
recognised by its methods).

    import rnnstate
    model, report = rnnstate.rewrite("denoiser.onnx", output="denoiser.stateful.onnx")
    data, report = rnnstate.rewrite(open("denoiser.onnx", "rb").read())
    proto, report = rnnstate.rewrite(onnx.load("denoiser.onnx"), state_inputs="required")

See docs/python.md.
"""

import collections
import ctypes
import difflib
import enum
import json
import os
import re

from . import _lib

__version__ = _lib.VERSION

__all__ = [
    "rewrite", "Result", "Status", "Error", "IoError", "NotModelError", "InvalidModelError",
    "OutOfMemoryError", "ArgumentError", "library_version", "library_path", "OPTIONS",
    "STATE_METADATA_KEY", "TIME_METADATA_KEY", "STREAM_METADATA_KEY", "DEFAULT_NAME_TEMPLATE",
]

# The model's metadata_props keys (rnnstate.h).
STATE_METADATA_KEY = "rnnstate.state"
TIME_METADATA_KEY = "rnnstate.time"
STREAM_METADATA_KEY = "rnnstate.stream"
DEFAULT_NAME_TEMPLATE = "{op}_{k}_{slot}"


class Status(enum.IntEnum):
    """rnnstate_status."""
    OK = 0
    IO = 1         # the file could not be read or written
    NOT_MODEL = 2  # the bytes are not an ONNX ModelProto
    INVALID = 3    # an ONNX model the rewriter cannot work on
    NOMEM = 4      # an allocation failed
    ARGUMENT = 5   # the caller passed a bad argument (or option value)


class Error(Exception):
    """A failure of the library: ``status`` (a Status) and ``message`` (the
    library's one line, naming the file or buffer and the problem)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = Status(status)
        self.message = message

    def __str__(self):
        return self.message

    def __repr__(self):
        return "%s(%s, %r)" % (type(self).__name__, self.status.name, self.message)


class IoError(Error):
    """Status.IO: a file could not be read or written."""


class NotModelError(Error):
    """Status.NOT_MODEL: the bytes are not an ONNX model."""


class InvalidModelError(Error):
    """Status.INVALID: an ONNX model the rewriter cannot work on."""


class OutOfMemoryError(Error):
    """Status.NOMEM."""


class ArgumentError(Error, ValueError):
    """Status.ARGUMENT: a bad option value (also a ValueError)."""


_ERRORS = {
    Status.IO: IoError,
    Status.NOT_MODEL: NotModelError,
    Status.INVALID: InvalidModelError,
    Status.NOMEM: OutOfMemoryError,
    Status.ARGUMENT: ArgumentError,
}


def _raise(status, message):
    try:
        status = Status(status)
    except ValueError:  # a status a newer library added: the base class, the raw number
        e = Error(Status.INVALID, message)
        e.status = status
        raise e from None
    raise _ERRORS.get(status, Error)(status, message)


def _check(status, err):
    if status != Status.OK:
        _raise(status, err.message.decode("utf-8", "replace"))


Result = collections.namedtuple("Result", ["model", "report"])
Result.__doc__ = """What rewrite() returns: the rewritten model (in the input's form, see
rewrite()) and the report, a dict shaped like one entry of the command
line's --json report (docs/report.schema.json)."""

# Every option rewrite() takes, with its default (output is not an option of
# the rewrite itself but of where it goes).
OPTIONS = {
    "output": None,
    "state_inputs": "optional",
    "include": (),
    "exclude": (),
    "name_template": None,
    "to_layout0": False,
    "time_axes": (),
    "context_caches": True,
    "max_model_size": None,
    "check": False,
    "sync": False,
    "external_data": "copy",
    "dry_run": False,
    "label": None,
}


def library_version():
    """The version of the librnnstate that was loaded, e.g. "0.2.0"."""
    lib, _, _ = _lib.load()
    return lib.rnnstate_version().decode()


def library_path():
    """The path (or soname) the library was loaded from."""
    return _lib.load()[2]


def _bad(message):
    raise ArgumentError(Status.ARGUMENT, message)


def _flag(name, value):
    if not isinstance(value, bool):
        raise TypeError("rnnstate: option %s takes True or False, not %r" % (name, value))
    return value


def _text(name, value):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        raise TypeError("rnnstate: option %s takes a string, not %r" % (name, value))
    if "\0" in value:
        _bad("option %s: %r contains a NUL character" % (name, value))
    return value.encode("utf-8", "surrogateescape")


def _globs(name, value):
    if isinstance(value, (str, bytes)):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise TypeError("rnnstate: option %s takes a glob or a list of globs, not %r"
                        % (name, value)) from None
    return [_text(name, v) for v in items]


def _time_axes(value):
    """[(input, axis)] from {"x": 1}, [("x", 1)], ["x:1"] or "x:1"."""
    if isinstance(value, (str, bytes)):
        value = [value]
    if isinstance(value, dict):
        value = list(value.items())
    axes = []
    for item in value:
        if isinstance(item, bytes):
            item = item.decode("utf-8", "surrogateescape")
        if isinstance(item, str):
            m = re.fullmatch(r"(.+):([0-9]+)", item, re.S)
            if not m:
                _bad("option time_axes: %r is not INPUT:AXIS (an input name and an axis number)"
                     % item)
            item = (m.group(1), int(m.group(2)))
        try:
            name, axis = item
        except (TypeError, ValueError):
            raise TypeError("rnnstate: option time_axes takes {input: axis}, [(input, axis)] or "
                            "['input:axis'], not %r" % (value,)) from None
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError("rnnstate: option time_axes: the axis of %r must be an int, not %r"
                            % (name, axis))
        if axis < 0 or axis > 64:
            _bad("option time_axes: axis %d of %r is out of range (0 to 64)" % (axis, name))
        if not name:
            _bad("option time_axes: an input name is empty")
        axes.append((_text("time_axes", name), axis))
    return axes


_SIZE = re.compile(r"([0-9]+)([KkMmGg]?)")
_MAX_MODEL_BYTES = 2 << 30


def _model_size(value):
    """Bytes from an int or "123", "64K", "500M", "2G" (like --max-model-size)."""
    if isinstance(value, bool):
        raise TypeError("rnnstate: option max_model_size takes a number of bytes or a size "
                        "such as '500M', not %r" % (value,))
    if isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if not m:
            _bad("option max_model_size takes a size such as 500M or 2G, not %r" % value)
        value = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
    if not isinstance(value, int):
        raise TypeError("rnnstate: option max_model_size takes a number of bytes or a size "
                        "such as '500M', not %r" % (value,))
    if value < 1 or value > _MAX_MODEL_BYTES:
        _bad("option max_model_size: %d bytes is out of range (1 to 2G, protobuf's own limit)"
             % value)
    return value


class _Prepared:
    """The options as the library takes them, and the Python objects their
    pointers point into (kept alive for the call)."""

    def __init__(self, lib, opts):
        self.options = _lib.init_struct(lib.rnnstate_options_init, _lib.Options)
        self.limits = _lib.init_struct(lib.rnnstate_limits_init, _lib.Limits)
        self.save = _lib.init_struct(lib.rnnstate_save_options_init, _lib.SaveOptions)
        o = self.options

        mode = opts["state_inputs"]
        if mode not in ("optional", "required"):
            _bad("option state_inputs takes 'optional' or 'required', not %r" % (mode,))
        o.state_inputs = 0 if mode == "optional" else 1

        if opts["name_template"] is not None:
            self.name_template = _text("name_template", opts["name_template"])
            if not lib.rnnstate_name_template_valid(self.name_template):
                _bad("option name_template %r must contain {slot} and one of {k} or {name}"
                     % opts["name_template"])
            o.name_template = self.name_template

        for key in ("include", "exclude"):
            globs = _globs(key, opts[key])
            array = (ctypes.c_char_p * max(len(globs), 1))(*globs)
            setattr(self, key, array)
            setattr(o, "n_" + key, len(globs))
            setattr(o, key, ctypes.cast(array, ctypes.POINTER(ctypes.c_char_p)))

        axes = _time_axes(opts["time_axes"])
        self.axes = (_lib.TimeAxis * max(len(axes), 1))(*[_lib.TimeAxis(n, a) for n, a in axes])
        o.n_time_axes = len(axes)
        o.time_axes = ctypes.cast(self.axes, ctypes.POINTER(_lib.TimeAxis))

        o.to_layout0 = _flag("to_layout0", opts["to_layout0"])
        o.context_caches = _flag("context_caches", opts["context_caches"])
        if opts["max_model_size"] is not None:
            self.limits.max_model_bytes = _model_size(opts["max_model_size"])
        self.save.sync = _flag("sync", opts["sync"])
        modes = ("copy", "link", "reference")  # rnnstate_external_data's order
        if opts["external_data"] not in modes:
            _bad("option external_data takes 'copy', 'link' or 'reference', not %r"
                 % (opts["external_data"],))
        self.save.external_data = modes.index(opts["external_data"])
        self.check = _flag("check", opts["check"])
        self.dry_run = _flag("dry_run", opts["dry_run"])


def _options(given):
    unknown = [k for k in given if k not in OPTIONS]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, OPTIONS, n=1)
            hints.append("%r%s" % (k, " (did you mean %r?)" % close[0] if close else ""))
        raise TypeError("rnnstate.rewrite() got unknown option%s %s; the options are: %s"
                        % ("s" if len(unknown) > 1 else "", ", ".join(hints),
                           ", ".join(OPTIONS)))
    opts = dict(OPTIONS)
    opts.update(given)
    return opts


def _is_proto(model):
    return callable(getattr(model, "SerializeToString", None)) and \
        callable(getattr(model, "ParseFromString", None))


def _report_entry(lib, libc, report, input_label, output_label):
    """One entry of the --json document, written by the library itself."""
    result = _lib.ModelResult(input_label, output_label, report, None)
    buf = ctypes.c_void_p()
    size = ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        raise MemoryError("rnnstate: open_memstream failed")
    try:
        ok = lib.rnnstate_report_write_json(ctypes.byref(result), 1, stream)
    finally:
        libc.fclose(stream)
        data = ctypes.string_at(buf, size.value)
        libc.free(buf)
    if not ok:
        raise MemoryError("rnnstate: the report could not be written")
    return json.loads(data.decode("utf-8"))["models"][0]


class _Owned:
    """A library object freed by `free` when the block ends."""

    def __init__(self, free):
        self.ptr = ctypes.c_void_p()
        self.free = free

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.ptr:
            self.free(self.ptr)
            self.ptr = ctypes.c_void_p()


def _save_memory(lib, model):
    data = ctypes.c_void_p()
    size = ctypes.c_size_t()
    err = _lib.ErrorStruct()
    _check(lib.rnnstate_model_save_memory(model, ctypes.byref(data), ctypes.byref(size),
                                          ctypes.byref(err)), err)
    try:
        return ctypes.string_at(data, size.value)
    finally:
        lib.rnnstate_buffer_free(data)


def _load_bytes(lib, data, label, limits, m, err):
    """Loads a model from bytes as the command line loads a file: through an
    anonymous memory file (Linux memfd), so that the weights stay in it until
    the save copies them and the output is the command line's byte for byte
    (decoding everything would write the model's fields in protobuf's order,
    which differs from the file's for some exporters). Without memfd, from
    memory."""
    if not hasattr(os, "memfd_create"):
        return lib.rnnstate_model_load_memory(data, len(data), label, ctypes.byref(limits),
                                              ctypes.byref(m.ptr), ctypes.byref(err))
    fd = os.memfd_create("rnnstate-input", getattr(os, "MFD_CLOEXEC", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        # the library keeps a duplicate of the descriptor while it needs the file
        return lib.rnnstate_model_load_fd(fd, label, ctypes.byref(limits), ctypes.byref(m.ptr),
                                          ctypes.byref(err))
    finally:
        os.close(fd)


def rewrite(model, **options):
    """Rewrites an ONNX model so that the hidden state of its recurrent nodes
    becomes graph inputs and outputs (what ``rnnstate-rewrite`` does).

    ``model`` is a path (str or os.PathLike), the model's bytes (bytes,
    bytearray, memoryview) or an ``onnx.ModelProto``. Returns
    ``Result(model, report)``: ``model`` in the form given: bytes for bytes,
    a new ModelProto for a ModelProto (the one given is not modified), and for
    a path, the bytes, unless ``output=`` names a file to write (any input
    form): the model is then written there atomically, like ``rnnstate-rewrite
    -o``, and ``output`` is returned as given. With ``dry_run=True`` nothing is
    written and the model is None. ``report`` is a dict, one entry of the
    command line's ``--json`` report (docs/report.schema.json): "input" (the
    path, or ``label``), "output" (the file written, else None), "status"
    ("rewritten", "annotated" or "unchanged"), "error" (None), "nodes",
    "state", "time_axes", "stream", "notes".

    Options (keywords only; the command line's in brackets):
      output          the file to write [-o]
      state_inputs    "optional" (default) or "required" [--state-inputs]
      include         a glob or list of globs on node names [--include]
      exclude         the same, to leave nodes alone [--exclude]
      name_template   e.g. "{op}_{k}_{slot}" (the default) [--name-template]
      to_layout0      rewrite layout=1 nodes to layout 0 (default False) [--to-layout0]
      time_axes       {"x": 1}, [("x", 1)] or ["x:1"] [--time]
      context_caches  give causal convolutions a context cache (default True)
                      [--no-context-caches is False]
      max_model_size  refuse larger models: bytes, or "500M", "2G" [--max-model-size]
      check           re-load the written model and verify its structure [--check]
      sync            fsync the written file (with output) [--sync]
      external_data   "copy" (default), "link" or "reference": the external
                      data files of a model written into another directory
                      (with output) [--external-data]
      dry_run         analyse and report only [-n]
      label           names the model in messages and the report's "input"
                      (default: the path; "<bytes>"; "<ModelProto>")

    Raises TypeError for an unknown option or a value of the wrong type,
    ArgumentError (a ValueError) for a bad value, and Error subclasses with
    ``status`` and ``message`` when the library fails: NotModelError (bytes
    that are not a model), IoError, InvalidModelError, OutOfMemoryError.
    """
    opts = _options(options)
    lib, libc, _ = _lib.load()
    prepared = _Prepared(lib, opts)
    output = opts["output"]
    if output is not None and prepared.dry_run:
        _bad("options output and dry_run exclude each other")
    if output is not None:
        output_path = os.fsencode(output)
        if not output_path or b"\0" in output_path:
            _bad("option output: %r is not a file name" % (output,))
    label = opts["label"]

    err = _lib.ErrorStruct()
    with _Owned(lib.rnnstate_model_free) as m, _Owned(lib.rnnstate_report_free) as r:
        if isinstance(model, (str, os.PathLike)):
            form = "path"
            path = os.fsencode(model)
            if b"\0" in path:
                _bad("%r is not a file name" % (model,))
            input_label = _text("label", label) if label is not None else path
            status = lib.rnnstate_model_load_file(path, ctypes.byref(prepared.limits),
                                                  ctypes.byref(m.ptr), ctypes.byref(err))
        else:
            if isinstance(model, bytes):
                form, data = "bytes", model
            elif isinstance(model, (bytearray, memoryview)):
                form, data = "bytes", bytes(model)
            elif _is_proto(model):
                form, data = "proto", model.SerializeToString()
            else:
                raise TypeError("rnnstate.rewrite() takes a path, bytes or an onnx.ModelProto, "
                                "not %s" % type(model).__name__)
            default = "<bytes>" if form == "bytes" else "<ModelProto>"
            input_label = _text("label", label if label is not None else default)
            status = _load_bytes(lib, data, input_label, prepared.limits, m, err)
        _check(status, err)
        _check(lib.rnnstate_rewrite(m.ptr, ctypes.byref(prepared.options), ctypes.byref(r.ptr),
                                    ctypes.byref(err)), err)

        if prepared.dry_run:
            result = None
        elif output is not None:
            _check(lib.rnnstate_model_save_file(m.ptr, output_path, ctypes.byref(prepared.save),
                                                ctypes.byref(err)), err)
            if prepared.check:
                with _Owned(lib.rnnstate_model_free) as again:
                    _check(lib.rnnstate_model_load_file(output_path, ctypes.byref(prepared.limits),
                                                        ctypes.byref(again.ptr),
                                                        ctypes.byref(err)), err)
                    _check(lib.rnnstate_model_check(again.ptr, r.ptr, ctypes.byref(err)), err)
            result = output
        else:
            data = _save_memory(lib, m.ptr)
            if prepared.check:
                with _Owned(lib.rnnstate_model_free) as again:
                    _check(lib.rnnstate_model_load_memory(data, len(data), b"<rewritten>",
                                                          ctypes.byref(prepared.limits),
                                                          ctypes.byref(again.ptr),
                                                          ctypes.byref(err)), err)
                    _check(lib.rnnstate_model_check(again.ptr, r.ptr, ctypes.byref(err)), err)
            if form == "proto":
                result = type(model)()
                result.ParseFromString(data)
            else:
                result = data
        report = _report_entry(lib, libc, r.ptr, input_label,
                               output_path if output is not None else None)
    return Result(result, report)
