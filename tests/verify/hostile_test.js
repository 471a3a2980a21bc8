#!/usr/bin/env node
'use strict';
// rnnstate-verify and StatefulSession on hostile files (issue 26 item 10):
// users point rnnstate-verify at models they did not write.
//   node hostile_test.js TOOL WORKDIR
// Each case failed before its fix (in brackets, what happened then):
//   a length that claims 2^40 bytes      fails at once [100% CPU, forever]
//   subgraphs nested 100000 deep         one line naming the file [a stack
//                                        overflow message without the file]
//   inputs and dimensions named constructor, toString, __proto__, on a
//   correct rewrite by TOOL              pass [--input read Object.prototype,
//                                        "[object Object]: cannot read"; a
//                                        __proto__ feed set a prototype]
//   --input x=/dev/zero, a FIFO, a FIFO as the model
//                                        refused at once [memory grew without
//                                        bound; blocked forever]
//   a .npy with a zero-length time axis  refused before ONNX Runtime [abort
//                                        inside ONNX Runtime, status 134]
//   a model declaring [1, 4e8, 8]        refused before allocating [12.8 GB]
//   a state too large, a hostile dtype in the metadata
//                                        one line naming the file
// Every error is exactly one line naming the file. The verifier runs with
// 4 GiB of address space, so that a case that would allocate without bound
// fails instead of taking the machine.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync, execFileSync } = require('child_process');
const h = require('./helpers');
const b = require('./onnx_build');
const m = require('./stream_models');

h.requirePackageInstalled();
const { StatefulSession } = require(h.PACKAGE);
const { formatNpy } = require(path.join(h.PACKAGE, 'lib', 'npy'));
const { tensor } = h;

const [tool, workArg] = process.argv.slice(2);
const work = workArg || path.join(os.tmpdir(), 'rnnstate-hostile-test');
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });
const at = (name) => path.join(work, name);

