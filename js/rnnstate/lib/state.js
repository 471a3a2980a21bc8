'use strict';
// The state pairs and time axes a rewritten model records in its
// metadata_props, and the shape of a pair's zeros for a given first call.
//   rnnstate.state: [{ "input", "output", "shape", "dtype", "optional",
//                      "batch_axis" (when the rewriter records it) }]
//   rnnstate.time:  [{ "input", "axis" }]: the graph inputs whose axis is the
//                   sequence axis of the recurrent nodes

const STATE_KEY = 'rnnstate.state';
const TIME_KEY = 'rnnstate.time';

function parseEntry(model, key, label) {
  const text = model.metadata[key];
  if (text === undefined) return null;
  try {
    const value = JSON.parse(text);
    if (!Array.isArray(value)) throw new Error('not a list');
    return value;
  } catch (e) {
    throw new Error(`${label}: metadata ${key} is not a JSON list (${e.message})`);
  }
}

// The model's state pairs, or null when it records none.
function statePairs(model, label) {
  const pairs = parseEntry(model, STATE_KEY, label);
  if (pairs && pairs.some((p) => typeof p.input !== 'string' || typeof p.output !== 'string')) {
    throw new Error(`${label}: metadata ${STATE_KEY} has a pair without input or output`);
  }
  return pairs;
}

// The model's time axes [{ input, axis }], or null when it records none.
function timeAxes(model, label) {
  const axes = parseEntry(model, TIME_KEY, label);
  if (axes && axes.some((t) => typeof t.input !== 'string' || !Number.isInteger(t.axis))) {
    throw new Error(`${label}: metadata ${TIME_KEY} has an entry without input or axis`);
  }
  return axes;
}

// Symbolic dimension names bound by the fed inputs: a graph input declared
// [batch, time, 8] and fed [2, 12, 8] binds batch = 2 and time = 12.
function boundDims(declaredInputs, feeds) {
  const bound = new Map();
  for (const d of declaredInputs) {
    const fed = feeds[d.name];
    if (!fed || !d.shape) continue;
    d.shape.forEach((dim, i) => {
      if (typeof dim === 'string' && dim && i < fed.dims.length && !bound.has(dim)) bound.set(dim, fed.dims[i]);
    });
  }
  return bound;
}

// The batch of the first graph input fed: its one dimension that is neither
// fixed nor its time axis. Null when that is not one dimension.
function batchOfFirstInput(declaredInputs, feeds, times) {
  const first = declaredInputs.find((d) => feeds[d.name] && d.shape);
  if (!first) return null;
  const time = (times || []).find((t) => t.input === first.name);
  const free = first.shape.map((d, i) => i).filter((i) => typeof first.shape[i] !== 'number'
    && (!time || time.axis !== i) && i < feeds[first.name].dims.length);
  return free.length === 1 ? feeds[first.name].dims[free[0]] : null;
}

// The axis of a pair's state that is the batch: the pair's batch_axis when
// the metadata records it, else its one dimension that is not fixed (the
// state is [directions, batch, hidden] or [batch, directions, hidden], and
// only the batch can vary).
function stateBatchAxis(pair) {
  if (Number.isInteger(pair.batch_axis)) return pair.batch_axis;
  const free = (pair.shape || []).map((d, i) => i).filter((i) => typeof pair.shape[i] !== 'number');
  return free.length === 1 ? free[0] : undefined;
}

// The concrete shape of a pair's state for a call fed with `feeds`. Its
// symbolic dimensions take the value the same name has in the fed inputs'
// declared shapes (whatever the name: batch, N, ...); a dimension still
// unknown at the batch axis takes the batch of the first input. Throws when
// a dimension stays unknown.
function resolveStateShape(pair, declaredInputs, feeds, times) {
  const bound = boundDims(declaredInputs, feeds);
  const batchAxis = stateBatchAxis(pair);
  return pair.shape.map((dim, i) => {
    if (typeof dim === 'number') return dim;
    if (typeof dim === 'string' && bound.has(dim)) return bound.get(dim);
    const batch = i === batchAxis ? batchOfFirstInput(declaredInputs, feeds, times) : null;
    if (batch !== null) return batch;
    throw new Error(`dimension ${i} (${JSON.stringify(dim)}) of state ${pair.input} [${pair.shape.map((x) => JSON.stringify(x))}] `
      + 'is not the batch of the first input nor bound by any input\'s declared shape '
      + `(bound: ${[...bound].map(([k, v]) => `${k}=${v}`).join(', ') || 'none'})`);
  });
}

module.exports = { STATE_KEY, TIME_KEY, statePairs, timeAxes, boundDims, resolveStateShape };
