'use strict';
// Unit tests of the package's parts that need no model run: .npy files, the
// protobuf reader and the in-memory copy without defaults, chunk sizes, the
// comparison, and the shape of a pair's zeros. Run with `npm test` (node's
// test runner).

const test = require('node:test');
const assert = require('node:assert');
const { parseNpy, formatNpy } = require('../lib/npy');
const { dependsOn, readModelBytes, withoutInitializers } = require('../lib/onnx_model');
const { chunkSizes, compare } = require('../lib/verify');
const { resolveStateShape, statePairs, timeAxes, streamInfo, describeBlockers } = require('../lib/state');
const tensor = require('../lib/tensor');

// numpy.save(np.arange(6, dtype='<f4').reshape(2, 3)), byte for byte.
const NPY_F4 = Buffer.concat([
  Buffer.from('\x93NUMPY\x01\x00v\x00', 'latin1'),
  Buffer.from("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".padEnd(117, ' ') + '\n', 'latin1'),
  Buffer.from(new Float32Array([0, 1, 2, 3, 4, 5]).buffer),
]);

test('.npy: reads what numpy.save writes', () => {
  const t = parseNpy(NPY_F4, 'a.npy');
  assert.deepStrictEqual([t.dtype, t.dims, Array.from(t.data)], ['float32', [2, 3], [0, 1, 2, 3, 4, 5]]);
});

test('.npy: every element type ONNX Runtime takes round-trips, scalars and 1-D too', () => {
  for (const [dtype, dims] of [['float16', [2]], ['float64', []], ['int8', [3, 1]], ['int64', [2]], ['uint64', [1]],
    ['bool', [2, 2]], ['uint16', [1]], ['int32', [0]]]) {
    const t = tensor.randomTensor(dtype, dims, 7, 'x');
    const back = parseNpy(formatNpy(t), 'x.npy');
    assert.deepStrictEqual([back.dtype, back.dims, Array.from(back.data)], [dtype, dims, Array.from(t.data)], dtype);
  }
});

test('.npy: refuses what it cannot read, naming the file', () => {
  const header = (h) => {
    const text = h.padEnd(117, ' ') + '\n';
    return Buffer.concat([Buffer.from('\x93NUMPY\x01\x00v\x00', 'latin1'), Buffer.from(text, 'latin1')]);
  };
  assert.throws(() => parseNpy(Buffer.from('PK\x03\x04 not numpy'), 'z.npz'), /^Error: z.npz: not a \.npy file/);
  assert.throws(() => parseNpy(header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }"), 'b.npy'),
    /b.npy: element type '>f4' is not one ONNX Runtime takes/);
  assert.throws(() => parseNpy(header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), 'c.npy'),
    /c.npy: element type '<c8'/);
  assert.throws(() => parseNpy(header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }"), 'f.npy'),
    /f.npy: Fortran-order array/);
  assert.throws(() => parseNpy(NPY_F4.subarray(0, NPY_F4.length - 4), 't.npy'),
    /t.npy: 20 bytes of data, shape \(2,3\) of float32 needs 24/);
});

// A ModelProto with metadata and a graph: input x [batch, T, 8] float32, an
// initializer h0 (a state default) and w, output y; one LSTM node whose
// direction is bidirectional inside an If branch.
function tinyModel() {
  const varint = (n) => { const o = []; do { o.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0)); n >>>= 7; } while (n); return o; };
  const ld = (field, bytes) => Buffer.from([...varint((field << 3) | 2), ...varint(bytes.length), ...bytes]);
  const str = (field, s) => ld(field, Buffer.from(s));
  const dim = (v) => ld(1, typeof v === 'number' ? Buffer.from([0x08, ...varint(v)]) : str(2, v));
  // ValueInfoProto { name, type { tensor_type { elem_type: FLOAT, shape } } }
  const vi = (field, name, dims) => ld(field, Buffer.concat([str(1, name),
    ld(2, ld(1, Buffer.concat([Buffer.from([0x08, 1]), ld(2, Buffer.concat(dims.map(dim)))])))]));
  const init = (name) => ld(5, Buffer.concat([Buffer.from([0x08, 1, 0x10, 1]), str(8, name)]));
  const inputs = ['x', 'w', 'w', '', '', 'h0'].map((v) => str(1, v));
  const lstm = Buffer.concat([...inputs, str(2, ''), str(2, 'hn'), str(3, 'rnn'), str(4, 'LSTM'),
    ld(5, Buffer.concat([str(1, 'direction'), str(4, 'bidirectional')]))]);
  // attribute g: a graph whose output is the LSTM's Y_h
  const branch = ld(5, Buffer.concat([str(1, 'then_branch'), ld(6, Buffer.concat([ld(1, lstm), vi(12, 'hn', [2, 'batch', 4])]))]));
  const ifNode = Buffer.concat([str(1, 'cond'), str(2, 'y'), str(4, 'If'), branch]);
  const graph = Buffer.concat([ld(1, ifNode), init('h0'), init('w'), vi(11, 'x', ['batch', 'T', 8]), vi(11, 'h0', [1, 'batch', 4]),
    vi(12, 'y', ['batch', 'T', 4])]);
  const meta = Buffer.concat([str(1, 'rnnstate.state'), str(2, '[{"input": "h0", "output": "y", "shape": [1, "batch", 4], "dtype": "float32"}]')]);
  return new Uint8Array(Buffer.concat([Buffer.from([0x08, 7]), ld(7, graph), ld(14, meta)]));
}

