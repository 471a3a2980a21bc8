'use strict';
// The state pairs and time axes a rewritten model records in its
// metadata_props, and the shape of a pair's zeros for a given first call.
//   rnnstate.state: [{ "input", "output", "shape", "dtype", "optional",
//                      "batch_axis" (when the rewriter records it) }]
//   rnnstate.state: [{ "input", "output", "shape", "dtype", "optional",
//                      "batch_axis", "kind": "recurrent" | "context" }]
//                   (a context pair carries the last frames a causal
//                   convolution or pool needs; it is fed back like the others)
//   rnnstate.time:  [{ "input", "axis" }]: the graph inputs whose axis is the
//                   time axis
//   rnnstate.stream: { "verdict": "exact" | "none" | "unknown",
//                      "chunk_multiple": K, "blockers": [{ "graph", "op",
//                      "name", "reason" }] }: whether chunks whose length is
//                   a multiple of K, with every pair fed back, give the
//                   whole-sequence outputs (absent: not analysed)

const { TYPED_ARRAYS } = require('./tensor');
const { printable } = require('./text');

const STATE_KEY = 'rnnstate.state';
const TIME_KEY = 'rnnstate.time';
const STREAM_KEY = 'rnnstate.stream';
const VERDICTS = new Set(['exact', 'none', 'unknown']);

function parseEntry(model, key, label) {
  const text = model.metadata[key];
  if (text === undefined) return null;
  try {
    const value = JSON.parse(text);
    if (!Array.isArray(value)) throw new Error('not a list');
    return value;
  } catch (e) {
    throw new Error(`${label}: metadata ${key} is not a JSON list (${printable(e.message)})`);
  }
}

// What is wrong with a pair of the metadata (a file may be hostile), or ''.
function pairFault(p) {
  if (!p || typeof p !== 'object' || typeof p.input !== 'string' || typeof p.output !== 'string') {
    return 'a pair without input or output';
  }
  const pair = printable(`${p.input} -> ${p.output}`, 120);
  const dimOk = (d) => d === null || typeof d === 'string' || Number.isSafeInteger(d);
  if (p.shape !== undefined && p.shape !== null && !(Array.isArray(p.shape) && p.shape.every(dimOk))) {
    return `pair ${pair} has a shape that is not a list of dimensions`;
  }
  if (p.dtype !== undefined && p.dtype !== null && !(typeof p.dtype === 'string' && TYPED_ARRAYS[p.dtype])) {
    return `pair ${pair} has dtype ${printable(JSON.stringify(p.dtype), 60)}, not one ONNX Runtime for Node takes`;
  }
  if (p.batch_axis !== undefined && p.batch_axis !== null && !(Number.isInteger(p.batch_axis) && p.batch_axis >= 0)) {
    return `pair ${pair} has batch_axis ${printable(JSON.stringify(p.batch_axis), 60)}`;
  }
  return '';
}

// The model's state pairs, or null when it records none.
function statePairs(model, label) {
  const pairs = parseEntry(model, STATE_KEY, label);
  const fault = (pairs || []).map(pairFault).find((f) => f);
  if (fault) throw new Error(`${label}: metadata ${STATE_KEY} has ${fault}`);
  return pairs;
}

// The model's time axes [{ input, axis }], or null when it records none.
function timeAxes(model, label) {
  const axes = parseEntry(model, TIME_KEY, label);
  if (axes && axes.some((t) => !t || typeof t.input !== 'string' || !Number.isInteger(t.axis) || t.axis < 0)) {
    throw new Error(`${label}: metadata ${TIME_KEY} has an entry without input or axis`);
  }
  return axes;
}

