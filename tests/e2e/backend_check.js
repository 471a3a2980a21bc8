#!/usr/bin/env node
'use strict';
// Run a rewritten ONNX backend-test model on the test's own reference data.
//
//   node backend_check.js --original O.onnx --rewritten R.onnx --data DIR [--atol 1e-5] [--rtol 1e-4]
//
// DIR is an ONNX backend test directory (e.g.
// /usr/share/libonnx-testdata/data/node/test_gru_defaults) holding
// test_data_set_*/input_N.pb and output_N.pb. O is that test's model.onnx and
// R the rewriter's output for it.
//
// input_N.pb is fed to R under the name of the original's N-th input (ORT
// session inputNames of O: the reference data follows the original's
// interface). No state is fed, so R's state defaults are in effect and R must
// reproduce output_N.pb, read as the original's N-th output. R is also
// compared with O run in ONNX Runtime on the same feeds.
//
// Exit status: 0 all passed; 1 a comparison failed or R could not be run;
// 2 bad command line or data; 77 (ctest's SKIP_RETURN_CODE) when ONNX Runtime
// cannot run the ORIGINAL model (e.g. layout=1 recurrent nodes, which its CPU
// kernels refuse): then the test says nothing about the rewrite.

const fs = require('fs');
const path = require('path');
const lib = require('./lib');

const { UsageError } = lib;

const USAGE = 'usage: node backend_check.js --original O.onnx --rewritten R.onnx --data DIR [--atol 1e-5] [--rtol 1e-4]';
const EXIT_SKIP = 77;


// Files named PREFIX_N.pb in `dir`, ordered by N.
function numberedPb(dir, prefix) {
  const re = new RegExp(`^${prefix}_(\\d+)\\.pb$`);
  return fs.readdirSync(dir)
    .map((f) => [f, re.exec(f)])
    .filter(([, m]) => m)
    .sort((a, b) => Number(a[1][1]) - Number(b[1][1]))
    .map(([f]) => path.join(dir, f));
}

async function main(argv) {
  const args = lib.parseCheckArgs(argv, { original: 'string', rewritten: 'string', data: 'string', atol: 'string', rtol: 'string' },
    ['original', 'rewritten', 'data']);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const tol = { atol: Number(args.atol ?? 1e-5), rtol: Number(args.rtol ?? 1e-4) };
  if (!fs.existsSync(args.data)) throw new UsageError(`no data directory ${args.data}`);
  const sets = fs.readdirSync(args.data).filter((d) => /^test_data_set_\d+$/.test(d)).sort()
    .map((d) => path.join(args.data, d));
  if (!sets.length) throw new UsageError(`${args.data}: no test_data_set_* directories`);

  const ort = lib.requireOrt();
  const test = path.basename(args.data);
  console.log(`backend_check: ${test}: O=${args.original} R=${args.rewritten} atol=${tol.atol} rtol=${tol.rtol}`);

  // The original decides whether this test can say anything: if ORT cannot
  // run it, skip rather than fail.
  let sessO;
  try {
    sessO = await lib.createSession(ort, args.original);
  } catch (e) {
    console.log(`SKIP: ONNX Runtime cannot load the original model: ${oneLine(e.message)}`);
    return EXIT_SKIP;
  }
  let sessR;
  try {
    sessR = await lib.createSession(ort, args.rewritten);
  } catch (e) {
    console.log(`FAIL: ONNX Runtime cannot load the rewritten model: ${oneLine(e.message)}`);
    return 1;
  }
  const missingOut = sessO.outputNames.filter((n) => !sessR.outputNames.includes(n));
  const missingIn = sessO.inputNames.filter((n) => !lib.readGraphInterface(args.rewritten).inputs.includes(n));
  if (missingOut.length || missingIn.length) {
    console.log(`FAIL: the rewritten model lost ${[...missingIn.map((n) => 'input ' + n), ...missingOut.map((n) => 'output ' + n)].join(', ')}`);
    return 1;
  }

  let passed = 0;
  let failed = 0;
  const report = (ok, what, detail) => {
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? 'PASS' : 'FAIL'} ${what}: ${detail}`);
  };

  for (const set of sets) {
    const setName = path.basename(set);
    const inputs = numberedPb(set, 'input').map(lib.loadTensorPb);
    const expected = numberedPb(set, 'output').map(lib.loadTensorPb);
    if (inputs.length !== sessO.inputNames.length) {
      throw new UsageError(`${setName}: ${inputs.length} input_N.pb files but the original takes ${sessO.inputNames.length} inputs (${sessO.inputNames.join(', ')})`);
    }
    if (expected.length > sessO.outputNames.length) {
      throw new UsageError(`${setName}: ${expected.length} output_N.pb files but the original has ${sessO.outputNames.length} outputs`);
    }
    const feeds = {};
    sessO.inputNames.forEach((name, i) => { feeds[name] = inputs[i]; });

    let outO;
    try {
      outO = await lib.runSession(ort, sessO, feeds);
    } catch (e) {
      console.log(`SKIP: ONNX Runtime cannot run the original model on ${setName}: ${oneLine(e.message)}`);
      return EXIT_SKIP;
    }
    // R gets the same feeds and nothing for its state inputs: their defaults
    // must reproduce the original behaviour.
    const unfed = sessR.inputNames.filter((n) => !(n in feeds));
    if (unfed.length) {
      report(false, `${setName} run R`, `R requires input(s) with no default: ${unfed.join(', ')}`);
      continue;
    }
    let outR;
    try {
      outR = await lib.runSession(ort, sessR, feeds);
    } catch (e) {
      report(false, `${setName} run R`, oneLine(e.message));
      continue;
    }
    expected.forEach((want, i) => {
      const name = sessO.outputNames[i];
      // If ORT's own run of O misses the reference, the data cannot judge R;
      // R vs O below still can. Say so instead of blaming the rewrite.
      const oVsRef = lib.compareTensors(outO[name], want, tol);
      const rVsRef = lib.compareTensors(outR[name], want, tol);
      if (!oVsRef.ok && !rVsRef.ok) {
        console.log(`NOTE ${setName} output ${name}: ORT's run of the original also misses the reference `
          + `(${lib.describeComparison(oVsRef, want.dims)}); R is judged against O only`);
      } else {
        report(rVsRef.ok, `${setName} output ${name}: R vs ${path.basename(set)}/output_${i}.pb`,
          lib.describeComparison(rVsRef, want.dims));
      }
    });
    for (const name of sessO.outputNames) {
      const res = lib.compareTensors(outR[name], outO[name], tol);
      report(res.ok, `${setName} output ${name}: R vs O in ORT`, lib.describeComparison(res, outO[name].dims));
    }
  }
  console.log(`backend_check: ${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

function oneLine(msg) {
  return String(msg).replace(/\s+/g, ' ').trim();
}

lib.runScript('backend_check', USAGE, main);
