#!/usr/bin/env node
'use strict';
// StatefulSession on one model of models/ or ../shared/models, against the
// loop a caller writes by hand (the state fed back by name, from the state
// given first):
//   node session_test.js TOOL WORKDIR MODEL.onnx MANIFEST.json
// The model is rewritten in both --state-inputs modes (--to-layout0 for a
// layout-1 model ONNX Runtime cannot run as it is). Its manifest inputs are
// cut into 3 chunks of unequal sizes along their time axis where the model
// streams (manifest "streamable"); other models (a fixed sequence length,
// one frame per call, a bidirectional node) get 3 calls of their full
// manifest shape with new random data at each. Batch 1 and 3 where the batch
// is dynamic (the time input's symbolic dimension, or BATCH_AXES below), else
// the fixed batch. For each mode and batch:
//   zeros   nothing fed for the state: the session starts from zeros, like
//           the hand loop from zeros of the pair's shape. Where the feeds do
//           not tell the batch of a pair (NEEDS_TIME below), the session must
//           refuse with the error that names the option, then work with it;
//   given   a random state fed in the first call: used as given (also in
//           the optional mode, whose defaults ONNX Runtime would prefer);
//   reset   after reset() the first call gives the zeros run's first outputs.
// Every pair the rewriter reports is carried; where the manifest names more
// ("state_inputs", "carried": GTCRN's conv_cache), those must be pairs too
// once the rewriter reports context pairs (a report with "stream").
// Exit status: 0 pass, 1 fail, 77 model absent.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const { tensor } = h;
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };
let compare;

// Models whose inputs do not say which axis is the batch (no time axis, no
// symbolic name): the axis of each input that is, for the batch-3 run.
const BATCH_AXES = {
  'silero_vad_v4.onnx': { input: 0 },
  'silero_vad_v5.onnx': { input: 0 },
};
// Models whose pairs' batch the feeds cannot tell (state [2, null, 128],
// input [null, null]): StatefulSession needs the time axis (or the state fed).
const NEEDS_TIME = {
  'silero_vad_v5.onnx': [{ input: 'input', axis: 1 }],
};

// The loop callers write by hand, on a required-mode model: `initial` (a
// Map) first, then each call's state outputs fed back by name.
async function handWrittenLoop(ort, modelPath, pairs, calls, initial) {
  const session = await ort.InferenceSession.create(modelPath, SESSION_OPTIONS);
  let state = initial;
  const outs = [];
  for (const call of calls) {
    const feeds = new Map([...Object.entries(call), ...state]);
    const out = await session.run(Object.fromEntries([...feeds].map(([n, t]) => [n, new ort.Tensor(t.dtype || t.type, t.data, t.dims)])));
    state = new Map(pairs.map((p) => [p.input, out[p.output]]));
    outs.push(out);
  }
  await session.release();
  return outs;
}

// The batch's symbolic name where the time input declares one (its symbolic
// dimension that is not its time axis).
function batchSymbolOf(entry, declared) {
  const timed = Object.entries(entry.inputs).find(([, s]) => s.time_axis !== null && s.time_axis !== undefined);
  if (!timed) return null;
  const decl = declared.find((d) => d.name === timed[0]);
  return (decl && decl.shape || []).find((d, i) => typeof d === 'string' && i !== timed[1].time_axis) || null;
}

