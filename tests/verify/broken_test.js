#!/usr/bin/env node
'use strict';
// rnnstate-verify on rewrites broken on purpose must FAIL (exit 1), in the
// checks that catch the fault, the first with its reason, and pass the checks
// the fault does not touch:
//   node broken_test.js TOOL WORKDIR MODELS_DIR
//   not fed back   denoiser_gru rewritten, its metadata without the second
//                  GRU's pair: that state input keeps its default, so the
//                  layer restarts from zeros at every chunk
//   wrong pair     denoiser_gru with the two GRUs' outputs swapped in the
//                  metadata: each layer gets the other's state
//   left out       denoiser_gru rewritten with --exclude on its second GRU,
//                  whose zero state stays inside the graph
//   bidirectional  bidirectional_lstm rewritten (with the tool's warning)
// The unbroken denoiser_gru rewrite passes first, on the same inputs, so
// each failure is the fault's doing. Exit status: 0 pass, 1 fail.

const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const STATE_KEY = 'rnnstate.state';

function metadataPairs(file) {
  const { readModelInfo } = require(path.join(h.PACKAGE, 'lib', 'onnx_model'));
  return JSON.parse(readModelInfo(file).metadata[STATE_KEY]);
}

// The verdict recorded in rnnstate.stream, or null.
function streamVerdict(file) {
  const { readModelInfo } = require(path.join(h.PACKAGE, 'lib', 'onnx_model'));
  const text = readModelInfo(file).metadata['rnnstate.stream'];
  return text ? JSON.parse(text).verdict : null;
}

// A copy of `file` whose rnnstate.state pairs are edit(pairs).
function editPairs(file, out, edit) {
  fs.writeFileSync(out, h.withMetadata(fs.readFileSync(file), STATE_KEY, JSON.stringify(edit(metadataPairs(file)))));
  return out;
}

function main(argv) {
  const [tool, work, models] = argv;
  h.requirePackageInstalled();
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  const denoiser = path.join(models, 'denoiser_gru.onnx');
  const good = path.join(work, 'denoiser_gru.onnx');
  h.rewrite(tool, denoiser, good);
  const leftOut = path.join(work, 'left_out.onnx');
  h.rewrite(tool, denoiser, leftOut, ['--exclude', '/rnn/GRU_1']);
  const bidirectional = path.join(work, 'bidirectional_lstm.onnx');
  h.rewrite(tool, path.join(models, 'bidirectional_lstm.onnx'), bidirectional);
  const cases = [
    { name: 'unbroken rewrite', original: denoiser, rewritten: good, fails: [] },
    {
      name: 'a state output not fed back',
      original: denoiser,
      rewritten: editPairs(good, path.join(work, 'not_fed_back.onnx'), (pairs) => pairs.slice(0, 1)),
      fails: ['pairs', 'chunked'],
      reason: 'input GRU_1_initial_h is in no state pair: its state is never fed back',
      outputs: ['mask', 'GRU_1_Y_h'],
    },
    {
      name: 'a wrong pair',
      original: denoiser,
      rewritten: editPairs(good, path.join(work, 'wrong_pair.onnx'),
        (pairs) => [{ ...pairs[0], output: pairs[1].output }, { ...pairs[1], output: pairs[0].output }]),
      fails: ['chunked'],
      reason: 'every state pair fed back, do not give the whole-sequence outputs',
      outputs: ['mask', 'GRU_0_Y_h', 'GRU_1_Y_h'],
    },
    {
      name: 'a node left out of the rewrite (--exclude)',
      original: denoiser,
      rewritten: leftOut,
      fails: ['chunked'],
      // the rewriter's verdict names the node whose state is not carried
      reason: "'/rnn/GRU_1': runs along time but its state is not carried (excluded by pattern",
      outputs: [],
    },
    {
      name: 'a bidirectional node',
      original: path.join(models, 'bidirectional_lstm.onnx'),
      rewritten: bidirectional,
      fails: ['chunked'],
      // the rewriter's verdict where it records one (rnnstate.stream), else
      // verify's own finding
      reason: streamVerdict(bidirectional) === 'none'
        ? 'REWRITTEN cannot stream exactly (rnnstate.stream: verdict none)'
        : "recurrent node(s) '/rnn/LSTM' (LSTM, bidirectional) run backwards over the sequence",
      outputs: [],
    },
  ];
  let failed = 0;
  for (const c of cases) {
    const r = h.runVerify([c.original, c.rewritten]);
    const problems = [];
    if (!r.result) {
      problems.push(`no JSON result (exit ${r.status}: ${r.stderr.trim()})`);
    } else {
      console.log(h.describe(r.result));
      const exit = c.fails.length ? 1 : 0;
      if (r.status !== exit) problems.push(`exit ${r.status}, expected ${exit}`);
      for (const k of r.result.checks) {
        const should = c.fails.includes(k.name) ? 'fail' : 'pass';
        if (k.status !== should) problems.push(`${k.name} ${k.status}, expected ${should}`);
        if (k.name === c.fails[0] && !k.reason.includes(c.reason)) {
          problems.push(`${k.name}: reason "${k.reason}" lacks "${c.reason}"`);
        }
        const failing = k.outputs.filter((o) => o.status === 'fail').map((o) => o.name);
        if (k.name === 'chunked' && c.outputs && failing.join() !== c.outputs.join()) {
          problems.push(`${k.name}: failing outputs [${failing}], expected [${c.outputs}]`);
        }
      }
    }
    console.log(`${problems.length ? 'FAIL' : 'PASS'} ${c.name}: rnnstate-verify `
      + `${c.fails.length ? `fails the ${c.fails.join(' and ')} check` : 'passes'}${problems.length ? ': ' + problems.join('; ') : ''}`);
    if (problems.length) failed++;
  }
  console.log(`${cases.length - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