// rnnstate-verify ARGS with 4 GiB of address space and a time limit;
// returns { status, stdout, stderr, ms }.
function verify(args, timeoutMs = 20000) {
  const t0 = Date.now();
  const r = spawnSync('bash', ['-c', 'ulimit -v 4194304 && exec "$0" "$@"', process.execPath, h.VERIFY_BIN, ...args],
    { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0 };
}

function assertOneLineError(r, expected) {
  assert.strictEqual(r.signal, null, `killed by ${r.signal} after ${r.ms} ms`);
  assert.strictEqual(r.stderr, `rnnstate-verify: ${expected}\n`);
  assert.strictEqual(r.status, 1);
  assert.strictEqual(r.stdout, '');
}

test('a length field that claims 2^40 bytes fails at once, naming the file', () => {
  // ModelProto.graph (11 bytes in all) whose first node claims 2^40 bytes
  const file = at('claim.onnx');
  fs.writeFileSync(file, Buffer.concat([Buffer.from([0x3a, 0x09, 0x0a]), b.varint(2n ** 40n), Buffer.from([0, 0])]));
  assert.strictEqual(fs.statSync(file).size, 11);
  const r = verify([file, file], 10000);
  assertOneLineError(r, `${file}: not an ONNX model (protobuf: truncated or corrupt (a length field at byte 3 claims `
    + '1099511627776 bytes, 2 are left in its message))');
  assert.ok(r.ms < 5000, `${r.ms} ms`);
});

// Subgraphs nested `depth` deep (If -> then_branch -> If -> ...), written
// from the outside in with the lengths worked out from the inside out (one
// pass, not one copy per level).
function nestedModel(depth) {
  const name = Buffer.from([0x0a, 11, ...Buffer.from('then_branch')]); // AttributeProto.name
  const op = Buffer.from([0x22, 2, ...Buffer.from('If')]); // NodeProto.op_type
  const len = (n) => b.varint(n).length;
  const graphSize = [0];
  const nodeSize = [];
  const attrSize = [];
  for (let k = depth - 1; k >= 0; k--) {
    const g = graphSize[0];
    const a = name.length + 1 + len(g) + g;
    const n = op.length + 1 + len(a) + a;
    attrSize.unshift(a);
    nodeSize.unshift(n);
    graphSize.unshift(1 + len(n) + n);
  }
  const parts = [Buffer.from([0x08, 7, 0x3a]), b.varint(graphSize[0])];
  for (let k = 0; k < depth; k++) {
    parts.push(Buffer.from([0x0a]), b.varint(nodeSize[k]), op, Buffer.from([0x2a]), b.varint(attrSize[k]), name,
      Buffer.from([0x32]), b.varint(graphSize[k + 1]));
  }
  return Buffer.concat(parts);
}

test('subgraphs nested 100000 deep: one line naming the file', () => {
  const file = at('nested.onnx');
  fs.writeFileSync(file, nestedModel(100000));
  assertOneLineError(verify([file, file]), `${file}: not an ONNX model (subgraphs nested more than 64 deep)`);
  const shallow = at('nested64.onnx');
  fs.writeFileSync(shallow, nestedModel(64));
  // 64 levels are read (ONNX Runtime refuses it, which the checks report)
  const r = verify([shallow, shallow]);
  assert.strictEqual(r.stderr, '');
  assert.match(r.stdout, /^rnnstate-verify: .*nested64.onnx -> /);
});

// A GRU whose input is called __proto__, its dimensions toString (time) and
// __proto__ (batch); outputs toString and valueOf. With `state`, its initial
// state is an input called constructor (already stateful: TOOL annotates it).
function prototypeNames(state) {
  const H = 5;
  const nodes = [b.node('GRU', ['__proto__', 'W', 'R', 'B', '', state ? 'constructor' : ''], ['toString', 'valueOf'],
    { hidden_size: H }, 'gru')];
  const initializers = [b.tensor('W', 'float32', [1, 3 * H, 4], b.weights(3 * H * 4, 1)),
    b.tensor('R', 'float32', [1, 3 * H, H], b.weights(3 * H * H, 2)), b.tensor('B', 'float32', [1, 6 * H], b.weights(6 * H, 3))];
  const inputs = [b.valueInfo('__proto__', 'float32', ['toString', '__proto__', 4])];
  if (state) inputs.push(b.valueInfo('constructor', 'float32', [1, '__proto__', H]));
  const outputs = [b.valueInfo('toString', 'float32', ['toString', 1, '__proto__', H]),
    b.valueInfo('valueOf', 'float32', [1, '__proto__', H])];
  return b.model({ graph: { nodes, initializers, inputs, outputs } });
}

test('inputs and dimensions named constructor, toString, __proto__ work on a correct rewrite', { skip: !tool && 'no TOOL' }, async () => {
  for (const [name, state] of [['proto', false], ['proto_stateful', true]]) {
    const original = at(`${name}.onnx`);
    fs.writeFileSync(original, prototypeNames(state));
    for (const mode of ['optional', 'required']) {
      const rewritten = at(`${name}.${mode}.onnx`);
      execFileSync(tool, [original, '-o', rewritten, `--state-inputs=${mode}`], { stdio: 'ignore' });
      let r = verify(['--json', original, rewritten]);
      assert.strictEqual(r.status, 0, `${name} ${mode}: ${r.stderr}${r.stdout}`);
      const x = at('x.npy');
      fs.writeFileSync(x, formatNpy(tensor.randomTensor('float32', [7, 3, 4], 5, 'x')));
      const args = ['--json', original, rewritten, '--input', `__proto__=${x}`];
      if (state) {
        const h0 = at('h0.npy');
        fs.writeFileSync(h0, formatNpy(tensor.zerosTensor('float32', [1, 3, 5])));
        args.push('--input', `constructor=${h0}`);
      }
      r = verify(args);
      assert.strictEqual(r.status, 0, `${name} ${mode} --input: ${r.stderr}${r.stdout}`);
      assert.deepStrictEqual(JSON.parse(r.stdout).inputs[0].dims, [7, 3, 4]);
      if (!state) {
        r = verify(['--json', original, rewritten, '--dim', 'toString=6', '--dim', '__proto__=3']);
        assert.strictEqual(r.status, 0, `${name} ${mode} --dim: ${r.stderr}`);
        assert.deepStrictEqual(JSON.parse(r.stdout).inputs[0].dims, [6, 3, 4]);
        // --dim constructor names no dimension of this model
        r = verify([original, rewritten, '--dim', 'constructor=2']);
        assert.strictEqual(r.status, 2);
        assert.match(r.stderr, /^rnnstate-verify: --dim constructor: no input of ORIGINAL has a dimension of that name/);
      }
      // StatefulSession, fed an own property "__proto__"
      const session = await StatefulSession.create(rewritten, { sessionOptions: { intraOpNumThreads: 1 } });
      const xs = tensor.randomTensor('float32', [4, 2, 4], 9, 'x');
      const whole = await session.run(Object.fromEntries([['__proto__', xs]]));
      session.reset();
      const first = await session.run(Object.fromEntries([['__proto__', tensor.sliceAxis(xs, 0, 0, 1)]]));
      const rest = await session.run(Object.fromEntries([['__proto__', tensor.sliceAxis(xs, 0, 1, 4)]]));
      const joined = tensor.concatAxis([tensor.asPlain(first.toString), tensor.asPlain(rest.toString)], 0);
      assert.ok(require(path.join(h.PACKAGE, 'lib', 'verify')).compare(joined, whole.toString, 1e-6, 0).ok);
      await session.release();
    }
  }
});

test('--input from /dev/zero, a FIFO, and a FIFO as the model are refused at once', () => {
  const original = at('conv.onnx');
  fs.writeFileSync(original, m.causalConv({ stateful: false }));
  const rewritten = at('conv_context.onnx');
  fs.writeFileSync(rewritten, m.causalConv({ stateful: true, metadata: m.metadata({ state: m.CONV_STATE }) }));
  assertOneLineError(verify([original, rewritten, '--input', 'x=/dev/zero'], 10000),
    '/dev/zero: not a regular file (a character device): a .npy file must be a regular file');
  const fifo = at('fifo');
  execFileSync('mkfifo', [fifo]);
  assertOneLineError(verify([original, rewritten, '--input', `x=${fifo}`], 10000),
    `${fifo}: not a regular file (a FIFO): a .npy file must be a regular file`);
  assertOneLineError(verify([fifo, rewritten], 10000), `${fifo}: not a regular file (a FIFO): a model must be a regular file`);
  assertOneLineError(verify([original, work], 10000), `${work}: not a regular file (a directory): a model must be a regular file`);
});

test('a .npy with a zero-length time axis is refused before ONNX Runtime', () => {
  const original = at('conv.onnx');
  const rewritten = at('conv_context.onnx');
  const empty = at('empty.npy');
  fs.writeFileSync(empty, formatNpy({ dtype: 'float32', dims: [2, 0, 4], data: new Float32Array(0) }));
  assertOneLineError(verify([original, rewritten, '--input', `x=${empty}`]), `${empty}: shape (2,0,4) for input x has no elements`);
});

test('a model declaring [1, 400000000, 8] is refused before anything is allocated; --max-elements', () => {
  const huge = at('huge.onnx');
  fs.writeFileSync(huge, b.model({
    graph: {
      nodes: [b.node('Relu', ['x'], ['y'])],
      inputs: [b.valueInfo('x', 'float32', [1, 400000000, 8])],
      outputs: [b.valueInfo('y', 'float32', [1, 400000000, 8])],
    },
  }));
  const r = verify([huge, huge], 10000);
  assertOneLineError(r, `${huge}: input x [1,400000000,8] has 3200000000 elements, more than the 16777216 allowed `
    + '(--max-elements N raises the cap)');
  assert.ok(r.ms < 5000, `${r.ms} ms`);
  // the cap is the user's: a small one refuses a small model, a .npy too
  const original = at('conv.onnx');
  const rewritten = at('conv_context.onnx');
  assertOneLineError(verify([original, rewritten, '--max-elements', '79']),
    `${original}: input x [2,10,4] has 80 elements, more than the 79 allowed (--max-elements N raises the cap)`);
  const x = at('x80.npy');
  fs.writeFileSync(x, formatNpy(tensor.randomTensor('float32', [2, 10, 4], 1, 'x')));
  assertOneLineError(verify([original, rewritten, '--input', `x=${x}`, '--max-elements', '79']),
    `${x}: shape (2,10,4) has 80 elements, more than the 79 allowed (--max-elements)`);
  assert.strictEqual(verify([original, rewritten, '--max-elements', '80']).status, 0);
  assert.strictEqual(verify([original, rewritten, '--max-elements', '0']).status, 2);
});

test('a state too large for the cap, a hostile dtype or shape in the metadata: one line naming the file', () => {
  const original = at('conv.onnx');
  const big = at('conv_big_state.onnx');
  const state = [{ ...m.CONV_STATE[0], shape: ['batch', 4, 300000000] }];
  fs.writeFileSync(big, m.causalConv({ stateful: true, metadata: m.metadata({ state }) }));
  const r = verify(['--json', original, big]);
  const checks = Object.fromEntries(JSON.parse(r.stdout).checks.map((c) => [c.name, c.reason]));
  const why = `${big}: the zeros of state cache [2,4,300000000] has 2400000000 elements, more than the 16777216 allowed `
    + '(--max-elements N raises the cap)';
  assert.strictEqual(checks['no-state'], why);
  assert.strictEqual(checks.chunked, why);
  for (const [pair, fault] of [
    [{ ...m.CONV_STATE[0], dtype: 'constructor' }, 'pair cache -> cache_out has dtype "constructor", not one ONNX Runtime for Node takes'],
    [{ ...m.CONV_STATE[0], dtype: '__proto__' }, 'pair cache -> cache_out has dtype "__proto__", not one ONNX Runtime for Node takes'],
    [{ ...m.CONV_STATE[0], shape: [{}, 4, 2] }, 'pair cache -> cache_out has a shape that is not a list of dimensions'],
    [{ ...m.CONV_STATE[0], batch_axis: -1 }, 'pair cache -> cache_out has batch_axis -1'],
    [null, 'a pair without input or output'],
  ]) {
    const file = at('conv_bad_meta.onnx');
    fs.writeFileSync(file, m.causalConv({ stateful: true, metadata: m.metadata({ state: [pair] }) }));
    assertOneLineError(verify([original, file]), `${file}: metadata rnnstate.state has ${fault}`);
  }
});
