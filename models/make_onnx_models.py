#!/usr/bin/python3
"""Build the issue-4 test models (subgraphs, already-stateful and
half-stateful models, quantized LSTM, IR 3, batch-first, fp16/double) with
onnx.helper, in the patterns real exporters emit.

Run:  /usr/bin/python3 models/make_onnx_models.py [--refdata DIR]
      (from any directory; needs Debian's python3-onnx and numpy)

Writes the *.onnx files, extra_manifest.json and the reference data of the
batch-first models (<name>.test/test_data_set_0/{input,output}_N.pb) next to
this script. Deterministic: model i draws its weights from
numpy.random.default_rng(SEED_BASE + i), and a second run writes identical
bytes. Every model passes onnx.checker.check_model (full_check).

Each model comes with a numpy reference of its outputs (ONNX semantics of
LSTM/GRU written out below). --refdata DIR also writes, for EVERY model,
DIR/<name>/test_data_set_<k>/{input,output}_N.pb (inputs named after the
graph inputs) so that the models can be checked in ONNX Runtime; DIR/index.json
lists them with the tolerance to use.
"""

import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SEED_BASE = 4000
T = 12          # test sequence length (3 chunks of 4)
B = 2           # test batch size for dynamic-batch models
IN = 8          # input size (never equal to HID, so the two cannot be confused)
HID = 16        # hidden size
OPSET = 14
MS_DOMAIN = "com.microsoft"

F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE
NP_OF = {F32: np.float32, F16: np.float16, F64: np.float64}
DTYPE_NAME = {F32: "float32", F16: "float16", F64: "float64",
              TensorProto.BOOL: "bool", TensorProto.INT64: "int64"}


# --------------------------------------------------------------------------
# numpy references (ONNX operator semantics, default activations)
# --------------------------------------------------------------------------

def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def np_lstm(x, W, R, Bias, h0, c0, layout=0):
    """ONNX LSTM. x [T,B,I] (layout 0) or [B,T,I] (layout 1). Returns Y, Y_h, Y_c
    in the node's layout. Computes in float64."""
    x, W, R, Bias, h0, c0 = (np.asarray(a, np.float64) for a in (x, W, R, Bias, h0, c0))
    if layout == 1:
        x, h0, c0 = x.transpose(1, 0, 2), h0.transpose(1, 0, 2), c0.transpose(1, 0, 2)
    D, H4, _ = W.shape
    H = H4 // 4
    Tn = x.shape[0]
    Y = np.zeros((Tn, D, x.shape[1], H))
    Yh, Yc = np.zeros_like(h0), np.zeros_like(c0)
    for d in range(D):
        h, c = h0[d], c0[d]
        wb, rb = Bias[d, :4 * H], Bias[d, 4 * H:]
        for t in (range(Tn) if d == 0 else range(Tn - 1, -1, -1)):
            g = x[t] @ W[d].T + h @ R[d].T + wb + rb
            i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
            Y[t, d] = h
        Yh[d], Yc[d] = h, c
    if layout == 1:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


def np_gru(x, W, R, Bias, h0, linear_before_reset=1, layout=0):
    """ONNX GRU, like np_lstm. Returns Y, Y_h."""
    x, W, R, Bias, h0 = (np.asarray(a, np.float64) for a in (x, W, R, Bias, h0))
    if layout == 1:
        x, h0 = x.transpose(1, 0, 2), h0.transpose(1, 0, 2)
    D, H3, _ = W.shape
    H = H3 // 3
    Tn = x.shape[0]
    Y = np.zeros((Tn, D, x.shape[1], H))
    Yh = np.zeros_like(h0)
    for d in range(D):
        h = h0[d]
        Wz, Wr, Wh = (W[d, k * H:(k + 1) * H] for k in range(3))
        Rz, Rr, Rh = (R[d, k * H:(k + 1) * H] for k in range(3))
        wbz, wbr, wbh, rbz, rbr, rbh = (Bias[d, k * H:(k + 1) * H] for k in range(6))
        for t in (range(Tn) if d == 0 else range(Tn - 1, -1, -1)):
            z = sigmoid(x[t] @ Wz.T + h @ Rz.T + wbz + rbz)
            r = sigmoid(x[t] @ Wr.T + h @ Rr.T + wbr + rbr)
            if linear_before_reset:
                hh = np.tanh(x[t] @ Wh.T + r * (h @ Rh.T + rbh) + wbh)
            else:
                hh = np.tanh(x[t] @ Wh.T + (r * h) @ Rh.T + rbh + wbh)
            h = (1 - z) * hh + z * h
            Y[t, d] = h
        Yh[d] = h
    if layout == 1:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2)
    return Y, Yh


def seq_out(Y):
    """What PyTorch does with Y [T,D,B,H]: Squeeze (D=1) or Transpose+Reshape
    (bidirectional) to [T,B,D*H]."""
    Tn, D, Bn, H = Y.shape
    return Y.transpose(0, 2, 1, 3).reshape(Tn, Bn, D * H)


def lstm_weights(rng, D, I, H, dtype=np.float32):
    k = 1.0 / np.sqrt(H)
    return (rng.uniform(-k, k, (D, 4 * H, I)).astype(dtype),
            rng.uniform(-k, k, (D, 4 * H, H)).astype(dtype),
            rng.uniform(-k, k, (D, 8 * H)).astype(dtype))


def gru_weights(rng, D, I, H, dtype=np.float32):
    k = 1.0 / np.sqrt(H)
    return (rng.uniform(-k, k, (D, 3 * H, I)).astype(dtype),
            rng.uniform(-k, k, (D, 3 * H, H)).astype(dtype),
            rng.uniform(-k, k, (D, 6 * H)).astype(dtype))


def dense(rng, I, O, dtype=np.float32):
    k = 1.0 / np.sqrt(I)
    return rng.uniform(-k, k, (I, O)).astype(dtype)


# --------------------------------------------------------------------------
# Graph building, with PyTorch-1.13-like names ("/rnn/LSTM",
# "/rnn/LSTM_output_0", "/rnn/Constant_3_output_0"). One Namer per model keeps
# node and value names unique across the main graph and every subgraph.
# --------------------------------------------------------------------------

class Namer:
    def __init__(self):
        self.counts = {}

    def __call__(self, scope, op):
        key = (scope, op)
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return "%s/%s" % (scope, op) if n == 0 else "%s/%s_%d" % (scope, op, n)


class Graph:
    def __init__(self, namer, scope):
        self.namer = namer
        self.scope = scope
        self.nodes = []
        self.inits = []

    def op(self, op_type, inputs, n_out=1, outputs=None, domain=None, **attrs):
        name = self.namer(self.scope, op_type)
        outs = outputs or ["%s_output_%d" % (name, i) for i in range(n_out)]
        node = helper.make_node(op_type, inputs, outs, name=name, **attrs)
        if domain:
            node.domain = domain
        self.nodes.append(node)
        return outs[0] if len(outs) == 1 else outs

    def const(self, value, dtype=np.int64):
        arr = np.array(value, dtype=dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(arr))

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def make(self, name, inputs, outputs):
        return helper.make_graph(self.nodes, name, inputs, outputs, self.inits)


