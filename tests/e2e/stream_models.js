#!/usr/bin/env node
'use strict';
// End-to-end check of one streaming test model (models/stream/, issue 22):
// the verdict rnnstate-rewrite gives, and that an `exact` model really
// streams in ONNX Runtime with every reported pair fed back.
//
//   node stream_models.js --tool build/rnnstate-rewrite --strip build/tests/strip-defaults \
//       --manifest models/stream/manifest.json --entry NAME --work DIR [--seed N]
//
// NAME is the entry's file, with or without .onnx. The entry says what the
// tool must report ("expected": verdict, chunk_multiple, the number of
// context and recurrent pairs, blockers as { op, reason_contains }, where op
// may be a list of acceptable op types) and the test inputs (batch 2; a time
// length that is a multiple of the chunk multiple K).
//
// Checks, one line each:
//   original   exact models: the outputs of prefixes of K, 4K and 6K frames
//              equal the prefixes of the whole-sequence outputs (the model is
//              causal, so exact streaming is possible at all); the others: some
//              prefix differs (the model really looks across time, so `none` is
//              the right verdict).
// Then, for --state-inputs=optional and =required, the tool is run on the
// model (--json --check plus the entry's "args") and:
//   report     the report validates against docs/report.schema.json; its
//              time_axes are the entry's timed inputs; stream.verdict,
//              stream.chunk_multiple (unless the entry's is null), the number
//              of state pairs of kind "context" and of kind "recurrent", and
//              the blockers (each expected one matched by a reported one;
//              none for an exact model) are as expected; required mode: every
//              added pair is optional: false.
//   metadata   rnnstate.stream equals the report's stream, rnnstate.state the
//              report's pairs (without "added").
//   (i)        no state fed (optional) or zeros fed (required): the rewritten
//              model gives the original's outputs.
//   (ii)       exact models: the timed inputs cut into unequal chunks of K, 3K,
//              2K and the rest frames; every reported pair fed zeros at the
//              first call, then its output of the previous call; the chunked
//              outputs concatenated along their time axes equal the original's
//              whole-sequence outputs. In optional mode the calls run on a
//              copy of R without the state defaults (strip-defaults), since
//              onnxruntime-node ignores a feed for an input with an initializer.
// A state shape whose symbolic dimensions the test inputs do not bind (a
// recurrent node whose batch is batch * frequency) is the shape of the pair's
// output when the optional-mode R runs on the same inputs without state.
// Exit status: 0 pass, 1 a check failed, 2 bad command line or input files.

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const lib = require('./lib');

const { Checks, UsageError, readJson, namedList, findEntry, makeInputs } = lib;

const USAGE = 'usage: node stream_models.js --tool rnnstate-rewrite --strip strip-defaults '
  + '--manifest models/stream/manifest.json --entry NAME --work DIR [--seed N]';
const TOL = { atol: 1e-5, rtol: 0 };
const VALIDATOR = path.join(__dirname, 'validate_report.js');

const timedSpecs = (specs) => specs.filter((s) => s.time_axis !== null && s.time_axis !== undefined);
// JSON with every object's keys sorted: equal values compare equal whatever
// order the writer put their keys in.
const canonical = (v) => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x));
const sameJson = (a, b) => canonical(a) === canonical(b);

// Chunk lengths K, 3K, 2K, then the rest (leaving out lengths that would not fit).
function chunkLengths(frames, k) {
  const out = [];
  let left = frames;
  for (const n of [k, 3 * k, 2 * k]) {
    if (n >= left) break;
    out.push(n);
    left -= n;
  }
  out.push(left);
  return out;
}

// The entry's inputs cut to `frames` frames along their time axes (others whole).
function cutInputs(specs, full, start, end) {
  const feeds = {};
  for (const s of specs) {
    const timed = s.time_axis !== null && s.time_axis !== undefined;
    feeds[s.name] = timed ? lib.sliceAxis(full[s.name], s.time_axis, start, end) : full[s.name];
  }
  return feeds;
}

