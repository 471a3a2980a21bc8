'use strict';
// The checks rnnstate-verify runs on an original model and its rewrite:
//   pairs     every state pair is a graph input and output of REWRITTEN, of
//             one element type and the same fixed dimensions;
//   no-state  with no state fed (defaults, or zeros where the state inputs
//             are required), REWRITTEN gives ORIGINAL's outputs;
//   chunked   the sequence cut into chunks of unequal sizes, each a multiple
//             of the model's chunk_multiple (rnnstate.stream), run through
//             StatefulSession (every pair fed back), gives the outputs of one
//             run over the whole sequence: time-indexed outputs joined along
//             their time axis, the others (final states, ...) from the last
//             chunk. On a model whose verdict is `none` it fails with the
//             rewriter's blockers as its reason, without running.
// verify() returns a plain result object; bin/rnnstate-verify.js prints it.

const { dependsOn, readModelFile } = require('./onnx_model');
const {
  statePairs, timeAxes, streamInfo, describeBlockers, resolveStateShape, fed,
} = require('./state');
const tensor = require('./tensor');
const { readNpy } = require('./npy');
const { loadOrt, asOrtTensor, externalDataHint } = require('./ort');
const { StatefulSession } = require('./session');

// A problem with what the caller asked (exit status 2).
class UsageError extends Error {}

// maxElements: the most elements of one tensor verify builds or reads (an
// input, a state's zeros): 2^24, 64 MiB of float32. A hostile model that
// declares [1, 4e8, 8] is refused before anything is allocated; --max-elements
// raises the cap for a real model that needs more.
const DEFAULTS = { chunks: 3, seed: 1234, atol: 1e-5, rtol: 1e-4, timeLength: 10, otherDim: 2, maxElements: 2 ** 24 };
const NO_PAIRS = 'REWRITTEN records no state pairs (no rnnstate.state metadata, which rnnstate-rewrite writes '
  + 'into every model it changes); give them with --pair INPUT=OUTPUT';
// One thread: verification is small, and may run beside other work.
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3 };

// Chunk sizes adding up to `length`, each a multiple of `multiple` (length
// must be one), not all equal when length allows it (so that an output's time
// axis shows in its shape, and equal-size chunks cannot hide an off-by-one):
// as even as possible in units of `multiple`, then one unit moved from the
// last chunk to the first (12 in 3 -> 5, 4, 3; with multiple 2: 6, 4, 2).
function chunkSizes(length, parts, multiple = 1) {
  const units = Math.floor(length / multiple);
  const sizes = Array.from({ length: parts }, (_, i) => Math.floor(units / parts) + (i < units % parts ? 1 : 0));
  if (parts > 1 && sizes.every((s) => s === sizes[0]) && sizes[parts - 1] > 1) {
    sizes[0]++;
    sizes[parts - 1]--;
  }
  return sizes.map((s) => s * multiple);
}

// The length of a random input's time axis: DEFAULTS.timeLength rounded up to
// a multiple of the model's chunk_multiple, and long enough for `parts`
// chunks of unequal sizes that are each a multiple of it.
function defaultTimeLength(multiple, parts) {
  const least = Math.max(DEFAULTS.timeLength, (parts + 1) * multiple);
  return Math.ceil(least / multiple) * multiple;
}