// The model's streaming verdict { verdict, chunk_multiple, blockers }, or
// null when it records none (a model rewritten before the verdict existed,
// or not analysed: it then behaves as it did, chunks of any length).
function streamInfo(model, label) {
  const text = model.metadata[STREAM_KEY];
  if (text === undefined) return null;
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: metadata ${STREAM_KEY} is not JSON (${printable(e.message)})`);
  }
  if (value === null) return null;
  const bad = (why) => new Error(`${label}: metadata ${STREAM_KEY} ${why}`);
  if (typeof value !== 'object' || Array.isArray(value)) throw bad('is not a JSON object');
  if (!VERDICTS.has(value.verdict)) throw bad(`has verdict ${printable(JSON.stringify(value.verdict), 60)}, not exact, none or unknown`);
  const k = value.chunk_multiple === undefined ? 1 : value.chunk_multiple;
  if (!Number.isSafeInteger(k) || k < 1) throw bad(`has chunk_multiple ${printable(JSON.stringify(value.chunk_multiple), 60)}, not a whole number >= 1`);
  const blockers = value.blockers === undefined ? [] : value.blockers;
  if (!Array.isArray(blockers) || blockers.some((b) => !b || typeof b !== 'object')) throw bad('has blockers that are not a list of objects');
  return { verdict: value.verdict, chunk_multiple: k, blockers };
}

// The blockers in the words of the rewriter's text report:
// "main Conv '/conv/Conv': looks 1 frame ahead: pads 1,1 along time; ...".
function describeBlockers(stream) {
  const text = (v) => printable(typeof v === 'string' ? v : JSON.stringify(v));
  return stream.blockers.map((b) => `${text(b.graph ?? '?')} ${text(b.op ?? '?')} '${text(b.name ?? '')}': `
    + `${text(b.reason ?? 'no reason given')}`).join('; ') || 'no blocker named';
}

// feeds[name] when feeds has its own property `name` (an input called
// "constructor" or "__proto__" is not Object.prototype's).
function fed(feeds, name) {
  return Object.prototype.hasOwnProperty.call(feeds, name) ? feeds[name] : undefined;
}

// A declared dimension that is fixed: dim_value 0 or more (-1 and other
// negative values, which some exporters write, are as good as unknown).
const isFixed = (dim) => typeof dim === 'number' && dim >= 0;

// Symbolic dimension names bound by the fed inputs: a graph input declared
// [batch, time, 8] and fed [2, 12, 8] binds batch = 2 and time = 12.
function boundDims(declaredInputs, feeds) {
  const bound = new Map();
  for (const d of declaredInputs) {
    const t = fed(feeds, d.name);
    if (!t || !d.shape) continue;
    d.shape.forEach((dim, i) => {
      if (typeof dim === 'string' && dim && i < t.dims.length && !bound.has(dim)) bound.set(dim, Number(t.dims[i]));
    });
  }
  return bound;
}

// The batch the feeds tell: that of the fed inputs with a time axis (all of
// them when none has one, state inputs left out), taken from the first of
// them whose declared shape has a dimension that is neither fixed nor a time
// axis: when it has exactly one, that is the batch. Returns { batch } or
// { why } saying why the feeds do not tell it.
function batchFromFeeds(declaredInputs, feeds, times, stateInputs) {
  const timed = new Set((times || []).map((t) => t.input));
  const fedInputs = declaredInputs.filter((d) => fed(feeds, d.name) && d.shape && !stateInputs.has(d.name));
  const candidates = fedInputs.some((d) => timed.has(d.name)) ? fedInputs.filter((d) => timed.has(d.name)) : fedInputs;
  for (const d of candidates) {
    const t = fed(feeds, d.name);
    const timeAxesOfInput = new Set((times || []).filter((x) => x.input === d.name).map((x) => x.axis));
    const free = d.shape.map((dim, i) => i).filter((i) => !isFixed(d.shape[i]) && !timeAxesOfInput.has(i) && i < t.dims.length);
    if (free.length === 1) return { batch: Number(t.dims[free[0]]) };
    if (free.length > 1) {
      return {
        why: `input ${d.name} [${d.shape.map((x) => JSON.stringify(x))}] has ${free.length} dimensions that are neither `
          + `fixed nor ${timeAxesOfInput.size ? 'its time axis' : 'a known time axis'}`,
      };
    }
  }
  return { why: `no fed input${timed.size ? ' with a time axis' : ''} has a dimension that is not fixed` };
}

// The axis of a pair's state that is the batch: the pair's batch_axis when
// the metadata records it, else its one dimension that is not fixed (the
// state is [directions, batch, hidden] or [batch, directions, hidden], and
// only the batch can vary).
function stateBatchAxis(pair) {
  if (Number.isInteger(pair.batch_axis)) return pair.batch_axis;
  const free = (pair.shape || []).map((d, i) => i).filter((i) => !isFixed(pair.shape[i]));
  return free.length === 1 ? free[0] : undefined;
}

// The concrete shape of a pair's state for a call fed with `feeds` (a plain
// object, input name -> tensor). Its symbolic dimensions take the value the
// same name has in the fed inputs' declared shapes (whatever the name: batch,
// N, ...); a dimension still unknown (no name, or a name no input has) at the
// batch axis takes the batch the feeds tell (batchFromFeeds). Throws, naming
// `label` (the model), the pair and what fixes it, when a dimension stays
// unknown. `pairs` (all of the model's) keeps state inputs out of the batch.
function resolveStateShape(pair, declaredInputs, feeds, times, label = 'the model', pairs = [pair]) {
  const bound = boundDims(declaredInputs, feeds);
  const batchAxis = stateBatchAxis(pair);
  const stateInputs = new Set(pairs.map((p) => p.input));
  const shown = `[${pair.shape.map((x) => JSON.stringify(x))}]`;
  const what = `${label}: state pair ${pair.input} -> ${pair.output || '?'}: dimension`;
  return pair.shape.map((dim, i) => {
    if (isFixed(dim)) return dim;
    if (typeof dim === 'string' && bound.has(dim)) return bound.get(dim);
    // "batch*8": a multiple of a named dimension (the rewriter writes it for
    // a dual-path model's inter-frame RNN, whose batch is batch x frequency)
    const multiple = typeof dim === 'string' ? /^(.+)\*([1-9][0-9]{0,8})$/.exec(dim) : null;
    if (multiple && bound.has(multiple[1])) return bound.get(multiple[1]) * Number(multiple[2]);
    if (i !== batchAxis) {
      throw new Error(`${what} ${i} (${JSON.stringify(dim)}) of its shape ${shown} is not its batch and no fed input `
        + `names it: pass ${pair.input} in the first call's feeds, or give the pair with its shape `
        + '(StatefulSession option pairs: [{ input, output, shape }])');
    }
    const { batch, why } = batchFromFeeds(declaredInputs, feeds, times, stateInputs);
    if (batch !== undefined) return multiple ? batch * Number(multiple[2]) : batch;
    throw new Error(`${what} ${i} (${JSON.stringify(dim)}) of its shape ${shown} is its batch, which no fed input `
      + `names, and the feeds do not tell it (${why}): pass ${pair.input} in the first call's feeds, or give the time `
      + 'axes (StatefulSession option time, rnnstate-verify --time INPUT:AXIS) so that the batch is the time input\'s '
      + 'other dimension');
  });
}

module.exports = {
  STATE_KEY, TIME_KEY, STREAM_KEY, statePairs, timeAxes, streamInfo, describeBlockers, boundDims, resolveStateShape, fed,
};
