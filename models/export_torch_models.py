#!/usr/bin/python3
"""Export small, real PyTorch RNN/GRU/LSTM models to ONNX test fixtures.

Run:  /usr/bin/python3 models/export_torch_models.py   (from any directory)

Needs Debian's python3-torch (1.13) and python3-onnx. Writes the *.onnx files
and manifest.json next to this script. Deterministic: every model is built
right after torch.manual_seed(SEED_BASE + index).

All models are unidirectional, so feeding the sequence in chunks while
carrying the hidden state is equivalent to whole-sequence inference.
"""

import json
import os
import re

import torch
import torch.nn as nn

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14
SEED_BASE = 1234
T = 12      # test sequence length (3 chunks of 4)
B = 2       # test batch size for dynamic-batch models
IN = 8
HID = 16


# --------------------------------------------------------------------------
# Model definitions
# --------------------------------------------------------------------------

class SeqOnly(nn.Module):
    """Wrap an nn.RNN/GRU/LSTM, return only the output sequence (state discarded)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        y, _ = self.rnn(x)
        return y


class LstmWithFinalState(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(IN, HID)

    def forward(self, x):
        y, (hn, cn) = self.rnn(x)
        return y, hn, cn


class GruUserState(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(IN, HID, num_layers=2)

    def forward(self, x, h0):
        y, hn = self.rnn(x, h0)
        return y, hn


class LstmClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(IN, HID)
        self.head = nn.Linear(HID, 4)

    def forward(self, x):
        y, (hn, _) = self.rnn(x)
        logits = self.head(hn[-1])          # [B, 4]
        return logits, y


class DenoiserGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(IN, HID)
        self.act = nn.ReLU()
        self.rnn = nn.GRU(HID, HID, num_layers=2, batch_first=True)
        self.out = nn.Linear(HID, IN)
        self.sig = nn.Sigmoid()

    def forward(self, x):
        h = self.act(self.inp(x))
        h, _ = self.rnn(h)
        return self.sig(self.out(h))


# --------------------------------------------------------------------------
# Model table: (file, description, factory, inputs, outputs, dynamic_axes)
#   inputs:  list of (name, shape, time_axis, fill)
#   outputs: list of (name, time_axis)
# --------------------------------------------------------------------------

TB = {0: "time", 1: "batch"}   # time-major dynamic axes
T_ONLY = {0: "time"}           # fixed batch: only the sequence length varies, so the
                               # model can still be fed chunks of any length
BT = {0: "batch", 1: "time"}   # batch-first dynamic axes

MODELS = [
    ("gru_1layer_fixed.onnx",
     "nn.GRU(8,16), fixed batch 1 (x [T,1,8], dynamic time), returns only y (hn discarded)",
     lambda: SeqOnly(nn.GRU(IN, HID)),
     [("x", [T, 1, IN], 0, "random")],
     [("y", 0)],
     {"x": T_ONLY, "y": T_ONLY}),
    ("lstm_2layer_dynamic.onnx",
     "nn.LSTM(8,16,num_layers=2), dynamic time+batch, returns only y",
     lambda: SeqOnly(nn.LSTM(IN, HID, num_layers=2)),
     [("x", [T, B, IN], 0, "random")],
     [("y", 0)],
     {"x": TB, "y": TB}),
    ("rnn_1layer_dynamic.onnx",
     "nn.RNN(8,16) tanh, dynamic time+batch, returns only y",
     lambda: SeqOnly(nn.RNN(IN, HID)),
     [("x", [T, B, IN], 0, "random")],
     [("y", 0)],
     {"x": TB, "y": TB}),
    ("gru_2layer_batchfirst.onnx",
     "nn.GRU(8,16,num_layers=2,batch_first=True), x [B,T,8], dynamic batch+time, returns only y",
     lambda: SeqOnly(nn.GRU(IN, HID, num_layers=2, batch_first=True)),
     [("x", [B, T, IN], 1, "random")],
     [("y", 1)],
     {"x": BT, "y": BT}),
    ("lstm_1layer_fixed_b2.onnx",
     "nn.LSTM(8,16), fixed batch 2 (x [T,2,8], dynamic time), returns y, hn, cn as graph outputs",
     LstmWithFinalState,
     [("x", [T, 2, IN], 0, "random")],
     [("y", 0), ("hn", None), ("cn", None)],
     {"x": T_ONLY, "y": T_ONLY}),
    ("gru_user_h0.onnx",
     "nn.GRU(8,16,num_layers=2), forward(x, h0) -> (y, hn): state already explicit, dynamic batch+time",
     GruUserState,
     [("x", [T, B, IN], 0, "random"), ("h0", [2, B, HID], None, "zeros")],
     [("y", 0), ("hn", None)],
     {"x": TB, "h0": {1: "batch"}, "y": TB, "hn": {1: "batch"}}),
    ("lstm_classifier.onnx",
     "nn.LSTM(8,16) whose final h_n feeds nn.Linear(16,4) -> logits (plus sequence output y), dynamic batch+time",
     LstmClassifier,
     [("x", [T, B, IN], 0, "random")],
     [("logits", None), ("y", 0)],
     {"x": TB, "y": TB, "logits": {0: "batch"}}),
    ("denoiser_gru.onnx",
     "streaming denoiser: x [B,T,8] -> Linear(8,16) -> ReLU -> GRU(16,16,2 layers,batch_first) "
     "-> Linear(16,8) -> Sigmoid -> mask [B,T,8], dynamic batch+time",
     DenoiserGru,
     [("x", [B, T, IN], 1, "random")],
     [("mask", 1)],
     {"x": BT, "mask": BT}),
    ("rnn_relu_2layer_fixed.onnx",
     "nn.RNN(8,16,num_layers=2,nonlinearity='relu'), fixed batch 1 (x [T,1,8], dynamic time), returns only y",
     lambda: SeqOnly(nn.RNN(IN, HID, num_layers=2, nonlinearity="relu")),
     [("x", [T, 1, IN], 0, "random")],
     [("y", 0)],
     {"x": T_ONLY, "y": T_ONLY}),
]


def export_one(idx, spec):
    fname, desc, factory, inputs, outputs, dyn = spec
    torch.manual_seed(SEED_BASE + idx)
    model = factory().eval()
    args = []
    for _name, shape, _tax, fill in inputs:
        args.append(torch.randn(*shape) if fill == "random" else torch.zeros(*shape))
    path = os.path.join(HERE, fname)
    kwargs = {}
    if dyn:
        kwargs["dynamic_axes"] = dyn
    with torch.no_grad():
        torch.onnx.export(
            model, tuple(args), path,
            input_names=[i[0] for i in inputs],
            output_names=[o[0] for o in outputs],
            opset_version=OPSET,
            **kwargs)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    got_in = [i.name for i in m.graph.input
              if i.name not in {t.name for t in m.graph.initializer}]
    got_out = [o.name for o in m.graph.output]
    assert got_in == [i[0] for i in inputs], (fname, got_in)
    assert got_out == [o[0] for o in outputs], (fname, got_out)
    print("exported %-28s inputs=%s outputs=%s" % (fname, got_in, got_out))
    return {
        "file": fname,
        "description": desc,
        "opset": OPSET,
        "inputs": {
            name: {"shape": shape, "dtype": "float32", "time_axis": tax, "fill": fill}
            for name, shape, tax, fill in inputs
        },
        "outputs": {name: {"time_axis": tax} for name, tax in outputs},
        "streamable": True,
    }


def main():
    torch.set_grad_enabled(False)
    entries = [export_one(i, spec) for i, spec in enumerate(MODELS)]
    manifest = {
        "generator": "models/export_torch_models.py",
        "torch_version": torch.__version__.split("+")[0],
        "chunks": 3,
        "models": entries,
    }
    text = json.dumps(manifest, indent=2)
    # keep shape lists on one line: [12, 1, 8]
    text = re.sub(r"\[\n\s*([0-9,\s]+?)\n\s*\]",
                  lambda mo: "[" + ", ".join(v.strip() for v in mo.group(1).split(",")) + "]",
                  text)
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        f.write(text + "\n")
    print("wrote manifest.json (%d models)" % len(entries))


if __name__ == "__main__":
    main()
