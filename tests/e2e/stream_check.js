#!/usr/bin/env node
'use strict';
// The generic streaming check: every state pair the report names can be fed
// back. Run on every model, with no knowledge of how it was built beyond its
// manifest entry (the test inputs).
//
//   node stream_check.js --original O.onnx --rewritten R.onnx --report report.json \
//       --manifest manifest.json --entry FILE_NAME [--seed N] [--chunks N]
//
// R is O rewritten with --state-inputs=required --json (report.json): no
// state input has a default, so onnxruntime-node honours every feed.
//
// Checks, one line each:
//   contract   each pair's input is a graph input of R and its output a graph
//              output; the input and output are declared with the pair's
//              element type, and with shapes that agree with the pair's.
//   metadata   R's rnnstate.state metadata lists exactly the report's pairs
//              (without "added"), when there are any.
//   calls      three calls of R (--chunks), each pair's input fed with the
//              previous call's output (the first call: the manifest's value
//              for an input it lists, else zeros of the pair's shape). Every
//              fed tensor has the pair's element type and shape, and the
//              shape the previous call received.
//   time       for a streamable entry (an input has a time axis that may be
//              cut): the chunked outputs, concatenated along their time axis
//              (manifest), and the last chunk's other outputs equal R's
//              whole-sequence run.
//   frames     otherwise (one frame per call, e.g. Silero VAD, GTCRN): each
//              call gets its own frame (the manifest's random inputs reseeded)
//              and every pair's state changes at every call. When the model
//              already carried state (a pair with added: false) and the tool
//              added no output to an input O already had, R must compute
//              exactly what O computes fed back through its own pairs: pairs
//              the tool adds on top of the author's would change it.
//   pairs      when the manifest entry lists "state_inputs" (the pairs a
//              careful human names), the report's pair inputs are exactly
//              those, each once; with "context_inputs", the inputs of the
//              pairs of kind context are exactly those.
// The manifest entry's "carried" ({ input: output }) names caches that are
// not recurrent state (GTCRN's convolution cache): both streams feed them
// back. An entry with "ort": false (ONNX Runtime cannot run the model) gets
// the contract check only, then exits 77 (skipped), unless R was converted
// (--to-layout0, given as --converted).
// Exit status: 0 pass, 1 a check failed, 2 bad command line or input files,
// 77 skipped.

const lib = require('./lib');

const { Checks, readJson, namedList, findEntry, makeInputs } = lib;

const USAGE = 'usage: node stream_check.js --original O.onnx --rewritten R.onnx --report report.json '
  + '--manifest manifest.json --entry FILE_NAME [--seed N] [--chunks N] [--converted]';

// TensorProto.DataType -> the report's dtype names.
const DTYPE_NAMES = {
  1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 8: 'string',
  9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64', 14: 'complex64',
  15: 'complex128', 16: 'bfloat16',
};

const fmtShape = (shape) => `[${(shape || []).map((d) => (d === null ? '?' : d)).join(',')}]`;

// Two declared shapes (Numbers, names, null) agree when they have the same
// rank and no dimension is known on both sides with different values.
function shapesAgree(a, b) {
  if (!a || !b) return true;
  if (a.length !== b.length) return false;
  return a.every((d, i) => d === null || b[i] === null || typeof d !== typeof b[i] || d === b[i]);
}

// Static contract of every pair against R's declared interface.
function checkContract(pairs, infoR, checks) {
  const inputs = new Map(infoR.inputs.map((v) => [v.name, v]));
  const outputs = new Map(infoR.outputs.map((v) => [v.name, v]));
  for (const p of pairs) {
    const label = `contract ${p.input} -> ${p.output}`;
    const inp = inputs.get(p.input);
    const out = outputs.get(p.output);
    const problems = [];
    if (!inp) problems.push(`${p.input} is not a graph input of R`);
    if (!out) problems.push(`${p.output} is not a graph output of R`);
    for (const [what, v] of [['input', inp], ['output', out]]) {
      if (!v) continue;
      const dtype = DTYPE_NAMES[v.elemType] || 'unknown';
      if (v.elemType && dtype !== p.dtype) problems.push(`${what} ${v.name} is declared ${dtype}, the pair says ${p.dtype}`);
      if (!shapesAgree(v.shape, p.shape)) {
        problems.push(`${what} ${v.name} is declared ${fmtShape(v.shape)}, the pair says ${fmtShape(p.shape)}`);
      }
    }
    if (inp && out && !shapesAgree(inp.shape, out.shape)) {
      problems.push(`input declared ${fmtShape(inp.shape)} vs output declared ${fmtShape(out.shape)}`);
    }
    if (problems.length) checks.fail(label, problems.join('; '));
    else checks.pass(label, `${p.dtype} ${fmtShape(p.shape)}`);
  }
}

