# The model of tests/regressions/slice-empty-bound (python3-onnx):
#   /usr/bin/python3 make_model.py model.onnx
# a half-stateful GRU whose initial_h is Slice(h0, Add(E, [0]), [1], [0]) with
# E an empty int64 initializer.
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T
rng = np.random.default_rng(7)
H, I = 4, 3
inits = [
    numpy_helper.from_array(np.zeros([0], np.int64), "E"),
    numpy_helper.from_array(np.array([0], np.int64), "zero"),
    numpy_helper.from_array(np.array([1], np.int64), "one"),
    numpy_helper.from_array(np.array([0], np.int64), "axes"),
    numpy_helper.from_array(rng.standard_normal([1, 3 * H, I]).astype(np.float32), "W"),
    numpy_helper.from_array(rng.standard_normal([1, 3 * H, H]).astype(np.float32), "R"),
]
nodes = [
    helper.make_node("Add", ["E", "zero"], ["start"], name="start"),
    helper.make_node("Slice", ["h0", "start", "one", "axes"], ["h"], name="slice"),
    helper.make_node("GRU", ["x", "W", "R", "", "", "h"], ["Y", "Y_h"], name="gru", hidden_size=H),
]
graph = helper.make_graph(nodes, "slice_empty_bound",
                          [helper.make_tensor_value_info("x", T.FLOAT, ["T", 1, I]),
                           helper.make_tensor_value_info("h0", T.FLOAT, [1, 1, H])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, ["T", 1, 1, H])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="issue-26")
model.ir_version = 7
onnx.save(model, sys.argv[1])
