'use strict';
// Small models with hand-made rnnstate.* metadata, for the streaming verdict
// (rnnstate.stream) and context pairs in rnnstate-verify and StatefulSession,
// without depending on what the C tool writes:
//   pairedFrames   x [batch, T, 4] -> Reshape [batch, T/2, 8] (two frames
//                  become one) -> GRU (hidden 5): exact in chunks of any
//                  multiple of 2 frames, and only of those (an odd chunk
//                  cannot be reshaped). ORIGINAL starts the GRU from zeros;
//                  REWRITTEN takes h0 [1, batch, 5] and returns hn.
//   causalConv     x [batch, T, 4] -> [batch, 4, T] -> Pad 2 frames on the
//                  left -> Conv (kernel 3 along time) -> y [batch, 3, T].
//                  REWRITTEN replaces the padding with a context cache
//                  [batch, 4, 2] concatenated in front (the pair cache ->
//                  cache_out, kind context), as the rewriter's context
//                  caches do.

const b = require('./onnx_build');

const INT64_MAX = 2n ** 63n - 1n;

function pairedFrames({ stateful, metadata = {} }) {
  const H = 5;
  const nodes = [
    b.node('Reshape', ['x', 'pair_shape'], ['xr']),
    b.node('Transpose', ['xr'], ['xt'], { perm: [1, 0, 2] }),
    b.node('GRU', ['xt', 'W', 'R', 'B', '', stateful ? 'h0' : ''], ['y', 'hn'], { hidden_size: H }, 'gru'),
  ];
  const initializers = [
    b.tensor('pair_shape', 'int64', [3], [0, -1, 8]),
    b.tensor('W', 'float32', [1, 3 * H, 8], b.weights(3 * H * 8, 1)),
    b.tensor('R', 'float32', [1, 3 * H, H], b.weights(3 * H * H, 2)),
    b.tensor('B', 'float32', [1, 6 * H], b.weights(6 * H, 3)),
  ];
  const inputs = [b.valueInfo('x', 'float32', ['batch', 'T', 4])];
  if (stateful) inputs.push(b.valueInfo('h0', 'float32', [1, 'batch', H]));
  const outputs = [b.valueInfo('y', 'float32', ['T2', 1, 'batch', H]), b.valueInfo('hn', 'float32', [1, 'batch', H])];
  return b.model({ graph: { nodes, initializers, inputs, outputs }, metadata });
}

const PAIRED_STATE = [{
  input: 'h0', output: 'hn', shape: [1, 'batch', 5], dtype: 'float32', batch_axis: 1, optional: false, kind: 'recurrent',
}];

function causalConv({ stateful, metadata = {} }) {
  const nodes = [b.node('Transpose', ['x'], ['xt'], { perm: [0, 2, 1] })];
  const initializers = [b.tensor('W', 'float32', [3, 4, 3], b.weights(36, 4))];
  const inputs = [b.valueInfo('x', 'float32', ['batch', 'T', 4])];
  const outputs = [b.valueInfo('y', 'float32', ['batch', 3, 'T'])];
  if (stateful) {
    nodes.push(b.node('Concat', ['cache', 'xt'], ['xc'], { axis: 2 }),
      b.node('Slice', ['xc', 'starts', 'ends', 'axes'], ['cache_out']));
    initializers.push(b.tensor('starts', 'int64', [1], [-2]), b.tensor('ends', 'int64', [1], [INT64_MAX]),
      b.tensor('axes', 'int64', [1], [2]));
    inputs.push(b.valueInfo('cache', 'float32', ['batch', 4, 2]));
    outputs.push(b.valueInfo('cache_out', 'float32', ['batch', 4, 2]));
  } else {
    nodes.push(b.node('Pad', ['xt', 'pads'], ['xc']));
    initializers.push(b.tensor('pads', 'int64', [6], [0, 0, 2, 0, 0, 0]));
  }
  nodes.push(b.node('Conv', ['xc', 'W'], ['y'], { kernel_shape: [3] }, 'conv'));
  return b.model({ graph: { nodes, initializers, inputs, outputs }, metadata });
}

const CONV_STATE = [{
  input: 'cache', output: 'cache_out', shape: ['batch', 4, 2], dtype: 'float32', batch_axis: 0, optional: false,
  kind: 'context',
}];

// rnnstate.* metadata entries as the C tool writes them (compact JSON).
function metadata({ state, time = [{ input: 'x', axis: 1 }], stream }) {
  const m = { 'rnnstate.state': JSON.stringify(state), 'rnnstate.time': JSON.stringify(time) };
  if (stream !== undefined) m['rnnstate.stream'] = JSON.stringify(stream);
  return m;
}

module.exports = { pairedFrames, causalConv, metadata, PAIRED_STATE, CONV_STATE };
