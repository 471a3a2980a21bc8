# The model of tests/regressions/silero-v6-if-reset (python3-onnx):
#   /usr/bin/python3 make_model.py model.onnx
# A small model of the shape of Silero VAD v6's 16 kHz opset-15 export, whose
# decoder is PyTorch's LSTMCell run on one frame per call:
#   if len(state): h, c = rnn(x, (state[0], state[1]))   # then-branch
#   else:          h, c = rnn(x)                          # zeros: the reset path
#   state = stack([h, c]); out = sigmoid(linear(relu(h)))
# `state` [2, batch, H] packs h and c; the If (on Shape(state)[0] != 0) reads
# it with Gather inside its then-branch; each branch runs an LSTM of one
# step (X = Unsqueeze(input, 0)) and takes h from Y, the sequence output, as
# the exporter does for a cell, leaving Y_h unused, and c from Y_c. Already
# stateful: the pair is state -> stateN, nothing is to be added, and the
# reset branch is left alone.
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

H, F = 8, 4
rng = np.random.default_rng(6)


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=numpy_helper.from_array(np.asarray(value), name + "_value"))


def branch(prefix, from_state):
    nodes = [const(prefix + "axis0", np.array([0], np.int64)),
             const(prefix + "axes01", np.array([0, 1], np.int64))]
    if from_state:
        nodes += [
            const(prefix + "row0", np.array(0, np.int64)),
            const(prefix + "row1", np.array(1, np.int64)),
            helper.make_node("Gather", ["state", prefix + "row0"], [prefix + "h_prev"], name=prefix + "Gather", axis=0),
            helper.make_node("Gather", ["state", prefix + "row1"], [prefix + "c_prev"], name=prefix + "Gather_1", axis=0),
        ]
    else:
        nodes += [
            const(prefix + "first", np.array([0], np.int64)),
            const(prefix + "hidden", np.array([H], np.int64)),
            helper.make_node("Shape", ["input"], [prefix + "in_shape"], name=prefix + "Shape"),
            helper.make_node("Gather", [prefix + "in_shape", prefix + "first"], [prefix + "batch"],
                             name=prefix + "Gather", axis=0),
            helper.make_node("Concat", [prefix + "batch", prefix + "hidden"], [prefix + "zeros_shape"],
                             name=prefix + "Concat", axis=0),
            helper.make_node("ConstantOfShape", [prefix + "zeros_shape"], [prefix + "h_prev"],
                             name=prefix + "ConstantOfShape",
                             value=numpy_helper.from_array(np.zeros([1], np.float32), "zero")),
            helper.make_node("Identity", [prefix + "h_prev"], [prefix + "c_prev"], name=prefix + "Identity"),
        ]
    nodes += [
        helper.make_node("Unsqueeze", [prefix + "h_prev", prefix + "axis0"], [prefix + "h0"], name=prefix + "Unsqueeze"),
        helper.make_node("Unsqueeze", [prefix + "c_prev", prefix + "axis0"], [prefix + "c0"], name=prefix + "Unsqueeze_1"),
        helper.make_node("LSTM", ["xs", "W", "R", "B", "", prefix + "h0", prefix + "c0"],
                         [prefix + "Y", prefix + "Y_h", prefix + "Y_c"], name=prefix + "LSTM", hidden_size=H),
        # h from Y (one step: the same numbers as Y_h, which is left unused)
        helper.make_node("Squeeze", [prefix + "Y", prefix + "axes01"], [prefix + "h"], name=prefix + "Squeeze"),
        helper.make_node("Squeeze", [prefix + "Y_c", prefix + "axis0"], [prefix + "c"], name=prefix + "Squeeze_1"),
    ]
    return helper.make_graph(nodes, prefix.strip("/") + "_branch", [],
                             [helper.make_tensor_value_info(prefix + "h", T.FLOAT, None),
                              helper.make_tensor_value_info(prefix + "c", T.FLOAT, None)])


initializers = [
    numpy_helper.from_array(rng.standard_normal([1, 4 * H, F]).astype(np.float32) * 0.5, "W"),
    numpy_helper.from_array(rng.standard_normal([1, 4 * H, H]).astype(np.float32) * 0.5, "R"),
    numpy_helper.from_array(rng.standard_normal([1, 8 * H]).astype(np.float32) * 0.1, "B"),
    numpy_helper.from_array(rng.standard_normal([H, 1]).astype(np.float32), "dec_W"),
    numpy_helper.from_array(np.array([0], np.int64), "axis0"),
    numpy_helper.from_array(np.array(0, np.int64), "zero_i"),
]
main_nodes = [
    helper.make_node("Unsqueeze", ["input", "axis0"], ["xs"], name="/Unsqueeze"),  # [1, batch, F]: one step
    # if len(state): Shape(state)[0] != 0
    helper.make_node("Shape", ["state"], ["state_shape"], name="/Shape"),
    helper.make_node("Gather", ["state_shape", "zero_i"], ["state_len"], name="/Gather", axis=0),
    helper.make_node("Equal", ["state_len", "zero_i"], ["no_state"], name="/Equal"),
    helper.make_node("Not", ["no_state"], ["has_state"], name="/Not"),
    helper.make_node("If", ["has_state"], ["h", "c"], name="/decoder/If",
                     then_branch=branch("then/", True), else_branch=branch("else/", False)),
    # state = stack([h, c])
    helper.make_node("Unsqueeze", ["h", "axis0"], ["h_row"], name="/Unsqueeze_1"),
    helper.make_node("Unsqueeze", ["c", "axis0"], ["c_row"], name="/Unsqueeze_2"),
    helper.make_node("Concat", ["h_row", "c_row"], ["stateN"], name="/Concat", axis=0),
    # out = sigmoid(linear(relu(h)))
    helper.make_node("Relu", ["h"], ["h_relu"], name="/Relu"),
    helper.make_node("MatMul", ["h_relu", "dec_W"], ["logit"], name="/MatMul"),
    helper.make_node("Sigmoid", ["logit"], ["output"], name="/Sigmoid"),
]
graph = helper.make_graph(
    main_nodes, "silero_v6_like",
    [helper.make_tensor_value_info("input", T.FLOAT, ["batch", F]),
     helper.make_tensor_value_info("state", T.FLOAT, [2, "batch", H])],
    [helper.make_tensor_value_info("output", T.FLOAT, ["batch", 1]),
     helper.make_tensor_value_info("stateN", T.FLOAT, [2, "batch", H])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], producer_name="issue-26")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
