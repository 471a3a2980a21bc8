#!/usr/bin/env node
'use strict';
// rnnstate-verify ORIGINAL REWRITTEN: proves a rewrite by rnnstate-rewrite on
// the model itself, in ONNX Runtime. See USAGE.

const { verify, UsageError, DEFAULTS, oneLine } = require('../lib/verify');
const { describeBlockers } = require('../lib/state');
const { version } = require('../package.json');

const USAGE = `usage: rnnstate-verify [OPTIONS] ORIGINAL REWRITTEN

Checks, in ONNX Runtime, that REWRITTEN (ORIGINAL after rnnstate-rewrite)
  pairs     has state pairs that are graph inputs and outputs of one type and shape;
  no-state  gives ORIGINAL's outputs when no state is fed;
  chunked   gives the whole-sequence outputs when the sequence is cut into chunks
            of unequal sizes and every state pair is fed back from one call to the next.
The pairs, the time axis and the streaming verdict come from REWRITTEN's metadata
(rnnstate.state, rnnstate.time, rnnstate.stream): chunks are multiples of the verdict's
chunk_multiple; on a model whose verdict is 'none' the chunked check fails with the
rewriter's blockers as its reason; an 'unknown' verdict is named in the check's reason.

Inputs:
      --input NAME=FILE.npy  feed input NAME from a .npy file (repeatable); the other
                             inputs are random, shaped as ORIGINAL declares them
      --dim NAME=VALUE       size of the symbolic dimension NAME of random inputs (repeatable;
                             default ${DEFAULTS.timeLength} on a time axis, rounded up to a multiple of
                             chunk_multiple, ${DEFAULTS.otherDim} elsewhere)
      --seed N               seed of the random inputs (default ${DEFAULTS.seed})
Chunks:
      --chunks N             number of chunks (default ${DEFAULTS.chunks}; 0 skips the chunked check)
      --time INPUT:AXIS      the sequence axis (repeatable; default: rnnstate.time)
      --pair INPUT=OUTPUT    a state pair (repeatable; default: rnnstate.state), e.g. for a
                             model never run through rnnstate-rewrite
      --max-elements N       the most elements of one tensor verify reads or builds (an
                             input, a state's zeros; default ${DEFAULTS.maxElements}): a larger one
                             is refused before it is allocated
Result:
      --atol X, --rtol X     an element passes when |got - expected| <= atol + rtol * |expected|
                             (default ${DEFAULTS.atol} and ${DEFAULTS.rtol})
      --json                 print the result as one JSON document
  -h, --help, -V, --version

Prints, per output, the largest absolute and relative difference and PASS or FAIL.
Model and .npy files must be regular files (not FIFOs or devices); every error is one
line naming the file.
Exit status: 0 every check passed, 1 a check failed or a model or input file could not
be read or run, 2 usage error.`;

function splitPair(value, sep, option) {
  const at = value.lastIndexOf(sep);
  if (at <= 0 || at === value.length - 1) {
    throw new UsageError(`${option} ${value}: expected ${option === '--time' ? 'INPUT:AXIS' : `NAME${sep}VALUE`}`);
  }
  return [value.slice(0, at), value.slice(at + 1)];
}

function nonNegativeInt(value, option) {
  if (!/^\d+$/.test(value)) throw new UsageError(`${option} ${value}: expected a whole number`);
  return Number(value);
}

function tolerance(value, option) {
  const x = Number(value);
  if (value === '' || !Number.isFinite(x) || x < 0) throw new UsageError(`${option} ${value}: expected a number >= 0`);
  return x;
}

