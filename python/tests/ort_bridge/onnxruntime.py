"""A stand-in for ONNX Runtime's Python package, for tests only, where that
package is not installed (Debian does not package it, and the test machines
reach no Python package index): the part of its API that docs/python.md
uses (InferenceSession(path), get_modelmeta().custom_metadata_map,
get_inputs(), get_outputs(), run()), with every run() done by ONNX Runtime's
Node.js package (onnxruntime-node, path in $RNNSTATE_ORT_NODE) in a child
process (ort_bridge.js). The model's metadata and declared inputs are read
with the onnx package.

One difference is emulated: ONNX Runtime for Python lets a feed override an
input's default (an initializer of the same name), which onnxruntime-node
ignores; the bridge therefore runs a copy of the model without those
defaults, so such inputs must be fed (the docs' session always feeds them).
"""

import atexit
import base64
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx

__version__ = "bridge to onnxruntime-node"
_proc = None
_tmp = tempfile.mkdtemp(prefix="ort-bridge-")


def _call(request):
    global _proc
    if _proc is None:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_bridge.js")
        _proc = subprocess.Popen(["node", script, os.environ["RNNSTATE_ORT_NODE"]],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        atexit.register(_proc.kill)
    _proc.stdin.write((json.dumps(request) + "\n").encode())
    _proc.stdin.flush()
    line = _proc.stdout.readline()
    if not line:
        raise RuntimeError("ort_bridge.js ended")
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["ok"]


class NodeArg:
    def __init__(self, value):
        self.name = value.name
        t = value.type.tensor_type
        self.type = "tensor(%s)" % onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type].name
        self.shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                      for d in t.shape.dim]


class ModelMetadata:
    def __init__(self, model):
        self.custom_metadata_map = {p.key: p.value for p in model.metadata_props}


class InferenceSession:
    def __init__(self, path, **options):
        model = onnx.load(path)
        inits = {i.name for i in model.graph.initializer}
        self._meta = ModelMetadata(model)
        self._inputs = [NodeArg(i) for i in model.graph.input if i.name not in inits]
        self._outputs = [NodeArg(o) for o in model.graph.output]
        names = {i.name for i in model.graph.input}
        kept = [i for i in model.graph.initializer if i.name not in names]
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
        copy = tempfile.mktemp(suffix=".onnx", dir=_tmp)
        onnx.save(model, copy)
        self._id = _call({"cmd": "load", "path": copy})["id"]

    def get_modelmeta(self):
        return self._meta

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def run(self, output_names, feeds):
        names = output_names or [o.name for o in self._outputs]
        wire = {}
        for name, value in feeds.items():
            a = np.ascontiguousarray(value)
            wire[name] = {"dtype": a.dtype.name, "dims": list(a.shape),
                          "data": base64.b64encode(a.tobytes()).decode()}
        outs = _call({"cmd": "run", "id": self._id, "feeds": wire, "outputs": names})
        return [np.frombuffer(base64.b64decode(outs[n]["data"]), dtype=outs[n]["dtype"])
                .reshape(outs[n]["dims"]).copy() for n in names]