// The original's prefix property at K, 4K and 6K frames. Returns the largest
// difference seen and the first prefix that broke it (or null).
async function prefixProperty(ctx, sessO, full, whole) {
  const { specs, outputAxes, k, frames } = ctx;
  let worst = 0;
  let broken = null;
  for (const n of [k, 4 * k, 6 * k].filter((m) => m < frames)) {
    const part = await lib.runSession(ctx.ort, sessO, cutInputs(specs, full, 0, n));
    for (const [name, t] of Object.entries(part)) {
      const axis = outputAxes.get(name);
      if (axis === null || axis === undefined) continue;
      const res = lib.compareTensors(t, lib.sliceAxis(whole[name], axis, 0, t.dims[axis]), TOL);
      worst = Math.max(worst, res.maxAbs);
      if (!res.ok && !broken) broken = `${n} frames, output ${name}: max |diff| ${lib.fmt(res.maxAbs)}`;
    }
  }
  return { worst, broken };
}

function runTool(ctx, mode) {
  const out = path.join(ctx.work, `${mode}.onnx`);
  const argv = [ctx.model, '-o', out, '--json', '--check', `--state-inputs=${mode}`, ...ctx.entry.args];
  const res = spawnSync(ctx.tool, argv, { encoding: 'utf8' });
  const reportFile = path.join(ctx.work, `${mode}.json`);
  fs.writeFileSync(reportFile, res.stdout || '');
  if (res.error) throw new Error(`cannot run ${ctx.tool}: ${res.error.message}`);
  const command = `${path.basename(ctx.tool)} ${argv.join(' ')}`;
  if (res.status !== 0) {
    return { problem: `${command}: exit status ${res.status}: ${(res.stderr || '').trim().split('\n').slice(-2).join(' | ')}` };
  }
  console.log(`rewrote: ${command}`);
  return { rewritten: out, reportFile, rmodel: lib.readReportModel(reportFile) };
}

// Reported blockers matched against the expected ones.
function checkBlockers(label, expected, reported, checks) {
  const show = (b) => `${b.op} '${b.name}': ${b.reason}`;
  if (!expected.length) {
    if (reported.length) checks.fail(`${label}: no blockers`, reported.map(show).join('; '));
    else checks.pass(`${label}: no blockers`);
    return;
  }
  for (const want of expected) {
    const ops = Array.isArray(want.op) ? want.op : [want.op];
    const text = `${ops.join(' or ')} ${want.reason_contains ? `saying "${want.reason_contains}"` : ''}`;
    const hit = reported.find((b) => ops.includes(b.op)
      && String(b.reason || '').toLowerCase().includes(want.reason_contains.toLowerCase()));
    if (hit) checks.pass(`${label}: blocker ${text}`, show(hit));
    else checks.fail(`${label}: blocker ${text}`, `reported: ${reported.map(show).join('; ') || 'none'}`);
  }
}

