'use strict';
// rnnstate-verify's command line: --help, usage errors (exit 2) and
// unreadable files (exit 1), each with a one-line message. No model is run.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const BIN = path.join(__dirname, '..', 'bin', 'rnnstate-verify.js');
const run = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

test('--help explains the checks, the options and the exit status', () => {
  const r = run('--help');
  assert.strictEqual(r.status, 0);
  for (const word of ['ORIGINAL REWRITTEN', 'no-state', 'chunked', '--input NAME=FILE.npy', '--dim NAME=VALUE',
    '--seed', '--chunks', '--time INPUT:AXIS', '--pair', '--atol', '--rtol', '--json', '--max-elements N',
    'rnnstate.stream', 'chunk_multiple', 'regular files', 'Exit status: 0']) {
    assert.ok(r.stdout.includes(word), word);
  }
});

test('usage errors exit 2 with one line and a pointer to --help', () => {
  for (const [args, message] of [
    [[], 'expected ORIGINAL and REWRITTEN, got 0 model(s)'],
    [['a.onnx'], 'expected ORIGINAL and REWRITTEN, got 1 model(s)'],
    [['a', 'b', '--bogus'], 'unknown option --bogus'],
    [['a', 'b', '--chunks'], '--chunks needs a value'],
    [['a', 'b', '--chunks', 'x'], '--chunks x: expected a whole number'],
    [['a', 'b', '--chunks=1'], '--chunks 1: a chunked check needs at least 2 chunks (0 skips it)'],
    [['a', 'b', '--time', 'x'], '--time x: expected INPUT:AXIS'],
    [['a', 'b', '--time', 'x:-1'], '--time x:-1: expected INPUT:AXIS, AXIS a whole number'],
    [['a', 'b', '--dim', 'N=0'], '--dim N=0: a dimension must be at least 1'],
    [['a', 'b', '--atol', '-1'], '--atol -1: expected a number >= 0'],
    [['a', 'b', '--input', 'x'], '--input x: expected NAME=VALUE'],
    [['a', 'b', '--max-elements', '0'], '--max-elements 0: expected a whole number from 1 to 2^53-1'],
    [['a', 'b', '--max-elements', '1e9'], '--max-elements 1e9: expected a whole number'],
  ]) {
    const r = run(...args);
    assert.strictEqual(r.status, 2, args.join(' '));
    assert.strictEqual(r.stderr, `rnnstate-verify: ${message}\nTry 'rnnstate-verify --help'.\n`, args.join(' '));
    assert.strictEqual(r.stdout, '');
  }
});

test('a model that cannot be read exits 1 naming the file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rnnstate-verify-'));
  const junk = path.join(dir, 'junk.onnx');
  fs.writeFileSync(junk, 'not a model at all');
  let r = run(path.join(dir, 'missing.onnx'), junk);
  assert.strictEqual(r.status, 1);
  assert.strictEqual(r.stderr, `rnnstate-verify: ${path.join(dir, 'missing.onnx')}: cannot read (ENOENT)\n`);
  r = run(junk, junk);
  assert.strictEqual(r.status, 1);
  assert.match(r.stderr, new RegExp(`^rnnstate-verify: ${junk}: not an ONNX model \\(.*\\)\\n$`));
  fs.rmSync(dir, { recursive: true });
});