// The calls of one run: the manifest's inputs (pair inputs left out: the
// variants give the state) with `batch` on the batch axis, cut into 3 chunks
// of unequal sizes along the time axis where the model streams, else 3 calls
// of the full shape with new random data at each.
function makeCalls(entry, declared, batch, pairInputs) {
  const symbol = batchSymbolOf(entry, declared);
  const axes = BATCH_AXES[entry.file] || {};
  const shapeFor = (name, spec) => {
    const d = declared.find((x) => x.name === name);
    return spec.shape.map((n, i) => (batch !== null && ((symbol && d && d.shape && d.shape[i] === symbol) || axes[name] === i) ? batch : n));
  };
  const inputs = Object.entries(entry.inputs).filter(([name]) => !pairInputs.has(name));
  const fill = (name, spec, seed) => {
    const dims = shapeFor(name, spec);
    if (spec.fill === 'random') return tensor.randomTensor(spec.dtype, dims, seed, name);
    const t = tensor.zerosTensor(spec.dtype, dims);
    if (typeof spec.fill === 'number') t.data.fill(typeof t.data[0] === 'bigint' ? BigInt(spec.fill) : spec.fill);
    return t;
  };
  const timed = inputs.find(([, s]) => s.time_axis !== null && s.time_axis !== undefined);
  if (!entry.streamable || !timed) {
    const calls = [0, 1, 2].map((k) => Object.fromEntries(inputs.map(([n, s]) => [n, fill(n, s, 1234 + k)])));
    return { calls, how: '3 calls of the full shape' };
  }
  const whole = Object.fromEntries(inputs.map(([n, s]) => [n, fill(n, s, 1234)]));
  const length = timed[1].shape[timed[1].time_axis];
  const sizes = [Math.ceil(length / 3) + 1, Math.ceil(length / 3)];
  sizes.push(length - sizes[0] - sizes[1]);
  let start = 0;
  const calls = sizes.map((size) => {
    const call = Object.fromEntries(inputs.map(([n, s]) => [n, s.time_axis === null || s.time_axis === undefined
      ? whole[n] : tensor.sliceAxis(whole[n], s.time_axis, start, start + size)]));
    start += size;
    return call;
  });
  return { calls, how: `chunks ${sizes.join('+')}` };
}

// A pair's state shape for these calls, worked out by the test itself: the
// manifest's shape for a state input it lists (with the batch), else the
// pair's shape with its symbols bound by the first call's declared inputs and
// its unnamed batch axis given `batch`.
function stateShape(p, entry, declared, firstCall, batch) {
  const bound = new Map();
  for (const d of declared) {
    (d.shape || []).forEach((s, i) => {
      if (typeof s === 'string' && firstCall[d.name]) bound.set(s, firstCall[d.name].dims[i]);
    });
  }
  return p.shape.map((d, i) => {
    if (typeof d === 'number' && d >= 0) return d;
    if (typeof d === 'string' && bound.has(d)) return bound.get(d);
    if (i === p.batch_axis && batch !== null) return batch;
    if (entry.inputs[p.input]) return entry.inputs[p.input].shape[i];
    throw new Error(`test: cannot tell dimension ${i} of ${p.input} [${p.shape}]`);
  });
}

// Equal within the manifest's atol (1e-6 by default): the two runs may
// differ in the last bits where ONNX Runtime folds a default as a constant.
function sameOutputs(got, expected, atol) {
  const differ = [];
  got.forEach((out, k) => {
    for (const name of Object.keys(expected[k])) if (!compare(out[name], expected[k][name], atol, 0).ok) differ.push(`call ${k + 1} ${name}`);
  });
  return differ;
}