function checkReport(ctx, mode, run) {
  const { entry, checks } = ctx;
  const want = entry.expected;
  const label = `${mode}: report`;
  const r = run.rmodel;
  const valid = spawnSync(process.execPath, [VALIDATOR, run.reportFile], { encoding: 'utf8' });
  if (valid.status === 0) checks.pass(`${label}: validates against docs/report.schema.json`);
  else checks.fail(`${label}: validates against docs/report.schema.json`, `${valid.stdout}${valid.stderr}`.trim());

  const wantAxes = timedSpecs(ctx.specs).map((s) => `${s.name}:${s.time_axis}`).sort();
  const gotAxes = (r.time_axes || []).map((t) => `${t.input}:${t.axis}`).sort();
  if (sameJson(wantAxes, gotAxes)) checks.pass(`${label}: time_axes`, wantAxes.join(', '));
  else checks.fail(`${label}: time_axes`, `expected [${wantAxes.join(', ')}], reported [${gotAxes.join(', ')}]`);

  const stream = r.stream;
  if (!stream || typeof stream !== 'object') {
    checks.fail(`${label}: stream`, `the report has no stream object (stream: ${JSON.stringify(stream)})`);
  } else {
    if (stream.verdict === want.verdict) checks.pass(`${label}: verdict`, want.verdict);
    else checks.fail(`${label}: verdict`, `expected ${want.verdict}, reported ${stream.verdict}`);
    if (want.chunk_multiple !== null) {
      if (stream.chunk_multiple === want.chunk_multiple) checks.pass(`${label}: chunk_multiple`, String(want.chunk_multiple));
      else checks.fail(`${label}: chunk_multiple`, `expected ${want.chunk_multiple}, reported ${stream.chunk_multiple}`);
    }
    checkBlockers(label, want.blockers, stream.blockers || [], checks);
  }
  const pairs = r.state || [];
  for (const kind of ['context', 'recurrent']) {
    const got = pairs.filter((p) => p.kind === kind);
    const n = want[`${kind}_pairs`];
    const detail = got.map((p) => `${p.input} ${JSON.stringify(p.shape)}`).join(', ');
    if (got.length === n) checks.pass(`${label}: ${kind} pairs`, `${n}${detail ? ': ' + detail : ''}`);
    else checks.fail(`${label}: ${kind} pairs`, `expected ${n}, reported ${got.length}${detail ? ': ' + detail : ''}`);
  }
  const unkinded = pairs.filter((p) => p.kind !== 'context' && p.kind !== 'recurrent');
  if (unkinded.length) {
    checks.fail(`${label}: every pair has a kind`, unkinded.map((p) => `${p.input}: kind ${p.kind}`).join(', '));
  }
  if (mode === 'required') {
    const optional = pairs.filter((p) => p.added && p.optional);
    if (optional.length) checks.fail(`${label}: added pairs are required`, optional.map((p) => p.input).join(', '));
    else checks.pass(`${label}: added pairs are required`);
  }
}

function checkMetadata(ctx, mode, run) {
  const { checks } = ctx;
  const meta = lib.readModelInfo(run.rewritten).metadata;
  const parsed = (key) => {
    try {
      return JSON.parse(meta[key] ?? 'null');
    } catch (e) {
      return `unparsable: ${e.message}`;
    }
  };
  const stream = run.rmodel.stream ?? null;
  if (sameJson(parsed('rnnstate.stream'), stream)) checks.pass(`${mode}: metadata rnnstate.stream is the report's stream`);
  else checks.fail(`${mode}: metadata rnnstate.stream is the report's stream`, `metadata ${meta['rnnstate.stream']}, report ${JSON.stringify(stream)}`);
  const pairs = (run.rmodel.state || []).map(({ added, ...p }) => p);
  const want = pairs.length ? pairs : null;
  if (sameJson(parsed('rnnstate.state'), want)) checks.pass(`${mode}: metadata rnnstate.state lists the report's pairs`);
  else checks.fail(`${mode}: metadata rnnstate.state lists the report's pairs`, `metadata ${meta['rnnstate.state']}, report ${JSON.stringify(want)}`);
}

// Zeros for every pair: the shape from the pair, its symbolic dimensions bound
// by R's declared inputs and these feeds, else the shape of the pair's output
// when the optional-mode R runs on these feeds without state.
async function zeroStates(ctx, pairs, declared, feeds) {
  const bound = lib.boundDims(declared, feeds);
  const out = {};
  let probed = null;
  for (const p of pairs) {
    let dims = p.shape.map((d) => (typeof d === 'number' ? d : bound.get(d) ?? null));
    if (dims.some((d) => d === null)) {
      if (!ctx.probe) throw new Error(`the shape ${JSON.stringify(p.shape)} of ${p.input} is not bound by the test inputs`);
      probed = probed || await lib.runSession(ctx.ort, ctx.probe, feeds);
      if (!probed[p.output]) throw new Error(`the optional-mode R has no output ${p.output} to take its shape from`);
      dims = probed[p.output].dims;
    }
    out[p.input] = lib.zerosTensor(p.dtype, dims);
  }
  return out;
}

