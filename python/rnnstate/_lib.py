"""ctypes bindings of librnnstate (include/rnnstate.h): the library is found,
loaded once, and its functions declared here; nothing is compiled.

Where the library is looked for, first match wins:

1. the file named by the environment variable ``RNNSTATE_LIBRARY``;
2. next to this module: ``librnnstate.so*`` in the package's folder;
3. the library directory ``cmake --install`` recorded in ``_install.py``
   (written at install time: the module and the library of one install);
4. the system's library path (``librnnstate.so.0``: ldconfig's cache,
   ``LD_LIBRARY_PATH``), as the Debian package installs it.
"""

import ctypes
import ctypes.util
import glob
import os
import threading

# The module's version: the library's it was written for. Within a major
# version the library's ABI only grows (docs/library.md: options structs gain
# fields at their end, read up to their struct_size; the report's structs are
# frozen), so a library is taken when its major version is this one's and
# its MAJOR.MINOR at least this one's: an older one lacks fields this module
# sets.
VERSION = "0.2.0"
ABI_MAJOR = int(VERSION.split(".")[0])


def compatible(version):
    """True when a library of `version` ("0.2.3") has the structs this module knows."""
    try:
        have = [int(p) for p in version.split(".")[:2]]
    except ValueError:
        return False
    want = [int(p) for p in VERSION.split(".")[:2]]
    return len(have) == 2 and have[0] == want[0] and have[1] >= want[1]

SONAME = "librnnstate.so.%d" % ABI_MAJOR
ENV_VAR = "RNNSTATE_LIBRARY"

c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_bool = ctypes.c_bool
c_int = ctypes.c_int


class ErrorStruct(ctypes.Structure):
    _fields_ = [("status", c_int), ("message", ctypes.c_char * 512)]


class Limits(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("max_model_bytes", c_size_t),
        ("max_nesting", c_size_t),
        ("lazy_tensor_bytes", c_size_t),
    ]


class SaveOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("sync", c_bool),
        ("cancel", c_void_p),
        ("verify", c_void_p),
        ("verify_arg", c_void_p),
        ("external_data", c_int),
    ]


class TimeAxis(ctypes.Structure):
    _fields_ = [("input", c_char_p), ("axis", c_size_t)]


class Options(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("state_inputs", c_int),
        ("name_template", c_char_p),
        ("n_include", c_size_t),
        ("include", ctypes.POINTER(c_char_p)),
        ("n_exclude", c_size_t),
        ("exclude", ctypes.POINTER(c_char_p)),
        ("to_layout0", c_bool),
        ("n_time_axes", c_size_t),
        ("time_axes", ctypes.POINTER(TimeAxis)),
        ("context_caches", c_bool),
    ]


class ModelResult(ctypes.Structure):
    _fields_ = [
        ("input", c_char_p),
        ("output", c_char_p),
        ("report", c_void_p),
        ("error", c_char_p),
    ]


def init_struct(lib_init, struct_type):
    """An options struct filled with the library's defaults and struct_size
    set to the size this module knows. The library's *_init() writes its own
    struct size, which a newer library may have grown: it writes into a
    scratch buffer large enough, of which the fields known here are kept
    (rnnstate.h, "Options structs")."""
    scratch = (ctypes.c_char * 4096)()
    lib_init(scratch)
    value = struct_type.from_buffer_copy(scratch, 0)
    value.struct_size = ctypes.sizeof(struct_type)
    return value


def _declare(lib):
    p = ctypes.POINTER
    model_pp = p(c_void_p)
    err_p = p(ErrorStruct)
    sigs = {
        "rnnstate_version": (c_char_p, []),
        "rnnstate_limits_init": (None, [c_void_p]),
        "rnnstate_save_options_init": (None, [c_void_p]),
        "rnnstate_options_init": (None, [c_void_p]),
        "rnnstate_model_load_file": (c_int, [c_char_p, p(Limits), model_pp, err_p]),
        "rnnstate_model_load_fd": (c_int, [c_int, c_char_p, p(Limits), model_pp, err_p]),
        "rnnstate_model_load_memory": (c_int, [c_char_p, c_size_t, c_char_p, p(Limits), model_pp,
                                               err_p]),
        "rnnstate_model_save_file": (c_int, [c_void_p, c_char_p, p(SaveOptions), err_p]),
        "rnnstate_model_save_memory": (c_int, [c_void_p, p(c_void_p), p(c_size_t), err_p]),
        "rnnstate_model_free": (None, [c_void_p]),
        "rnnstate_buffer_free": (None, [c_void_p]),
        "rnnstate_name_template_valid": (c_bool, [c_char_p]),
        "rnnstate_rewrite": (c_int, [c_void_p, p(Options), p(c_void_p), err_p]),
        "rnnstate_report_free": (None, [c_void_p]),
        "rnnstate_model_check": (c_int, [c_void_p, c_void_p, err_p]),
        "rnnstate_report_write_json": (c_bool, [p(ModelResult), c_size_t, c_void_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes
    return lib


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.open_memstream.restype = c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)]
    libc.fclose.restype = c_int
    libc.fclose.argtypes = [c_void_p]
    libc.free.restype = None
    libc.free.argtypes = [c_void_p]
    return libc


def candidates():
    """Where the library is looked for, in order: (how, path) pairs."""
    found = []
    env = os.environ.get(ENV_VAR)
    if env:
        found.append(("$" + ENV_VAR, env))
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "librnnstate.so*"))):
        found.append(("next to the module", path))
    try:
        from . import _install  # written by cmake --install
        libdir = os.path.normpath(os.path.join(here, _install.LIBDIR_FROM_MODULE))
        found.append(("the install's library directory", os.path.join(libdir, SONAME)))
    except ImportError:
        pass
    found.append(("the system library path", SONAME))
    return found


_lock = threading.Lock()
_loaded = None


def load():
    """The library (loaded at the first call), its functions declared; and
    libc. Raises OSError naming every place looked at."""
    global _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        tried = []
        for how, path in candidates():
            if how == "the system library path" or os.path.exists(path):
                try:
                    lib = ctypes.CDLL(path)
                except OSError as e:
                    if how.startswith("$"):
                        raise OSError("rnnstate: %s=%s cannot be loaded: %s" % (ENV_VAR, path, e))
                    tried.append("%s (%s): %s" % (how, path, e))
                    continue
            elif how.startswith("$"):
                raise OSError("rnnstate: %s=%s: no such file" % (ENV_VAR, path))
            else:
                tried.append("%s: no %s" % (how, path))
                continue
            try:
                lib.rnnstate_version.restype = c_char_p
                lib.rnnstate_version.argtypes = []
                version = lib.rnnstate_version().decode()
            except AttributeError:
                version = "0"  # no rnnstate_version: not librnnstate
            if not compatible(version):
                major, minor = VERSION.split(".")[:2]
                note = "%s, while this module (%s) needs librnnstate %s.%s or a later %s.x" % (
                    "librnnstate " + version if version != "0" else "not librnnstate", VERSION,
                    major, minor, major)
                if how.startswith("$"):
                    raise OSError("rnnstate: %s=%s is %s" % (ENV_VAR, path, note))
                tried.append("%s (%s): %s" % (how, path, note))
                continue
            _loaded = (_declare(lib), _libc(), path)
            return _loaded
        raise OSError(
            "rnnstate: librnnstate not found; install the library (the Debian package "
            "rnnstate-rewrite, or cmake --install), or set %s to the path of librnnstate.so.%d. "
            "Looked at: %s" % (ENV_VAR, ABI_MAJOR, "; ".join(tried)))
