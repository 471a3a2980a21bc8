#!/usr/bin/env node
// The default (optional) mode has no traps, proved in ONNX Runtime
// (issue 25, item 2). For each model below, rewritten in the default mode:
//   (a) absent states mean zeros at any batch: the rewritten model, fed only
//       x, gives the original's outputs at batch 1, 2 and 3;
//   (b) a fed state of the wrong batch is an error, never a broadcast: a
//       state of batch 1 with an input of batch 2 (and batch 3 with 2) makes
//       the run fail, naming the node's shape check;
//   (c) streaming at batch 2, state fed back chunk by chunk, equals the
//       whole sequence; the first chunk feeds the default itself (an empty
//       state: batch 0), which also means zeros.
// onnxruntime-node ignores a feed for an input that has an initializer, so
// (b) and (c) feed a copy whose defaults are stripped (strip-defaults): the
// same graph, which is what ONNX Runtime runs when a caller of its C or
// Python API overrides the default.
//
// Models: float32 LSTM (2 layers), float16 GRU (ONNX Runtime casts it to
// float32 around the node). ONNX Runtime has no float64 recurrent kernel, so
// the float64 LSTM is rewritten and its defaults checked for type and shape.
//
//   node defaults_check.js TOOL STRIP MODELS_DIR WORK_DIR
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const lib = require('./lib');

const CASES = [
  { file: 'lstm_2layer_dynamic.onnx', dtype: 'float32', atol: 1e-5 },
  { file: 'fp16_gru.onnx', dtype: 'float16', atol: 2e-3 },
];

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exitCode = 1;
}

function input(dtype, T, B, seed) {
  return lib.makeInputs([{ name: 'x', dtype, shape: [T, B, 8], fill: 'random' }], seed).x;
}

function sliceTime(t, start, end) {
  const [, B, F] = t.dims;
  const data = t.data.slice(start * B * F, end * B * F);
  return { dtype: t.dtype, dims: [end - start, B, F], data };
}

function concatTime(parts) {
  const dims = [parts.reduce((n, p) => n + p.dims[0], 0), ...parts[0].dims.slice(1)];
  const data = new parts[0].data.constructor(parts.reduce((n, p) => n + p.data.length, 0));
  let at = 0;
  for (const p of parts) {
    data.set(p.data, at);
    at += p.data.length;
  }
  return { dtype: parts[0].dtype, dims, data };
}

function same(what, actual, expected, atol) {
  const res = lib.compareTensors(actual, expected, { atol });
  if (!res.ok) fail(`${what}: ${lib.describeComparison(res, expected.dims)}`);
  else console.log(`PASS ${what}`);
}

async function main(argv) {
  const [tool, strip, modelsDir, work] = argv;
  if (!work) {
    console.error('usage: defaults_check.js TOOL STRIP MODELS_DIR WORK_DIR');
    return 2;
  }
  const ort = lib.requireOrt();
  fs.mkdirSync(work, { recursive: true });
  for (const c of CASES) {
    const original = path.join(modelsDir, c.file);
    const base = path.join(work, path.basename(c.file, '.onnx'));
    const rewritten = `${base}.rewritten.onnx`, stripped = `${base}.stripped.onnx`;
    const report = JSON.parse(execFileSync(tool, [original, '-o', rewritten, '--json', '--check', '-q']));
    const pairs = report.models[0].state;
    execFileSync(strip, [rewritten, stripped, ...pairs.map((p) => p.input)]);
    const o = await lib.createSession(ort, original);
    const r = await lib.createSession(ort, rewritten);
    const s = await lib.createSession(ort, stripped);
    const stateOf = (p, B, fill) => {
      const dims = p.shape.map((d, i) => (i === p.batch_axis ? B : d));
      const t = lib.zerosTensor(p.dtype, dims);
      if (fill) t.data.fill(c.dtype === 'float16' ? 0x3800 : 0.5); // 0.5 in either type
      return t;
    };

    // (a) absent state: zeros at any batch
    for (const B of [1, 2, 3]) {
      const x = input(c.dtype, 6, B, 7 + B);
      const want = await lib.runSession(ort, o, { x });
      const got = await lib.runSession(ort, r, { x });
      same(`${c.file} (${c.dtype}): no state fed at batch ${B} gives the original's y`, got.y, want.y, c.atol);
    }

    // (b) a fed state of another batch than x's is an error
    for (const [B, SB] of [[2, 1], [2, 3], [1, 2]]) {
      const feeds = { x: input(c.dtype, 4, B, 3) };
      for (const p of pairs) feeds[p.input] = stateOf(p, SB, true);
      try {
        await lib.runSession(ort, s, feeds);
        fail(`${c.file}: a state of batch ${SB} with an input of batch ${B} ran (a silent broadcast)`);
      } catch (e) {
        const msg = String(e.message).split('\n')[0];
        if (!/initial_h|shape/i.test(msg)) fail(`${c.file}: unexpected error for batch ${SB} vs ${B}: ${msg}`);
        else console.log(`PASS ${c.file}: a state of batch ${SB} with an input of batch ${B} is refused: ${msg.slice(0, 160)}`);
      }
    }

    // (c) chunks at batch 2, the first one with the empty default, equal
    // the whole sequence
    const B = 2, T = 12;
    const x = input(c.dtype, T, B, 11);
    const whole = await lib.runSession(ort, r, { x });
    let state = {};
    for (const p of pairs) state[p.input] = stateOf(p, 0, false);
    const ys = [];
    for (const [start, end] of [[0, 5], [5, 6], [6, 12]]) {
      const out = await lib.runSession(ort, s, { x: sliceTime(x, start, end), ...state });
      ys.push(out.y);
      state = {};
      for (const p of pairs) state[p.input] = out[p.output];
    }
    same(`${c.file} (${c.dtype}): chunks 5+1+6 at batch 2 with the state fed back equal the whole sequence`,
      concatTime(ys), whole.y, c.atol);
  }

  await contextCaches(ort, tool, strip, modelsDir, work);

  // float64: no ONNX Runtime kernel; the defaults keep the type
  const dbl = path.join(work, 'double_lstm.rewritten.onnx');
  const rep = JSON.parse(execFileSync(tool, [path.join(modelsDir, 'double_lstm.onnx'), '-o', dbl, '--json', '--check', '-q']));
  const info = lib.readModelInfo(dbl);
  for (const p of rep.models[0].state) {
    if (p.dtype !== 'float64' || !p.optional) fail(`double_lstm: pair ${p.input} is ${p.dtype}, optional ${p.optional}`);
    const inp = info.inputs.find((i) => i.name === p.input);
    if (!inp || inp.shape[p.batch_axis] !== null) fail(`double_lstm: ${p.input} should declare its batch unnamed`);
  }
  if (!process.exitCode) console.log('PASS double_lstm: float64 optional states with an unnamed batch');
  return process.exitCode || 0;
}