// The model the calls run on: R itself in required mode, R without the
// defaults of the added optional pairs in optional mode.
function streamingCopy(ctx, mode, run) {
  const defaults = (run.rmodel.state || []).filter((p) => p.optional && p.added).map((p) => p.input);
  if (mode === 'required' || !defaults.length) return run.rewritten;
  const stripped = path.join(ctx.work, 'optional.stripped.onnx');
  const res = spawnSync(ctx.strip, [run.rewritten, stripped, ...defaults], { encoding: 'utf8' });
  if (res.error || res.status !== 0) {
    throw new Error(`${ctx.strip} failed: ${res.error ? res.error.message : (res.stderr || '').trim()}`);
  }
  return stripped;
}

function compareOutputs(label, got, want, checks, outputAxes) {
  for (const name of Object.keys(want)) {
    const axis = outputAxes ? outputAxes.get(name) : null;
    checks.compare(`${label} ${name}${axis !== null && axis !== undefined ? ` (concatenated on axis ${axis})` : ''}`,
      got[name], want[name], TOL);
  }
}

async function checkRuns(ctx, mode, run, full, whole) {
  const { ort, specs, outputAxes, checks } = ctx;
  const pairs = run.rmodel.state || [];
  const declared = lib.readModelInfo(run.rewritten).inputs;
  const sessR = await lib.createSession(ort, run.rewritten);
  if (mode === 'optional') ctx.probe = sessR;

  // (i) the whole sequence without state (optional) or with zeros (required)
  let feeds = { ...full };
  try {
    if (mode === 'required') Object.assign(feeds, await zeroStates(ctx, pairs, declared, full));
    const out = await lib.runSession(ort, sessR, feeds);
    compareOutputs(`${mode}: (i) ${mode === 'optional' ? 'no state fed' : 'zeros fed'}: R vs O output`, out, whole, checks);
  } catch (e) {
    checks.fail(`${mode}: (i) R on the whole sequence`, e.message);
  }
  if (ctx.entry.expected.verdict !== 'exact') return;

  // (ii) unequal chunks, every pair fed from zeros and fed back
  const timed = timedSpecs(specs);
  const frames = timed[0].shape[timed[0].time_axis];
  const lengths = chunkLengths(frames, ctx.k);
  const label = `${mode}: (ii) ${lengths.length} chunks (${lengths.join('+')} frames), ${pairs.length} pair(s) fed back`;
  const outs = [];
  try {
    const sessS = mode === 'required' ? sessR : await lib.createSession(ort, streamingCopy(ctx, mode, run));
    let start = 0;
    let prev = null;
    for (const [i, n] of lengths.entries()) {
      feeds = cutInputs(specs, full, start, start + n);
      if (prev === null) Object.assign(feeds, await zeroStates(ctx, pairs, declared, feeds));
      else {
        for (const p of pairs) {
          if (!prev[p.output]) throw new Error(`call ${i}: no output ${p.output}`);
          feeds[p.input] = prev[p.output];
        }
      }
      prev = await lib.runSession(ort, sessS, feeds).catch((e) => { throw new Error(`call ${i + 1}: ${e.message}`); });
      outs.push(prev);
      start += n;
    }
  } catch (e) {
    checks.fail(label, e.message);
    return;
  }
  checks.pass(label);
  const joined = {};
  for (const name of Object.keys(whole)) {
    const axis = outputAxes.get(name);
    try {
      joined[name] = axis === null || axis === undefined ? outs[outs.length - 1][name]
        : lib.concatAxis(outs.map((o) => o[name]), axis);
    } catch (e) {
      checks.fail(`${mode}: (ii) output ${name}`, e.message);
    }
  }
  compareOutputs(`${mode}: (ii) chunks vs O's whole run: output`, joined, whole, checks, outputAxes);
}

