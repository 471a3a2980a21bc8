'use strict';
// NumPy .npy files (format versions 1 to 3) for the element types ONNX Runtime
// takes, read into and written from plain tensors { dtype, dims, data }
// (see tensor.js). C order and little-endian data only: that is what
// numpy.save writes on every machine ONNX Runtime runs on.

const { TYPED_ARRAYS, numel } = require('./tensor');
const { readRegularFile } = require('./files');
const { printable } = require('./text');

// numpy descr (without its byte-order character) -> ORT dtype (no prototype:
// a descr such as '<__proto__' read from a file is simply not one).
const DESCR_DTYPES = Object.assign(Object.create(null), {
  f2: 'float16', f4: 'float32', f8: 'float64',
  i1: 'int8', i2: 'int16', i4: 'int32', i8: 'int64',
  u1: 'uint8', u2: 'uint16', u4: 'uint32', u8: 'uint64',
  b1: 'bool',
});
// Room for the magic, the header length and the header itself, whose
// length field can say up to 4 GiB (format 2 and 3); numpy writes less than
// a few kilobytes.
const MAX_HEADER_BYTES = 1 << 20;
const DTYPE_DESCRS = Object.assign(Object.create(null), Object.fromEntries(Object.entries(DESCR_DTYPES).map(([d, t]) => [t, d])));
const MAGIC = '\x93NUMPY';

// The header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 10, 8), }
function parseHeader(text, label) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) throw new Error(`${label}: not a .npy file (bad header "${printable(text, 120)}")`);
  const order = descr[1][0];
  const code = descr[1].slice(1);
  if (!DESCR_DTYPES[code] || !['<', '|', '='].includes(order)) {
    throw new Error(`${label}: element type '${printable(descr[1], 20)}' is not one ONNX Runtime takes `
      + `(little-endian ${Object.keys(DESCR_DTYPES).join(', ')})`);
  }
  if (fortran[1] === 'True') throw new Error(`${label}: Fortran-order array; save it with numpy.ascontiguousarray`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  if (dims.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new Error(`${label}: bad shape (${printable(shape[1], 80)})`);
  return { dtype: DESCR_DTYPES[code], dims };
}

// Parses .npy bytes. `label` names the file in errors; an array of more
// than `maxElements` elements is refused before it is allocated.
function parseNpy(buf, label, maxElements = Infinity) {
  if (buf.length < 10 || buf.subarray(0, 6).toString('latin1') !== MAGIC) {
    throw new Error(`${label}: not a .npy file (no \\x93NUMPY magic)`);
  }
  const major = buf[6];
  if (major < 1 || major > 3) throw new Error(`${label}: .npy format version ${major} is not supported`);
  const lenBytes = major === 1 ? 2 : 4;
  if (buf.length < 8 + lenBytes) throw new Error(`${label}: truncated header`);
  const headerLen = lenBytes === 2 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = 8 + lenBytes + headerLen;
  if (start > buf.length) throw new Error(`${label}: truncated header`);
  if (headerLen > MAX_HEADER_BYTES) throw new Error(`${label}: a header of ${headerLen} bytes (numpy writes a few hundred)`);
  const { dtype, dims } = parseHeader(buf.subarray(8 + lenBytes, start).toString(major === 3 ? 'utf8' : 'latin1'), label);
  const Ctor = TYPED_ARRAYS[dtype];
  const count = numel(dims);
  if (count > maxElements) {
    throw new Error(`${label}: shape (${dims}) has ${count} elements, more than the ${maxElements} allowed (--max-elements)`);
  }
  if (buf.length - start !== count * Ctor.BYTES_PER_ELEMENT) {
    throw new Error(`${label}: ${buf.length - start} bytes of data, shape (${dims}) of ${dtype} needs ${count * Ctor.BYTES_PER_ELEMENT}`);
  }
  const data = new Ctor(count); // a copy: the file's data may be unaligned
  new Uint8Array(data.buffer).set(buf.subarray(start));
  return { dtype, dims, data };
}

// A .npy file (a regular file only: see files.js). With options.maxElements,
// a file larger than that many 8-byte elements and a header could need is
// refused before it is read, and an array of more elements before it is
// allocated.
function readNpy(path, options = {}) {
  const maxElements = options.maxElements ?? Infinity;
  const buf = readRegularFile(path, 'a .npy file', MAX_HEADER_BYTES + 10 + maxElements * 8);
  return parseNpy(buf, path, maxElements);
}

// .npy (version 1) bytes of a plain tensor.
function formatNpy(t) {
  const descr = DTYPE_DESCRS[t.dtype];
  if (!descr) throw new Error(`no .npy element type for ${t.dtype}`);
  const shape = t.dims.length === 1 ? `(${t.dims[0]},)` : `(${t.dims.join(', ')})`;
  let header = `{'descr': '${descr.endsWith('1') ? '|' : '<'}${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n'; // data aligned to 64 bytes
  const head = Buffer.alloc(10);
  head.write(MAGIC, 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  return Buffer.concat([head, Buffer.from(header, 'latin1'),
    Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)]);
}

module.exports = { parseNpy, readNpy, formatNpy };
