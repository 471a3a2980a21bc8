#!/usr/bin/python3
"""Export the streaming test models of issue 22 into models/stream/.

Run:  /usr/bin/python3 models/export_stream_models.py   (from any directory)

Needs Debian's python3-torch (1.13) and python3-onnx. Writes one small model
per pattern that decides whether a model streams exactly (causal convolutions
through Pad, pads + chomp Slice, dilations, groups, a 2-D CRN, strides along
time, pools, a speaker embedding, LayerNorm, a pure TCN, and the patterns that
cannot stream: look-ahead, bidirectional, mean, attention, instance norm over
time, plus an offline dual-path model that does stream), and
models/stream/manifest.json, which says for each model what the test inputs are
and what rnnstate-rewrite must report (tests/e2e/stream_models.js checks it).

Every model is a real torch.onnx.export (opset 14, dynamic batch and time
axes); PyTorch expressed every pattern, so no model is hand-built. Before
writing the manifest, the script checks each model in PyTorch: the outputs of
a prefix equal the prefix of the outputs for the models meant to stream, and
differ for the ones meant not to (the harness repeats the check in ONNX
Runtime on the exported files). Deterministic: each model is built right after
torch.manual_seed(SEED_BASE + index).
"""

import json
import os
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "stream")
OPSET = 14
SEED_BASE = 2200
B = 2       # test batch
T = 24      # test frames: a multiple of every chunk multiple used here (1, 2)
FEAT = 8    # input features
HID = 12    # hidden size
CH = 6      # conv channels
DEEP_LAYERS = 80  # deep_gru_stack: GRU layers


# --------------------------------------------------------------------------
# Streams exactly
# --------------------------------------------------------------------------

class PadConvGru(nn.Module):
    """x [B,T,F] -> F.pad 2 frames on the left -> Conv1d(k=3) -> GRU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = torch.relu(self.conv(F.pad(x.transpose(1, 2), (2, 0))))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class ChompConvGru(nn.Module):
    """TCN style: Conv1d(k=3, padding=2) pads both sides, a chomp drops the 2 right frames."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3, padding=2)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2))[:, :, :-2]
        y, _ = self.gru(torch.relu(h).transpose(1, 2))
        return y


class DilatedConvGru(nn.Module):
    """Causal Conv1d(k=3, dilation=2) through F.pad(4, 0), then a GRU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3, dilation=2)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = torch.relu(self.conv(F.pad(x.transpose(1, 2), (4, 0))))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class DepthwiseConvGru(nn.Module):
    """Depthwise causal Conv1d(groups=channels, k=3) + pointwise Conv1d(k=1) + GRU."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv1d(FEAT, FEAT, 3, groups=FEAT)
        self.pointwise = nn.Conv1d(FEAT, CH, 1)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = self.depthwise(F.pad(x.transpose(1, 2), (2, 0)))
        h = torch.relu(self.pointwise(h))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class Crn2d(nn.Module):
    """2-D CRN on spec [B,1,T,8]: two encoder Conv2d with a 2-frame time kernel
    (causal through F.pad) and stride 2 along frequency (8 -> 4 -> 2), a GRU over
    time on [B,T,C*F], and a U-Net decoder of ConvTranspose2d along frequency
    only (time kernel 1) with skip connections; returns a mask [B,1,T,8]."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(1, 4, (2, 3), stride=(1, 2), padding=(0, 1))
        self.enc2 = nn.Conv2d(4, 4, (2, 3), stride=(1, 2), padding=(0, 1))
        self.gru = nn.GRU(4 * 2, 8, batch_first=True)
        self.dec2 = nn.ConvTranspose2d(8, 4, (1, 3), stride=(1, 2), padding=(0, 1), output_padding=(0, 1))
        self.dec1 = nn.ConvTranspose2d(8, 1, (1, 3), stride=(1, 2), padding=(0, 1), output_padding=(0, 1))

    def forward(self, spec):
        e1 = torch.relu(self.enc1(F.pad(spec, (0, 0, 1, 0))))      # [B,4,T,4]
        e2 = torch.relu(self.enc2(F.pad(e1, (0, 0, 1, 0))))        # [B,4,T,2]
        b, c, t, f = e2.shape
        r, _ = self.gru(e2.permute(0, 2, 1, 3).reshape(b, t, c * f))
        r = r.reshape(b, t, c, f).permute(0, 2, 1, 3)              # [B,4,T,2]
        d2 = torch.relu(self.dec2(torch.cat([r, e2], dim=1)))      # [B,4,T,4]
        d1 = self.dec1(torch.cat([d2, e1], dim=1))                 # [B,1,T,8]
        return torch.sigmoid(d1)


class Stride2Gru(nn.Module):
    """Front end strided along time: causal Conv1d(k=3, stride=2) through F.pad(2, 0)
    halves the frame rate; the GRU runs at T/2. Chunks must be a multiple of 2."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3, stride=2)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = torch.relu(self.conv(F.pad(x.transpose(1, 2), (2, 0))))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class AvgPoolGru(nn.Module):
    """Causal AvgPool1d(3, stride 1, count_include_pad=True) through F.pad(2, 0), then a GRU."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool1d(3, stride=1, count_include_pad=True)
        self.gru = nn.GRU(FEAT, HID, batch_first=True)

    def forward(self, x):
        h = self.pool(F.pad(x.transpose(1, 2), (2, 0)))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class GruThenConv(nn.Module):
    """GRU first, then a causal Conv1d(k=3) through F.pad(2, 0) on its output."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEAT, HID, batch_first=True)
        self.conv = nn.Conv1d(HID, CH, 3)

    def forward(self, x):
        r, _ = self.gru(x)
        return self.conv(F.pad(r.transpose(1, 2), (2, 0))).transpose(1, 2)


