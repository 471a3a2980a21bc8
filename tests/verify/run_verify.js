#!/usr/bin/env node
'use strict';
// rnnstate-verify on one model of a manifest, as a user runs it after the
// rewrite, in both --state-inputs modes:
//   node run_verify.js TOOL WORKDIR MODEL.onnx MANIFEST.json
// The model is rewritten with TOOL; its manifest test inputs are written as
// .npy files and fed with --input; the chunked check runs with the manifest's
// number of chunks on streamable models (--chunks 0 on the others: a fixed
// sequence length, a bidirectional node, one frame per call). The time axis
// comes from the rewritten model's metadata and must be the manifest's.
// Already-stateful models, which the rewriter leaves unchanged and without
// metadata, get their pairs from the report (--pair) and the manifest's time
// axis (--time). Layout-1 models, which ONNX Runtime cannot run, are converted
// with --to-layout0 and verified against themselves: only the chunked check
// means something there.
// Every check must pass, except where the manifest entry names a known fault
// of the rewrite ("verify_fails": { check, reason, why }): that check must
// then fail with that reason, and only it. Exit status: 0 pass, 1 fail, 77
// model absent.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

function timeAxesOf(entry) {
  return Object.entries(entry.inputs).filter(([, s]) => s.time_axis !== null && s.time_axis !== undefined)
    .map(([input, s]) => ({ input, axis: s.time_axis }));
}

function verifyArgs(entry, report, ctx) {
  const args = [ctx.original, ctx.rewritten, ...ctx.npyArgs, '--chunks', String(entry.streamable ? entry.chunks : 0)];
  if (entry.atol !== undefined) args.push('--atol', String(entry.atol));
  if (report.status === 'unchanged') {
    for (const p of report.state) args.push('--pair', `${p.input}=${p.output}`);
    if (entry.streamable) for (const t of timeAxesOf(entry)) args.push('--time', `${t.input}:${t.axis}`);
  }
  return args;
}

// What must hold of a verify result beyond "pass": the chunked check ran on
// streamable models, along the recorded time axis where the model was changed.
function expectations(entry, report, result) {
  const problems = [];
  const chunked = result.checks.find((c) => c.name === 'chunked');
  if (chunked.status !== (entry.streamable ? 'pass' : 'skipped')) problems.push(`chunked check ${chunked.status}`);
  if (entry.streamable && report.status === 'rewritten') {
    const want = JSON.stringify(timeAxesOf(entry));
    const got = JSON.stringify(result.time_axes);
    if (result.time_axes_from !== 'rnnstate.time' || got !== want) {
      problems.push(`time axes ${got} from ${result.time_axes_from}, expected ${want} from rnnstate.time`);
    }
  }
  return problems;
}

// A known fault of the rewrite (entry.verify_fails) must show as that
// check failing, with its reason, and nothing else failing.
function knownFault(entry, r) {
  const want = entry.verify_fails;
  const failing = r.result.checks.filter((c) => c.status === 'fail');
  if (r.status === 1 && failing.length === 1 && failing[0].name === want.check && failing[0].reason.includes(want.reason)) {
    console.log(`  (known fault of the rewrite, ${want.why})`);
    return [];
  }
  return [`expected only the ${want.check} check to fail with "${want.reason}" (${want.why})`];
}

function main(argv) {
  const [tool, work, model, manifest] = argv;
  if (!fs.existsSync(model)) {
    console.log(`SKIP: ${model} is not here (../shared/models is only in the project's workplace)`);
    return 77;
  }
  h.requirePackageInstalled();
  const entry = h.findEntry(manifest, path.basename(model));
  const name = path.basename(model, '.onnx');
  const dir = path.join(work, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const npyArgs = h.writeNpyInputs(entry, dir);
  const layout0 = entry.ort === false && fs.existsSync(model.replace(/\.onnx$/, '.test'));
  const modes = entry.ort_optional === false ? ['required'] : ['optional', 'required'];
  let failed = 0;
  for (const mode of modes) {
    const rewritten = path.join(dir, `${mode}.onnx`);
    const report = h.rewrite(tool, model, rewritten, [`--state-inputs=${mode}`, ...(layout0 ? ['--to-layout0'] : [])]);
    const args = verifyArgs(entry, report, { original: layout0 ? rewritten : model, rewritten, npyArgs });
    const r = h.runVerify(args);
    console.log(`rnnstate-verify ${args.join(' ')}\n  exit ${r.status}${r.stderr ? ', ' + r.stderr.trim() : ''}`);
    if (r.result) console.log(h.describe(r.result));
    let problems;
    if (!r.result) problems = [`exit ${r.status}, no result`];
    else if (entry.verify_fails) problems = knownFault(entry, r);
    else {
      problems = expectations(entry, report, r.result);
      if (r.status !== 0 || r.result.status !== 'pass') problems.unshift(`exit ${r.status}`);
    }
    console.log(`${problems.length ? 'FAIL' : 'PASS'} ${name} --state-inputs=${mode}${problems.length ? ': ' + problems.join('; ') : ''}`);
    if (problems.length) failed++;
  }
  let checked = modes.length;
  if (layout0) {
    // Given the batch-first original itself, which ONNX Runtime refuses,
    // rnnstate-verify skips the no-state check and says why (and how to
    // convert), and still passes on the chunked check (issue 25, item 4).
    checked++;
    const rewritten = path.join(dir, 'optional.onnx');
    const report = h.rewrite(tool, model, rewritten, ['--to-layout0']);
    const args = verifyArgs(entry, report, { original: model, rewritten, npyArgs });
    const r = h.runVerify(args);
    const checks = r.result ? Object.fromEntries(r.result.checks.map((c) => [c.name, c])) : {};
    const problems = [];
    if (r.status !== 0) problems.push(`exit ${r.status}`);
    const ns = checks['no-state'];
    if (!ns || ns.status !== 'skipped') problems.push(`no-state is ${ns ? ns.status : 'missing'}, not skipped`);
    else if (!/ONNX Runtime cannot run ORIGINAL.*layout=1.*--to-layout0.*this check is skipped/.test(ns.reason)) {
      problems.push(`no-state's reason does not say why it is skipped and how to convert: ${ns.reason}`);
    }
    if (!checks.chunked || checks.chunked.status !== 'pass') problems.push('chunked did not pass');
    console.log(`${problems.length ? 'FAIL' : 'PASS'} ${name}: the batch-first original, which ONNX Runtime refuses: `
      + `${problems.length ? problems.join('; ') : 'no-state skipped with the reason, chunked passes'}`);
    if (problems.length) failed++;
  }
  console.log(`${checked - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
