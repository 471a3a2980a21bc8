'use strict';
// Tensors as plain objects { dtype, dims, data }: dtype an onnxruntime-node
// type string ('float32', 'int64', ...), dims a Number[], data the matching
// typed array (BigInt64Array for int64, Uint16Array holding IEEE half bits for
// float16). That is what `new ort.Tensor(dtype, data, dims)` takes and what an
// ort.Tensor exposes as .type/.dims/.data, so values move without copies.

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

// dtype string -> typed array constructor (no prototype: a dtype read from a
// file such as "constructor" is simply not one).
const TYPED_ARRAYS = Object.create(null);
for (const [name, ctor] of Object.values(ONNX_DTYPES)) TYPED_ARRAYS[name] = ctor;

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

module.exports = {
  ONNX_DTYPES, TYPED_ARRAYS, numel, makeTensor, asPlain, halfToFloat, floatToHalf, valueAt, sliceAxis, concatAxis,
  mulberry32, randomTensor, zerosTensor,
};