test('model: graph interface, metadata and recurrent nodes in subgraphs', () => {
  const m = readModelBytes(tinyModel(), 'tiny.onnx');
  assert.deepStrictEqual(m.inputs.map((i) => [i.name, i.dtype, i.shape]), [['x', 'float32', ['batch', 'T', 8]], ['h0', 'float32', [1, 'batch', 4]]]);
  assert.deepStrictEqual(m.outputs.map((o) => o.name), ['y']);
  assert.deepStrictEqual([...m.initializers], ['h0', 'w']);
  assert.deepStrictEqual(m.recurrentNodes, [{ op: 'LSTM', name: 'rnn', direction: 'bidirectional', layout: 0, initialState: ['h0', ''] }]);
  // y is the If's output, computed from its branch's output hn, computed from h0 (and x, w)
  assert.strictEqual(dependsOn(m.producers, 'y', new Set(['h0'])), true);
  assert.strictEqual(dependsOn(m.producers, 'hn', new Set(['x'])), true);
  assert.strictEqual(dependsOn(m.producers, 'h0', new Set(['x'])), false);
  assert.strictEqual(dependsOn(m.producers, '', new Set(['h0'])), false);
  assert.deepStrictEqual(statePairs(m, 'tiny.onnx').map((p) => p.input), ['h0']);
  assert.strictEqual(timeAxes(m, 'tiny.onnx'), null);
});

test('model: the copy without a default keeps everything else', () => {
  const bytes = tinyModel();
  const stripped = readModelBytes(new Uint8Array(withoutInitializers(bytes, ['h0'])), 'copy');
  const m = readModelBytes(bytes, 'tiny.onnx');
  assert.deepStrictEqual([...stripped.initializers], ['w']);
  assert.deepStrictEqual({ ...stripped, initializers: null }, { ...m, initializers: null });
});

test('model: garbage is refused with the file name', () => {
  assert.throws(() => readModelBytes(new Uint8Array([0x0a, 0xff]), 'bad.onnx'), /^Error: bad.onnx: not an ONNX model/);
  assert.throws(() => readModelBytes(new Uint8Array([0x08, 1]), 'empty.onnx'), /empty.onnx: not an ONNX model \(no graph\)/);
});

test('chunk sizes add up and are not all equal', () => {
  assert.deepStrictEqual(chunkSizes(12, 3), [5, 4, 3]);
  assert.deepStrictEqual(chunkSizes(10, 3), [4, 3, 3]);
  assert.deepStrictEqual(chunkSizes(5, 2), [3, 2]);
  assert.deepStrictEqual(chunkSizes(3, 3), [1, 1, 1]); // nothing else possible
});

test('compare: largest absolute and relative difference against atol + rtol * |expected|', () => {
  const t = (data) => ({ dtype: 'float32', dims: [data.length], data: Float32Array.from(data) });
  const c = compare(t([1, 2.5, 0]), t([1, 2, 0]), 0.1, 0.1);
  assert.deepStrictEqual([c.ok, c.maxAbs, c.maxRel], [false, 0.5, 0.25]);
  assert.strictEqual(compare(t([1, 2.1, 0]), t([1, 2, 0]), 0, 0.1).ok, true);
  assert.strictEqual(compare(t([NaN]), t([NaN]), 0, 0).ok, true);
  assert.strictEqual(compare(t([NaN]), t([1]), 1, 1).ok, false);
  assert.match(compare(t([1, 2]), t([1]), 1, 1).reason, /float32 \[2\] instead of float32 \[1\]/);
});

