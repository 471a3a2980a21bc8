#!/usr/bin/env node
'use strict';
// The JavaScript streaming example of docs/streaming.md, kept runnable so it cannot rot.
//
//   node readme_example.js --original denoiser_gru.onnx \
//       --model denoiser_gru.stateful.onnx --report denoiser_gru.report.json
//
// The model and report come from
//   rnnstate-rewrite --state-inputs=required --json denoiser_gru.onnx \
//       -o denoiser_gru.stateful.onnx > denoiser_gru.report.json
// (run_readme_example.sh does that). The code between the README markers
// below must appear verbatim in docs/streaming.md (checked first). Then the example's
// function runs x [2, 12, 8] in 3 chunks of 4 frames; the masks put together
// must equal one call over the whole sequence, which must equal the original
// model's output; and feeding zeros at every chunk instead (forgetting the
// state) must give something else, so the check can tell.
// Exit status: 0 pass, 1 fail.

const path = require('path');
const lib = require('./lib');

// README example begin
const fs = require('fs');
const ort = require('onnxruntime-node');

// Runs x chunk by chunk (each an ort.Tensor [batch, frames, 8]) through a model
// rewritten with --state-inputs=required; the --json report pairs each state
// input with the output that carries its next value.
async function denoise(modelPath, reportPath, chunks) {
  const session = await ort.InferenceSession.create(modelPath);
  const pairs = JSON.parse(fs.readFileSync(reportPath, 'utf8')).models[0].state;
  const batch = chunks[0].dims[0];
  let state = {};
  for (const p of pairs) { // first call: zeros, e.g. [1, batch, 16] float32
    const dims = p.shape.map((d) => (d === 'batch' ? batch : d));
    const size = dims.reduce((a, b) => a * b, 1);
    state[p.input] = new ort.Tensor(p.dtype, new Float32Array(size), dims);
  }
  const masks = [];
  for (const x of chunks) {
    const out = await session.run({ x, ...state });
    state = Object.fromEntries(pairs.map((p) => [p.input, out[p.output]]));
    masks.push(out.mask);
  }
  return masks;
}
// README example end

async function main(argv) {
  const args = lib.parseArgs(argv, { original: 'string', model: 'string', report: 'string' });
  for (const k of ['original', 'model', 'report']) if (!args[k]) throw new Error(`--${k} is required`);
  let failed = 0;
  const check = (name, ok, detail) => {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
    if (!ok) failed++;
  };

  const self = fs.readFileSync(__filename, 'utf8');
  const block = self.slice(self.indexOf('// README example begin\n') + '// README example begin\n'.length,
    self.indexOf('// README example end\n'));
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'streaming.md'), 'utf8');
  check('docs/streaming.md shows this example verbatim', readme.includes('```js\n' + block + '```\n'));

  const x = lib.randomTensor('float32', [2, 12, 8], 1234, 'x');
  const chunks = lib.splitRanges(12, 3).map(([s, e]) => lib.toOrt(ort, lib.sliceAxis(x, 1, s, e)));
  const streamed = lib.concatAxis((await denoise(args.model, args.report, chunks)).map(lib.asPlain), 1);
  const [whole] = (await denoise(args.model, args.report, [lib.toOrt(ort, x)])).map(lib.asPlain);
  const original = lib.asPlain((await (await ort.InferenceSession.create(args.original)).run({ x: lib.toOrt(ort, x) })).mask);
  const tol = { atol: 1e-5, rtol: 0 };
  const c1 = lib.compareTensors(streamed, whole, tol);
  check('3 chunks with the state fed back = one call', c1.ok, lib.describeComparison(c1, whole.dims));
  const c2 = lib.compareTensors(whole, original, tol);
  check('one call with zero states = the original model', c2.ok, lib.describeComparison(c2, original.dims));
  // Without the state fed back, each chunk restarts from zeros.
  const forgetful = lib.concatAxis(await Promise.all(chunks.map(
    async (c) => lib.asPlain((await denoise(args.model, args.report, [c]))[0]))), 1);
  const c3 = lib.compareTensors(forgetful, whole, tol);
  check('restarting from zeros at each chunk differs (the check can tell)', !c3.ok, lib.describeComparison(c3, whole.dims));
  console.log(`readme_example: ${failed ? 'FAIL' : 'PASS'}`);
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  console.error(`readme_example: FAIL: ${e.message}`);
  process.exit(1);
});
