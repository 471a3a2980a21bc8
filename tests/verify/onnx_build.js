'use strict';
// A small ONNX writer for the tests of js/rnnstate: builds ModelProto bytes
// from plain objects, so a test makes the exact model it needs (hand-made
// rnnstate.* metadata, hostile names and shapes) without Python or the C
// tool. Only what those tests use: float and int64 tensors, int, ints, float,
// string and tensor attributes, declared inputs and outputs.
//   model({ graph, metadata: { key: value }, opset, irVersion })
//   graph: { nodes: [node(...)], initializers: [floatTensor(...)],
//            inputs: [valueInfo(...)], outputs: [valueInfo(...)] }

const ELEM = { float32: 1, int64: 7 };

function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v = BigInt.asUintN(64, v);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => Buffer.concat([key(field, 0), varint(n)]);
const bytes = (field, b) => Buffer.concat([key(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));

// ValueInfoProto: dims are numbers (dim_value), strings (dim_param) or null.
function valueInfo(name, dtype, dims) {
  const dim = (d) => bytes(1, d === null ? Buffer.alloc(0) : typeof d === 'number' ? int(1, d) : str(2, d));
  const shape = dims === null ? Buffer.alloc(0) : bytes(2, Buffer.concat(dims.map(dim)));
  const tensorType = Buffer.concat([int(1, ELEM[dtype]), shape]);
  return Buffer.concat([str(1, name), bytes(2, bytes(1, tensorType))]);
}

// TensorProto with raw_data (little-endian).
function tensor(name, dtype, dims, values) {
  const data = dtype === 'int64' ? BigInt64Array.from(values.map(BigInt)) : Float32Array.from(values);
  return Buffer.concat([...dims.map((d) => int(1, d)), int(2, ELEM[dtype]), str(8, name),
    bytes(9, Buffer.from(data.buffer))]);
}

// AttributeProto from a JS value: integer -> INT, float -> FLOAT, string ->
// STRING, array of integers -> INTS, { tensor } -> TENSOR.
function attribute(name, value) {
  if (typeof value === 'string') return Buffer.concat([str(1, name), str(4, value), int(20, 3)]);
  if (Array.isArray(value)) return Buffer.concat([str(1, name), ...value.map((v) => int(8, v)), int(20, 7)]);
  if (value && value.tensor) return Buffer.concat([str(1, name), bytes(5, value.tensor), int(20, 4)]);
  if (Number.isInteger(value)) return Buffer.concat([str(1, name), int(3, value), int(20, 2)]);
  const f = Buffer.alloc(4);
  f.writeFloatLE(value);
  return Buffer.concat([str(1, name), key(2, 5), f, int(20, 1)]);
}

function node(op, inputs, outputs, attrs = {}, name = '') {
  return Buffer.concat([...inputs.map((v) => str(1, v)), ...outputs.map((v) => str(2, v)), str(3, name), str(4, op),
    ...Object.entries(attrs).map(([k, v]) => bytes(5, attribute(k, v)))]);
}

function graph({ nodes = [], initializers = [], inputs = [], outputs = [], name = 'g' }) {
  return Buffer.concat([...nodes.map((n) => bytes(1, n)), str(2, name), ...initializers.map((t) => bytes(5, t)),
    ...inputs.map((v) => bytes(11, v)), ...outputs.map((v) => bytes(12, v))]);
}

function model({ graph: g, metadata = {}, opset = 14, irVersion = 7 }) {
  const opsetId = Buffer.concat([str(1, ''), int(2, opset)]);
  const meta = Object.entries(metadata).map(([k, v]) => bytes(14, Buffer.concat([str(1, k), str(2, v)])));
  return Buffer.concat([int(1, irVersion), str(2, 'rnnstate-tests'), bytes(7, graph(g)), bytes(8, opsetId), ...meta]);
}

// Deterministic weights in [-0.5, 0.5).
function weights(n, seed) {
  let a = seed >>> 0;
  return Array.from({ length: n }, () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a / 2 ** 32 - 0.5;
  });
}

module.exports = { varint, valueInfo, tensor, attribute, node, graph, model, weights };