test('state shape: symbolic names bind whatever they are called; an unnamed batch takes the first input\'s', () => {
  const declared = [{ name: 'x', shape: ['N', 'T', 8] }];
  const feeds = { x: { dims: [3, 7, 8] } };
  assert.deepStrictEqual(resolveStateShape({ input: 's', shape: [2, 'N', 16] }, declared, feeds), [2, 3, 16]);
  // not named like the input's dimension: the pair's one free axis is its batch
  assert.deepStrictEqual(resolveStateShape({ input: 's', shape: [2, null, 16] }, declared, feeds, [{ input: 'x', axis: 1 }]), [2, 3, 16]);
  assert.deepStrictEqual(resolveStateShape({ input: 's', shape: [2, 'b', 16], batch_axis: 1 }, declared, feeds, [{ input: 'x', axis: 1 }]), [2, 3, 16]);
  // without the time axis, x has two free dimensions: which is the batch is unknown
  assert.throws(() => resolveStateShape({ input: 's', output: 'so', shape: [2, null, 16] }, declared, feeds, [], 'm.onnx'), {
    message: 'm.onnx: state pair s -> so: dimension 1 (null) of its shape [2,null,16] is its batch, which no fed input '
      + 'names, and the feeds do not tell it (input x ["N","T",8] has 2 dimensions that are neither fixed nor a known '
      + 'time axis): pass s in the first call\'s feeds, or give the time axes (StatefulSession option time, '
      + 'rnnstate-verify --time INPUT:AXIS) so that the batch is the time input\'s other dimension',
  });
  assert.throws(() => resolveStateShape({ input: 's', output: 'so', shape: [2, 'B', 'H'], batch_axis: 1 }, declared, feeds,
    [{ input: 'x', axis: 1 }], 'm.onnx'), {
    message: 'm.onnx: state pair s -> so: dimension 2 ("H") of its shape [2,"B","H"] is not its batch and no fed input '
      + 'names it: pass s in the first call\'s feeds, or give the pair with its shape (StatefulSession option pairs: '
      + '[{ input, output, shape }])',
  });
});

test('state shape: the batch comes from the time inputs first, else the first fed input with a free dimension', () => {
  // Silero VAD v5: input [null, null], sr [] (int64 scalar), state [2, null, 128]
  const declared = [{ name: 'sr', shape: [] }, { name: 'input', shape: [null, null] }, { name: 'state', shape: [2, null, 128] }];
  const feeds = { sr: { dims: [] }, input: { dims: [3, 512] } };
  const pair = { input: 'state', output: 'stateN', shape: [2, null, 128], batch_axis: 1 };
  assert.deepStrictEqual(resolveStateShape(pair, declared, feeds, [{ input: 'input', axis: 1 }]), [2, 3, 128]);
  assert.throws(() => resolveStateShape(pair, declared, feeds, []), /input input \[null,null\] has 2 dimensions/);
  // a speaker embedding [null, 192] without a time axis: its one free dimension is the batch,
  // once the scalar and the fed state itself are passed over
  const spk = [{ name: 'sr', shape: [] }, { name: 'state', shape: [2, null, 128] }, { name: 'emb', shape: [-1, 192] }];
  assert.deepStrictEqual(resolveStateShape(pair, spk, { sr: { dims: [] }, state: { dims: [2, 4, 128] }, emb: { dims: [5, 192] } }, [],
    'm', [pair]), [2, 5, 128]);
  // with a time input, only the time inputs tell the batch
  const timed = [{ name: 'x', shape: ['B', 'T', 4] }, { name: 'emb', shape: [null, 192] }];
  const f = { x: { dims: [2, 7, 4] }, emb: { dims: [9, 192] } };
  assert.deepStrictEqual(resolveStateShape(pair, timed, f, [{ input: 'x', axis: 1 }]), [2, 2, 128]);
  // names that are Object.prototype's are names like any other
  const proto = [{ name: 'constructor', shape: ['__proto__', 'toString', 4] }];
  assert.deepStrictEqual(resolveStateShape({ input: 's', shape: [1, '__proto__', 3] }, proto,
    { constructor: { dims: [6, 7, 4] } }), [1, 6, 3]);
  assert.throws(() => resolveStateShape({ input: 's', shape: [1, null, 3], batch_axis: 1 }, proto, {}),
    /no fed input has a dimension that is not fixed/);
});

