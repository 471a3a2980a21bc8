#!/usr/bin/env node
'use strict';
// rnnstate-verify's options on a real model (denoiser_gru, x [batch, time, 8]):
//   node options_test.js TOOL WORKDIR MODELS_DIR
// --dim shapes the random inputs, --chunks and --time choose the cut, --seed
// the data, --input feeds .npy data (of the right type only), and mistakes in
// them are usage errors (exit 2) or input errors (exit 1) with one line.
// Exit status: 0 pass, 1 fail.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const { formatNpy } = require(path.join(h.PACKAGE, 'lib', 'npy'));

function main(argv) {
  const [tool, work, models] = argv;
  h.requirePackageInstalled();
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  const original = path.join(models, 'denoiser_gru.onnx');
  const rewritten = path.join(work, 'denoiser_gru.onnx');
  h.rewrite(tool, original, rewritten);
  const x64 = path.join(work, 'x64.npy');
  fs.writeFileSync(x64, formatNpy(h.tensor.randomTensor('float64', [1, 6, 8], 1, 'x')));
  const x32 = path.join(work, 'x32.npy');
  fs.writeFileSync(x32, formatNpy(h.tensor.randomTensor('float32', [1, 6, 8], 1, 'x')));

  const chunked = (r) => r.result.checks.find((c) => c.name === 'chunked');
  const cases = [
    ['--dim sets the symbolic dimensions; --chunks 2 cuts 7 steps into 4+3',
      ['--dim', 'batch=3', '--dim', 'time=7', '--chunks', '2'],
      (r) => r.status === 0 && JSON.stringify(r.result.inputs[0].dims) === '[3,7,8]'
        && JSON.stringify(chunked(r).chunks) === '[4,3]'],
    ['the defaults: 3 chunks of 10 steps (4+3+3), batch 2, seed 1234, along rnnstate.time',
      [],
      (r) => r.status === 0 && JSON.stringify(r.result.inputs[0].dims) === '[2,10,8]'
        && r.result.inputs[0].source === 'random, seed 1234' && JSON.stringify(chunked(r).chunks) === '[4,3,3]'
        && r.result.time_axes_from === 'rnnstate.time'],
    ['--time overrides the recorded axis (a wrong one fails the chunked check)',
      ['--time', 'x:0', '--dim', 'batch=4'],
      (r) => r.status === 1 && r.result.time_axes_from === '--time' && chunked(r).status === 'fail'],
    ['--chunks 0 leaves the chunked check out', ['--chunks', '0'],
      (r) => r.status === 0 && chunked(r).status === 'skipped'],
    ['--input feeds a .npy file', ['--input', `x=${x32}`],
      (r) => r.status === 0 && r.result.inputs[0].source === x32 && JSON.stringify(chunked(r).chunks) === '[3,2,1]'],
    ['--input of the wrong element type: exit 1 naming the file', ['--input', `x=${x64}`],
      (r) => r.status === 1 && r.stderr === `rnnstate-verify: ${x64}: float64 data for input x, which is float32\n`],
    ['--input of an unknown input: exit 2', ['--input', `y=${x32}`],
      (r) => r.status === 2 && r.stderr.startsWith('rnnstate-verify: --input y: ORIGINAL has no such input (inputs: x)\n')],
    ['--dim of an unknown name: exit 2', ['--dim', 'N=3'],
      (r) => r.status === 2 && r.stderr.startsWith('rnnstate-verify: --dim N: no input of ORIGINAL has a dimension of that name (names: batch, time)\n')],
  ];
  let failed = 0;
  for (const [name, args, ok] of cases) {
    const r = h.runVerify([original, rewritten, ...args]);
    const pass = (r.result || r.status === 2 || r.stderr) && ok(r);
    console.log(`${pass ? 'PASS' : 'FAIL'} ${name}${pass ? '' : `: exit ${r.status} ${r.stderr.trim()} ${r.result ? h.describe(r.result) : ''}`}`);
    if (!pass) failed++;
  }
  console.log(`${cases.length - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
