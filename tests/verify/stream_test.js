#!/usr/bin/env node
'use strict';
// The streaming verdict (rnnstate.stream) and context pairs in
// rnnstate-verify and StatefulSession, on small models with hand-made
// metadata (stream_models.js), so that the C tool's output is not needed:
//   node stream_test.js WORKDIR
// Exact verdicts: chunks are multiples of chunk_multiple and pass; a model
// without rnnstate.stream behaves as before (chunks of any length); `none`
// fails the chunked check with the blockers as its reason and is refused by
// StatefulSession unless allowInexact; `unknown` says so; context pairs are
// fed back like recurrent ones.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const h = require('./helpers');
const m = require('./stream_models');

h.requirePackageInstalled();
const { StatefulSession } = require(h.PACKAGE);
const { tensor } = h;
const { compare } = require(path.join(h.PACKAGE, 'lib', 'verify'));

const work = process.argv[2] || path.join(require('os').tmpdir(), 'rnnstate-stream-test');
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };
const BLOCKER = { graph: 'main', op: 'Conv', name: '/conv/Conv', reason: 'looks 1 frame ahead: pads 1,1 along time' };
const EXACT2 = { verdict: 'exact', chunk_multiple: 2, blockers: [] };

function write(name, bytes) {
  const file = path.join(work, name);
  fs.writeFileSync(file, bytes);
  return file;
}

const files = {
  pairedOriginal: write('paired_original.onnx', m.pairedFrames({ stateful: false })),
  paired: write('paired_exact2.onnx', m.pairedFrames({ stateful: true, metadata: m.metadata({ state: m.PAIRED_STATE, stream: EXACT2 }) })),
  pairedNoStream: write('paired_no_stream.onnx', m.pairedFrames({ stateful: true, metadata: m.metadata({ state: m.PAIRED_STATE }) })),
  pairedNone: write('paired_none.onnx', m.pairedFrames({
    stateful: true, metadata: m.metadata({ state: m.PAIRED_STATE, stream: { verdict: 'none', chunk_multiple: 1, blockers: [BLOCKER] } }),
  })),
  pairedUnknown: write('paired_unknown.onnx', m.pairedFrames({
    stateful: true,
    metadata: m.metadata({
      state: m.PAIRED_STATE,
      stream: { verdict: 'unknown', chunk_multiple: 2, blockers: [{ graph: 'main', op: 'Foo', name: 'f', reason: 'an op the analysis does not know' }] },
    }),
  })),
  convOriginal: write('conv_original.onnx', m.causalConv({ stateful: false })),
  conv: write('conv_context.onnx', m.causalConv({
    stateful: true, metadata: m.metadata({ state: m.CONV_STATE, stream: { verdict: 'exact', chunk_multiple: 1, blockers: [] } }),
  })),
  conv2: write('conv_context_k2.onnx', m.causalConv({ stateful: true, metadata: m.metadata({ state: m.CONV_STATE, stream: EXACT2 }) })),
};

const chunked = (r) => r.result.checks.find((c) => c.name === 'chunked');
const statuses = (r) => r.result.checks.map((c) => `${c.name} ${c.status}`);

test('verify: an exact model with chunk_multiple 2 is cut into unequal multiples of 2 and passes', () => {
  const r = h.runVerify([files.pairedOriginal, files.paired]);
  assert.strictEqual(r.status, 0, r.stdout + r.stderr);
  assert.deepStrictEqual(r.result.stream, EXACT2);
  assert.deepStrictEqual(r.result.inputs[0].dims, [2, 10, 4]);
  assert.deepStrictEqual(chunked(r).chunks, [4, 4, 2]);
  assert.strictEqual(chunked(r).reason, '3 chunks of 4+4+2 steps along x:1 (multiples of 2, the chunk_multiple of '
    + 'rnnstate.stream), every state pair fed back, give the whole-sequence outputs');
  const four = h.runVerify([files.pairedOriginal, files.paired, '--chunks', '4']);
  assert.strictEqual(four.status, 0);
  assert.deepStrictEqual(chunked(four).chunks, [4, 2, 2, 2]);
  const text = h.runVerify([files.pairedOriginal, files.paired]).stdout;
  assert.ok(text.includes('"chunk_multiple": 2'));
});