// Every model with pairs carries them in its metadata, as the report has them.
function checkMetadata(pairs, infoR, checks) {
  const text = infoR.metadata['rnnstate.state'];
  if (!pairs.length) {
    if (text === undefined) checks.pass('metadata: none for a model without pairs');
    else checks.fail('metadata: none for a model without pairs', `rnnstate.state is ${text}`);
    return;
  }
  const want = JSON.stringify(pairs.map(({ added, ...p }) => p));
  let got;
  try {
    got = JSON.stringify(JSON.parse(text ?? 'null'));
  } catch (e) {
    got = `unparsable: ${e.message}`;
  }
  if (got === want) checks.pass('metadata: rnnstate.state lists the report\'s pairs', `${pairs.length} pair(s)`);
  else checks.fail('metadata: rnnstate.state lists the report\'s pairs', `metadata ${got}, report ${want}`);
}

// The pair's shape for these feeds: symbolic names bound through R's
// declared inputs, null where nothing binds them.
function pairDims(pair, declared, feeds) {
  const bound = lib.boundDims(declared, feeds);
  return pair.shape.map((d) => (typeof d === 'number' ? d : bound.get(d) ?? null));
}

// The value a pair's input starts from: the manifest's, else zeros.
function initialState(pair, declared, feeds) {
  if (pair.input in feeds) return feeds[pair.input];
  const dims = pairDims(pair, declared, feeds);
  if (dims.some((d) => d === null)) {
    throw new Error(`the shape ${fmtShape(pair.shape)} of ${pair.input} is not bound by the test inputs`);
  }
  return lib.zerosTensor(pair.dtype, dims);
}

// A state output about to be fed: the pair's dtype and shape, and the shape
// its input had at the previous call. Returns a problem or ''.
function feedProblem(pair, tensor, previous, dims) {
  if (!tensor) return `${pair.output} was not produced`;
  if (tensor.dtype !== pair.dtype) return `${pair.output} is ${tensor.dtype}, the pair says ${pair.dtype}`;
  const t = tensor.dims;
  if (t.length !== dims.length || dims.some((d, i) => d !== null && d !== t[i])) {
    return `${pair.output} has shape [${t}], the pair says ${fmtShape(dims)}`;
  }
  if (t.length !== previous.dims.length || t.some((d, i) => d !== previous.dims[i])) {
    return `${pair.output} has shape [${t}], its input ${pair.input} had [${previous.dims}]`;
  }
  return '';
}

// Feeds of call k from call k-1: each pair output (checked) and each carried
// cache. Returns { feeds, problems }.
function feedBack(pairs, carried, prevFeeds, prevOut, declared) {
  const feeds = {};
  const problems = [];
  for (const p of pairs) {
    const problem = feedProblem(p, prevOut[p.output], prevFeeds[p.input], pairDims(p, declared, prevFeeds));
    if (problem) problems.push(problem);
    else feeds[p.input] = prevOut[p.output];
  }
  for (const [input, output] of carried) feeds[input] = prevOut[output];
  return { feeds, problems };
}

// Run `calls` calls of a session, each on inputsOf(k) plus the state fed back
// through `pairs` (and `carried`). Returns { feeds: [...], outs: [...] } or
// throws with the call number.
async function stream(ctx, session, pairs, inputsOf, calls) {
  const { ort, declared, carried, checks, label } = ctx;
  const feedsList = [];
  const outs = [];
  for (let k = 0; k < calls; k++) {
    const feeds = inputsOf(k);
    if (k === 0) {
      for (const p of pairs) feeds[p.input] = initialState(p, declared, feeds);
    } else {
      const back = feedBack(pairs, carried, feedsList[k - 1], outs[k - 1], declared);
      if (back.problems.length) throw new Error(`call ${k + 1}: ${back.problems.join('; ')}`);
      Object.assign(feeds, back.feeds);
    }
    try {
      outs.push(await lib.runSession(ort, session, feeds));
    } catch (e) {
      throw new Error(`call ${k + 1} of ${label} failed: ${e.message}`);
    }
    feedsList.push(feeds);
  }
  if (checks) {
    // the last call's outputs must be feedable too
    const back = feedBack(pairs, carried, feedsList[calls - 1], outs[calls - 1], declared);
    if (back.problems.length) throw new Error(`after call ${calls}: ${back.problems.join('; ')}`);
  }
  return { feeds: feedsList, outs };
}