// Options that take a value, and what each does with it.
const VALUE_OPTIONS = {
  '--input': (o, v) => { const [n, f] = splitPair(v, '=', '--input'); o.inputs.set(n, f); },
  '--dim': (o, v) => {
    const [n, x] = splitPair(v, '=', '--dim');
    const value = nonNegativeInt(x, '--dim');
    if (value === 0) throw new UsageError(`--dim ${v}: a dimension must be at least 1`);
    o.dims.set(n, value);
  },
  '--max-elements': (o, v) => {
    o.maxElements = nonNegativeInt(v, '--max-elements');
    if (o.maxElements === 0 || !Number.isSafeInteger(o.maxElements)) {
      throw new UsageError(`--max-elements ${v}: expected a whole number from 1 to 2^53-1`);
    }
  },
  '--seed': (o, v) => { o.seed = nonNegativeInt(v, '--seed') >>> 0; },
  '--chunks': (o, v) => { o.chunks = nonNegativeInt(v, '--chunks'); },
  '--time': (o, v) => {
    const [input, axis] = splitPair(v, ':', '--time');
    if (!/^\d+$/.test(axis)) throw new UsageError(`--time ${v}: expected INPUT:AXIS, AXIS a whole number`);
    (o.time = o.time || []).push({ input, axis: Number(axis) });
  },
  '--pair': (o, v) => { const [input, output] = splitPair(v, '=', '--pair'); (o.pairs = o.pairs || []).push({ input, output }); },
  '--atol': (o, v) => { o.atol = tolerance(v, '--atol'); },
  '--rtol': (o, v) => { o.rtol = tolerance(v, '--rtol'); },
};

function parseArgs(argv) {
  const opts = { inputs: new Map(), dims: new Map(), json: false };
  const models = [];
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '-V' || arg === '--version') return { version: true };
    if (arg === '--json') {
      opts.json = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      models.push(arg);
      continue;
    }
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0 && VALUE_OPTIONS[arg.slice(0, eq)]) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (!VALUE_OPTIONS[arg]) throw new UsageError(`unknown option ${arg}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      value = argv[++i];
    }
    VALUE_OPTIONS[arg](opts, value);
  }
  if (models.length !== 2) throw new UsageError(`expected ORIGINAL and REWRITTEN, got ${models.length} model(s)`);
  if (opts.chunks === 1) throw new UsageError('--chunks 1: a chunked check needs at least 2 chunks (0 skips it)');
  return { models, opts };
}

function num(x) {
  if (x === null || x === undefined) return '-';
  return x === 0 ? '0' : x.toExponential(2);
}

function printText(r, out) {
  out(`rnnstate-verify: ${r.original} -> ${r.rewritten}`);
  for (const i of r.inputs) out(`  input ${i.name}: ${i.dtype} [${i.dims.join(',')}] (${i.source})`);
  out(`  time axis: ${r.time_axes.map((t) => `${t.input}:${t.axis}`).join(', ') || 'none'}`
    + `${r.time_axes_from ? ` (${r.time_axes_from})` : ''}`);
  if (r.stream) {
    const k = r.stream.chunk_multiple;
    const how = r.stream.verdict !== 'exact' ? `: ${describeBlockers(r.stream)}`
      : k > 1 ? `, chunks of any multiple of ${k} steps` : ', chunks of any length';
    out(`  stream: ${r.stream.verdict}${how} (rnnstate.stream)`);
  }
  for (const c of r.checks) {
    out(`${c.status.toUpperCase()} ${c.name}: ${c.reason}`);
    for (const o of c.outputs) {
      const how = o.joined === undefined ? '' : o.joined === null ? ' (last chunk)' : ` (joined on axis ${o.joined})`;
      out(`  ${o.status.toUpperCase()} ${o.name}${how}: max abs ${num(o.max_abs)}, max rel ${num(o.max_rel)}`
        + `${o.reason ? ` (${o.reason})` : ''}`);
    }
  }
  const count = (status) => r.checks.filter((c) => c.status === status).length;
  out(`rnnstate-verify: ${r.status.toUpperCase()}: ${count('pass')} passed, ${count('fail')} failed`
    + `${count('skipped') ? `, ${count('skipped')} skipped` : ''} (atol ${r.atol}, rtol ${r.rtol})`);
}

async function main(argv) {
  const args = parseArgs(argv);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  if (args.version) {
    console.log(`rnnstate-verify ${version}`);
    return 0;
  }
  const result = await verify(args.models[0], args.models[1], args.opts);
  if (args.opts.json) console.log(JSON.stringify(result, null, 2));
  else printText(result, (line) => console.log(line));
  return result.status === 'pass' ? 0 : 1;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  if (e instanceof UsageError) {
    console.error(`rnnstate-verify: ${oneLine(e.message)}\nTry 'rnnstate-verify --help'.`);
    process.exitCode = 2;
  } else {
    console.error(`rnnstate-verify: ${oneLine(e.message)}`);
    process.exitCode = 1;
  }
});