test('verify: the default time length is rounded up to chunk_multiple, and long enough for unequal chunks', () => {
  const { defaultTimeLength, chunkSizes } = require(path.join(h.PACKAGE, 'lib', 'verify'));
  assert.deepStrictEqual([1, 2, 3, 4, 7].map((k) => defaultTimeLength(k, 3)), [10, 10, 12, 16, 28]);
  assert.deepStrictEqual(chunkSizes(12, 3, 3), [6, 3, 3]);
  assert.deepStrictEqual(chunkSizes(28, 3, 7), [14, 7, 7]);
});

test('verify: a model without rnnstate.stream behaves as before: chunks of any length', () => {
  const r = h.runVerify([files.pairedOriginal, files.pairedNoStream]);
  assert.strictEqual(r.result.stream, null);
  // 4+3+3: an odd chunk cannot be reshaped into pairs of frames; the
  // verdict's chunk_multiple is what makes the check right on this model.
  assert.deepStrictEqual(statuses(r), ['pairs pass', 'no-state pass', 'chunked fail']);
  assert.match(chunked(r).reason, /^running REWRITTEN in chunks failed: /);
  const conv = h.runVerify([files.convOriginal, files.conv, '--chunks', '3']);
  assert.deepStrictEqual(chunked(conv).chunks, [4, 3, 3]);
});

test('verify: a sequence that is not a multiple of chunk_multiple, or too short for the chunks, is the reason', () => {
  let r = h.runVerify([files.convOriginal, files.conv2, '--dim', 'T=9']);
  assert.strictEqual(r.status, 1);
  assert.deepStrictEqual(statuses(r), ['pairs pass', 'no-state pass', 'chunked fail']);
  assert.strictEqual(chunked(r).reason, 'a sequence of 9 steps is not a multiple of 2, REWRITTEN\'s chunk_multiple '
    + '(rnnstate.stream): its chunks must be multiples of it; give a length that is (--dim, --input)');
  r = h.runVerify([files.convOriginal, files.conv2, '--dim', 'T=4']);
  assert.strictEqual(chunked(r).reason, 'a sequence of 4 steps cannot be cut into 3 chunks of a multiple of 2 steps '
    + '(rnnstate.stream chunk_multiple)');
});

test('verify: a `none` model fails the chunked check with the blockers as its reason, without running it', () => {
  const r = h.runVerify([files.pairedOriginal, files.pairedNone]);
  assert.strictEqual(r.status, 1);
  assert.deepStrictEqual(statuses(r), ['pairs pass', 'no-state pass', 'chunked fail']);
  assert.strictEqual(chunked(r).reason, 'REWRITTEN cannot stream exactly (rnnstate.stream: verdict none): feeding the '
    + 'state pairs back will not reproduce the whole-sequence outputs: main Conv \'/conv/Conv\': looks 1 frame ahead: '
    + 'pads 1,1 along time');
  assert.deepStrictEqual(chunked(r).outputs, []);
  const text = require('child_process').spawnSync(process.execPath, [h.VERIFY_BIN, files.pairedOriginal, files.pairedNone],
    { encoding: 'utf8' }).stdout;
  assert.ok(text.includes("  stream: none: main Conv '/conv/Conv': looks 1 frame ahead: pads 1,1 along time (rnnstate.stream)\n"), text);
  assert.ok(text.includes('FAIL chunked: REWRITTEN cannot stream exactly'), text);
});

test('verify: an `unknown` verdict is named in the chunked check\'s reason', () => {
  const r = h.runVerify([files.pairedOriginal, files.pairedUnknown]);
  assert.strictEqual(r.status, 0);
  assert.strictEqual(r.stderr, ''); // no process warning: the reason says it
  assert.strictEqual(chunked(r).reason, '3 chunks of 4+4+2 steps along x:1 (multiples of 2, the chunk_multiple of '
    + 'rnnstate.stream), every state pair fed back, give the whole-sequence outputs (the rewriter\'s verdict is '
    + 'unknown: main Foo \'f\': an op the analysis does not know)');
});

test('verify: a context pair is fed back like a recurrent one', () => {
  const r = h.runVerify([files.convOriginal, files.conv]);
  assert.strictEqual(r.status, 0, h.describe(r.result));
  assert.strictEqual(r.result.checks[0].reason, '1 pair(s): cache -> cache_out (context)');
  assert.deepStrictEqual(chunked(r).outputs.map((o) => [o.name, o.status, o.joined]), [['y', 'pass', 2], ['cache_out', 'pass', null]]);
});