def vinfo(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def batch_dim(g, src, axis):
    """Shape(src) -> Gather(axis) -> Unsqueeze: the 1-element batch size."""
    shp = g.op("Shape", [src])
    b = g.op("Gather", [shp, g.const(axis)], axis=0)
    return g.op("Unsqueeze", [b, g.const([0])])


def zeros_cos(g, src, batch_axis, head, tail, np_dtype=np.float32):
    """PyTorch's dynamic-batch zero state: ConstantOfShape(Concat(head, batch,
    tail)), batch = Shape(src)[batch_axis]. head/tail are lists of ints."""
    b = batch_dim(g, src, batch_axis)
    parts = ([g.const(head)] if head else []) + [b] + ([g.const(tail)] if tail else [])
    shape = g.op("Concat", parts, axis=0)
    return g.op("ConstantOfShape", [shape],
                value=numpy_helper.from_array(np.zeros(1, np_dtype)))


def zeros_expand(g, src, batch_axis, D, H, np_dtype=np.float32):
    """PyTorch's fixed-shape zero state: Expand(Constant zeros [D,1,H],
    Concat([D], batch, [H])), batch = Shape(src)[batch_axis]."""
    z = g.const(np.zeros((D, 1, H)), np_dtype)
    b = batch_dim(g, src, batch_axis)
    shape = g.op("Concat", [g.const([D]), b, g.const([H])], axis=0)
    return g.op("Expand", [z, shape])


def squeeze(g, v, axes):
    return g.op("Squeeze", [v, g.const(axes)])


def unsqueeze(g, v, axes):
    return g.op("Unsqueeze", [v, g.const(axes)])


def bidir_seq(g, Y):
    """Y [T,2,B,H] -> [T,B,2H] the way PyTorch exports it."""
    tr = g.op("Transpose", [Y], perm=[0, 2, 1, 3])
    return g.op("Reshape", [tr, g.const([0, 0, -1])])


def lstm(g, x, w, r, b, h0, c0, H, **attrs):
    return g.op("LSTM", [x, w, r, b, "", h0, c0], n_out=3, hidden_size=H, **attrs)


def gru(g, x, w, r, b, h0, H, **attrs):
    return g.op("GRU", [x, w, r, b, "", h0], n_out=2, hidden_size=H,
                linear_before_reset=1, **attrs)


def finish(graph, opset=OPSET, ir_version=None, extra_opsets=()):
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets,
                          producer_name="rnnstate-rewrite make_onnx_models.py")
    m.ir_version = 7 if ir_version is None else ir_version   # 7: what PyTorch 1.13 writes
    return m


# --------------------------------------------------------------------------
# The models. Each builder takes a numpy Generator and returns a dict:
#   model, description, inputs [(name, dtype, test shape, time_axis, fill)],
#   outputs [(name, time_axis)], streamable, ort (does onnxruntime-node 1.30
#   run it), ref (feeds -> {output: array}), tol (for the ORT check),
#   optionally cases (extra feeds for --refdata), testdata (True: write
#   <name>.test/ next to the model), atol (the manifest's tolerance for
#   comparisons in onnxruntime-node, where 1e-5 is too tight), ort_optional
#   and ort_optional_note (False, and why: ONNX Runtime runs the rewritten
#   model only with required state inputs) and state_inputs (the inputs of the state pairs a careful human names, checked
#   exactly by tests/e2e/stream_check.js), context_inputs (those of them whose pairs are of kind context).
# --------------------------------------------------------------------------

def x_feed(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, shape).astype(dtype)


