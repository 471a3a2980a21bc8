#!/usr/bin/env node
'use strict';
// StatefulSession on one bundled model, against the loop a caller writes by
// hand (the README's former JavaScript example: zeros of the pair's shape
// first, then each output fed back):
//   node session_test.js TOOL WORKDIR MODEL.onnx MANIFEST.json
// The model is rewritten in both --state-inputs modes. The manifest's test
// inputs are cut into 3 chunks of unequal sizes along their time axis, with
// batch 1 and 3 where the model's batch is dynamic (else its fixed batch).
// For each mode and batch: every output of every chunk equals the hand loop's
// (run on the required-mode model, which onnxruntime-node feeds as is), and
// after reset() the first chunk gives the first call's outputs again.
// Exit status: 0 pass, 1 fail.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const { tensor } = h;
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };
let compare;

// The loop callers wrote before StatefulSession, on a required-mode model.
async function handWrittenLoop(ort, modelPath, pairs, declaredInputs, chunks) {
  const session = await ort.InferenceSession.create(modelPath, SESSION_OPTIONS);
  const dimsBySymbol = new Map();
  for (const d of declaredInputs) {
    (d.shape || []).forEach((s, i) => {
      if (typeof s === 'string' && chunks[0][d.name]) dimsBySymbol.set(s, chunks[0][d.name].dims[i]);
    });
  }
  let state = {};
  for (const p of pairs) {
    const dims = p.shape.map((d) => (typeof d === 'number' ? d : dimsBySymbol.get(d)));
    state[p.input] = new ort.Tensor(p.dtype, tensor.zerosTensor(p.dtype, dims).data, dims);
  }
  const outs = [];
  for (const chunk of chunks) {
    const feeds = {};
    for (const [name, t] of Object.entries(chunk)) feeds[name] = new ort.Tensor(t.dtype, t.data, t.dims);
    const out = await session.run({ ...feeds, ...state });
    state = Object.fromEntries(pairs.map((p) => [p.input, out[p.output]]));
    outs.push(out);
  }
  await session.release();
  return outs;
}

// The manifest's inputs with batch `batch` on the model's batch dimension
// (the symbolic dimension of the first time-indexed input that is not its
// time axis), cut into 3 chunks of unequal sizes along the time axes. After
// the first chunk, inputs that are state pair inputs are left out.
function chunkedInputs(entry, declared, batch, pairInputs) {
  const [timeName, timeSpec] = Object.entries(entry.inputs).find(([, s]) => s.time_axis !== null);
  const timeDecl = declared.find((d) => d.name === timeName).shape;
  const batchSymbol = timeDecl.find((d, i) => typeof d === 'string' && i !== timeSpec.time_axis);
  const overrides = {};
  for (const d of declared) {
    if (entry.inputs[d.name] && batch !== null) {
      overrides[d.name] = entry.inputs[d.name].shape.map((n, i) => (d.shape[i] === batchSymbol ? batch : n));
    }
  }
  const inputs = h.manifestInputs(entry, overrides);
  const length = timeSpec.shape[timeSpec.time_axis];
  const sizes = [Math.ceil(length / 3) + 1, Math.ceil(length / 3)];
  sizes.push(length - sizes[0] - sizes[1]);
  const chunks = [];
  let start = 0;
  for (const [k, size] of sizes.entries()) {
    const chunk = {};
    for (const [name, { spec, tensor: t }] of Object.entries(inputs)) {
      if (k > 0 && pairInputs.has(name)) continue;
      chunk[name] = spec.time_axis === null ? t : tensor.sliceAxis(t, spec.time_axis, start, start + size);
    }
    chunks.push(chunk);
    start += size;
  }
  return { chunks, batchSymbol, sizes };
}

// Equal within the manifest's atol (1e-6 by default): the two runs may
// differ in the last bits where ONNX Runtime folds a default as a constant.
function sameTensor(a, b, atol) {
  return compare(a, b, atol, 0).ok;
}

async function main(argv) {
  const [tool, work, model, manifest] = argv;
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
  const files = { required: path.join(dir, 'required.onnx') };
  const report = h.rewrite(tool, model, files.required, ['--state-inputs=required']);
  if (entry.ort_optional !== false) {
    files.optional = path.join(dir, 'optional.onnx');
    h.rewrite(tool, model, files.optional, []);
  }
  // Already-stateful models are left unchanged, without metadata: their
  // pairs come from the report.
  const options = { sessionOptions: SESSION_OPTIONS, ...(report.status === 'unchanged' ? { pairs: report.state } : {}) };
  const atol = entry.atol ?? 1e-6;
  const declared = readModelInfo(files.required).inputs;
  const pairInputs = new Set(report.state.map((p) => p.input));
  let failed = 0;
  let passed = 0;
  const result = (ok, what) => {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
    if (ok) passed++;
    else failed++;
  };
  for (const batch of [1, 3]) {
    const { chunks, batchSymbol, sizes } = chunkedInputs(entry, declared, batch, pairInputs);
    if (!batchSymbol && batch !== 1) continue; // a fixed batch: its manifest shape only
    const label = batchSymbol ? `batch ${batch}` : 'fixed batch';
    const expected = await handWrittenLoop(ort, files.required, report.state, declared, chunks);
    for (const [mode, file] of Object.entries(files)) {
      const session = await StatefulSession.create(file, options);
      const outs = [];
      for (const chunk of chunks) outs.push(await session.run(chunk));
      const differ = [];
      outs.forEach((out, k) => {
        for (const name of Object.keys(expected[k])) if (!sameTensor(out[name], expected[k][name], atol)) differ.push(`chunk ${k + 1} ${name}`);
      });
      result(!differ.length, `${mode}, ${label}, chunks ${sizes.join('+')}: StatefulSession = hand-written loop`
        + `${differ.length ? ' (differs: ' + differ.join(', ') + ')' : ` (${Object.keys(expected[0]).length} outputs)`}`);
      session.reset();
      const again = await session.run(chunks[0]);
      const notAgain = Object.keys(outs[0]).filter((name) => !sameTensor(again[name], outs[0][name], 0));
      result(!notAgain.length, `${mode}, ${label}: after reset() the first chunk gives the first call's outputs`
        + `${notAgain.length ? ' (differs: ' + notAgain.join(', ') + ')' : ''}`);
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
