# The model of tests/regressions/silero-v6-if-reset (python3-onnx):
#   /usr/bin/python3 make_model.py model.onnx
# A small model of the shape of Silero VAD v6's 16 kHz opset-15 export: the
# state input [2, batch, H] packs h and c; an If on a flag computed from the
# input chooses between a then-branch whose LSTM reads h and c out of
# `state` with Gather (+ Unsqueeze), and an else-branch whose LSTM starts
# from zeros (the reset path); each branch returns its output and
# Concat(Y_h, Y_c) [2, batch, H], which becomes `stateN`. Already stateful:
# the pair is state -> stateN, and nothing is to be added.
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T

H, F = 8, 4
rng = np.random.default_rng(6)


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=numpy_helper.from_array(np.asarray(value), name + "_value"))


def lstm_branch(prefix, with_state):
    nodes = [
        const(prefix + "W", rng.standard_normal([1, 4 * H, F]).astype(np.float32)),
        const(prefix + "R", rng.standard_normal([1, 4 * H, H]).astype(np.float32)),
        const(prefix + "B", rng.standard_normal([1, 8 * H]).astype(np.float32)),
        const(prefix + "axis0", np.array([0], np.int64)),
    ]
    if with_state:
        # h = Unsqueeze(Gather(state, 0), [0]), c = Unsqueeze(Gather(state, 1), [0])
        nodes += [
            const(prefix + "i0", np.array(0, np.int64)),
            const(prefix + "i1", np.array(1, np.int64)),
            helper.make_node("Gather", ["state", prefix + "i0"], [prefix + "h_row"], name=prefix + "Gather", axis=0),
            helper.make_node("Gather", ["state", prefix + "i1"], [prefix + "c_row"], name=prefix + "Gather_1", axis=0),
            helper.make_node("Unsqueeze", [prefix + "h_row", prefix + "axis0"], [prefix + "h0"], name=prefix + "Unsqueeze"),
            helper.make_node("Unsqueeze", [prefix + "c_row", prefix + "axis0"], [prefix + "c0"], name=prefix + "Unsqueeze_1"),
        ]
    else:
        # zeros [1, batch, H], batch from Shape(x)[1] (the reset path)
        nodes += [
            const(prefix + "one", np.array([1], np.int64)),
            const(prefix + "hid", np.array([H], np.int64)),
            const(prefix + "i1", np.array([1], np.int64)),
            helper.make_node("Shape", ["xs"], [prefix + "shape"], name=prefix + "Shape"),
            helper.make_node("Gather", [prefix + "shape", prefix + "i1"], [prefix + "batch"], name=prefix + "Gather", axis=0),
            helper.make_node("Concat", [prefix + "one", prefix + "batch", prefix + "hid"], [prefix + "zshape"],
                             name=prefix + "Concat", axis=0),
            helper.make_node("ConstantOfShape", [prefix + "zshape"], [prefix + "h0"], name=prefix + "ConstantOfShape",
                             value=numpy_helper.from_array(np.zeros([1], np.float32), "zero")),
            helper.make_node("Identity", [prefix + "h0"], [prefix + "c0"], name=prefix + "Identity"),
        ]
    nodes += [
        helper.make_node("LSTM", ["xs", prefix + "W", prefix + "R", prefix + "B", "", prefix + "h0", prefix + "c0"],
                         [prefix + "Y", prefix + "Y_h", prefix + "Y_c"], name=prefix + "LSTM", hidden_size=H),
        helper.make_node("Squeeze", [prefix + "Y", prefix + "axis1"], [prefix + "y"],
                         name=prefix + "Squeeze"),
        helper.make_node("Concat", [prefix + "Y_h", prefix + "Y_c"], [prefix + "stateN"], name=prefix + "Concat_state",
                         axis=0),
    ]
    nodes.insert(0, const(prefix + "axis1", np.array([1], np.int64)))
    return helper.make_graph(nodes, prefix + "branch", [],
                             [helper.make_tensor_value_info(prefix + "y", T.FLOAT, None),
                              helper.make_tensor_value_info(prefix + "stateN", T.FLOAT, None)])


main_nodes = [
    # xs [T, batch, F]: the input, time first
    helper.make_node("Transpose", ["input"], ["xs"], name="/Transpose", perm=[1, 0, 2]),
    # the flag: is the state anything but zeros? (v6 resets when it is not)
    helper.make_node("ReduceMax", ["state"], ["state_max"], name="/ReduceMax", keepdims=0),
    const("zero_f", np.array(0, np.float32)),
    helper.make_node("Greater", ["state_max", "zero_f"], ["has_state"], name="/Greater"),
    helper.make_node("If", ["has_state"], ["y", "new_state"], name="/decoder/If",
                     then_branch=lstm_branch("then/", True), else_branch=lstm_branch("else/", False)),
    helper.make_node("Identity", ["y"], ["output"], name="/Identity"),
    helper.make_node("Identity", ["new_state"], ["stateN"], name="/Identity_1"),
]
graph = helper.make_graph(
    main_nodes, "silero_v6_like",
    [helper.make_tensor_value_info("input", T.FLOAT, ["batch", "T", F]),
     helper.make_tensor_value_info("state", T.FLOAT, [2, "batch", H])],
    [helper.make_tensor_value_info("output", T.FLOAT, ["T", "batch", H]),
     helper.make_tensor_value_info("stateN", T.FLOAT, [2, "batch", H])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], producer_name="issue-26")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