class SpeakerGru(nn.Module):
    """Personalised enhancement: a speaker embedding spk [B,4] without a time axis,
    concatenated to every frame (Expand + Concat) after a causal conv, and
    broadcast (FiLM-style Mul) onto the GRU output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3)
        self.gru = nn.GRU(CH + 4, HID, batch_first=True)
        self.film = nn.Linear(4, HID)

    def forward(self, x, spk):
        h = torch.relu(self.conv(F.pad(x.transpose(1, 2), (2, 0)))).transpose(1, 2)
        per_frame = spk.unsqueeze(1).expand(-1, h.shape[1], -1)
        r, _ = self.gru(torch.cat([h, per_frame], dim=2))
        return r * torch.sigmoid(self.film(spk)).unsqueeze(1)


class LayerNormGru(nn.Module):
    """Linear -> LayerNorm over the features (opset 14: ReduceMean etc. over the
    last axis) -> GRU -> LayerNorm -> Linear."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(FEAT, HID)
        self.norm1 = nn.LayerNorm(HID)
        self.gru = nn.GRU(HID, HID, batch_first=True)
        self.norm2 = nn.LayerNorm(HID)
        self.out = nn.Linear(HID, FEAT)

    def forward(self, x):
        r, _ = self.gru(self.norm1(self.inp(x)))
        return self.out(self.norm2(r))


class TcnBlock(nn.Module):
    """Residual block of two causal dilated Conv1d(k=3) with chomps (Bai et al.)."""

    def __init__(self, ch, dilation):
        super().__init__()
        self.chomp = 2 * dilation
        self.conv1 = nn.Conv1d(ch, ch, 3, padding=self.chomp, dilation=dilation)
        self.conv2 = nn.Conv1d(ch, ch, 3, padding=self.chomp, dilation=dilation)

    def forward(self, x):
        h = torch.relu(self.conv1(x)[:, :, :-self.chomp])
        h = self.conv2(h)[:, :, :-self.chomp]
        return torch.relu(h + x)


class PureTcn(nn.Module):
    """No recurrent node: x [B,8,T] -> two residual dilated causal blocks (d=1, 2)
    -> Conv1d(k=1). Needs --time x:2 for the analysis."""

    def __init__(self):
        super().__init__()
        self.block1 = TcnBlock(FEAT, 1)
        self.block2 = TcnBlock(FEAT, 2)
        self.head = nn.Conv1d(FEAT, 4, 1)

    def forward(self, x):
        return self.head(self.block2(self.block1(x)))