async function main(argv) {
  const args = lib.parseCheckArgs(argv, {
    tool: 'string', strip: 'string', manifest: 'string', entry: 'string', work: 'string', seed: 'string',
  }, ['tool', 'strip', 'manifest', 'entry', 'work']);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const manifest = readJson(args.manifest, 'manifest');
  const file = args.entry.endsWith('.onnx') ? args.entry : `${args.entry}.onnx`;
  const entry = { args: [], ...findEntry(manifest, file) };
  if (!entry.expected) throw new UsageError(`${file}: the manifest entry has no "expected"`);
  if (entry.pending) {
    // a known gap of the analysis, said in the manifest: skipped, not passed
    console.log(`SKIP ${file}: pending: ${entry.pending}`);
    return 77;
  }
  const model = path.join(path.dirname(args.manifest), entry.file);
  if (!fs.existsSync(model)) throw new UsageError(`${model}: no such model`);
  const specs = namedList(entry.inputs);
  if (!timedSpecs(specs).length) throw new UsageError(`${file}: no input has a time_axis`);
  fs.rmSync(args.work, { recursive: true, force: true });
  fs.mkdirSync(args.work, { recursive: true });

  const ort = lib.requireOrt();
  const checks = new Checks();
  const timed = timedSpecs(specs)[0];
  const ctx = {
    ort, entry, model, specs, checks,
    tool: path.resolve(args.tool),
    strip: path.resolve(args.strip),
    work: args.work,
    k: entry.expected.chunk_multiple || 1,
    frames: timed.shape[timed.time_axis],
    outputAxes: new Map(namedList(entry.outputs).map((o) => [o.name, o.time_axis ?? null])),
    probe: null, // the optional-mode R, run without state for the shapes of unbound pairs
  };
  const want = entry.expected;
  console.log(`stream_models: ${file}: ${entry.description}`);
  console.log(`expected: ${want.verdict}${want.chunk_multiple ? `, chunks of any multiple of ${want.chunk_multiple}` : ''}, `
    + `${want.context_pairs} context and ${want.recurrent_pairs} recurrent pair(s)`
    + `${want.blockers.length ? `, blockers ${want.blockers.map((b) => [].concat(b.op).join('|')).join(', ')}` : ''}`);

  const sessO = await lib.createSession(ort, model);
  const full = makeInputs(specs, Number(args.seed ?? 1234) >>> 0);
  const whole = await lib.runSession(ort, sessO, full);
  const prefix = await prefixProperty(ctx, sessO, full, whole);
  if (want.verdict === 'exact') {
    if (prefix.broken) checks.fail('original: causal (prefix outputs = prefix of the outputs)', prefix.broken);
    else checks.pass('original: causal (prefix outputs = prefix of the outputs)', `max |diff| ${lib.fmt(prefix.worst)}`);
  } else if (prefix.broken) {
    checks.pass('original: looks across time (a prefix changes earlier outputs)', prefix.broken);
  } else {
    checks.fail('original: looks across time (a prefix changes earlier outputs)', 'every prefix agreed: the model is causal');
  }

  // optional first: its R, run without state, gives the shapes of unbound pairs
  for (const mode of ['optional', 'required']) {
    const run = runTool(ctx, mode);
    if (run.problem) {
      checks.fail(`${mode}: rewrite`, run.problem);
      continue;
    }
    checkReport(ctx, mode, run);
    checkMetadata(ctx, mode, run);
    await checkRuns(ctx, mode, run, full, whole);
  }
  console.log(`stream_models: ${file}: ${checks.passed} passed, ${checks.failed} failed`);
  return checks.failed ? 1 : 0;
}

lib.runScript('stream_models', USAGE, main);