test('stream verdict: read from rnnstate.stream, absent or null is null, anything malformed names the file', () => {
  const withStream = (text) => ({ metadata: text === undefined ? {} : { 'rnnstate.stream': text } });
  assert.strictEqual(streamInfo(withStream(undefined), 'm.onnx'), null);
  assert.strictEqual(streamInfo(withStream('null'), 'm.onnx'), null);
  const blocker = { graph: 'main', op: 'ReduceMean', name: 'mean', reason: 'mean over the time axis' };
  const s = streamInfo(withStream(JSON.stringify({ verdict: 'none', chunk_multiple: 1, blockers: [blocker] })), 'm.onnx');
  assert.deepStrictEqual(s, { verdict: 'none', chunk_multiple: 1, blockers: [blocker] });
  assert.strictEqual(describeBlockers(s), "main ReduceMean 'mean': mean over the time axis");
  assert.deepStrictEqual(streamInfo(withStream('{"verdict":"exact"}'), 'm.onnx'), { verdict: 'exact', chunk_multiple: 1, blockers: [] });
  for (const [text, why] of [
    ['{', /^Error: m.onnx: metadata rnnstate.stream is not JSON/],
    ['[]', /^Error: m.onnx: metadata rnnstate.stream is not a JSON object$/],
    ['{"verdict":"maybe"}', /^Error: m.onnx: metadata rnnstate.stream has verdict "maybe", not exact, none or unknown$/],
    ['{"verdict":"exact","chunk_multiple":0}', /^Error: m.onnx: metadata rnnstate.stream has chunk_multiple 0, not a whole number >= 1$/],
    ['{"verdict":"exact","chunk_multiple":1.5}', /has chunk_multiple 1.5/],
    ['{"verdict":"none","blockers":"x"}', /has blockers that are not a list of objects/],
  ]) {
    assert.throws(() => streamInfo(withStream(text), 'm.onnx'), why, text);
  }
});

test('chunk sizes with a chunk multiple: unequal multiples of it that add up', () => {
  assert.deepStrictEqual(chunkSizes(10, 3, 2), [4, 4, 2]);
  assert.deepStrictEqual(chunkSizes(12, 3, 2), [6, 4, 2]);
  assert.deepStrictEqual(chunkSizes(6, 3, 2), [2, 2, 2]); // nothing else possible
  assert.deepStrictEqual(chunkSizes(12, 3, 1), chunkSizes(12, 3));
});

test('protobuf: a length is bounded by its message, at once, whatever it claims', () => {
  const varint = (n) => {
    const o = [];
    let v = BigInt(n);
    do {
      o.push(Number(v & 0x7fn) | (v > 0x7fn ? 0x80 : 0));
      v >>= 7n;
    } while (v);
    return o;
  };
  // ModelProto.graph whose first node claims 2^40 bytes: 11 bytes in all
  const claim = new Uint8Array([0x3a, 0x09, 0x0a, ...varint(2n ** 40n), 0, 0]);
  assert.strictEqual(claim.length, 11);
  const t0 = Date.now();
  assert.throws(() => readModelBytes(claim, 'claim.onnx'), {
    message: 'claim.onnx: not an ONNX model (protobuf: truncated or corrupt (a length field at byte 3 claims '
      + '1099511627776 bytes, 2 are left in its message))',
  });
  assert.ok(Date.now() - t0 < 1000);
  // field number 0, a length past the buffer at the top level
  assert.throws(() => readModelBytes(new Uint8Array([0x02, 0x00]), 'f0.onnx'), /^Error: f0.onnx: not an ONNX model \(protobuf: bad field number 0 at byte 0\)$/);
  assert.throws(() => readModelBytes(new Uint8Array([0x3a, 0x7f]), 'l.onnx'), /claims 127 bytes, 0 are left/);
});

test('model: metadata keys such as __proto__ and constructor are keys like any other', () => {
  const ld = (field, bytes) => Buffer.from([(field << 3) | 2, bytes.length, ...bytes]);
  const entry = (k, v) => ld(14, Buffer.concat([ld(1, Buffer.from(k)), ld(2, Buffer.from(v))]));
  const bytes = new Uint8Array(Buffer.concat([ld(7, Buffer.alloc(0)), entry('__proto__', 'a'), entry('constructor', 'b')]));
  const m = readModelBytes(bytes, 'meta.onnx');
  assert.deepStrictEqual(Object.entries(m.metadata), [['__proto__', 'a'], ['constructor', 'b']]);
  assert.strictEqual(m.metadata.toString, undefined);
});
