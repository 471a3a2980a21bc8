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

// What to do when ONNX Runtime cannot find a model's external data (weights
// stored in files beside the model, as for models over 2 GB), for its error
// message; '' for other errors. ONNX Runtime reads such files only from the
// model's own directory and below, so a model copied or written elsewhere
// without them fails to load.
function externalDataHint(message) {
  if (!/external data/i.test(String(message))) return '';
  return ' (the model keeps weights in external files, which ONNX Runtime reads only from the model\'s directory '
    + 'and below, at the locations the model names: keep them there; rnnstate-rewrite copies them beside its output '
    + 'by default, --external-data=copy)';
}

// Session options that let ONNX Runtime find the external data of a model it
// loads from bytes (a copy made in memory) in the directory of the file the
// bytes came from: without it the files are looked for in the working
// directory, and refused. The caller's own settings win.
function optionsForBytesOf(path, given = {}) {
  const extra = given.extra || {};
  const session = {
    model_external_initializers_file_folder_path: require('path').dirname(require('path').resolve(path)),
    ...(extra.session || {}),
  };
  return { ...given, extra: { ...extra, session } };
}

module.exports = { loadOrt, asOrtTensor, externalDataHint, optionsForBytesOf };