// Streamable entries: chunks of the time-indexed inputs vs the whole sequence.
async function checkTime(ctx, sessR, pairs, full, calls) {
  const { inputSpecs, outputTimeAxis, tol, checks } = ctx;
  const timed = inputSpecs.filter((s) => s.time_axis !== null && s.time_axis !== undefined);
  const ranges = {};
  for (const s of timed) ranges[s.name] = lib.splitRanges(s.shape[s.time_axis], calls);
  console.log(`time: ${calls} chunks: ${timed.map((s) => `${s.name}[axis ${s.time_axis}] `
    + `${ranges[s.name].map(([a, b]) => b - a).join('+')}`).join(', ')}`);
  const whole = await stream({ ...ctx, label: 'R (whole sequence)' }, sessR, pairs, () => ({ ...full }), 1);
  const chunkInputs = (k) => {
    const feeds = {};
    for (const s of inputSpecs) {
      feeds[s.name] = ranges[s.name] ? lib.sliceAxis(full[s.name], s.time_axis, ...ranges[s.name][k]) : full[s.name];
    }
    return feeds;
  };
  const chunks = await stream({ ...ctx, label: 'R (chunks)' }, sessR, pairs, chunkInputs, calls);
  checks.pass(`calls: ${calls} chunks with every pair fed back`, `${pairs.length} pair(s)`);
  const ref = whole.outs[0];
  const last = chunks.outs[calls - 1];
  for (const name of Object.keys(ref)) {
    const axis = outputTimeAxis.get(name) ?? null;
    if (axis === null) {
      checks.compare(`time: output ${name}: last chunk vs whole run`, last[name], ref[name], tol);
      continue;
    }
    let joined;
    try {
      joined = lib.concatAxis(chunks.outs.map((o) => o[name]), axis);
    } catch (e) {
      checks.fail(`time: output ${name}: chunks concatenated vs whole run`, e.message);
      continue;
    }
    checks.compare(`time: output ${name}: chunks concatenated on axis ${axis} vs whole run`, joined, ref[name], tol);
  }
}

// The largest |a - b| between two tensors of one shape.
function maxDifference(a, b) {
  let max = 0;
  for (let i = 0; i < a.data.length; i++) max = Math.max(max, Math.abs(lib.valueAt(a, i) - lib.valueAt(b, i)));
  return max;
}

// Frame-by-frame entries: the state moves, and an already-stateful model
// streams as its author made it.
async function checkFrames(ctx, sessR, pairs, seed, calls) {
  const { ort, inputSpecs, tol, checks, infoO, args } = ctx;
  const frame = (k) => makeInputs(inputSpecs, (seed + 7919 * k) >>> 0);
  const r = await stream({ ...ctx, label: 'R' }, sessR, pairs, frame, calls);
  checks.pass(`calls: ${calls} frames with every pair fed back`, `${pairs.length} pair(s)`);
  for (const p of pairs) {
    const still = r.outs.findIndex((o, k) => maxDifference(o[p.output], r.feeds[k][p.input]) === 0);
    if (still >= 0) checks.fail(`frames: state ${p.input} changes`, `call ${still + 1} returned the state it was fed`);
    else checks.pass(`frames: state ${p.input} changes`, `at each of the ${calls} calls`);
  }
  const authored = pairs.filter((p) => !p.added);
  const originalInputs = new Set(infoO.inputs.map((v) => v.name));
  const completed = pairs.filter((p) => p.added && originalInputs.has(p.input));
  if (!authored.length) return;
  if (completed.length) {
    console.log(`frames: O vs R not compared: the tool gave ${completed.map((p) => p.input).join(', ')} `
      + 'an output, so O has no stream to compare with');
    return;
  }
  const defaulted = authored.filter((p) => infoO.initializers.has(p.input));
  if (defaulted.length) {
    // onnxruntime-node ignores a feed for an input that has an initializer
    console.log(`frames: O vs R not compared: O's ${defaulted.map((p) => p.input).join(', ')} `
      + 'have defaults, which onnxruntime-node would not let the fed state override');
    return;
  }
  const sessO = await lib.createSession(ort, args.original);
  const o = await stream({ ...ctx, label: 'O', checks: null, declared: infoO.inputs }, sessO, authored, frame, calls);
  for (const name of sessO.outputNames) {
    for (let k = 0; k < calls; k++) {
      checks.compare(`frames: call ${k + 1} output ${name}: R (all ${pairs.length} pairs fed back) `
        + `vs O (its ${authored.length} own)`, r.outs[k][name], o.outs[k][name], tol);
    }
  }
}

