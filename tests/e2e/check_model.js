#!/usr/bin/env node
'use strict';
// End-to-end check of one rewritten model against its original, in ONNX
// Runtime.
//
//   node check_model.js --original O.onnx --rewritten R.onnx --stripped S.onnx \
//       --report report.json --manifest models/manifest.json --entry FILE_NAME \
//       [--atol 1e-5] [--rtol 0] [--seed 1234] [--chunks N]
//   node check_model.js --state-inputs required --original O.onnx --rewritten R.onnx \
//       --report report.json --manifest models/manifest.json --entry FILE_NAME ...
//
// O is the original model, R the rewriter's output, S a copy of R whose state
// defaults (initializers of the new state inputs) were removed with
// strip-defaults: onnxruntime-node silently ignores a feed for a graph input
// that also has an initializer, so state can only be fed to S. report.json is
// the CLI's --json output for O; models[0].state lists the state pairs.
//
// Checks, one line each:
//   interface  R keeps every input and output of O; each state pair's input
//              and output exist in R. The new inputs/outputs are listed.
//   (i)        With the manifest's test inputs and no state fed, every output
//              of O equals the same-named output of R: the rewrite must not
//              change what the model computes by default.
//   (ii)       If the manifest entry is streamable: the time-indexed inputs are
//              cut into chunks; chunk 1 runs R (defaults in effect), later
//              chunks run S with each state input fed from the previous
//              chunk's pair output. Time-indexed outputs concatenated over the
//              chunks, and the other outputs and the pair outputs of the last
//              chunk, must equal R's whole-sequence run: the exposed state
//              must really carry the recurrence across calls.
//
// With --state-inputs required, R was written with --state-inputs=required:
// its state inputs have no defaults, so onnxruntime-node honours the feeds and
// no stripped copy is needed. The checks become:
//   required   every added state pair is optional: false in the report, and
//              R has no initializer for its input.
//   (i)        O vs R, R fed zeros for every state input (the shape from the
//              report's pair shape, symbolic dims resolved from the test
//              inputs' shapes through R's declared input dims).
//   (ii)       chunk 1 runs R with zero states, later chunks run R with the
//              state fed back; compared with R's whole-sequence run.
// Exit status: 0 all checks passed, 1 a check failed or the models could not
// be run, 2 bad command line or input files.

const lib = require('./lib');

const { UsageError, Checks, readJson, namedList, findEntry, makeInputs } = lib;

const USAGE = 'usage: node check_model.js --original O.onnx --rewritten R.onnx --stripped S.onnx '
  + '--report report.json --manifest manifest.json --entry FILE_NAME [--atol 1e-5] [--rtol 0] '
  + '[--seed N] [--chunks N] [--state-inputs optional|required]';






// Inputs a session requires (ORT's inputNames leaves out those with an
// initializer) that `feeds` does not provide.
function missingFeeds(session, feeds) {
  return session.inputNames.filter((n) => !(n in feeds));
}

// If a model declares a fixed size on an input's time axis, ORT rejects a
// shorter chunk with a terse message; say plainly why instead.
function fixedTimeDimProblems(session, label, inputSpecs, ranges) {
  const problems = [];
  const meta = session.inputMetadata;
  if (!Array.isArray(meta)) return problems; // older onnxruntime-node: let ORT complain
  for (const spec of inputSpecs) {
    if (spec.time_axis === null || spec.time_axis === undefined) continue;
    const m = meta.find((x) => x.name === spec.name);
    if (!m || !m.isTensor || !Array.isArray(m.shape)) continue;
    const dim = m.shape[spec.time_axis];
    const lens = ranges[spec.name].map(([s, e]) => e - s);
    if (typeof dim === 'number' && dim > 0 && lens.some((n) => n !== dim)) {
      problems.push(`${label} declares input ${spec.name} with a fixed time dimension ${dim} (axis ${spec.time_axis}), `
        + `so chunks of ${lens.join('/')} steps cannot be fed`);
    }
  }
  return problems;
}