function randomX(batch, T) {
  return tensor.randomTensor('float32', [batch, T, 4], 7, 'x');
}

async function streamed(file, sizes, options = {}) {
  const session = await StatefulSession.create(file, { sessionOptions: SESSION_OPTIONS, ...options });
  const x = randomX(2, sizes.reduce((a, n) => a + n, 0));
  const whole = await session.run({ x });
  session.reset();
  const outs = [];
  let start = 0;
  for (const n of sizes) {
    outs.push(await session.run({ x: tensor.sliceAxis(x, 1, start, start + n) }));
    start += n;
  }
  return { session, whole, outs };
}

test('StatefulSession: chunks must be a multiple of chunk_multiple; a refused chunk leaves the state alone', async () => {
  const { session, whole, outs } = await streamed(files.paired, [4, 6]);
  const y = tensor.concatAxis(outs.map((o) => tensor.asPlain(o.y)), 0);
  assert.deepStrictEqual(Array.from(y.data), Array.from(whole.y.data));
  assert.deepStrictEqual(session.stream, EXACT2);
  session.reset();
  const x = randomX(2, 10);
  await assert.rejects(session.run({ x: tensor.sliceAxis(x, 1, 0, 3) }), {
    message: `${files.paired}: input x has 3 steps along its time axis 1: chunks must be a multiple of 2 steps (rnnstate.stream chunk_multiple)`,
  });
  await assert.rejects(session.run({ x: tensor.sliceAxis(x, 1, 0, 0) }), {
    message: `${files.paired}: input x has 0 steps along its time axis 1`,
  });
  // Nothing was run: the next chunk still starts from zeros.
  const first = await session.run({ x: tensor.sliceAxis(x, 1, 0, 4) });
  session.reset();
  const again = await session.run({ x: tensor.sliceAxis(x, 1, 0, 4) });
  assert.deepStrictEqual(Array.from(first.hn.data), Array.from(again.hn.data));
  await session.release();
});

test('StatefulSession: a `none` model is refused with its blockers unless allowInexact; `unknown` warns', async () => {
  await assert.rejects(StatefulSession.create(files.pairedNone), {
    message: `${files.pairedNone}: the model cannot stream exactly (rnnstate.stream: verdict none): feeding the state `
      + 'pairs back will not reproduce the whole-sequence outputs: main Conv \'/conv/Conv\': looks 1 frame ahead: pads 1,1 '
      + 'along time (options.allowInexact: true streams it anyway)',
  });
  const inexact = await StatefulSession.create(files.pairedNone, { allowInexact: true, sessionOptions: SESSION_OPTIONS });
  assert.strictEqual(inexact.stream.verdict, 'none');
  await inexact.release();
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  const unknown = await StatefulSession.create(files.pairedUnknown, { sessionOptions: SESSION_OPTIONS });
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onWarning);
  assert.deepStrictEqual(warnings.map((w) => [w.code, w.message]), [['RNNSTATE_STREAM_UNKNOWN',
    `${files.pairedUnknown}: the rewriter could not tell whether the model streams exactly (rnnstate.stream: verdict `
    + 'unknown): main Foo \'f\': an op the analysis does not know']]);
  await unknown.release();
});

test('StatefulSession: a context pair is carried like a recurrent one (chunks 3+1+6 = the whole run)', async () => {
  const { session, whole, outs } = await streamed(files.conv, [3, 1, 6]);
  assert.deepStrictEqual(session.pairs.map((p) => [p.input, p.output, p.kind]), [['cache', 'cache_out', 'context']]);
  const y = tensor.concatAxis(outs.map((o) => tensor.asPlain(o.y)), 2);
  assert.deepStrictEqual(y.dims, [2, 3, 10]);
  // Conv may sum in another order for another length: equal to rounding.
  const c = compare(y, whole.y, 1e-6, 0);
  assert.ok(c.ok, `max abs ${c.maxAbs}`);
  await session.release();
});

test('StatefulSession: options.time gives the time axes where the metadata has none', async () => {
  const file = write('conv_no_time.onnx', m.causalConv({
    stateful: true, metadata: m.metadata({ state: m.CONV_STATE, time: [], stream: EXACT2 }),
  }));
  const session = await StatefulSession.create(file, { sessionOptions: SESSION_OPTIONS, time: [{ input: 'x', axis: 1 }] });
  await assert.rejects(session.run({ x: randomX(1, 3) }), /input x has 3 steps along its time axis 1/);
  await session.release();
});
