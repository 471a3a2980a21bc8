'use strict';
// Helpers shared by the end-to-end scripts (check_model.js, backend_check.js).
//
// Tensors here are plain objects { dtype, dims, data } where dtype is an
// onnxruntime-node type string ('float32', 'int64', ...), dims a Number[] and
// data the matching typed array (BigInt64Array for int64, Uint16Array holding
// IEEE half bits for float16). That is exactly what `new ort.Tensor(dtype,
// data, dims)` takes, and what an ort.Tensor exposes as .type/.dims/.data, so
// values move between ORT and these helpers without copies.
//
// Nothing here needs python or a protobuf library: the few ONNX messages we
// read (TensorProto test data, the graph's input/output/initializer names)
// are decoded straight from the protobuf wire format.

const fs = require('fs');

// ---------------------------------------------------------------------------
// Protobuf wire format
// ---------------------------------------------------------------------------

// A cursor over a Uint8Array. Varints are read as BigInt because ONNX dims and
// int64_data are 64-bit, and negative int32 values are sign-extended to 10
// bytes on the wire.
class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }

  eof() {
    return this.pos >= this.end;
  }

  varint() {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new Error('protobuf: truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new Error('protobuf: varint too long');
    }
  }

  // Small unsigned varints (tags, lengths) as Number.
  uvarint32() {
    return Number(BigInt.asUintN(64, this.varint()));
  }

  bytes(n) {
    if (this.pos + n > this.end) throw new Error('protobuf: truncated field');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  // Returns { field, wire } or null at the end of the message.
  tag() {
    if (this.eof()) return null;
    const t = this.uvarint32();
    return { field: t >>> 3, wire: t & 7 };
  }

  skip(wire) {
    switch (wire) {
      case 0: this.varint(); break;
      case 1: this.bytes(8); break;
      case 2: this.bytes(this.uvarint32()); break;
      case 5: this.bytes(4); break;
      default: throw new Error(`protobuf: unsupported wire type ${wire}`);
    }
  }
}

// Read a repeated scalar field that may be packed (wire 2) or not. `one`
// reads a single element from a reader; the values are pushed to `out`.
function readRepeated(r, wire, scalarWire, one, out) {
  if (wire === 2) {
    const len = r.uvarint32();
    const sub = new Reader(r.buf, r.pos, r.pos + len);
    r.pos += len;
    while (!sub.eof()) out.push(one(sub));
  } else if (wire === scalarWire) {
    out.push(one(r));
  } else {
    throw new Error(`protobuf: unexpected wire type ${wire} for repeated field`);
  }
}