class DualPathOffline(nn.Module):
    """GTCRN/DPCRN-style dual path on spec [B,C,T,F], exported offline: a Conv2d along
    frequency only, an intra RNN (bidirectional GRU) along the frequency bins of
    each frame with time folded into its batch ([B*T,F,C]), and an inter GRU along
    time with frequency folded into its batch ([B*F,T,C]). The intra RNN is
    per-frame (reset at every call): the model streams exactly."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(2, 4, (1, 3), padding=(0, 1))
        self.intra = nn.GRU(4, 2, batch_first=True, bidirectional=True)
        self.inter = nn.GRU(4, 4, batch_first=True)
        self.dec = nn.Conv2d(4, 2, (1, 1))

    def forward(self, spec):
        h = torch.relu(self.enc(spec))                             # [B,4,T,F]
        b, c, t, f = h.shape
        x = h.permute(0, 2, 3, 1).reshape(b * t, f, c)             # [B*T,F,C]
        x, _ = self.intra(x)
        x = x.reshape(b, t, f, c) + h.permute(0, 2, 3, 1)          # [B,T,F,C]
        y = x.permute(0, 2, 1, 3).reshape(b * f, t, c)             # [B*F,T,C]
        y, _ = self.inter(y)
        y = y.reshape(b, f, t, c).permute(0, 3, 2, 1) + x.permute(0, 3, 1, 2)
        return self.dec(y)                                         # [B,2,T,F]


# --------------------------------------------------------------------------
# Cannot stream
# --------------------------------------------------------------------------

class LookaheadConvGru(nn.Module):
    """Conv1d(k=3, padding=1): symmetric padding, 1 frame of look-ahead; then a GRU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, CH, 3, padding=1)
        self.gru = nn.GRU(CH, HID, batch_first=True)

    def forward(self, x):
        h = torch.relu(self.conv(x.transpose(1, 2)))
        y, _ = self.gru(h.transpose(1, 2))
        return y


class BiGru(nn.Module):
    """Bidirectional GRU along time."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEAT, HID, batch_first=True, bidirectional=True)

    def forward(self, x):
        y, _ = self.gru(x)
        return y


class DeepGruStack(nn.Module):
    """80 GRU layers, each with its own weights, one after the other: a chain
    far deeper than any bound on a walk back to the input (issue 24)."""

    def __init__(self):
        super().__init__()
        self.grus = nn.ModuleList(nn.GRU(FEAT if i == 0 else 4, 4, batch_first=True)
                                  for i in range(DEEP_LAYERS))

    def forward(self, x):
        for gru in self.grus:
            x, _ = gru(x)
        return x


class MeanNormGru(nn.Module):
    """Cepstral mean normalisation: x minus its mean over time, then a GRU."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEAT, HID, batch_first=True)

    def forward(self, x):
        y, _ = self.gru(x - x.mean(dim=1, keepdim=True))
        return y


