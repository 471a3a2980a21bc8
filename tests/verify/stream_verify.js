#!/usr/bin/env node
'use strict';
// rnnstate-verify and StatefulSession on one streaming model of
// models/stream (issue 22, item 7), as a user runs them after the rewrite:
//   node stream_verify.js TOOL WORKDIR MODEL.onnx MANIFEST.json
// The model is rewritten in both --state-inputs modes with the manifest's
// arguments. Then:
//   verify   rnnstate-verify with the manifest's inputs (batch 2), its time
//            axes and pairs from the metadata: on an `exact` model every check
//            passes, the chunked one included (chunks in multiples of the
//            verdict's chunk_multiple); on a `none` model the chunked check
//            fails with the rewriter's blockers as its reason, the others pass;
//   session  StatefulSession in three unequal chunks (multiples of K) equals
//            the original model's whole-sequence run on an `exact` model; on a
//            `none` model create() refuses, naming a blocker, unless
//            allowInexact.
// Exit status: 0 pass, 1 fail, 77 the npm package absent.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const { tensor } = h;
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exitCode = 1;
}

function pass(msg) {
  console.log(`PASS ${msg}`);
}

function checkVerify(entry, mode, report, ctx) {
  const r = h.runVerify([ctx.original, ctx.rewritten, ...ctx.npyArgs, '--chunks', '3']);
  if (!r.result) return fail(`${mode}: rnnstate-verify printed no JSON (status ${r.status}): ${r.stderr}`);
  const by = Object.fromEntries(r.result.checks.map((c) => [c.name, c]));
  const verdict = report.stream && report.stream.verdict;
  if (r.result.stream?.verdict !== verdict) {
    return fail(`${mode}: verify read verdict ${r.result.stream?.verdict} from the metadata, the report says ${verdict}`);
  }
  const others = ['pairs', 'no-state'].filter((n) => by[n]?.status !== 'pass');
  if (others.length) return fail(`${mode}: ${others.join(', ')} did not pass:\n${h.describe(r.result)}`);
  if (verdict === 'exact') {
    if (by.chunked?.status !== 'pass' || r.status !== 0) return fail(`${mode}: exact model, chunked check:\n${h.describe(r.result)}`);
    return pass(`${mode}: verify passes every check, chunked in multiples of ${r.result.stream.chunk_multiple}`);
  }
  if (verdict === 'none') {
    const blocker = report.stream.blockers[0];
    if (by.chunked?.status !== 'fail' || !by.chunked.reason.includes(blocker.reason)) {
      return fail(`${mode}: none model, chunked check should fail with "${blocker.reason}":\n${h.describe(r.result)}`);
    }
    return pass(`${mode}: verify's chunked check fails with the blocker: ${blocker.reason}`);
  }
  return pass(`${mode}: verdict ${verdict}: verify's chunked check ${by.chunked?.status}`);
}

// Three unequal chunk lengths of `len` frames, multiples of k.
function chunkLengths(len, k) {
  const units = len / k;
  const a = Math.max(1, Math.floor(units / 2)), b = Math.max(1, Math.floor((units - a) / 3));
  return [a * k, b * k, (units - a - b) * k];
}

async function checkSession(entry, mode, report, ctx, ort, StatefulSession) {
  const verdict = report.stream && report.stream.verdict;
  if (verdict === 'none') {
    try {
      await StatefulSession.create(ctx.rewritten, { sessionOptions: SESSION_OPTIONS });
      return fail(`${mode}: StatefulSession.create() accepted a model whose verdict is none`);
    } catch (e) {
      if (!e.message.includes(report.stream.blockers[0].reason)) return fail(`${mode}: create() refused with: ${e.message}`);
      return pass(`${mode}: StatefulSession refuses the none model, naming its blocker`);
    }
  }
  if (verdict !== 'exact') return pass(`${mode}: verdict ${verdict}: no session run`);
  const inputs = Object.fromEntries(Object.entries(h.manifestInputs(entry)).map(([n, v]) => [n, v.tensor]));
  const original = await ort.InferenceSession.create(ctx.original, SESSION_OPTIONS);
  const whole = await original.run(Object.fromEntries(Object.entries(inputs).map(([n, t]) => [n, new ort.Tensor(t.dtype, t.data, t.dims)])));
  const timed = Object.entries(entry.inputs).filter(([, s]) => s.time_axis !== undefined && s.time_axis !== null);
  const [tname, tspec] = timed[0];
  const k = report.stream.chunk_multiple;
  const lengths = chunkLengths(inputs[tname].dims[tspec.time_axis], k);
  const session = await StatefulSession.create(ctx.rewritten, { sessionOptions: SESSION_OPTIONS });
  const pieces = {};
  let at = 0;
  for (const len of lengths) {
    const feeds = {};
    for (const [n, t] of Object.entries(inputs)) {
      const spec = entry.inputs[n];
      const part = spec.time_axis === undefined || spec.time_axis === null ? t : tensor.sliceAxis(t, spec.time_axis, at, at + len);
      feeds[n] = new ort.Tensor(part.dtype, part.data, part.dims);
    }
    const out = await session.run(feeds);
    for (const [name, spec] of Object.entries(entry.outputs)) {
      (pieces[name] = pieces[name] || []).push({ dtype: out[name].type, data: out[name].data, dims: out[name].dims.slice() });
    }
    at += len;
  }
  for (const [name, spec] of Object.entries(entry.outputs)) {
    const joined = tensor.concatAxis(pieces[name], spec.time_axis);
    const want = whole[name];
    let worst = 0;
    for (let i = 0; i < want.data.length; i++) worst = Math.max(worst, Math.abs(Number(joined.data[i]) - Number(want.data[i])));
    if (joined.data.length !== want.data.length || worst > 1e-4) {
      return fail(`${mode}: StatefulSession in chunks ${lengths.join('+')}: ${name} differs from the whole sequence (max abs ${worst})`);
    }
  }
  return pass(`${mode}: StatefulSession in chunks ${lengths.join('+')} equals the whole-sequence run (batch ${inputs[tname].dims[0]})`);
}

async function main() {
  const [tool, workdir, model, manifestPath] = process.argv.slice(2);
  if (!fs.existsSync(path.join(h.PACKAGE, 'node_modules', 'onnxruntime-node'))) {
    console.log(`SKIP: onnxruntime-node is not installed for js/rnnstate (npm ci --onnxruntime-node-install=skip in ${h.PACKAGE})`);
    process.exit(77);
  }
  const ort = require(path.join(h.PACKAGE, 'node_modules', 'onnxruntime-node'));
  const { StatefulSession } = require(path.join(h.PACKAGE, 'lib', 'session'));
  const entry = h.findEntry(manifestPath, path.basename(model));
  const dir = path.join(workdir, path.basename(model, '.onnx'));
  fs.mkdirSync(dir, { recursive: true });
  const npyArgs = h.writeNpyInputs(entry, dir);
  for (const mode of ['optional', 'required']) {
    const rewritten = path.join(dir, `${mode}.onnx`);
    const report = h.rewrite(tool, model, rewritten, [...(entry.args || []), `--state-inputs=${mode}`]);
    const ctx = { original: model, rewritten, npyArgs };
    checkVerify(entry, mode, report, ctx);
    await checkSession(entry, mode, report, ctx, ort, StatefulSession);
  }
}

main().catch((e) => {
  console.error(`FAIL ${e.stack || e}`);
  process.exit(1);
});