// Largest absolute and relative difference of two tensors, and whether every
// element passes |a - e| <= atol + rtol * |e| (numpy.allclose; NaN matches
// only NaN). The relative difference is taken where e is not 0.
function compare(actual, expected, atol, rtol) {
  const a = tensor.asPlain(actual);
  const e = tensor.asPlain(expected);
  if (a.dtype !== e.dtype || a.dims.length !== e.dims.length || a.dims.some((d, i) => d !== e.dims[i])) {
    return { ok: false, maxAbs: null, maxRel: null, reason: `${a.dtype} [${a.dims}] instead of ${e.dtype} [${e.dims}]` };
  }
  let maxAbs = 0;
  let maxRel = 0;
  let ok = true;
  for (let i = 0; i < a.data.length; i++) {
    const x = tensor.valueAt(a, i);
    const y = tensor.valueAt(e, i);
    let diff;
    if (Number.isNaN(x) || Number.isNaN(y)) diff = Number.isNaN(x) && Number.isNaN(y) ? 0 : Infinity;
    else diff = x === y ? 0 : Math.abs(x - y);
    maxAbs = Math.max(maxAbs, diff);
    if (y !== 0 && Number.isFinite(y)) maxRel = Math.max(maxRel, diff / Math.abs(y));
    if (diff === Infinity || diff > atol + rtol * Math.abs(y)) ok = false;
  }
  return { ok, maxAbs, maxRel, reason: ok ? '' : `beyond atol ${atol} + rtol ${rtol} * |expected|` };
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

// The value of a dimension of a random input: --dim for a named one, else
// the default length on a time axis and DEFAULTS.otherDim elsewhere.
function dimValue(dim, onTimeAxis, dims, timeLength) {
  if (typeof dim === 'number' && dim > 0) return dim;
  if (typeof dim === 'string' && dims.has(dim)) return dims.get(dim);
  return onTimeAxis ? timeLength : DEFAULTS.otherDim;
}

// Refuses a tensor shape of more than `max` elements, before it is
// allocated; `what` names it.
function checkSize(what, dims, max) {
  const n = tensor.numel(dims);
  if (n > max) {
    throw new Error(`${what} [${dims}] has ${n} elements, more than the ${max} allowed `
      + '(--max-elements N raises the cap)');
  }
}

// One line: ONNX Runtime's messages may span several.
function oneLine(text) {
  return String(text).replace(/\s*\n\s*/g, ' ').trim();
}

// The test inputs of ORIGINAL (at `label`): its graph inputs without an
// initializer, from .npy files or random. Returns { feeds, described };
// feeds is an object made by Object.fromEntries (an input named "__proto__"
// is a key like any other; read it with fed()).
function makeInputs(original, opts, times, label) {
  const graphInputs = original.inputs.filter((i) => !original.initializers.has(i.name));
  for (const name of opts.inputs.keys()) {
    if (!graphInputs.some((i) => i.name === name)) {
      throw new UsageError(`--input ${name}: ORIGINAL has no such input (inputs: ${graphInputs.map((i) => i.name).join(', ')})`);
    }
  }
  const named = new Set(graphInputs.flatMap((i) => (i.shape || []).filter((d) => typeof d === 'string')));
  for (const name of opts.dims.keys()) {
    if (!named.has(name)) {
      throw new UsageError(`--dim ${name}: no input of ORIGINAL has a dimension of that name (names: ${[...named].join(', ') || 'none'})`);
    }
  }
  const feeds = [];
  const described = [];
  for (const input of graphInputs) {
    let t;
    let source;
    if (opts.inputs.has(input.name)) {
      source = opts.inputs.get(input.name);
      t = readNpy(source, { maxElements: opts.maxElements });
      if (input.dtype && t.dtype !== input.dtype) {
        throw new Error(`${source}: ${t.dtype} data for input ${input.name}, which is ${input.dtype}`);
      }
      // ONNX Runtime aborts the process on some empty inputs (a time axis
      // of length 0), and an empty input proves nothing.
      if (tensor.numel(t.dims) === 0) {
        throw new Error(`${source}: shape (${t.dims}) for input ${input.name} has no elements`);
      }
    } else {
      if (!input.shape || !input.dtype) {
        throw new UsageError(`${label}: input ${input.name} has no declared ${input.dtype ? 'shape' : 'tensor type'}: `
          + `give it with --input ${input.name}=FILE.npy`);
      }
      const time = (times || []).find((x) => x.input === input.name);
      const dims = input.shape.map((d, i) => dimValue(d, time && time.axis === i, opts.dims, opts.timeLength));
      checkSize(`${label}: input ${input.name}`, dims, opts.maxElements);
      t = tensor.randomTensor(input.dtype, dims, opts.seed, input.name);
      source = `random, seed ${opts.seed}`;
    }
    feeds.push([input.name, t]);
    described.push({ name: input.name, dtype: t.dtype, dims: t.dims, source });
  }
  return { feeds: Object.fromEntries(feeds), described };
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

function check(name, status, reason = '', extra = {}) {
  return { name, status, reason, outputs: [], ...extra };
}

function checkPairs(original, rewritten, pairs) {
  if (!pairs) return check('pairs', 'skipped', NO_PAIRS);
  // The rewriter adds inputs for state only: one in no pair is never fed back.
  const paired = new Set(pairs.map((p) => p.input));
  const problems = rewritten.inputs.filter((i) => !paired.has(i.name) && !original.inputs.some((o) => o.name === i.name))
    .map((i) => `input ${i.name} is in no state pair: its state is never fed back`);
  for (const p of pairs) {
    const input = rewritten.inputs.find((i) => i.name === p.input);
    const output = rewritten.outputs.find((o) => o.name === p.output);
    if (!input || !output) {
      problems.push(`${p.input} -> ${p.output}: ${!input ? 'no graph input ' + p.input : 'no graph output ' + p.output}`);
      continue;
    }
    const fixedDiffer = input.shape && output.shape && (input.shape.length !== output.shape.length
      || input.shape.some((d, i) => typeof d === 'number' && typeof output.shape[i] === 'number' && d !== output.shape[i]));
    if (input.elemType !== output.elemType || fixedDiffer) {
      const show = (v) => `${v.dtype} [${(v.shape || ['?']).join(',')}]`;
      problems.push(`${p.input} -> ${p.output}: the input is ${show(input)}, the output ${show(output)}`);
    }
  }
  if (problems.length) return check('pairs', 'fail', `the state pairs cannot carry the state: ${problems.join('; ')}`);
  // A context pair (a causal convolution's cache) says so; recurrent ones are
  // the common case.
  const described = pairs.map((p) => `${p.input} -> ${p.output}${p.kind === 'context' ? ' (context)' : ''}`);
  return check('pairs', 'pass', `${pairs.length} pair(s): ${described.join(', ')}`);
}

async function runModel(path, feeds) {
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(path, SESSION_OPTIONS);
  const ortFeeds = Object.fromEntries(session.inputNames.filter((name) => fed(feeds, name))
    .map((name) => [name, asOrtTensor(fed(feeds, name))]));
  try {
    return await session.run(ortFeeds);
  } finally {
    await session.release();
  }
}

// Why ONNX Runtime may refuse a model, for its error message: batch-first
// recurrent nodes, which its CPU kernels do not run, or external data it
// cannot find (`message`: ONNX Runtime's). StatefulSession's own errors
// carry their hint already.
function refusalHint(model, message = '') {
  const batchFirst = ((model && model.recurrentNodes) || []).filter((n) => n.layout === 1);
  if (!batchFirst.length) return externalDataHint(message);
  const names = batchFirst.slice(0, 3).map((n) => `${n.op} '${n.name}'`).join(', ');
  return ` (it has batch-first (layout=1) recurrent nodes, ${names}${batchFirst.length > 3 ? ', ...' : ''}, `
    + 'which ONNX Runtime\'s CPU kernels refuse; rnnstate-rewrite --to-layout0 converts them)';
}

// ORIGINAL and REWRITTEN with no state fed: REWRITTEN's state inputs keep
// their defaults, or get zeros where they have none (--state-inputs=required).
// When ONNX Runtime cannot run ORIGINAL but runs REWRITTEN (a batch-first
// model rewritten with --to-layout0), there is nothing to compare with: the
// check is skipped, and says why.
async function checkNoState(ctx) {
  const { paths, rewritten, pairs, feeds, times, tol } = ctx;
  const result = check('no-state', 'pass', 'with no state fed, REWRITTEN gives ORIGINAL\'s outputs');
  const feedsR = { ...feeds };
  try {
    for (const p of pairs || []) {
      if (fed(feedsR, p.input) || rewritten.initializers.has(p.input) || !p.shape) continue;
      const dims = resolveStateShape(p, rewritten.inputs, feeds, times, paths.rewritten, pairs);
      checkSize(`${paths.rewritten}: the zeros of state ${p.input}`, dims, ctx.maxElements);
      Object.defineProperty(feedsR, p.input, { value: tensor.zerosTensor(p.dtype, dims), enumerable: true });
    }
  } catch (e) {
    return check('no-state', 'fail', e.message);
  }
  let outO;
  let outR;
  let originalError = null;
  try {
    outO = await runModel(paths.original, feeds);
  } catch (e) {
    originalError = `ONNX Runtime cannot run ORIGINAL (${paths.original}): ${oneLine(e.message)}${refusalHint(ctx.original, e.message)}`;
  }
  try {
    outR = await runModel(paths.rewritten, feedsR);
  } catch (e) {
    return check('no-state', 'fail', originalError
      || `ONNX Runtime cannot run REWRITTEN (${paths.rewritten}): ${oneLine(e.message)}${refusalHint(rewritten, e.message)}`);
  }
  if (originalError) {
    return check('no-state', 'skipped', `${originalError}; REWRITTEN runs, but there is nothing to compare it with, `
      + 'so this check is skipped (the chunked check still compares REWRITTEN in chunks with REWRITTEN whole)');
  }
  for (const name of Object.keys(outO)) {
    if (!fed(outR, name)) {
      result.outputs.push({ name, status: 'fail', reason: 'REWRITTEN has no such output', max_abs: null, max_rel: null });
      continue;
    }
    const c = compare(fed(outR, name), fed(outO, name), tol.atol, tol.rtol);
    result.outputs.push({ name, status: c.ok ? 'pass' : 'fail', reason: c.reason, max_abs: c.maxAbs, max_rel: c.maxRel });
  }
  if (result.outputs.some((o) => o.status === 'fail')) {
    result.status = 'fail';
    result.reason = 'with no state fed, REWRITTEN does not give ORIGINAL\'s outputs';
  }
  return result;
}

// Why the chunked check cannot run on this model, or null.
function chunkedObstacle(ctx) {
  const { rewritten, pairs, times, feeds, nChunks, stream } = ctx;
  if (!pairs) return NO_PAIRS;
  if (stream && stream.verdict === 'none') {
    return 'REWRITTEN cannot stream exactly (rnnstate.stream: verdict none): feeding the state pairs back will not '
      + `reproduce the whole-sequence outputs: ${describeBlockers(stream)}`;
  }
  // A backward node that starts from a constant at every call (an intra-frame
  // GRU across frequency bins, left reset by the rewrite) carries nothing
  // from chunk to chunk; one whose initial state comes from a state input
  // does, and its backward pass cannot see the chunks after it.
  const stateInputs = new Set(pairs.map((p) => p.input));
  const backward = rewritten.recurrentNodes.filter((n) => n.direction !== 'forward'
    && n.initialState.some((v) => dependsOn(rewritten.producers, v, stateInputs)));
  if (backward.length) {
    return `recurrent node(s) ${backward.map((n) => `'${n.name}' (${n.op}, ${n.direction})`).join(', ')} run backwards `
      + 'over the sequence: a chunk\'s backward pass cannot see the chunks after it, so chunks never give the '
      + 'whole-sequence result';
  }
  if (!times || !times.length) {
    return 'no time axis: REWRITTEN records none (rnnstate.time metadata) and --time INPUT:AXIS was not given '
      + '(--chunks 0 skips this check)';
  }
  for (const t of times) {
    const input = rewritten.inputs.find((i) => i.name === t.input);
    if (!fed(feeds, t.input)) return `time axis ${t.input}:${t.axis}: ${t.input} is not an input of ORIGINAL`;
    if (t.axis < 0 || t.axis >= fed(feeds, t.input).dims.length) {
      return `time axis ${t.input}:${t.axis}: ${t.input} has ${fed(feeds, t.input).dims.length} dimensions`;
    }
    const declared = input && input.shape ? input.shape[t.axis] : null;
    if (typeof declared === 'number') {
      return `input ${t.input} declares a fixed length ${declared} on its time axis ${t.axis}: it cannot be fed in chunks`;
    }
  }
  const lengths = times.map((t) => fed(feeds, t.input).dims[t.axis]);
  if (lengths.some((n) => n !== lengths[0])) {
    return `the time axes have different lengths (${times.map((t, i) => `${t.input}:${t.axis} ${lengths[i]}`).join(', ')})`;
  }
  const multiple = stream ? stream.chunk_multiple : 1;
  if (lengths[0] % multiple) {
    return `a sequence of ${lengths[0]} steps is not a multiple of ${multiple}, REWRITTEN's chunk_multiple `
      + '(rnnstate.stream): its chunks must be multiples of it; give a length that is (--dim, --input)';
  }
  if (lengths[0] < nChunks * multiple) {
    return `a sequence of ${lengths[0]} steps cannot be cut into ${nChunks} chunks`
      + `${multiple > 1 ? ` of a multiple of ${multiple} steps (rnnstate.stream chunk_multiple)` : ''}`;
  }
  // The zeros StatefulSession will build, within the cap (a shape it cannot
  // resolve is its own error, with its fix, when it runs).
  for (const p of pairs) {
    if (fed(feeds, p.input) || !p.shape) continue;
    let dims;
    try {
      dims = resolveStateShape(p, rewritten.inputs, feeds, times, ctx.paths.rewritten, pairs);
    } catch (e) {
      continue;
    }
    try {
      checkSize(`${ctx.paths.rewritten}: the zeros of state ${p.input}`, dims, ctx.maxElements);
    } catch (e) {
      return e.message;
    }
  }
  return null;
}

// How an output of the chunks lines up with the whole run: the axis along
// which the chunks' outputs add up to it, or -1 when every chunk's output
// has the whole run's shape (a final state, a summary), or null.
function outputAxis(parts, whole) {
  const same = (t) => t.dims.length === whole.dims.length;
  if (!parts.every(same)) return null;
  if (parts.every((t) => t.dims.every((d, i) => d === whole.dims[i]))) return -1;
  for (let axis = 0; axis < whole.dims.length; axis++) {
    const others = parts.every((t) => t.dims.every((d, i) => i === axis || d === whole.dims[i]));
    if (others && parts.reduce((n, t) => n + t.dims[axis], 0) === whole.dims[axis]) return axis;
  }
  return null;
}

async function checkChunked(ctx) {
  const { paths, feeds, times, pairs, nChunks, tol, explicitPairs, stream } = ctx;
  if (nChunks === 0) return check('chunked', 'skipped', '--chunks 0');
  const obstacle = chunkedObstacle(ctx);
  if (obstacle) return check('chunked', 'fail', obstacle);
  const multiple = stream ? stream.chunk_multiple : 1;
  const sizes = chunkSizes(fed(feeds, times[0].input).dims[times[0].axis], nChunks, multiple);
  const where = `${times.map((t) => `${t.input}:${t.axis}`).join(', ')}`
    + `${multiple > 1 ? ` (multiples of ${multiple}, the chunk_multiple of rnnstate.stream)` : ''}`;
  // An `unknown` verdict: the rewriter could not tell; one run proves
  // nothing for other inputs, and a failure may be the model's nature.
  const caveat = stream && stream.verdict === 'unknown'
    ? ` (the rewriter's verdict is unknown: ${describeBlockers(stream)})` : '';
  const result = check('chunked', 'pass', `${nChunks} chunks of ${sizes.join('+')} steps along ${where}, `
    + `every state pair fed back, give the whole-sequence outputs${caveat}`, { chunks: sizes });
  let session;
  const chunkOuts = [];
  let whole;
  try {
    session = await StatefulSession.create(paths.rewritten, { pairs: explicitPairs, sessionOptions: SESSION_OPTIONS, quiet: true });
    whole = await session.run(feeds);
    session.reset();
    let start = 0;
    for (let k = 0; k < nChunks; k++) {
      const chunkFeeds = [];
      for (const [name, t] of Object.entries(feeds)) {
        const time = times.find((x) => x.input === name);
        // After the first chunk a pair's input comes from the carried state.
        if (k > 0 && pairs.some((p) => p.input === name)) continue;
        chunkFeeds.push([name, time ? tensor.sliceAxis(t, time.axis, start, start + sizes[k]) : t]);
      }
      chunkOuts.push(await session.run(Object.fromEntries(chunkFeeds)));
      start += sizes[k];
    }
  } catch (e) {
    return check('chunked', 'fail', `running REWRITTEN in chunks failed: ${oneLine(e.message)}${refusalHint(ctx.rewritten)}`);
  } finally {
    if (session) await session.release();
  }
  for (const name of Object.keys(whole)) {
    const parts = chunkOuts.map((o) => tensor.asPlain(fed(o, name)));
    const axis = outputAxis(parts, tensor.asPlain(fed(whole, name)));
    if (axis === null) {
      result.outputs.push({ name, status: 'fail', max_abs: null, max_rel: null, joined: null,
        reason: `the chunks' shapes (${parts.map((t) => `[${t.dims}]`).join(' ')}) do not add up to `
          + `the whole run's [${fed(whole, name).dims}]` });
      continue;
    }
    const got = axis < 0 ? parts[nChunks - 1] : tensor.concatAxis(parts, axis);
    const c = compare(got, fed(whole, name), tol.atol, tol.rtol);
    result.outputs.push({ name, status: c.ok ? 'pass' : 'fail', reason: c.reason, max_abs: c.maxAbs, max_rel: c.maxRel,
      joined: axis < 0 ? null : axis });
  }
  if (result.outputs.some((o) => o.status === 'fail')) {
    result.status = 'fail';
    result.reason = `${nChunks} chunks of ${sizes.join('+')} steps along ${where}, every state pair fed back, `
      + `do not give the whole-sequence outputs${caveat}`;
  }
  return result;
}

// A Map of a Map or of an object's own entries (names such as "constructor"
// stay names).
const asMap = (x) => (x instanceof Map ? x : new Map(Object.entries(x || {})));

// opts: { chunks, time: [{ input, axis }] | null, seed, dims: Map or { NAME: n },
//         inputs: Map or { NAME: FILE.npy }, atol, rtol, pairs: [{ input, output }] | null,
//         maxElements }
async function verify(originalPath, rewrittenPath, options = {}) {
  const opts = { ...DEFAULTS, time: null, pairs: null, ...options };
  opts.dims = asMap(options.dims);
  opts.inputs = asMap(options.inputs);
  const original = readModelFile(originalPath).model;
  const rewritten = readModelFile(rewrittenPath).model;
  const recordedPairs = statePairs(rewritten, rewrittenPath);
  const pairs = opts.pairs || recordedPairs;
  const recordedTimes = timeAxes(rewritten, rewrittenPath);
  const times = opts.time || recordedTimes;
  const stream = streamInfo(rewritten, rewrittenPath);
  const timeLength = defaultTimeLength(stream ? stream.chunk_multiple : 1, opts.chunks);
  const { feeds, described } = makeInputs(original, { ...opts, timeLength }, times, originalPath);
  const ctx = {
    paths: { original: originalPath, rewritten: rewrittenPath },
    original, rewritten, feeds, times, stream, nChunks: opts.chunks, tol: { atol: opts.atol, rtol: opts.rtol },
    maxElements: opts.maxElements,
    explicitPairs: opts.pairs,
    // each pair with the declared shape and type of its input where the
    // pair does not say (pairs given with --pair)
    pairs: pairs && pairs.map((p) => {
      const declared = rewritten.inputs.find((i) => i.name === p.input) || {};
      return { ...p, shape: p.shape || declared.shape, dtype: p.dtype || declared.dtype };
    }),
  };
  const checks = [checkPairs(original, rewritten, pairs)];
  checks.push(await checkNoState(ctx));
  checks.push(await checkChunked(ctx));
  return {
    original: originalPath,
    rewritten: rewrittenPath,
    status: checks.some((c) => c.status === 'fail') ? 'fail' : 'pass',
    atol: opts.atol,
    rtol: opts.rtol,
    inputs: described,
    pairs: (pairs || []).map((p) => ({ input: p.input, output: p.output })),
    pairs_from: opts.pairs ? '--pair' : recordedPairs ? 'rnnstate.state' : null,
    time_axes: times || [],
    time_axes_from: opts.time ? '--time' : recordedTimes ? 'rnnstate.time' : null,
    stream,
    checks,
  };
}

module.exports = { verify, UsageError, chunkSizes, defaultTimeLength, compare, oneLine, DEFAULTS };