function dv(bytes) {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
const readF32 = (r) => dv(r.bytes(4)).getFloat32(0, true);
const readF64 = (r) => dv(r.bytes(8)).getFloat64(0, true);
const readI64 = (r) => BigInt.asIntN(64, r.varint());
const readU64 = (r) => BigInt.asUintN(64, r.varint());
const readI32 = (r) => Number(BigInt.asIntN(32, r.varint()));

// ---------------------------------------------------------------------------
// TensorProto
// ---------------------------------------------------------------------------

// TensorProto.DataType -> ORT dtype string and typed array constructor.
const ONNX_DTYPES = {
  1: ['float32', Float32Array],
  2: ['uint8', Uint8Array],
  3: ['int8', Int8Array],
  4: ['uint16', Uint16Array],
  5: ['int16', Int16Array],
  6: ['int32', Int32Array],
  7: ['int64', BigInt64Array],
  9: ['bool', Uint8Array],
  10: ['float16', Uint16Array],
  11: ['float64', Float64Array],
  12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
};

const TYPED_ARRAYS = {};
for (const [name, ctor] of Object.values(ONNX_DTYPES)) TYPED_ARRAYS[name] = ctor;

// Decode a serialized onnx.TensorProto (the input_N.pb / output_N.pb files of
// the ONNX backend tests). Returns { name, dtype, dims, data }.
//
// Values come either from raw_data (little-endian, the usual case) or from
// the typed repeated fields: float_data for float32; int32_data for every
// type of 32 bits or less, float16 included (as its bit pattern); int64_data;
// double_data; uint64_data for uint32/uint64.
function decodeTensorProto(buf) {
  const r = new Reader(buf);
  const dims = [];
  let dataType = 0;
  let name = '';
  let raw = null;
  const floats = [];
  const int32s = [];
  const int64s = [];
  const doubles = [];
  const uint64s = [];
  let tg;
  while ((tg = r.tag()) !== null) {
    switch (tg.field) {
      case 1: readRepeated(r, tg.wire, 0, readI64, dims); break;
      case 2: dataType = readI32(r); break;
      case 4: readRepeated(r, tg.wire, 5, readF32, floats); break;
      case 5: readRepeated(r, tg.wire, 0, readI32, int32s); break;
      case 7: readRepeated(r, tg.wire, 0, readI64, int64s); break;
      case 8: name = Buffer.from(r.bytes(r.uvarint32())).toString('utf8'); break;
      case 9: raw = r.bytes(r.uvarint32()); break;
      case 10: readRepeated(r, tg.wire, 1, readF64, doubles); break;
      case 11: readRepeated(r, tg.wire, 0, readU64, uint64s); break;
      case 14: // data_location: EXTERNAL (1) is not something test data uses
        if (Number(r.varint()) === 1) throw new Error('TensorProto: external data is not supported');
        break;
      default: r.skip(tg.wire);
    }
  }
  const info = ONNX_DTYPES[dataType];
  if (!info) throw new Error(`TensorProto ${name || '(unnamed)'}: unsupported data_type ${dataType}`);
  const [dtype, Ctor] = info;
  const shape = dims.map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  let data;
  if (raw !== null) {
    if (raw.length !== count * Ctor.BYTES_PER_ELEMENT) {
      throw new Error(`TensorProto ${name}: raw_data has ${raw.length} bytes, expected ${count * Ctor.BYTES_PER_ELEMENT}`);
    }
    // Copy into a fresh, aligned buffer (the file buffer offset may be odd).
    // The copy is byte-for-byte, so this assumes a little-endian host, as
    // ONNX Runtime itself does.
    data = new Ctor(count);
    new Uint8Array(data.buffer).set(raw);
  } else {
    let src;
    switch (dtype) {
      case 'float32': src = floats; break;
      case 'float64': src = doubles; break;
      case 'int64': src = int64s; break;
      case 'uint32': src = uint64s.map(Number); break;
      case 'uint64': src = uint64s; break;
      default: src = int32s; // int32, int16, int8, uint16, uint8, bool, float16 bits
    }
    if (src.length !== count) {
      throw new Error(`TensorProto ${name}: ${src.length} values for shape [${shape}]`);
    }
    data = Ctor.from(src);
  }
  return { name, dtype, dims: shape, data };
}

function loadTensorPb(path) {
  return decodeTensorProto(new Uint8Array(fs.readFileSync(path)));
}

// ---------------------------------------------------------------------------
// ModelProto: just the graph's interface
// ---------------------------------------------------------------------------

// Read the names of a model's graph inputs, outputs and initializers, without
// decoding anything else. ORT's session.inputNames leaves out inputs that
// have an initializer (the rewriter's state defaults), so the scripts use
// this to see the model's full declared interface.
//   ModelProto.graph = 7; GraphProto.initializer = 5, input = 11,
//   output = 12; ValueInfoProto.name = 1; TensorProto.name = 8.
function readGraphInterface(path) {
  const buf = new Uint8Array(fs.readFileSync(path));
  const m = new Reader(buf);
  let graph = null;
  let tg;
  while ((tg = m.tag()) !== null) {
    if (tg.field === 7 && tg.wire === 2) {
      const len = m.uvarint32();
      graph = new Reader(buf, m.pos, m.pos + len);
      m.pos += len;
    } else {
      m.skip(tg.wire);
    }
  }
  if (!graph) throw new Error(`${path}: no graph in model`);
  const nameOf = (start, end, field) => {
    const r = new Reader(buf, start, end);
    let t;
    let name = '';
    while ((t = r.tag()) !== null) {
      if (t.field === field && t.wire === 2) name = Buffer.from(r.bytes(r.uvarint32())).toString('utf8');
      else r.skip(t.wire);
    }
    return name;
  };
  const inputs = [];
  const outputs = [];
  const initializers = new Set();
  while ((tg = graph.tag()) !== null) {
    if (tg.wire === 2 && (tg.field === 5 || tg.field === 11 || tg.field === 12)) {
      const len = graph.uvarint32();
      const start = graph.pos;
      graph.pos += len;
      if (tg.field === 5) initializers.add(nameOf(start, start + len, 8));
      else if (tg.field === 11) inputs.push(nameOf(start, start + len, 1));
      else outputs.push(nameOf(start, start + len, 1));
    } else {
      graph.skip(tg.wire);
    }
  }
  return { inputs, outputs, initializers };
}

// The sub-messages of field `field` (wire type 2) in buf[start:end], as
// [start, end] ranges, in order.
function subMessages(buf, start, end, field) {
  const r = new Reader(buf, start, end);
  const out = [];
  let t;
  while ((t = r.tag()) !== null) {
    if (t.field === field && t.wire === 2) {
      const len = r.uvarint32();
      out.push([r.pos, r.pos + len]);
      r.pos += len;
    } else {
      r.skip(t.wire);
    }
  }
  return out;
}

// The string of field `field` in buf[start:end] ('' when absent).
function stringField(buf, start, end, field) {
  const r = new Reader(buf, start, end);
  let t;
  let s = '';
  while ((t = r.tag()) !== null) {
    if (t.field === field && t.wire === 2) s = Buffer.from(r.bytes(r.uvarint32())).toString('utf8');
    else r.skip(t.wire);
  }
  return s;
}

// ValueInfoProto -> { name, elemType, shape } where shape is null (no shape)
// or an array of Number (dim_value), String (dim_param) or null (neither).
//   ValueInfoProto.name = 1, type = 2; TypeProto.tensor_type = 1;
//   Tensor.elem_type = 1, shape = 2; TensorShapeProto.dim = 1;
//   Dimension.dim_value = 1, dim_param = 2.
function decodeValueInfo(buf, start, end) {
  const info = { name: stringField(buf, start, end, 1), elemType: 0, shape: null };
  for (const [ts, te] of subMessages(buf, start, end, 2)) {
    for (const [ns, ne] of subMessages(buf, ts, te, 1)) {
      const r = new Reader(buf, ns, ne);
      let t;
      while ((t = r.tag()) !== null) {
        if (t.field === 1 && t.wire === 0) info.elemType = Number(r.varint());
        else r.skip(t.wire);
      }
      for (const [ss, se] of subMessages(buf, ns, ne, 2)) {
        info.shape = subMessages(buf, ss, se, 1).map(([ds, de]) => {
          const d = new Reader(buf, ds, de);
          let v = null;
          let dt;
          while ((dt = d.tag()) !== null) {
            if (dt.field === 1 && dt.wire === 0) v = Number(BigInt.asIntN(64, d.varint()));
            else if (dt.field === 2 && dt.wire === 2) v = Buffer.from(d.bytes(d.uvarint32())).toString('utf8');
            else d.skip(dt.wire);
          }
          return v;
        });
      }
    }
  }
  return info;
}

// More of a model than readGraphInterface: the declared type and shape of
// every graph input and output, the initializer names, and metadata_props.
//   ModelProto.graph = 7, metadata_props = 14 (StringStringEntryProto:
//   key = 1, value = 2).
// Returns { inputs: [{ name, elemType, shape }], outputs: [...],
//           initializers: Set, metadata: { key: value } }.
function readModelInfo(path) {
  const buf = new Uint8Array(fs.readFileSync(path));
  const graphs = subMessages(buf, 0, buf.length, 7);
  if (!graphs.length) throw new Error(`${path}: no graph in model`);
  const [gs, ge] = graphs[graphs.length - 1];
  const metadata = {};
  for (const [s, e] of subMessages(buf, 0, buf.length, 14)) {
    metadata[stringField(buf, s, e, 1)] = stringField(buf, s, e, 2);
  }
  return {
    inputs: subMessages(buf, gs, ge, 11).map(([s, e]) => decodeValueInfo(buf, s, e)),
    outputs: subMessages(buf, gs, ge, 12).map(([s, e]) => decodeValueInfo(buf, s, e)),
    initializers: new Set(subMessages(buf, gs, ge, 5).map(([s, e]) => stringField(buf, s, e, 8))),
    metadata,
  };
}

// The concrete shape of a state pair (its "shape" in the --json report:
// Numbers, symbolic names, or null) for one set of test inputs. The symbolic
// names are resolved through the model's declared inputs: a graph input
// declared [batch, time, 8] and fed with shape [2, 12, 8] binds batch = 2.
// `declaredInputs` is readModelInfo(...).inputs; `feeds` maps input names to
// tensors (or anything with .dims). Throws when a dimension stays unknown.
function resolveStateShape(shape, declaredInputs, feeds) {
  const bound = new Map();
  for (const d of declaredInputs) {
    const fed = feeds[d.name];
    if (!fed || !d.shape) continue;
    d.shape.forEach((dim, i) => {
      if (typeof dim === 'string' && dim && i < fed.dims.length && !bound.has(dim)) bound.set(dim, fed.dims[i]);
    });
  }
  return shape.map((dim) => {
    if (typeof dim === 'number') return dim;
    if (typeof dim === 'string' && bound.has(dim)) return bound.get(dim);
    throw new Error(`state dimension ${JSON.stringify(dim)} of [${shape.map((x) => JSON.stringify(x))}] `
      + `is not bound by any input's declared shape (bound: ${[...bound].map(([k, v]) => `${k}=${v}`).join(', ') || 'none'})`);
  });
}

// ---------------------------------------------------------------------------
// Tensor helpers
// ---------------------------------------------------------------------------

function numel(dims) {
  return dims.reduce((a, b) => a * b, 1);
}

function makeTensor(dtype, dims, data) {
  const Ctor = TYPED_ARRAYS[dtype];
  if (!Ctor) throw new Error(`unsupported dtype ${dtype}`);
  const n = numel(dims);
  const arr = data === undefined ? new Ctor(n) : data;
  if (arr.length !== n) throw new Error(`tensor data has ${arr.length} elements, shape [${dims}] needs ${n}`);
  return { dtype, dims: dims.slice(), data: arr };
}

// Anything with .type or .dtype, .dims and .data (an ort.Tensor or ours).
function asPlain(t) {
  return { dtype: t.dtype || t.type, dims: Array.from(t.dims, Number), data: t.data };
}

// IEEE 754 half (bit pattern) -> Number.
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

// Number -> IEEE 754 half bit pattern (round to nearest even).
function floatToHalf(x) {
  const f32 = new Float32Array([x]);
  const u = new Uint32Array(f32.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  return sign | half;
}

// Element i of a tensor as a Number (float16 decoded, int64 converted).
function valueAt(t, i) {
  const v = t.data[i];
  if (t.dtype === 'float16') return halfToFloat(v);
  return typeof v === 'bigint' ? Number(v) : v;
}

function toFloat64Array(t) {
  const out = new Float64Array(t.data.length);
  for (let i = 0; i < out.length; i++) out[i] = valueAt(t, i);
  return out;
}

// Split dims around `axis` into (outer, len, inner) so that element
// [o, k, i] is at flat index (o * len + k) * inner + i.
function axisLayout(dims, axis) {
  if (axis < 0 || axis >= dims.length) throw new Error(`axis ${axis} out of range for shape [${dims}]`);
  let outer = 1;
  for (let d = 0; d < axis; d++) outer *= dims[d];
  let inner = 1;
  for (let d = axis + 1; d < dims.length; d++) inner *= dims[d];
  return { outer, len: dims[axis], inner };
}

// t[..., start:end, ...] along `axis` (a copy).
function sliceAxis(t, axis, start, end) {
  const { outer, len, inner } = axisLayout(t.dims, axis);
  if (start < 0 || end > len || start > end) throw new Error(`slice [${start}, ${end}) out of range 0..${len}`);
  const n = end - start;
  const dims = t.dims.slice();
  dims[axis] = n;
  const out = new t.data.constructor(outer * n * inner);
  for (let o = 0; o < outer; o++) {
    const src = (o * len + start) * inner;
    out.set(t.data.subarray(src, src + n * inner), o * n * inner);
  }
  return { dtype: t.dtype, dims, data: out };
}

// Concatenate tensors along `axis`; all other dims and the dtype must agree.
function concatAxis(ts, axis) {
  if (ts.length === 0) throw new Error('concat of nothing');
  const first = ts[0];
  for (const t of ts) {
    if (t.dtype !== first.dtype) throw new Error(`concat: dtype ${t.dtype} vs ${first.dtype}`);
    if (t.dims.length !== first.dims.length || t.dims.some((d, i) => i !== axis && d !== first.dims[i])) {
      throw new Error(`concat along axis ${axis}: shape [${t.dims}] vs [${first.dims}]`);
    }
  }
  const { outer, inner } = axisLayout(first.dims, axis);
  const total = ts.reduce((s, t) => s + t.dims[axis], 0);
  const dims = first.dims.slice();
  dims[axis] = total;
  const out = new first.data.constructor(outer * total * inner);
  for (let o = 0; o < outer; o++) {
    let dst = o * total * inner;
    for (const t of ts) {
      const n = t.dims[axis] * inner;
      out.set(t.data.subarray(o * n, o * n + n), dst);
      dst += n;
    }
  }
  return { dtype: first.dtype, dims, data: out };
}

// Split [0, len) into `parts` contiguous ranges as evenly as possible, the
// longer ranges first (12 -> 4,4,4; 10 -> 4,3,3). Each range is [start, end).
function splitRanges(len, parts) {
  if (len < parts) throw new Error(`cannot split length ${len} into ${parts} non-empty chunks`);
  const base = Math.floor(len / parts);
  const extra = len % parts;
  const out = [];
  let s = 0;
  for (let i = 0; i < parts; i++) {
    const n = base + (i < extra ? 1 : 0);
    out.push([s, s + n]);
    s += n;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Deterministic data
// ---------------------------------------------------------------------------

// mulberry32: a tiny 32-bit PRNG; good enough for test data and identical on
// every machine, unlike Math.random.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// FNV-1a of a string, so that each input gets its own stream from (seed,
// name): the data for "x" does not change when another input is added.
function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// A tensor of the given dtype/shape filled with uniform values in [-1, 1)
// (floats) or small integers in [-4, 4] (integer types), from a PRNG seeded
// by (seed, name).
function randomTensor(dtype, dims, seed, name = '') {
  const t = makeTensor(dtype, dims);
  const rnd = mulberry32((seed ^ hashString(name)) >>> 0);
  for (let i = 0; i < t.data.length; i++) {
    const u = rnd() * 2 - 1;
    switch (dtype) {
      case 'float32': case 'float64': t.data[i] = u; break;
      case 'float16': t.data[i] = floatToHalf(u); break;
      case 'int64': t.data[i] = BigInt(Math.round(u * 4)); break;
      case 'uint64': t.data[i] = BigInt(Math.round(rnd() * 4)); break;
      case 'bool': t.data[i] = u >= 0 ? 1 : 0; break;
      case 'uint8': case 'uint16': case 'uint32': t.data[i] = Math.round(rnd() * 4); break;
      default: t.data[i] = Math.round(u * 4);
    }
  }
  return t;
}

function zerosTensor(dtype, dims) {
  return makeTensor(dtype, dims);
}

// ---------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------

// Compare `actual` with `expected` elementwise: passes when every element has
// |a - e| <= atol + rtol * |e| (NaN matches only NaN). Returns
//   { ok, reason, maxAbs, index, actual, expected }
// where maxAbs is the largest |a - e| and index/actual/expected describe the
// worst offending element (or the largest difference when all pass).
function compareTensors(actual, expected, { atol = 1e-5, rtol = 0 } = {}) {
  const a = asPlain(actual);
  const e = asPlain(expected);
  if (a.dims.length !== e.dims.length || a.dims.some((d, i) => d !== e.dims[i])) {
    return {
      ok: false, reason: `shape [${a.dims}] differs from expected [${e.dims}]`,
      maxAbs: Infinity, index: -1, actual: undefined, expected: undefined,
    };
  }
  if (a.dtype !== e.dtype) {
    return {
      ok: false, reason: `dtype ${a.dtype} differs from expected ${e.dtype}`,
      maxAbs: Infinity, index: -1, actual: undefined, expected: undefined,
    };
  }
  let maxAbs = 0;
  let maxIdx = -1;
  let worstExcess = 0;
  let worstIdx = -1;
  for (let i = 0; i < a.data.length; i++) {
    const x = valueAt(a, i);
    const y = valueAt(e, i);
    let diff;
    if (Number.isNaN(x) || Number.isNaN(y)) diff = Number.isNaN(x) && Number.isNaN(y) ? 0 : Infinity;
    else if (x === y) diff = 0; // also covers equal infinities
    else diff = Math.abs(x - y);
    if (maxIdx < 0 || diff > maxAbs) {
      maxAbs = diff;
      maxIdx = i;
    }
    // An infinite diff (NaN vs number, or finite vs infinite) always fails,
    // even though Infinity - rtol * Infinity would be NaN.
    const excess = diff === Infinity ? Infinity : diff - (atol + rtol * Math.abs(y));
    if (excess > worstExcess) {
      worstExcess = excess;
      worstIdx = i;
    }
  }
  const ok = worstIdx < 0;
  const index = ok ? maxIdx : worstIdx;
  return {
    ok,
    reason: ok ? '' : `max |diff| ${fmt(maxAbs)} > tolerance (atol ${atol}, rtol ${rtol})`,
    maxAbs,
    index,
    actual: index >= 0 ? valueAt(a, index) : undefined,
    expected: index >= 0 ? valueAt(e, index) : undefined,
  };
}

// Flat index -> "[i,j,k]" for messages.
function unravel(dims, index) {
  const idx = [];
  for (let d = dims.length - 1; d >= 0; d--) {
    idx.unshift(index % dims[d]);
    index = Math.floor(index / dims[d]);
  }
  return `[${idx.join(',')}]`;
}

function fmt(x) {
  if (x === undefined) return '-';
  if (!Number.isFinite(x)) return String(x);
  return x === 0 ? '0' : x.toExponential(2);
}

// One-line description of a comparison result.
function describeComparison(res, dims) {
  if (res.index < 0) return `max |diff| ${fmt(res.maxAbs)}${res.reason ? ' (' + res.reason + ')' : ''}`;
  const where = `at ${unravel(dims, res.index)}: got ${res.actual}, expected ${res.expected}`;
  return res.ok ? `max |diff| ${fmt(res.maxAbs)}` : `${res.reason}; worst ${where}`;
}

// ---------------------------------------------------------------------------
// ONNX Runtime glue and command line
// ---------------------------------------------------------------------------

// Load onnxruntime-node, with a helpful message when `npm install` was not
// run in tests/e2e.
function requireOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    throw new Error('cannot load onnxruntime-node: run `npm ci --onnxruntime-node-install=skip` in tests/e2e ('
      + e.message.split('\n')[0] + ')');
  }
}

// Session options used by every script: one thread (ctest may run several
// scripts at once on a 2-core machine) and ORT's own logging off, since the
// scripts report errors themselves.
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 4 };

async function createSession(ort, path) {
  return ort.InferenceSession.create(path, SESSION_OPTIONS);
}

function toOrt(ort, t) {
  return new ort.Tensor(t.dtype, t.data, t.dims);
}

// Run a session on { name: plainTensor } feeds; returns { name: plainTensor }
// for every output of the session.
async function runSession(ort, session, feeds) {
  const ortFeeds = {};
  for (const [name, t] of Object.entries(feeds)) ortFeeds[name] = toOrt(ort, t);
  const out = await session.run(ortFeeds);
  const plain = {};
  for (const [name, t] of Object.entries(out)) plain[name] = asPlain(t);
  return plain;
}

// Minimal "--key value" / "--flag" parser. `spec` maps option names to
// 'string' or 'boolean'; unknown options are an error.
function parseArgs(argv, spec) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${arg}`);
    let key = arg.slice(2);
    let value;
    const eq = key.indexOf('=');
    if (eq >= 0) {
      value = key.slice(eq + 1);
      key = key.slice(0, eq);
    }
    if (!(key in spec)) throw new Error(`unknown option --${key}`);
    if (spec[key] === 'boolean') {
      out[key] = true;
    } else {
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new Error(`--${key} needs a value`);
        value = argv[++i];
      }
      out[key] = value;
    }
  }
  return out;
}

module.exports = {
  Reader,
  decodeTensorProto,
  loadTensorPb,
  readGraphInterface,
  readModelInfo,
  resolveStateShape,
  numel,
  makeTensor,
  asPlain,
  halfToFloat,
  floatToHalf,
  valueAt,
  toFloat64Array,
  sliceAxis,
  concatAxis,
  splitRanges,
  mulberry32,
  randomTensor,
  zerosTensor,
  compareTensors,
  describeComparison,
  unravel,
  fmt,
  requireOrt,
  createSession,
  runSession,
  toOrt,
  parseArgs,
  SESSION_OPTIONS,
};