async function main(argv) {
  const [tool, work, model, manifest] = argv;
  if (!fs.existsSync(model)) {
    console.log(`SKIP: ${model} is not here (../shared/models is only in the project's workplace)`);
    return 77;
  }
  h.requirePackageInstalled();
  const { StatefulSession } = require(h.PACKAGE);
  const { loadOrt } = require(path.join(h.PACKAGE, 'lib', 'ort'));
  const { readModelInfo } = require(path.join(h.PACKAGE, 'lib', 'onnx_model'));
  ({ compare } = require(path.join(h.PACKAGE, 'lib', 'verify')));
  const ort = loadOrt();
  const entry = h.findEntry(manifest, path.basename(model));
  const dir = path.join(work, path.basename(model, '.onnx'));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const layout0 = entry.ort === false ? ['--to-layout0'] : [];
  const files = { required: path.join(dir, 'required.onnx') };
  const report = h.rewrite(tool, model, files.required, ['--state-inputs=required', ...layout0]);
  if (entry.ort_optional !== false) {
    files.optional = path.join(dir, 'optional.onnx');
    h.rewrite(tool, model, files.optional, layout0);
  }
  let failed = 0;
  let passed = 0;
  const result = (ok, what) => {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
    if (ok) passed++;
    else failed++;
  };
  const pairs = report.state;
  const pairInputs = new Set(pairs.map((p) => p.input));
  const wanted = [...(entry.state_inputs || []), ...Object.keys(entry.carried || {})];
  const notCarried = wanted.filter((n) => !pairInputs.has(n));
  if ('stream' in report) result(!notCarried.length, `every state the model carries is a pair${notCarried.length ? ` (not: ${notCarried})` : ''}`);
  else if (notCarried.length) console.log(`NOTE: ${notCarried.join(', ')} not carried: this rewriter does not report context pairs yet (issue 22)`);

  // A model that cannot stream exactly is refused unless allowInexact. An
  // unchanged model is written back byte for byte, without rnnstate.stream:
  // only the report carries its verdict.
  const base = { sessionOptions: SESSION_OPTIONS, ...(report.status === 'unchanged' ? { pairs } : {}) };
  if (report.stream && report.stream.verdict === 'none' && report.status !== 'unchanged') {
    let refused = '';
    try {
      await (await StatefulSession.create(files.required, base)).release();
    } catch (e) {
      refused = e.message;
    }
    result(refused.includes('cannot stream exactly'), `verdict none: create() refuses without allowInexact (${refused || 'it did not'})`);
    base.allowInexact = true;
  }
  const atol = entry.atol ?? 1e-6;
  const declared = readModelInfo(files.required).inputs;
  const dynamic = batchSymbolOf(entry, declared) !== null || BATCH_AXES[entry.file];
  for (const batch of dynamic ? [1, 3] : [null]) {
    const { calls, how } = makeCalls(entry, declared, batch, pairInputs);
    const label = `${batch === null ? 'fixed batch' : `batch ${batch}`}, ${how}`;
    const shapes = pairs.map((p) => stateShape(p, entry, declared, calls[0], batch));
    const zeros = new Map(pairs.map((p, i) => [p.input, tensor.zerosTensor(p.dtype, shapes[i])]));
    const given = new Map(pairs.map((p, i) => [p.input, tensor.randomTensor(p.dtype, shapes[i], 99, p.input)]));
    const fromZeros = await handWrittenLoop(ort, files.required, pairs, calls, zeros);
    const fromGiven = await handWrittenLoop(ort, files.required, pairs, calls, given);
    for (const [mode, file] of Object.entries(files)) {
      let options = base;
      let session = await StatefulSession.create(file, options);
      if (NEEDS_TIME[entry.file]) {
        let message = '';
        try {
          await session.run(calls[0]);
        } catch (e) {
          message = e.message;
        }
        result(message.includes('pass state in the first call\'s feeds, or give the time axes (StatefulSession option time'),
          `${mode}, ${label}: a batch the feeds do not tell is refused, naming the fix (${message || 'it ran'})`);
        await session.release();
        options = { ...base, time: NEEDS_TIME[entry.file] };
        session = await StatefulSession.create(file, options);
      }
      const outs = [];
      for (const call of calls) outs.push(await session.run(call));
      let differ = sameOutputs(outs, fromZeros, atol);
      result(!differ.length, `${mode}, ${label}: zeros: StatefulSession = hand-written loop`
        + `${differ.length ? ` (differs: ${differ.join(', ')})` : ` (${Object.keys(fromZeros[0]).length} outputs)`}`);
      session.reset();
      const again = await session.run(calls[0]);
      const notAgain = Object.keys(outs[0]).filter((name) => !compare(again[name], outs[0][name], 0, 0).ok);
      result(!notAgain.length, `${mode}, ${label}: after reset() the first call gives the first outputs again`
        + `${notAgain.length ? ` (differs: ${notAgain.join(', ')})` : ''}`);
      await session.release();
      // A state fed in the first call is used as given (a fresh session, so
      // that nothing is carried yet; without options.time: the feeds need not
      // tell the batch then).
      session = await StatefulSession.create(file, base);
      const givenOuts = [];
      for (const [k, call] of calls.entries()) givenOuts.push(await session.run(k === 0 ? { ...call, ...Object.fromEntries(given) } : call));
      differ = sameOutputs(givenOuts, fromGiven, atol);
      result(!differ.length, `${mode}, ${label}: a state given in the first call is used as given`
        + `${differ.length ? ` (differs: ${differ.join(', ')})` : ''}`);
      await session.release();
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  console.error(`session_test: FAIL: ${e.stack}`);
  process.exitCode = 1;
});
