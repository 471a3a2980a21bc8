'use strict';
// onnxruntime-node, loaded once, with a message that says how to install it.

let ort = null;

function loadOrt() {
  if (ort) return ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    throw new Error('cannot load onnxruntime-node: run `npm ci --onnxruntime-node-install=skip` in the rnnstate '
      + `package's folder (js/rnnstate) (${e.message.split('\n')[0]})`);
  }
  return ort;
}

// An ort.Tensor of this package's onnxruntime-node for any tensor-like value
// ({ type or dtype, data, dims }): a caller's tensors may come from another
// copy of onnxruntime-node, whose Tensor class ORT here would not accept.
// The data is shared, not copied.
function asOrtTensor(t) {
  const { Tensor } = loadOrt();
  return t instanceof Tensor ? t : new Tensor(t.type || t.dtype, t.data, Array.from(t.dims, Number));
}

module.exports = { loadOrt, asOrtTensor };