// The same for context caches (models/stream/pad_conv_gru.onnx: x [batch,
// T, 8] -> F.pad + Conv1d -> GRU): absent caches are zeros at any batch, a
// cache fed with another batch than x's is refused (the GRU's state fed
// right), and chunks from the empty defaults, every pair fed back, equal
// the whole sequence.
async function contextCaches(ort, tool, strip, modelsDir, work) {
  const file = 'stream/pad_conv_gru.onnx';
  const original = path.join(modelsDir, file);
  const base = path.join(work, 'pad_conv_gru');
  const rewritten = `${base}.rewritten.onnx`, stripped = `${base}.stripped.onnx`;
  const report = JSON.parse(execFileSync(tool, [original, '-o', rewritten, '--json', '--check', '-q']));
  const pairs = report.models[0].state;
  if (!pairs.some((p) => p.kind === 'context')) return fail(`${file}: no context pair in the report`);
  execFileSync(strip, [rewritten, stripped, ...pairs.map((p) => p.input)]);
  const o = await lib.createSession(ort, original);
  const r = await lib.createSession(ort, rewritten);
  const s = await lib.createSession(ort, stripped);
  const x = (B, T, seed) => lib.makeInputs([{ name: 'x', dtype: 'float32', shape: [B, T, 8], fill: 'random' }], seed).x;
  const stateOf = (p, B, value) => {
    const t = lib.zerosTensor(p.dtype, p.shape.map((d, i) => (i === p.batch_axis ? B : d)));
    t.data.fill(value);
    return t;
  };
  for (const B of [1, 2, 3]) {
    const xs = x(B, 7, B);
    same(`${file}: no state fed at batch ${B} gives the original's y`,
      (await lib.runSession(ort, r, { x: xs })).y, (await lib.runSession(ort, o, { x: xs })).y, 1e-5);
  }
  for (const p of pairs.filter((q) => q.kind === 'context')) {
    const feeds = { x: x(2, 4, 5) };
    for (const q of pairs) feeds[q.input] = stateOf(q, q === p ? 1 : 2, 0.5);
    try {
      await lib.runSession(ort, s, feeds);
      fail(`${file}: a context cache ${p.input} of batch 1 with an input of batch 2 ran (a silent broadcast)`);
    } catch (e) {
      console.log(`PASS ${file}: a cache ${p.input} of batch 1 with an input of batch 2 is refused: ${String(e.message).split('\n')[0].slice(0, 140)}`);
    }
  }
  const xs = x(2, 12, 9);
  const whole = await lib.runSession(ort, r, { x: xs });
  let state = Object.fromEntries(pairs.map((p) => [p.input, stateOf(p, 0, 0)]));
  const ys = [];
  for (const [start, end] of [[0, 5], [5, 6], [6, 12]]) {
    const out = await lib.runSession(ort, s, { x: lib.sliceAxis(xs, 1, start, end), ...state });
    ys.push(out.y);
    state = Object.fromEntries(pairs.map((p) => [p.input, out[p.output]]));
  }
  same(`${file}: chunks 5+1+6 at batch 2 from the empty defaults, every pair fed back, equal the whole sequence`,
    lib.concatAxis(ys, 1), whole.y, 1e-5);
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  console.error(e.stack || String(e));
  process.exitCode = 1;
});