async function main(argv) {
  const args = lib.parseCheckArgs(argv, {
    original: 'string', rewritten: 'string', stripped: 'string', report: 'string', manifest: 'string',
    entry: 'string', atol: 'string', rtol: 'string', seed: 'string', chunks: 'string',
    'state-inputs': 'string',
  }, ['original', 'rewritten', 'report', 'manifest', 'entry']);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  // a manifest entry may loosen atol (quantized or float16 models are not
  // bit-exact across chunks); the command line overrides it
  const tol = { atol: Number(args.atol ?? 1e-5), rtol: Number(args.rtol ?? 0) };
  const seed = Number(args.seed ?? 1234) >>> 0;
  if (!Number.isFinite(tol.atol) || !Number.isFinite(tol.rtol)) throw new UsageError('bad --atol/--rtol');

  const manifest = readJson(args.manifest, 'manifest');
  const entry = findEntry(manifest, args.entry);
  if (args.atol === undefined && entry.atol !== undefined) tol.atol = Number(entry.atol);
  const inputSpecs = namedList(entry.inputs);
  const outputTimeAxis = new Map(namedList(entry.outputs).map((o) => [o.name, o.time_axis ?? null]));
  const rmodel = lib.readReportModel(args.report);
  const pairs = rmodel.state || [];
  const streamable = entry.streamable === true;
  const mode = args['state-inputs'] ?? 'optional';
  if (mode !== 'optional' && mode !== 'required') throw new UsageError(`--state-inputs ${mode}: optional or required`);
  const required = mode === 'required';
  if (streamable && !required && !args.stripped) throw new UsageError('--stripped is required for a streamable entry');

  const ort = lib.requireOrt();
  const checks = new Checks();
  console.log(`check_model: ${args.entry}: O=${args.original} R=${args.rewritten}`
    + `${args.stripped ? ' S=' + args.stripped : ''} atol=${tol.atol} rtol=${tol.rtol} seed=${seed}`);
  console.log(`state pairs (from report): ${pairs.length ? pairs.map((p) => `${p.input} -> ${p.output}`).join(', ') : 'none'}`);

  // --- interface ---------------------------------------------------------
  // Read the declared graph inputs/outputs directly, since ORT hides inputs
  // that have an initializer (the new state inputs with their defaults).
  const ifO = lib.readGraphInterface(args.original);
  const ifR = lib.readGraphInterface(args.rewritten);
  const lostIn = ifO.inputs.filter((n) => !ifR.inputs.includes(n));
  const lostOut = ifO.outputs.filter((n) => !ifR.outputs.includes(n));
  if (lostIn.length || lostOut.length) {
    checks.fail('interface: R keeps O\'s inputs and outputs',
      `missing from R: ${[...lostIn.map((n) => 'input ' + n), ...lostOut.map((n) => 'output ' + n)].join(', ')}`);
  } else {
    checks.pass('interface: R keeps O\'s inputs and outputs',
      `${ifO.inputs.length} inputs, ${ifO.outputs.length} outputs`);
  }
  const newIn = ifR.inputs.filter((n) => !ifO.inputs.includes(n));
  const newOut = ifR.outputs.filter((n) => !ifO.outputs.includes(n));
  console.log(`new inputs: ${newIn.map((n) => n + (ifR.initializers.has(n) ? ' (has default)' : ' (NO default)')).join(', ') || 'none'}`);
  console.log(`new outputs: ${newOut.join(', ') || 'none'}`);
  const badPairs = pairs.filter((p) => !ifR.inputs.includes(p.input) || !ifR.outputs.includes(p.output));
  if (badPairs.length) {
    checks.fail('interface: state pairs exist in R',
      badPairs.map((p) => `${p.input} -> ${p.output}`).join(', ') + ' not both graph input and output of R');
  } else if (pairs.length) {
    checks.pass('interface: state pairs exist in R', `${pairs.length} pair(s)`);
  }
  if (required) {
    const withDefault = pairs.filter((p) => p.added && (p.optional || ifR.initializers.has(p.input)));
    if (withDefault.length) {
      checks.fail('required: state inputs have no default',
        withDefault.map((p) => `${p.input} (optional ${p.optional}, initializer ${ifR.initializers.has(p.input)})`).join(', '));
    } else {
      checks.pass('required: state inputs have no default', `${pairs.filter((p) => p.added).length} added pair(s)`);
    }
  }
  // Zeros for the state inputs the test inputs do not provide (required mode).
  const declaredR = required ? lib.readModelInfo(args.rewritten).inputs : [];
  const zeroStates = (feeds) => {
    const out = {};
    if (!required) return out;
    for (const p of pairs) {
      if (p.input in feeds) continue;
      out[p.input] = lib.zerosTensor(p.dtype, lib.resolveStateShape(p.shape, declaredR, feeds));
    }
    return out;
  };

  // --- (i) same outputs with no state fed ---------------------------------
  const sessO = await lib.createSession(ort, args.original);
  const sessR = await lib.createSession(ort, args.rewritten);
  const full = makeInputs(inputSpecs, seed);
  const outO = await lib.runSession(ort, sessO, full);
  let whole = null; // R on the whole sequence: the reference for (ii)
  const runR = required ? '(i) run R with zero states' : '(i) run R without state';
  let fullR = full;
  try {
    fullR = { ...full, ...zeroStates(full) };
  } catch (e) {
    checks.fail(runR, e.message);
  }
  const missingR = missingFeeds(sessR, fullR);
  if (missingR.length) {
    checks.fail(runR, `R requires input(s) with no default: ${missingR.join(', ')}`);
  } else {
    try {
      whole = await lib.runSession(ort, sessR, fullR);
    } catch (e) {
      checks.fail(runR, e.message);
    }
  }
  if (whole) {
    for (const name of sessO.outputNames) {
      checks.compare(`(i) output ${name}: O vs R`, whole[name], outO[name], tol);
    }
  }

  // --- (ii) chunked streaming through the state pairs ---------------------
  if (!streamable) {
    console.log('(ii) skipped: manifest entry is not streamable');
  } else if (!whole) {
    checks.fail('(ii) streaming', 'not attempted: R could not be run on the whole sequence');
  } else {
    await checkStreaming({ ort, args, manifest, entry, inputSpecs, outputTimeAxis, pairs, full, whole, sessO, sessR, tol, checks, required, zeroStates });
  }

  console.log(`check_model: ${checks.passed} passed, ${checks.failed} failed`);
  return checks.failed ? 1 : 0;
}