async function main(argv) {
  const args = lib.parseCheckArgs(argv, {
    original: 'string', rewritten: 'string', report: 'string', manifest: 'string', entry: 'string',
    seed: 'string', chunks: 'string', converted: 'boolean',
  }, ['original', 'rewritten', 'report', 'manifest', 'entry']);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const manifest = readJson(args.manifest, 'manifest');
  const entry = findEntry(manifest, args.entry);
  const rmodel = lib.readReportModel(args.report);
  const pairs = rmodel.state || [];
  const seed = Number(args.seed ?? 1234) >>> 0;
  const calls = Number(args.chunks ?? entry.chunks ?? manifest.chunks ?? 3);
  const tol = { atol: Number(entry.atol ?? 1e-5), rtol: 0 };
  const checks = new Checks();
  console.log(`stream_check: ${args.entry}: O=${args.original} R=${args.rewritten}`);
  console.log(`state pairs (from report): ${pairs.map((p) => `${p.input} -> ${p.output}${p.added ? '' : ' (authored)'}`)
    .join(', ') || 'none'}`);

  if (entry.state_inputs) {
    const want = [...entry.state_inputs].sort();
    const got = pairs.map((p) => p.input).sort();
    if (JSON.stringify(want) === JSON.stringify(got)) checks.pass('pairs: the expected state inputs', want.join(', '));
    else checks.fail('pairs: the expected state inputs', `expected [${want.join(', ')}], reported [${got.join(', ')}]`);
  }
  if (entry.context_inputs) {
    const want = [...entry.context_inputs].sort();
    const got = pairs.filter((p) => p.kind === 'context').map((p) => p.input).sort();
    if (JSON.stringify(want) === JSON.stringify(got)) checks.pass('pairs: the expected context pairs', want.join(', '));
    else checks.fail('pairs: the expected context pairs', `expected [${want.join(', ')}], reported [${got.join(', ')}]`);
  }
  const infoR = lib.readModelInfo(args.rewritten);
  const infoO = lib.readModelInfo(args.original);
  checkContract(pairs, infoR, checks);
  checkMetadata(pairs, infoR, checks);
  if (entry.ort === false && !args.converted) {
    console.log(`stream_check: ${checks.passed} passed, ${checks.failed} failed; `
      + 'calls skipped: ONNX Runtime cannot run this model (manifest: "ort": false)');
    return checks.failed ? 1 : 77;
  }
  if (!pairs.length) console.log('no state pairs: the calls run the model three times, nothing to feed back');

  const ort = lib.requireOrt();
  const inputSpecs = namedList(entry.inputs);
  const ctx = {
    ort, args, inputSpecs, tol, checks, infoO,
    declared: infoR.inputs,
    outputTimeAxis: new Map(namedList(entry.outputs).map((o) => [o.name, o.time_axis ?? null])),
    carried: Object.entries(entry.carried || {}),
  };
  const sessR = await lib.createSession(ort, args.rewritten);
  const timed = entry.streamable === true && inputSpecs.some((s) => s.time_axis !== null && s.time_axis !== undefined);
  try {
    if (timed) await checkTime(ctx, sessR, pairs, makeInputs(inputSpecs, seed), calls);
    else await checkFrames(ctx, sessR, pairs, seed, calls);
  } catch (e) {
    checks.fail(`calls: ${calls} ${timed ? 'chunks' : 'frames'} with every pair fed back`, e.message);
  }
  console.log(`stream_check: ${checks.passed} passed, ${checks.failed} failed`);
  return checks.failed ? 1 : 0;
}

lib.runScript('stream_check', USAGE, main);