def if_nested_one_branch(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)
    Pq = dense(rng, IN, HID)       # outer else: projection
    Pr = dense(rng, IN, HID)       # inner else: projection

    # inner then: the LSTM, zero state built inside the branch (Silero keeps
    # its LSTM weights as branch initializers, so do we)
    it = Graph(nm, "/inner_then")
    z = zeros_cos(it, "x", 1, [1], [HID])
    Y, _, _ = lstm(it, "x", it.init("inner_then.lstm.W", W), it.init("inner_then.lstm.R", R),
                   it.init("inner_then.lstm.B", Bs), z, z, HID)
    out = squeeze(it, Y, [1])
    inner_then = it.make("inner_then", [], [vinfo(out, F32, ["T", "batch", HID])])

    ie = Graph(nm, "/inner_else")
    mm = ie.op("MatMul", ["x", ie.init("inner_else.proj", Pr)])
    out = ie.op("Tanh", [mm])
    inner_else = ie.make("inner_else", [], [vinfo(out, F32, ["T", "batch", HID])])

    ot = Graph(nm, "/outer_then")
    c2 = ot.op("Identity", ["cond"])
    out = ot.op("If", [c2], then_branch=inner_then, else_branch=inner_else)
    outer_then = ot.make("outer_then", [], [vinfo(out, F32, ["T", "batch", HID])])

    oe = Graph(nm, "/outer_else")
    mm = oe.op("MatMul", ["x", oe.init("outer_else.proj", Pq)])
    out = oe.op("Relu", [mm])
    outer_else = oe.make("outer_else", [], [vinfo(out, F32, ["T", "batch", HID])])

    g = Graph(nm, "")
    g.op("If", ["cond"], outputs=["y"], then_branch=outer_then, else_branch=outer_else)
    graph = g.make("if_nested_one_branch",
                   [vinfo("cond", TensorProto.BOOL, []), vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", HID])])

    def ref(f):
        x = f["x"]
        if not f["cond"]:
            return {"y": np.maximum(x @ Pq, 0)}
        h0 = np.zeros((1, x.shape[1], HID))
        return {"y": seq_out(np_lstm(x, W, R, Bs, h0, h0)[0])}

    return dict(
        model=finish(graph),
        description="If(cond) -> then: If(cond) -> then: LSTM(8,16) with a ConstantOfShape zero state built in "
                    "the branch (weights are branch initializers); inner else: Tanh(MatMul); outer else: "
                    "Relu(MatMul). Two levels, LSTM in one branch only. Dynamic batch+time; cond=1 runs the LSTM",
        inputs=[("cond", TensorProto.BOOL, [], None, 1), ("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=True, ref=ref,
        cases=[{"cond": np.array(False)}])


def if_nested_both_branches(rng):
    nm = Namer()
    Wg, Rg, Bg = gru_weights(rng, 1, IN, HID)
    Wl, Rl, Bl = lstm_weights(rng, 1, IN, HID)
    Pq = dense(rng, IN, HID)

    # inner then: GRU whose weights are Constant nodes inside the branch
    it = Graph(nm, "/inner_then/gru")
    z = zeros_cos(it, "x", 1, [1], [HID])
    Y, _ = gru(it, "x", it.const(Wg, np.float32), it.const(Rg, np.float32), it.const(Bg, np.float32), z, HID)
    out = squeeze(it, Y, [1])
    inner_then = it.make("inner_then", [], [vinfo(out, F32, ["T", "batch", HID])])

    # inner else: LSTM whose weights are main-graph initializers (outer scope),
    # zero state from Expand of a Constant
    ie = Graph(nm, "/inner_else/lstm")
    z = zeros_expand(ie, "x", 1, 1, HID)
    Y, _, _ = lstm(ie, "x", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias", z, z, HID)
    out = squeeze(ie, Y, [1])
    inner_else = ie.make("inner_else", [], [vinfo(out, F32, ["T", "batch", HID])])

    ot = Graph(nm, "/outer_then")
    out = ot.op("If", ["use_gru"], then_branch=inner_then, else_branch=inner_else)
    outer_then = ot.make("outer_then", [], [vinfo(out, F32, ["T", "batch", HID])])

    oe = Graph(nm, "/outer_else")
    mm = oe.op("MatMul", ["x", "proj.weight"])
    out = oe.op("Tanh", [mm])
    outer_else = oe.make("outer_else", [], [vinfo(out, F32, ["T", "batch", HID])])

    g = Graph(nm, "")
    g.init("lstm.weight_ih", Wl)
    g.init("lstm.weight_hh", Rl)
    g.init("lstm.bias", Bl)
    g.init("proj.weight", Pq)
    g.init("scale", np.array(0.5, np.float32))
    v = g.op("If", ["cond"], then_branch=outer_then, else_branch=outer_else)
    g.op("Mul", [v, "scale"], outputs=["y"])
    graph = g.make("if_nested_both_branches",
                   [vinfo("cond", TensorProto.BOOL, []), vinfo("use_gru", TensorProto.BOOL, []),
                    vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", HID])])

    def ref(f):
        x = f["x"]
        h0 = np.zeros((1, x.shape[1], HID))
        if not f["cond"]:
            v = np.tanh(x @ Pq)
        elif f["use_gru"]:
            v = seq_out(np_gru(x, Wg, Rg, Bg, h0)[0])
        else:
            v = seq_out(np_lstm(x, Wl, Rl, Bl, h0, h0)[0])
        return {"y": 0.5 * v}

    return dict(
        model=finish(graph),
        description="If(cond) -> then: If(use_gru) -> then: GRU(8,16) (weights as Constant nodes in the branch, "
                    "ConstantOfShape zero state); else: LSTM(8,16) (weights are main-graph initializers, Expand "
                    "zero state); outer else: Tanh(MatMul); y = 0.5 * If output. Dynamic batch+time. The test "
                    "fill (cond=1, use_gru=0) runs the LSTM; use_gru=1 runs the GRU",
        inputs=[("cond", TensorProto.BOOL, [], None, 1), ("use_gru", TensorProto.BOOL, [], None, 0),
                ("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=True, ref=ref,
        cases=[{"use_gru": np.array(True)}, {"cond": np.array(False)}])


def loop_body_lstm(rng):
    nm = Namer()
    P = dense(rng, IN, HID)
    W, R, Bs = lstm_weights(rng, 1, HID, HID)
    TRIPS = 2

    # for _ in range(2): h = h + lstm(h)[0]   (torch.jit.script-style Loop)
    body = Graph(nm, "/Loop/body")
    z = zeros_cos(body, "h.1", 1, [1], [HID])
    Y, _, _ = lstm(body, "h.1", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias", z, z, HID)
    h = body.op("Add", ["h.1", squeeze(body, Y, [1])])
    cond_out = body.op("Identity", ["cond.1"])
    body_g = body.make("loop_body",
                       [vinfo("i.1", TensorProto.INT64, []), vinfo("cond.1", TensorProto.BOOL, []),
                        vinfo("h.1", F32, ["T", "batch", HID])],
                       [vinfo(cond_out, TensorProto.BOOL, []), vinfo(h, F32, ["T", "batch", HID])])

    g = Graph(nm, "")
    g.init("proj.weight", P)
    g.init("lstm.weight_ih", W)
    g.init("lstm.weight_hh", R)
    g.init("lstm.bias", Bs)
    g.init("trip_count", np.array(TRIPS, np.int64))
    p = g.op("MatMul", ["x", "proj.weight"])
    g.op("Loop", ["trip_count", "", p], outputs=["y"], body=body_g)
    graph = g.make("loop_body_lstm", [vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", HID])])

    def ref(f):
        h = f["x"].astype(np.float64) @ P
        h0 = np.zeros((1, h.shape[1], HID))
        for _ in range(TRIPS):
            h = h + seq_out(np_lstm(h, W, R, Bs, h0, h0)[0])
        return {"y": h}

    return dict(
        model=finish(graph),
        description="MatMul(8->16), then a Loop (trip count 2, no condition) whose body runs h = h + LSTM(16,16)(h) "
                    "with a ConstantOfShape zero state built in the body. The LSTM runs once per iteration: the "
                    "tool must skip it with a reason and leave the model unchanged",
        inputs=[("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=False, ort=True, ref=ref)


def scan_body_lstm(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)

    # one LSTM step per Scan iteration, h and c carried as Scan state
    body = Graph(nm, "/Scan/body")
    xt = unsqueeze(body, "x_t", [0])
    Y, Yh, Yc = lstm(body, xt, "cell.weight_ih", "cell.weight_hh", "cell.bias", "h_prev", "c_prev", HID)
    yt = squeeze(body, Y, [0, 1])
    body_g = body.make("scan_body",
                       [vinfo("h_prev", F32, [1, "batch", HID]), vinfo("c_prev", F32, [1, "batch", HID]),
                        vinfo("x_t", F32, ["batch", IN])],
                       [vinfo(Yh, F32, [1, "batch", HID]), vinfo(Yc, F32, [1, "batch", HID]),
                        vinfo(yt, F32, ["batch", HID])])

    g = Graph(nm, "")
    g.init("cell.weight_ih", W)
    g.init("cell.weight_hh", R)
    g.init("cell.bias", Bs)
    z = zeros_cos(g, "x", 1, [1], [HID])
    g.op("Scan", [z, z, "x"], outputs=["/Scan_output_0", "/Scan_output_1", "y"], body=body_g,
         num_scan_inputs=1)
    graph = g.make("scan_body_lstm", [vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", HID])])

    def ref(f):
        x = f["x"]
        h0 = np.zeros((1, x.shape[1], HID))
        return {"y": seq_out(np_lstm(x, W, R, Bs, h0, h0)[0])}

    return dict(
        model=finish(graph),
        description="A Scan over x's time axis whose body is one LSTM(8,16) step (T=1), h and c carried as Scan "
                    "state from a ConstantOfShape zero state in the main graph; final Scan states unused. The "
                    "tool must skip the LSTM (Scan body) with a reason and leave the model unchanged",
        inputs=[("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=False, ort=True, ref=ref)


def packed_state(rng):
    nm = Namer()
    L = 2
    weights = [lstm_weights(rng, 1, IN if l == 0 else HID, HID) for l in range(L)]

    g = Graph(nm, "")
    layer_in = "x"
    pairs = []
    for l, (W, R, Bs) in enumerate(weights):
        sc = "/lstm_%d" % l
        g.scope = sc
        hc = []
        for k in range(2):   # 0: h, 1: c
            s = g.op("Slice", ["state_in", g.const([l, k]), g.const([l + 1, k + 1]), g.const([0, 1])])
            hc.append(unsqueeze(g, squeeze(g, s, [0, 1]), [0]))
        Y, Yh, Yc = lstm(g, layer_in, g.init(sc + "/W", W), g.init(sc + "/R", R), g.init(sc + "/B", Bs),
                         hc[0], hc[1], HID)
        layer_in = squeeze(g, Y, [1])
        pairs.append(g.op("Concat", [unsqueeze(g, Yh, [0]), unsqueeze(g, Yc, [0])], axis=1))
    g.scope = ""
    g.op("Identity", [layer_in], outputs=["y"])
    g.op("Concat", pairs, outputs=["state_out"], axis=0)
    graph = g.make("packed_state",
                   [vinfo("x", F32, ["T", 1, IN]), vinfo("state_in", F32, [L, 2, 1, HID])],
                   [vinfo("y", F32, ["T", 1, HID]), vinfo("state_out", F32, [L, 2, 1, HID])])

    def ref(f):
        v, st = f["x"], f["state_in"].astype(np.float64)
        out = np.zeros_like(st)
        for l, (W, R, Bs) in enumerate(weights):
            Y, Yh, Yc = np_lstm(v, W, R, Bs, st[l, 0][None], st[l, 1][None])
            v = seq_out(Y)
            out[l, 0], out[l, 1] = Yh[0], Yc[0]
        return {"y": v, "state_out": out}

    return dict(
        model=finish(graph),
        description="Already stateful (DTLN-like): 2 stacked LSTM(8,16)/(16,16) layers take h and c from one "
                    "packed state_in [layers=2, h/c=2, B=1, 16] via Slice -> Squeeze -> Unsqueeze; their Y_h/Y_c "
                    "are Unsqueeze-d and Concat-ed back into state_out of the same shape. The tool must leave it "
                    "unchanged and report state_in -> state_out",
        inputs=[("x", F32, [T, 1, IN], 0, "random"), ("state_in", F32, [L, 2, 1, HID], None, "zeros")],
        outputs=[("y", 0), ("state_out", None)], streamable=True, ort=True, ref=ref,
        cases=[{"state_in": x_feed(rng, (L, 2, 1, HID))}])


def packed_state_scatter(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)
    g = Graph(nm, "/lstm")
    h0 = unsqueeze(g, g.op("Gather", ["state", g.const(0)], axis=0), [0])
    c0 = unsqueeze(g, g.op("Gather", ["state", g.const(1)], axis=0), [0])
    Y, Yh, Yc = lstm(g, "x", g.init("lstm.W", W), g.init("lstm.R", R), g.init("lstm.B", Bs), h0, c0, HID)
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    s1 = g.op("ScatterND", ["state", g.const([[0]]), Yh])
    g.op("ScatterND", [s1, g.const([[1]]), Yc], outputs=["stateN"])
    graph = g.make("packed_state_scatter",
                   [vinfo("x", F32, ["T", 1, IN]), vinfo("state", F32, [2, 1, HID])],
                   [vinfo("y", F32, ["T", 1, HID]), vinfo("stateN", F32, [2, 1, HID])])

    def ref(f):
        st = f["state"].astype(np.float64)
        Y, Yh, Yc = np_lstm(f["x"], W, R, Bs, st[0:1], st[1:2])
        return {"y": seq_out(Y), "stateN": np.concatenate([Yh, Yc])}

    return dict(
        model=finish(graph),
        description="Already stateful (Silero-v5-like): one LSTM(8,16) takes h = Unsqueeze(Gather(state, 0)) and "
                    "c = Unsqueeze(Gather(state, 1)) from state [2, B=1, 16]; stateN = ScatterND(ScatterND(state, "
                    "[[0]], Y_h), [[1]], Y_c). The tool must leave it unchanged and report state -> stateN",
        inputs=[("x", F32, [T, 1, IN], 0, "random"), ("state", F32, [2, 1, HID], None, "zeros")],
        outputs=[("y", 0), ("stateN", None)], streamable=True, ort=True, ref=ref,
        cases=[{"state": x_feed(rng, (2, 1, HID))}])


def half_stateful(rng, bidirectional):
    nm = Namer()
    D = 2 if bidirectional else 1
    L = 2
    weights = [gru_weights(rng, D, IN if l == 0 else D * HID, HID) for l in range(L)]
    g = Graph(nm, "/gru")
    layer_in = "x"
    for l, (W, R, Bs) in enumerate(weights):
        h = g.op("Slice", ["h0", g.const([l * D]), g.const([(l + 1) * D]), g.const([0])])
        attrs = {"direction": "bidirectional"} if bidirectional else {}
        Y, _ = gru(g, layer_in, g.init("gru.W_l%d" % l, W), g.init("gru.R_l%d" % l, R),
                   g.init("gru.B_l%d" % l, Bs), h, HID, **attrs)
        layer_in = bidir_seq(g, Y) if bidirectional else squeeze(g, Y, [1])
    g.op("Identity", [layer_in], outputs=["y"])
    graph = g.make("half_stateful_gru" + ("" if bidirectional else "_uni"),
                   [vinfo("x", F32, ["T", 1, IN]), vinfo("h0", F32, [L * D, 1, HID])],
                   [vinfo("y", F32, ["T", 1, D * HID])])

    def ref(f):
        v, h0 = f["x"], f["h0"]
        for l, (W, R, Bs) in enumerate(weights):
            v = seq_out(np_gru(v, W, R, Bs, h0[l * D:(l + 1) * D])[0])
        return {"y": v}

    if bidirectional:
        desc = ("Half-stateful (AECMOS-like): input h0 [4,1,16]; 2 stacked bidirectional GRU(8,16)/(32,16) layers "
                "take Slice(h0, 0:2) and Slice(h0, 2:4) on axis 0 as initial_h; their Y_h go nowhere. The tool "
                "must add output h0_out = Concat(Y_h of layer 1, Y_h of layer 2) [4,1,16] and no input. "
                "Bidirectional: chunked streaming is not equivalent")
    else:
        desc = ("Half-stateful: input h0 [2,1,16]; 2 stacked unidirectional GRU(8,16)/(16,16) layers take "
                "Slice(h0, 0:1) and Slice(h0, 1:2) as initial_h; Y_h unused. The tool must add output h0_out "
                "[2,1,16] (Concat in slice order) and no input; then h0 -> h0_out streams")
    return dict(
        model=finish(graph), description=desc,
        inputs=[("x", F32, [T, 1, IN], 0, "random"), ("h0", F32, [L * D, 1, HID], None, "zeros")],
        outputs=[("y", 0)], streamable=not bidirectional, ort=True, ref=ref,
        cases=[{"h0": x_feed(rng, (L * D, 1, HID))}])


def quantize_per_direction(w):
    """Symmetric int8 per direction, as onnxruntime.quantization.quantize_dynamic
    does for LSTM weights (scale [D], zero point [D] int8 zeros), with
    reduce_range=True (7-bit weights, [-63, 63]): with full-range int8 weights
    ORT's U8S8 kernels on AVX2 can saturate (VPMADDUBSW) and err by ~0.06."""
    scale = np.abs(w).reshape(w.shape[0], -1).max(axis=1) / 63.0
    q = np.clip(np.round(w / scale[:, None, None]), -63, 63).astype(np.int8)
    return q, scale.astype(np.float32), np.zeros(w.shape[0], np.int8)


def quantized_lstm(rng, with_hidden_size):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)
    Wq, Ws, Wz = quantize_per_direction(W)
    Rq, Rs, Rz = quantize_per_direction(R)
    g = Graph(nm, "/rnn")
    # names as onnxruntime.quantization.quantize_dynamic writes them
    g.init("W_quantized", Wq.transpose(0, 2, 1).copy())   # [D, input, 4H]
    g.init("R_quantized", Rq.transpose(0, 2, 1).copy())   # [D, hidden, 4H]
    g.init("W_scale", Ws)
    g.init("W_zero_point", Wz)
    g.init("R_scale", Rs)
    g.init("R_zero_point", Rz)
    g.init("B", Bs)
    h0 = zeros_expand(g, "x", 1, 1, HID)
    c0 = zeros_expand(g, "x", 1, 1, HID)
    attrs = {"hidden_size": HID} if with_hidden_size else {}
    Y, _, _ = g.op("DynamicQuantizeLSTM",
                   ["x", "W_quantized", "R_quantized", "B", "", h0, c0, "",
                    "W_scale", "W_zero_point", "R_scale", "R_zero_point"],
                   n_out=3, domain=MS_DOMAIN, **attrs)
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    graph = g.make("quantized_lstm", [vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", HID])])

    def ref(f):   # the FLOAT LSTM the weights were quantized from
        h0 = np.zeros((1, f["x"].shape[1], HID))
        return {"y": seq_out(np_lstm(f["x"], W, R, Bs, h0, h0)[0])}

    desc = ("com.microsoft.DynamicQuantizeLSTM quantized from a float LSTM(8,16): int8 W [1,8,64] and R [1,16,64] "
            "stored transposed, per-direction scales, zero points 0, float B; h and c from two Expands of a "
            "Constant zeros [1,1,16] sized from Shape(x). Dynamic batch+time. ")
    desc += ("hidden_size attribute set" if with_hidden_size
             else "NO hidden_size attribute: hidden size only from R's second dimension")
    return dict(
        model=finish(graph, extra_opsets=[(MS_DOMAIN, 1)]), description=desc,
        inputs=[("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=with_hidden_size, ref=ref, tol=0.05,
        # ORT quantizes x per call, with a scale from that call's range: chunks
        # differ from the whole run by ~1e-3
        atol=5e-3)


def ir3_lstm(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)
    g = Graph(nm, "")
    # CNTK-like names; every initializer is also a graph input (IR 3)
    inits = {"Parameter3": W, "Parameter4": R, "Parameter5": Bs,
             "Constant6": np.zeros((1, 1, HID), np.float32), "Constant7": np.zeros((1, 1, HID), np.float32)}
    for k, v in inits.items():
        g.init(k, v)
    Y, _, _ = g.op("LSTM", ["x", "Parameter3", "Parameter4", "Parameter5", "", "Constant6", "Constant7"],
                   n_out=3, hidden_size=HID)
    g.op("Squeeze", [Y], outputs=["y"], axes=[1])
    graph = g.make("ir3_lstm",
                   [vinfo("x", F32, ["T", 1, IN])]
                   + [vinfo(k, F32, list(v.shape)) for k, v in inits.items()],
                   [vinfo("y", F32, ["T", 1, HID])])

    def ref(f):
        h0 = np.zeros((1, 1, HID))
        return {"y": seq_out(np_lstm(f["x"], W, R, Bs, h0, h0)[0])}

    return dict(
        model=finish(graph, opset=7, ir_version=3),
        description="IR 3, opset 7 (CNTK-like): LSTM(8,16), fixed batch 1; W, R, B and the zero initial_h "
                    "(Constant6) and initial_c (Constant7) are initializers that are also listed as graph inputs. "
                    "The tool must raise ir_version to 4 so that the state defaults can be overridden",
        inputs=[("x", F32, [T, 1, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=True, ref=ref)


def batchfirst(rng, cell):
    nm = Namer()
    g = Graph(nm, "/rnn")
    z = zeros_cos(g, "x", 0, [], [1, HID])            # [batch, 1, H]
    if cell == "lstm":
        W, R, Bs = lstm_weights(rng, 1, IN, HID)
        Y, _, _ = lstm(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs), z, z, HID,
                       layout=1)
    else:
        W, R, Bs = gru_weights(rng, 1, IN, HID)
        Y, _ = gru(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs), z, HID, layout=1)
    g.op("Squeeze", [Y, g.const([2])], outputs=["y"])    # [B,T,1,H] -> [B,T,H]
    graph = g.make("batchfirst_" + cell, [vinfo("x", F32, ["batch", "T", IN])],
                   [vinfo("y", F32, ["batch", "T", HID])])

    def ref(f):
        x = f["x"]
        h0 = np.zeros((x.shape[0], 1, HID))
        if cell == "lstm":
            Y = np_lstm(x, W, R, Bs, h0, h0, layout=1)[0]
        else:
            Y = np_gru(x, W, R, Bs, h0, layout=1)[0]
        return {"y": Y[:, :, 0, :]}

    return dict(
        model=finish(graph, opset=14),
        description="%s(8,16) node with layout=1 (batch-first), opset 14: x [batch,T,8], zero state "
                    "ConstantOfShape([batch,1,16]) from Shape(x)[0], y = Squeeze(Y, 2) [batch,T,16]. "
                    "onnxruntime-node refuses layout=1; --to-layout0 must convert it. Reference data in "
                    "batchfirst_%s.test/" % (cell.upper(), cell),
        inputs=[("x", F32, [B, T, IN], 1, "random")],
        outputs=[("y", 1)], streamable=True, ort=False, ref=ref, testdata=True)


def fp16_gru(rng):
    nm = Namer()
    W, R, Bs = gru_weights(rng, 1, IN, HID, np.float16)
    g = Graph(nm, "/rnn")
    z = zeros_cos(g, "x", 1, [1], [HID], np.float16)
    Y, _ = gru(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs), z, HID)
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    graph = g.make("fp16_gru", [vinfo("x", F16, ["T", "batch", IN])], [vinfo("y", F16, ["T", "batch", HID])])

    def ref(f):
        h0 = np.zeros((1, f["x"].shape[1], HID))
        return {"y": seq_out(np_gru(f["x"], W, R, Bs, h0)[0]).astype(np.float16)}

    return dict(
        model=finish(graph),
        description="float16 GRU(8,16) (x, weights, y and the ConstantOfShape zero state all float16), dynamic "
                    "batch+time. State inputs/outputs/defaults must stay float16",
        inputs=[("x", F16, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=True, ref=ref, tol=1e-2,
        # ORT runs the GRU in float32 between Casts; a state fed back between
        # chunks is rounded to float16 (1 ulp = 2.4e-4 near 0.35)
        atol=2e-3)


def double_lstm(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID, np.float64)
    g = Graph(nm, "/rnn")
    z = zeros_cos(g, "x", 1, [1], [HID], np.float64)
    Y, _, _ = lstm(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs), z, z, HID)
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    graph = g.make("double_lstm", [vinfo("x", F64, ["T", "batch", IN])], [vinfo("y", F64, ["T", "batch", HID])])

    def ref(f):
        h0 = np.zeros((1, f["x"].shape[1], HID))
        return {"y": seq_out(np_lstm(f["x"], W, R, Bs, h0, h0)[0])}

    return dict(
        model=finish(graph),
        description="float64 LSTM(8,16), one ConstantOfShape (value float64 0) feeding initial_h and initial_c, "
                    "dynamic batch+time. State inputs/outputs/defaults must stay float64",
        inputs=[("x", F64, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=True, ort=False, ref=ref, tol=1e-9)


def bidirectional_lstm(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 2, IN, HID)
    g = Graph(nm, "/rnn")
    z = zeros_cos(g, "x", 1, [2], [HID])
    Y, _, _ = lstm(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs), z, z, HID,
                   direction="bidirectional")
    tr = g.op("Transpose", [Y], perm=[0, 2, 1, 3])
    g.op("Reshape", [tr, g.const([0, 0, -1])], outputs=["y"])
    graph = g.make("bidirectional_lstm", [vinfo("x", F32, ["T", "batch", IN])],
                   [vinfo("y", F32, ["T", "batch", 2 * HID])])

    def ref(f):
        h0 = np.zeros((2, f["x"].shape[1], HID))
        return {"y": seq_out(np_lstm(f["x"], W, R, Bs, h0, h0)[0])}

    return dict(
        model=finish(graph),
        description="nn.LSTM(8,16,bidirectional=True)-like: one bidirectional LSTM, ConstantOfShape([2,batch,16]) "
                    "zero state for h and c, y = Reshape(Transpose(Y)) [T,batch,32]. Dynamic batch+time. "
                    "Not streamable (the reverse direction needs the whole sequence)",
        inputs=[("x", F32, [T, B, IN], 0, "random")],
        outputs=[("y", 0)], streamable=False, ort=True, ref=ref)


# --------------------------------------------------------------------------
# Issue-9 models: already-stateful streaming enhancers, hand-offs, flat
# caches; issue-15 corners of --to-layout0 and If pass-through.
# --------------------------------------------------------------------------

F_BINS = 5      # frequency bins of the DPCRN-like model (the intra-frame sequence)
H_INTRA = 4     # hidden size of its intra-frame GRUs


def causal_conv_t(g, v, cache, W, B, cache_out):
    """A GTCRN/DPCRN-style cached convolution along time on v [T, F, C]: the
    cache [1, C, k-1, F] is concatenated in front of this call's frames (in
    place of zero padding), an unpadded Conv (k, 1) runs over them, and the
    newest k-1 frames of the concatenation are the next call's cache."""
    k = W.shape[2]
    xt = g.op("Transpose", [unsqueeze(g, v, [0])], perm=[0, 3, 1, 2])     # [1, C, T, F]
    cat = g.op("Concat", [cache, xt], axis=2)                               # [1, C, k-1+T, F]
    g.op("Slice", [cat, g.const([-(k - 1)]), g.const([2 ** 63 - 1]), g.const([2])],
         outputs=[cache_out])
    y = g.op("Conv", [cat, g.init(g.scope.strip("/") + ".W", W), g.init(g.scope.strip("/") + ".B", B)],
             kernel_shape=[k, 1])                                           # [1, C', T, F]
    return squeeze(g, g.op("Transpose", [y], perm=[0, 2, 3, 1]), [0])       # [T, F, C']


def np_causal_conv_t(v, cache, W, B):
    """v [T, F, C], cache [1, C, k-1, F] -> (y [T, F, C'], new cache)."""
    k = W.shape[2]
    cat = np.concatenate([cache[0].transpose(1, 2, 0), v], axis=0)         # [k-1+T, F, C]
    T = v.shape[0]
    y = sum(np.einsum("tfc,oc->tfo", cat[j:j + T], W[:, :, j, 0]) for j in range(k)) + B
    return y, cat[T:].transpose(2, 0, 1)[None]


def dpcrn_cache(rng):
    nm = Namer()
    W_enc, B_enc = dense(rng, IN * 2, IN).T.reshape(IN, IN, 2, 1).copy(), dense(rng, 1, IN)[0]
    blocks = []
    c_in = IN
    for b in range(2):
        Wi, Ri, Bi = gru_weights(rng, 2, c_in, H_INTRA)
        P = dense(rng, 2 * H_INTRA, IN)
        Wt, Rt, Bt = gru_weights(rng, 1, IN, HID)
        blocks.append((Wi, Ri, Bi, P, Wt, Rt, Bt))
        c_in = HID
    W_dec, B_dec = dense(rng, HID * 3, HID).T.reshape(HID, HID, 3, 1).copy(), dense(rng, 1, HID)[0]
    g = Graph(nm, "/encoder")
    v = causal_conv_t(g, "x", "enc_cache", W_enc, B_enc, "enc_cache_out")   # [T, F, C]
    cache = "inter_cache"                    # [blocks, 1, F, H]
    for b, (Wi, Ri, Bi, P, Wt, Rt, Bt) in enumerate(blocks):
        g.scope = "/dpgrnn%d/intra" % b
        xi = g.op("Transpose", [v], perm=[1, 0, 2])                   # [F, T, C]: bins are the sequence
        # block 0 starts from PyTorch's ConstantOfShape zeros, block 1 from
        # an absent initial_h (zeros too): both reset at every call
        h0 = zeros_cos(g, xi, 1, [2], [H_INTRA]) if b == 0 else ""
        Y, _ = gru(g, xi, g.init("dpgrnn%d.intra.W" % b, Wi), g.init("dpgrnn%d.intra.R" % b, Ri),
                   g.init("dpgrnn%d.intra.B" % b, Bi), h0, H_INTRA, direction="bidirectional")
        yi = g.op("Transpose", [bidir_seq(g, Y)], perm=[1, 0, 2])    # [T, F, 2Hi]
        u = g.op("MatMul", [yi, g.init("dpgrnn%d.intra.proj" % b, P)])  # [T, F, C]
        g.scope = "/dpgrnn%d/inter" % b
        h = g.op("Gather", [cache, g.const(b)], axis=0)              # [1, F, H]: bins are the batch
        Y, Yh = gru(g, u, g.init("dpgrnn%d.inter.W" % b, Wt), g.init("dpgrnn%d.inter.R" % b, Rt),
                    g.init("dpgrnn%d.inter.B" % b, Bt), h, HID)
        v = squeeze(g, Y, [1])                                        # [T, F, H]
        upd = g.op("Reshape", [Yh, g.const([1, 1, F_BINS, HID])])
        cache = g.op("ScatterND", [cache, g.const([[b]]), upd],
                     outputs=["inter_cache_out"] if b == 1 else None)
    g.scope = "/decoder"
    v = causal_conv_t(g, v, "dec_cache", W_dec, B_dec, "dec_cache_out")   # [T, F, H]
    g.scope = ""
    g.op("Identity", [v], outputs=["y"])
    graph = g.make("dpcrn_cache",
                   [vinfo("x", F32, ["T", F_BINS, IN]), vinfo("inter_cache", F32, [2, 1, F_BINS, HID]),
                    vinfo("enc_cache", F32, [1, IN, 1, F_BINS]), vinfo("dec_cache", F32, [1, HID, 2, F_BINS])],
                   [vinfo("y", F32, ["T", F_BINS, HID]), vinfo("inter_cache_out", F32, [2, 1, F_BINS, HID]),
                    vinfo("enc_cache_out", F32, [1, IN, 1, F_BINS]),
                    vinfo("dec_cache_out", F32, [1, HID, 2, F_BINS])])

    def ref(f):
        v, cache = f["x"].astype(np.float64), f["inter_cache"].astype(np.float64)
        v, enc_out = np_causal_conv_t(v, f["enc_cache"].astype(np.float64), W_enc, B_enc)
        out = cache.copy()
        for b, (Wi, Ri, Bi, P, Wt, Rt, Bt) in enumerate(blocks):
            xi = v.transpose(1, 0, 2)
            Y = np_gru(xi, Wi, Ri, Bi, np.zeros((2, xi.shape[1], H_INTRA)))[0]
            u = seq_out(Y).transpose(1, 0, 2) @ P
            Y, Yh = np_gru(u, Wt, Rt, Bt, cache[b])
            v = Y[:, 0]
            out[b] = Yh
        v, dec_out = np_causal_conv_t(v, f["dec_cache"].astype(np.float64), W_dec, B_dec)
        return {"y": v, "inter_cache_out": out, "enc_cache_out": enc_out, "dec_cache_out": dec_out}

    return dict(
        model=finish(graph),
        description="Already stateful (DPCRN/UL-UNAS/GTCRN-like): x [T frames, 5 bins, 8]; an encoder Conv (2,1) "
                    "along time whose frame of context is enc_cache [1,8,1,5], Concat-ed in front of the frames "
                    "(the newest frame, Slice -1:, is enc_cache_out); two blocks, each an "
                    "intra-frame bidirectional GRU(.,4) across the 5 bins (batch = frames) that starts from zeros "
                    "at every call (block 0: ConstantOfShape, block 1: absent initial_h), then a time GRU(8,16) "
                    "(batch = bins) whose initial_h is Gather(cache, b) and whose Y_h is written back with "
                    "ScatterND(cache, [[b]], Reshape(Y_h)); block 1 reads the cache after block 0's ScatterND; "
                    "a decoder Conv (3,1) along time with dec_cache [1,16,2,5] -> dec_cache_out the same way. "
                    "The tool must add nothing: pair inter_cache -> inter_cache_out (recurrent), enc_cache and "
                    "dec_cache to their *_out (context), intra GRUs left reset",
        inputs=[("x", F32, [T, F_BINS, IN], 0, "random"),
                ("inter_cache", F32, [2, 1, F_BINS, HID], None, "zeros"),
                ("enc_cache", F32, [1, IN, 1, F_BINS], None, "zeros"),
                ("dec_cache", F32, [1, HID, 2, F_BINS], None, "zeros")],
        outputs=[("y", 0), ("inter_cache_out", None), ("enc_cache_out", None), ("dec_cache_out", None)],
        streamable=True, ort=True, ref=ref,
        state_inputs=["inter_cache", "enc_cache", "dec_cache"], context_inputs=["enc_cache", "dec_cache"],
        cases=[{"inter_cache": x_feed(rng, (2, 1, F_BINS, HID)), "enc_cache": x_feed(rng, (1, IN, 1, F_BINS)),
                "dec_cache": x_feed(rng, (1, HID, 2, F_BINS))}])


def encdec_handoff(rng):
    nm = Namer()
    We, Re, Be = lstm_weights(rng, 1, IN, HID)
    Wd, Rd, Bd = lstm_weights(rng, 1, IN, HID)
    g = Graph(nm, "/encoder")
    z = zeros_cos(g, "x", 1, [1], [HID])
    _, Yh, Yc = lstm(g, "x", g.init("encoder.W", We), g.init("encoder.R", Re), g.init("encoder.B", Be),
                     z, z, HID)
    g.scope = "/decoder"
    Y, _, _ = lstm(g, "dec_in", g.init("decoder.W", Wd), g.init("decoder.R", Rd), g.init("decoder.B", Bd),
                   Yh, Yc, HID)
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    graph = g.make("encdec_handoff",
                   [vinfo("x", F32, ["T", "batch", IN]), vinfo("dec_in", F32, ["U", "batch", IN])],
                   [vinfo("y", F32, ["U", "batch", HID])])

    def ref(f):
        z = np.zeros((1, f["x"].shape[1], HID))
        _, Yh, Yc = np_lstm(f["x"], We, Re, Be, z, z)
        return {"y": seq_out(np_lstm(f["dec_in"], Wd, Rd, Bd, Yh, Yc)[0])}

    return dict(
        model=finish(graph),
        description="Encoder-decoder hand-off (seq2seq): encoder LSTM(8,16) over x from a ConstantOfShape zero "
                    "state; its Y_h and Y_c are the decoder LSTM(8,16)'s initial_h and initial_c; y is the "
                    "decoder's Y. Not streamable: the tool must add no pair for either node, skip both with the "
                    "hand-off as reason and say in a note that the encoder hands its state to the decoder",
        inputs=[("x", F32, [T, B, IN], 0, "random"), ("dec_in", F32, [6, B, IN], None, "random")],
        outputs=[("y", None)], streamable=False, ort=True, ref=ref)


def flat_cache_shape(rng):
    nm = Namer()
    Wg, Rg, Bg = gru_weights(rng, 1, IN, HID)
    Wl, Rl, Bl = lstm_weights(rng, 1, HID, HID)
    g = Graph(nm, "/cache")
    # H = Shape(cache)[1] / 3: the GRU's h is [0:H], the LSTM's h and c [H:3H]
    width = g.op("Gather", [g.op("Shape", ["cache"]), g.const([1])], axis=0)
    hid = g.op("Div", [width, g.const([3])])
    gru_h = g.op("Slice", ["cache", g.const([0]), hid, g.const([1])])
    lstm_hc = g.op("Slice", ["cache", hid, g.op("Mul", [hid, g.const([3])]), g.const([1])])
    lh, lc = g.op("Split", [lstm_hc], n_out=2, axis=1)
    g.scope = "/gru"
    Y, Yh = gru(g, "x", g.init("gru.W", Wg), g.init("gru.R", Rg), g.init("gru.B", Bg),
                unsqueeze(g, gru_h, [0]), HID)
    g.scope = "/lstm"
    Y, Yh2, Yc2 = lstm(g, squeeze(g, Y, [1]), g.init("lstm.W", Wl), g.init("lstm.R", Rl),
                       g.init("lstm.B", Bl), unsqueeze(g, lh, [0]), unsqueeze(g, lc, [0]), HID)
    g.scope = ""
    g.op("Squeeze", [Y, g.const([1])], outputs=["y"])
    g.op("Concat", [squeeze(g, Yh, [0]), squeeze(g, Yh2, [0]), squeeze(g, Yc2, [0])],
         outputs=["cache_out"], axis=1)
    graph = g.make("flat_cache_shape",
                   [vinfo("x", F32, ["T", "batch", IN]), vinfo("cache", F32, ["batch", 3 * HID])],
                   [vinfo("y", F32, ["T", "batch", HID]), vinfo("cache_out", F32, ["batch", 3 * HID])])

    def ref(f):
        c = f["cache"].astype(np.float64)
        Y, Yh = np_gru(f["x"], Wg, Rg, Bg, c[None, :, :HID])
        Y, Yh2, Yc2 = np_lstm(Y[:, 0], Wl, Rl, Bl, c[None, :, HID:2 * HID], c[None, :, 2 * HID:])
        return {"y": Y[:, 0], "cache_out": np.concatenate([Yh[0], Yh2[0], Yc2[0]], axis=1)}

    return dict(
        model=finish(graph),
        description="Already stateful with one flat cache vector cache [batch, 48]: H = Shape(cache)[1] / 3; "
                    "a GRU(8,16) reads Unsqueeze(Slice(cache, 0:H, axis 1)), a stacked LSTM(16,16) reads h and c "
                    "from Split(Slice(cache, H:3H)); cache_out = Concat(Y_h, Y_h, Y_c squeezed) on axis 1. "
                    "Bounds come from Shape arithmetic. The tool must add nothing: pair cache -> cache_out",
        inputs=[("x", F32, [T, B, IN], 0, "random"), ("cache", F32, [B, 3 * HID], None, "zeros")],
        outputs=[("y", 0), ("cache_out", None)], streamable=True, ort=True, ref=ref,
        cases=[{"cache": x_feed(rng, (B, 3 * HID))}])


def batchfirst_gru_h0const(rng):
    nm = Namer()
    W, R, Bs = gru_weights(rng, 1, IN, HID)
    h0 = x_feed(rng, (B, 1, HID))                         # [batch, D, H]: not uniform
    g = Graph(nm, "/rnn")
    Y, _ = gru(g, "x", g.init("rnn.W", W), g.init("rnn.R", R), g.init("rnn.B", Bs),
               g.const(h0, np.float32), HID, layout=1)
    g.op("Squeeze", [Y, g.const([2])], outputs=["y"])
    graph = g.make("batchfirst_gru_h0const", [vinfo("x", F32, [B, "T", IN])], [vinfo("y", F32, [B, "T", HID])])

    def ref(f):
        return {"y": np_gru(f["x"], W, R, Bs, h0, layout=1)[0][:, :, 0, :]}

    return dict(
        model=finish(graph, opset=14),
        description="GRU(8,16) with layout=1 (batch-first), fixed batch 2: x [2,T,8], initial_h a non-uniform "
                    "Constant [2,1,16] (batch-first). With --to-layout0 the tool must handle it as it does "
                    "without the flag (a new input whose default is the exporter's constant, here transposed "
                    "to [1,2,16]), not skip it for the Transpose it inserted. Reference data in "
                    "batchfirst_gru_h0const.test/",
        inputs=[("x", F32, [B, T, IN], 1, "random")],
        outputs=[("y", 1)], streamable=True, ort=False, ref=ref, testdata=True)


def if_slice_state(rng):
    nm = Namer()
    W, R, Bs = gru_weights(rng, 1, IN, HID)
    P = dense(rng, IN, HID)
    th = Graph(nm, "/then")
    h = th.op("Slice", ["h", th.const([0]), th.const([1]), th.const([0])])   # layer 0 of h
    Y, _ = gru(th, "x", th.init("then.gru.W", W), th.init("then.gru.R", R), th.init("then.gru.B", Bs), h, HID)
    out = squeeze(th, Y, [1])
    then_b = th.make("then", [], [vinfo(out, F32, ["T", 1, HID])])
    el = Graph(nm, "/else")
    out = el.op("Tanh", [el.op("MatMul", ["x", el.init("else.proj", P)])])
    else_b = el.make("else", [], [vinfo(out, F32, ["T", 1, HID])])
    g = Graph(nm, "")
    g.op("If", ["cond"], outputs=["y"], then_branch=then_b, else_branch=else_b)
    graph = g.make("if_slice_state",
                   [vinfo("cond", TensorProto.BOOL, []), vinfo("x", F32, ["T", 1, IN]),
                    vinfo("h", F32, [2, 1, HID])],
                   [vinfo("y", F32, ["T", 1, HID])])

    def ref(f):
        if not f["cond"]:
            return {"y": np.tanh(f["x"] @ P)}
        return {"y": seq_out(np_gru(f["x"], W, R, Bs, f["h"][0:1])[0])}

    return dict(
        model=finish(graph),
        description="Half-stateful inside an If: input h [2 layers,1,16]; the then branch runs a GRU(8,16) from "
                    "Slice(h, 0:1) (layer 0 only) whose Y_h goes nowhere; the else branch is Tanh(MatMul). The "
                    "tool must add one output h_out [2,1,16]: the GRU's final state threaded out of the If (the "
                    "else branch passes layer 0 of h through) concatenated with layer 1 of h, unchanged; "
                    "pair h -> h_out. cond=1 runs the GRU",
        inputs=[("cond", TensorProto.BOOL, [], None, 1), ("x", F32, [T, 1, IN], 0, "random"),
                ("h", F32, [2, 1, HID], None, "zeros")],
        outputs=[("y", 0)], streamable=True, ort=True, ref=ref,
        cases=[{"cond": np.array(False)}, {"h": x_feed(rng, (2, 1, HID))}])


def paddle_lstm(rng):
    nm = Namer()
    W, R, Bs = lstm_weights(rng, 1, IN, HID)
    g = Graph(nm, "/lstm")
    # Paddle keeps one [in, hidden] matrix per gate, in the order i, f, c, o;
    # paddle2onnx transposes, reorders to ONNX's i, o, f, c and stacks them
    # in the graph, so W, R and B are computed and nothing is declared about
    # their element type (no value_info at all).
    onnx_gate = {"i": 0, "o": 1, "f": 2, "c": 3}

    def stacked(mats, prefix, reshape):
        parts = []
        for gate in "ifco":
            k = onnx_gate[gate]
            init = g.init("%s_%s" % (prefix, gate), mats[0, k * HID:(k + 1) * HID].T.copy())
            parts.append((k, g.op("Transpose", [init], perm=[1, 0])))
        cat = g.op("Concat", [v for _, v in sorted(parts)], axis=0)
        if reshape:
            return g.op("Reshape", [cat, g.const([1, 4 * HID, -1])])
        return unsqueeze(g, cat, [0])

    w = stacked(W, "lstm_0.w_ih", True)
    r = stacked(R, "lstm_0.w_hh", False)
    b = unsqueeze(g, g.op("Concat", [g.init("lstm_0.b_ih", Bs[0, :4 * HID].copy()),
                                      g.init("lstm_0.b_hh", Bs[0, 4 * HID:].copy())], axis=0), [0])
    xf = g.op("Cast", ["x"], to=F32)
    xt = g.op("Transpose", [xf], perm=[1, 0, 2])                # [B,T,I] -> [T,B,I]
    z = zeros_cos(g, xt, 1, [1], [HID])
    Y, _, _ = lstm(g, xt, w, r, b, z, z, HID)
    yt = g.op("Transpose", [Y], perm=[2, 0, 1, 3])              # [T,1,B,H] -> [B,T,1,H]
    g.op("Reshape", [yt, g.const([0, 0, HID])], outputs=["y"])
    graph = g.make("paddle_lstm", [vinfo("x", F32, ["batch", "T", IN])], [vinfo("y", F32, ["batch", "T", HID])])

    def ref(f):
        x = f["x"].transpose(1, 0, 2)
        h0 = np.zeros((1, x.shape[1], HID))
        return {"y": seq_out(np_lstm(x, W, R, Bs, h0, h0)[0]).transpose(1, 0, 2)}

    return dict(
        model=finish(graph),
        description="paddle2onnx-style LSTM(8,16), no value_info: W = Reshape(Concat(Transpose of one "
                    "initializer per gate)), R = Unsqueeze(Concat(Transpose ...)), B = Unsqueeze(Concat(b_ih, b_hh)); "
                    "X = Transpose(Cast(x)) from batch-first x; ConstantOfShape zero state. The element type of X, W "
                    "and R must be inferred through the graph; the tool adds LSTM_0_initial_h/c",
        inputs=[("x", F32, [B, T, IN], 1, "random")],
        outputs=[("y", 1)], streamable=True, ort=True, ref=ref,
        state_inputs=["LSTM_0_initial_h", "LSTM_0_initial_c"])


MODELS = [
    ("if_nested_one_branch.onnx", if_nested_one_branch),
    ("if_nested_both_branches.onnx", if_nested_both_branches),
    ("loop_body_lstm.onnx", loop_body_lstm),
    ("scan_body_lstm.onnx", scan_body_lstm),
    ("packed_state.onnx", packed_state),
    ("packed_state_scatter.onnx", packed_state_scatter),
    ("half_stateful_gru.onnx", lambda rng: half_stateful(rng, True)),
    ("half_stateful_gru_uni.onnx", lambda rng: half_stateful(rng, False)),
    ("quantized_lstm.onnx", lambda rng: quantized_lstm(rng, True)),
    ("quantized_lstm_nohidden.onnx", lambda rng: quantized_lstm(rng, False)),
    ("ir3_lstm.onnx", ir3_lstm),
    ("batchfirst_lstm.onnx", lambda rng: batchfirst(rng, "lstm")),
    ("batchfirst_gru.onnx", lambda rng: batchfirst(rng, "gru")),
    ("fp16_gru.onnx", fp16_gru),
    ("double_lstm.onnx", double_lstm),
    ("bidirectional_lstm.onnx", bidirectional_lstm),
    ("dpcrn_cache.onnx", dpcrn_cache),
    ("encdec_handoff.onnx", encdec_handoff),
    ("flat_cache_shape.onnx", flat_cache_shape),
    ("batchfirst_gru_h0const.onnx", batchfirst_gru_h0const),
    ("if_slice_state.onnx", if_slice_state),
    ("paddle_lstm.onnx", paddle_lstm),
]


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def test_feeds(spec, rng):
    """Full-length test inputs: random in [-1, 1), zeros, or a constant."""
    feeds = {}
    for name, elem, shape, _tax, fill in spec["inputs"]:
        npt = np.bool_ if elem == TensorProto.BOOL else NP_OF.get(elem, np.int64)
        if fill == "random":
            feeds[name] = x_feed(rng, shape, npt)
        elif fill == "zeros":
            feeds[name] = np.zeros(shape, npt)
        else:
            feeds[name] = np.full(shape, fill, npt)
    return feeds


def write_set(directory, graph, feeds, outputs):
    os.makedirs(directory, exist_ok=True)
    in_names = [i.name for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    for k, name in enumerate(in_names):
        with open(os.path.join(directory, "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(feeds[name], name).SerializeToString())
    for k, o in enumerate(graph.output):
        if o.name not in outputs:
            continue
        elem = o.type.tensor_type.elem_type
        arr = np.asarray(outputs[o.name]).astype(NP_OF[elem])
        with open(os.path.join(directory, "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(arr, o.name).SerializeToString())


def manifest_entry(fname, spec, model):
    entry = {
        "file": fname,
        "description": spec["description"],
        "opset": model.opset_import[0].version,
        "ir_version": model.ir_version,
        "inputs": {name: {"shape": shape, "dtype": DTYPE_NAME[elem], "time_axis": tax, "fill": fill}
                   for name, elem, shape, tax, fill in spec["inputs"]},
        "outputs": {name: {"time_axis": tax} for name, tax in spec["outputs"]},
        "streamable": spec["streamable"],
        "ort": spec["ort"],
    }
    for key in ("atol", "ort_optional", "ort_optional_note", "verify_fails", "state_inputs",
                "context_inputs"):
        if key in spec:
            entry[key] = spec[key]
    return entry


def main(argv):
    refdata = None
    if len(argv) == 2 and argv[0] == "--refdata":
        refdata = os.path.abspath(argv[1])
    elif argv:
        sys.exit("usage: make_onnx_models.py [--refdata DIR]")
    entries, index = [], []
    for idx, (fname, build) in enumerate(MODELS):
        rng = np.random.default_rng(SEED_BASE + idx)
        spec = build(rng)
        model = spec["model"]
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(HERE, fname)
        onnx.save(model, path)
        entries.append(manifest_entry(fname, spec, model))
        stem = fname[:-len(".onnx")]
        drng = np.random.default_rng(SEED_BASE + 1000 + idx)
        base = test_feeds(spec, drng)
        sets = [base] + [dict(base, **case) for case in spec.get("cases", [])]
        if spec.get("testdata"):
            write_set(os.path.join(HERE, stem + ".test", "test_data_set_0"), model.graph, base, spec["ref"](base))
        if refdata:
            for k, feeds in enumerate(sets):
                write_set(os.path.join(refdata, stem, "test_data_set_%d" % k), model.graph, feeds,
                          spec["ref"](feeds))
            index.append({"file": path, "data": os.path.join(refdata, stem), "ort": spec["ort"],
                          "tol": spec.get("tol", 1e-5)})
        print("wrote %-30s ir %d opset %d  inputs %s" % (
            fname, model.ir_version, model.opset_import[0].version, [i[0] for i in spec["inputs"]]))
    manifest = {
        "generator": "models/make_onnx_models.py",
        "description": "Issue-4 models built with onnx.helper (subgraphs, already-stateful, half-stateful, "
                       "quantized, IR 3, batch-first, fp16/double). Same format as manifest.json, plus "
                       "\"ort\": whether onnxruntime-node 1.30 runs the original model, \"ir_version\", and "
                       "\"atol\" where the default 1e-5 is too tight (fp16, dynamic quantization).",
        "chunks": 3,
        "models": entries,
    }
    text = json.dumps(manifest, indent=2)
    text = re.sub(r"\[\n\s*([0-9,\s]+?)\n\s*\]",
                  lambda mo: "[" + ", ".join(v.strip() for v in mo.group(1).split(",")) + "]", text)
    with open(os.path.join(HERE, "extra_manifest.json"), "w") as f:
        f.write(text + "\n")
    print("wrote extra_manifest.json (%d models)" % len(entries))
    if refdata:
        with open(os.path.join(refdata, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
        print("wrote reference data for every model under %s" % refdata)


if __name__ == "__main__":
    main(sys.argv[1:])