async function checkStreaming(ctx) {
  const { ort, args, manifest, entry, inputSpecs, outputTimeAxis, pairs, full, whole, sessO, sessR, tol, checks, required, zeroStates } = ctx;
  const nChunks = Number(args.chunks ?? entry.chunks ?? manifest.chunks ?? 3);
  const timed = inputSpecs.filter((s) => s.time_axis !== null && s.time_axis !== undefined);
  if (!timed.length) {
    checks.fail('(ii) streaming', 'entry is streamable but no input has a time_axis');
    return;
  }
  // Chunk boundaries per time-indexed input (all normally share one length).
  const ranges = {};
  for (const s of timed) ranges[s.name] = lib.splitRanges(s.shape[s.time_axis], nChunks);
  const desc = timed.map((s) => `${s.name}[axis ${s.time_axis}] ${ranges[s.name].map(([a, b]) => b - a).join('+')}`);
  console.log(`(ii) ${nChunks} chunks: ${desc.join(', ')}; `
    + (required ? `chunk 1 on R with zero states, chunks 2..${nChunks} on R with the state fed back`
      : `chunk 1 on R, chunks 2..${nChunks} on S`));

  // onnxruntime-node silently ignores a feed for an input that has an
  // initializer, so a state default left in S would make chunks 2.. restart
  // from the default and fail confusingly: say so up front. A required-mode
  // R has no defaults (checked above) and is fed directly.
  const sFile = required ? args.rewritten : args.stripped;
  const ifS = lib.readGraphInterface(sFile);
  const unstripped = pairs.filter((p) => ifS.initializers.has(p.input)).map((p) => p.input);
  if (unstripped.length) {
    checks.fail('(ii) streaming', `${required ? 'R' : 'S'} still has a default (initializer) for state input(s) `
      + `${unstripped.join(', ')}; onnxruntime-node would ignore the fed state`
      + (required ? '' : ' (remove them with strip-defaults)'));
    return;
  }
  const sessS = required ? sessR : await lib.createSession(ort, args.stripped);
  const problems = [
    ...fixedTimeDimProblems(sessR, 'R', timed, ranges),
    ...(required ? [] : fixedTimeDimProblems(sessS, 'S', timed, ranges)),
  ];
  if (problems.length) {
    checks.fail('(ii) streaming', problems.join('; '));
    return;
  }

  const chunkOuts = [];
  for (let k = 0; k < nChunks; k++) {
    const feeds = {};
    for (const s of inputSpecs) {
      // Inputs without a time axis (e.g. a user h0) are fed whole, as in the
      // manifest; state pairs override them from chunk 2 on.
      feeds[s.name] = ranges[s.name] ? lib.sliceAxis(full[s.name], s.time_axis, ...ranges[s.name][k]) : full[s.name];
    }
    let sess = sessR;
    if (k === 0) {
      try {
        Object.assign(feeds, zeroStates(feeds));
      } catch (e) {
        checks.fail('(ii) streaming', `chunk 1: ${e.message}`);
        return;
      }
    } else {
      sess = sessS;
      for (const p of pairs) {
        const prev = chunkOuts[k - 1][p.output];
        if (!prev) {
          checks.fail('(ii) streaming', `chunk ${k} did not produce state output ${p.output}`);
          return;
        }
        feeds[p.input] = prev;
      }
    }
    const label = k === 0 || required ? 'R' : 'S';
    const missing = missingFeeds(sess, feeds);
    if (missing.length) {
      checks.fail('(ii) streaming', `chunk ${k + 1}: ${label} requires input(s) not fed: ${missing.join(', ')}`
        + ' (an input that is neither in the manifest nor a state pair input)');
      return;
    }
    try {
      chunkOuts.push(await lib.runSession(ort, sess, feeds));
    } catch (e) {
      checks.fail('(ii) streaming', `chunk ${k + 1} on ${label} failed: ${e.message}`);
      return;
    }
  }

  // Compare O's outputs and every pair output.
  const names = [...sessO.outputNames];
  for (const p of pairs) if (!names.includes(p.output)) names.push(p.output);
  const last = chunkOuts[nChunks - 1];
  for (const name of names) {
    let axis = outputTimeAxis.get(name);
    if (axis === undefined) {
      if (!pairs.some((p) => p.output === name)) {
        console.log(`note: output ${name} is not in the manifest; treated as not time-indexed`);
      }
      axis = null;
    }
    if (axis === null) {
      checks.compare(`(ii) output ${name}: last chunk vs whole run`, last[name], whole[name], tol);
    } else {
      const parts = chunkOuts.map((o) => o[name]);
      if (parts.some((t) => !t)) {
        checks.fail(`(ii) output ${name}: chunks concatenated vs whole run`, 'missing from a chunk\'s outputs');
        continue;
      }
      let joined;
      try {
        joined = lib.concatAxis(parts, axis);
      } catch (e) {
        checks.fail(`(ii) output ${name}: chunks concatenated vs whole run`, e.message);
        continue;
      }
      checks.compare(`(ii) output ${name}: chunks concatenated on axis ${axis} vs whole run`, joined, whole[name], tol);
    }
  }
}

lib.runScript('check_model', USAGE, main);