class AttentionGru(nn.Module):
    """GRU then single-head self-attention over all frames (no mask)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEAT, HID, batch_first=True)
        self.q = nn.Linear(HID, HID)
        self.k = nn.Linear(HID, HID)
        self.v = nn.Linear(HID, HID)

    def forward(self, x):
        r, _ = self.gru(x)
        scores = torch.matmul(self.q(r), self.k(r).transpose(1, 2)) / (HID ** 0.5)
        return torch.matmul(torch.softmax(scores, dim=-1), self.v(r))


class InstanceNormGru(nn.Module):
    """InstanceNorm1d on [B,F,T]: normalises each channel over time; then a GRU."""

    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(FEAT, affine=True)
        self.gru = nn.GRU(FEAT, HID, batch_first=True)

    def forward(self, x):
        y, _ = self.gru(self.norm(x.transpose(1, 2)).transpose(1, 2))
        return y


# --------------------------------------------------------------------------
# Model table
# --------------------------------------------------------------------------

BT = {0: "batch", 1: "time"}
BCT = {0: "batch", 2: "time"}
BATCH = {0: "batch"}


def exact(chunk_multiple, context, recurrent):
    return {"verdict": "exact", "chunk_multiple": chunk_multiple,
            "context_pairs": context, "recurrent_pairs": recurrent, "blockers": []}


def cannot(recurrent, blockers, context=0):
    # chunk_multiple is not asserted for a model that cannot stream (null)
    return {"verdict": "none", "chunk_multiple": None,
            "context_pairs": context, "recurrent_pairs": recurrent, "blockers": blockers}


# name, factory, inputs [(name, shape, time_axis)], outputs [(name, time_axis)],
# dynamic axes, rewrite args, expected
MODELS = [
    ("pad_conv_gru",
     "x [B,T,8] -> F.pad(2,0) + Conv1d(8,6,k=3) (Pad + Conv) -> ReLU -> GRU(6,12) -> y [B,T,12]",
     PadConvGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("chomp_conv_gru",
     "x [B,T,8] -> Conv1d(8,6,k=3,padding=2) + chomp Slice [:, :, :-2] (TCN style) -> ReLU -> GRU(6,12)",
     ChompConvGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("dilated_conv_gru",
     "x [B,T,8] -> F.pad(4,0) + Conv1d(8,6,k=3,dilation=2) -> ReLU -> GRU(6,12); 4 frames of context",
     DilatedConvGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("depthwise_conv_gru",
     "x [B,T,8] -> F.pad(2,0) + depthwise Conv1d(8,8,k=3,groups=8) -> pointwise Conv1d(8,6,k=1) -> GRU(6,12)",
     DepthwiseConvGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("crn2d_unet",
     "2-D CRN: spec [B,1,T,8] -> 2 x (F.pad time (1,0) + Conv2d k=(2,3) stride (1,2)) -> GRU over time on "
     "[B,T,4*2] -> U-Net decoder ConvTranspose2d k=(1,3) stride (1,2) with skip Concats -> Sigmoid mask [B,1,T,8]",
     Crn2d, [("spec", [B, 1, T, FEAT], 2)], [("mask", 2)], {"spec": BCT, "mask": BCT}, [],
     exact(1, 2, 1)),
    ("stride2_conv_gru",
     "x [B,T,8] -> F.pad(2,0) + Conv1d(8,6,k=3,stride=2) (frame rate halved) -> GRU(6,12) -> y [B,T/2,12]",
     Stride2Gru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": {0: "batch", 1: "frames"}}, [],
     exact(2, 1, 1)),
    ("avgpool_gru",
     "x [B,T,8] -> F.pad(2,0) + AvgPool1d(3,stride=1,count_include_pad=True) (Pad + AveragePool) -> GRU(8,12)",
     AvgPoolGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("gru_then_conv",
     "x [B,T,8] -> GRU(8,12) -> F.pad(2,0) + Conv1d(12,6,k=3) on the GRU output -> y [B,T,6]",
     GruThenConv, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 1, 1)),
    ("speaker_gru",
     "x [B,T,8] -> F.pad(2,0) + Conv1d(8,6,k=3); speaker embedding spk [B,4] (no time axis) Expanded to every "
     "frame and Concatenated -> GRU(10,12) -> times sigmoid(Linear(spk)) broadcast over time",
     SpeakerGru, [("x", [B, T, FEAT], 1), ("spk", [B, 4], None)], [("y", 1)],
     {"x": BT, "spk": BATCH, "y": BT}, [],
     exact(1, 1, 1)),
    ("layernorm_gru",
     "x [B,T,8] -> Linear(8,12) -> LayerNorm(12) over features (ReduceMean/Sub/Pow/Sqrt/Div, opset 14) -> "
     "GRU(12,12) -> LayerNorm(12) -> Linear(12,8)",
     LayerNormGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 0, 1)),
    ("tcn_residual",
     "pure TCN, no recurrent node: x [B,8,T] -> 2 residual blocks of two causal dilated Conv1d(k=3, padding "
     "2d, chomp 2d; d=1, 2) -> Conv1d(8,4,k=1) -> y [B,4,T]; needs --time x:2",
     PureTcn, [("x", [B, FEAT, T], 2)], [("y", 2)], {"x": BCT, "y": BCT}, ["--time", "x:2"],
     exact(1, 4, 0)),
    ("dualpath_offline",
     "GTCRN/DPCRN-style dual path, offline export: spec [B,2,T,8] -> Conv2d k=(1,3) -> intra bidirectional "
     "GRU along frequency with time in its batch (Reshape [B*T,8,4]) -> inter GRU along time (Reshape "
     "[B*8,T,4]) -> Conv2d k=1; the intra GRU is per-frame (reset at every call), only the inter GRU's state "
     "is a pair",
     DualPathOffline, [("spec", [B, 2, T, FEAT], 2)], [("out", 2)], {"spec": BCT, "out": BCT}, [],
     exact(1, 0, 1)),
    ("lookahead_conv_gru",
     "x [B,T,8] -> Conv1d(8,6,k=3,padding=1) (symmetric: 1 frame of look-ahead) -> GRU(6,12)",
     LookaheadConvGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     cannot(1, [{"op": "Conv", "reason_contains": "ahead"}])),
    ("bigru",
     "x [B,T,8] -> GRU(8,12,bidirectional=True) along time -> y [B,T,24]",
     BiGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     cannot(1, [{"op": "GRU", "reason_contains": "backward"}])),
    ("mean_over_time_gru",
     "x [B,T,8] -> x - mean over time (ReduceMean over the time axis) -> GRU(8,12)",
     MeanNormGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     cannot(1, [{"op": "ReduceMean", "reason_contains": "mean"}])),
    ("attention_gru",
     "x [B,T,8] -> GRU(8,12) -> single-head self-attention over all frames (MatMul Q K^T, Softmax, MatMul V)",
     AttentionGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     cannot(1, [{"op": ["MatMul", "Softmax"], "reason_contains": "time"}])),
    ("instnorm_gru",
     "x [B,T,8] -> InstanceNorm1d(8, affine) on [B,8,T] (InstanceNormalization over time) -> GRU(8,12)",
     InstanceNormGru, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     cannot(1, [{"op": "InstanceNormalization", "reason_contains": "time"}])),
    ("deep_gru_stack",
     "x [B,T,8] -> 80 GRU layers (GRU(8,4), then GRU(4,4) x 79, each with its own weights), one after "
     "the other: the time axis traces back through every one (issue 24: no depth bound)",
     DeepGruStack, [("x", [B, T, FEAT], 1)], [("y", 1)], {"x": BT, "y": BT}, [],
     exact(1, 0, DEEP_LAYERS)),
]


# --------------------------------------------------------------------------
# Export and checks
# --------------------------------------------------------------------------

def make_inputs(inputs, gen):
    return [torch.randn(*shape, generator=gen) for _n, shape, _t in inputs]


def prefix_agrees(model, args, inputs, outputs, multiple):
    """The outputs of prefixes of the timed inputs equal the prefixes of the whole outputs."""
    whole = model(*args)
    whole = whole if isinstance(whole, tuple) else (whole,)
    for frames in (multiple, 3 * multiple, T // 2):
        cut = [a.narrow(t, 0, frames) if t is not None else a
               for a, (_n, _s, t) in zip(args, inputs)]
        part = model(*cut)
        part = part if isinstance(part, tuple) else (part,)
        for p, w, (_name, t) in zip(part, whole, outputs):
            if t is None:
                continue
            if not torch.allclose(p, w.narrow(t, 0, p.shape[t]), atol=1e-6):
                return False
    return True


def export_one(idx, spec):
    name, desc, factory, inputs, outputs, dyn, rewrite_args, expected = spec
    torch.manual_seed(SEED_BASE + idx)
    model = factory().eval()
    gen = torch.Generator().manual_seed(SEED_BASE + idx)
    args = make_inputs(inputs, gen)
    # prefixes of K, 3K and T/2 frames (2, 6, 12 for the models that cannot
    # stream: InstanceNorm1d refuses a single frame)
    causal = prefix_agrees(model, args, inputs, outputs, expected["chunk_multiple"] or 2)
    if causal != (expected["verdict"] == "exact"):
        raise SystemExit("%s: the prefix property is %s in PyTorch, but the model is meant to be %s"
                         % (name, causal, expected["verdict"]))
    fname = name + ".onnx"
    path = os.path.join(OUT, fname)
    torch.onnx.export(
        model, tuple(args), path,
        input_names=[i[0] for i in inputs],
        output_names=[o[0] for o in outputs],
        dynamic_axes=dyn,
        opset_version=OPSET)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    initializers = {t.name for t in m.graph.initializer}
    got_in = [i.name for i in m.graph.input if i.name not in initializers]
    got_out = [o.name for o in m.graph.output]
    assert got_in == [i[0] for i in inputs], (fname, got_in)
    assert got_out == [o[0] for o in outputs], (fname, got_out)
    ops = sorted({n.op_type for n in m.graph.node})
    print("exported %-24s %6d bytes, prefix property %-5s ops: %s"
          % (fname, os.path.getsize(path), causal, " ".join(ops)))
    return {
        "file": fname,
        "description": desc,
        "opset": OPSET,
        "inputs": {
            n: {"shape": shape, "dtype": "float32", "time_axis": t, "fill": "random"}
            for n, shape, t in inputs
        },
        "outputs": {n: {"time_axis": t} for n, t in outputs},
        "args": rewrite_args,
        "expected": expected,
    }


def main():
    torch.set_grad_enabled(False)
    os.makedirs(OUT, exist_ok=True)
    entries = [export_one(i, spec) for i, spec in enumerate(MODELS)]
    manifest = {
        "generator": "models/export_stream_models.py",
        "torch_version": torch.__version__.split("+")[0],
        "models": entries,
    }
    text = json.dumps(manifest, indent=2)
    # short lists on one line: [2, 24, 8], ["--time", "x:2"]
    text = re.sub(r"\[\n\s*([^\[\]{}]+?)\n\s*\]",
                  lambda mo: "[" + ", ".join(v.strip() for v in mo.group(1).split(",\n")) + "]",
                  text)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        f.write(text + "\n")
    print("wrote models/stream/manifest.json (%d models)" % len(entries))


if __name__ == "__main__":
    main()
