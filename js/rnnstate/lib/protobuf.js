'use strict';
// A reader for the protobuf wire format, enough to walk the few ONNX messages
// the package needs (ModelProto's graph interface, nodes and metadata) without
// a protobuf library or the .proto schema.

// A cursor over a Uint8Array. Varints are read as BigInt because ONNX dims and
// int64_data are 64-bit, and negative int32 values are sign-extended to 10
// bytes on the wire. Every length read is bounded by the end of the message
// it is in (length()), so a hostile file that claims 2^40 bytes fails at
// once instead of walking past the buffer; every error says at which byte.
class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = Math.min(end, buf.length);
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

  // Small unsigned varints as Number.
  uvarint32() {
    return Number(BigInt.asUintN(64, this.varint()));
  }

  // The length of a length-delimited field, checked against what is left of
  // the message (and of the buffer: a sub-reader's end never passes it).
  length() {
    const at = this.pos;
    const n = BigInt.asUintN(64, this.varint());
    if (n > BigInt(this.end - this.pos)) {
      throw new Error(`protobuf: truncated or corrupt (a length field at byte ${at} claims ${n} bytes, `
        + `${this.end - this.pos} are left in its message)`);
    }
    return Number(n);
  }

  bytes(n) {
    if (this.pos + n > this.end) throw new Error(`protobuf: truncated field at byte ${this.pos}`);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  // Returns { field, wire } or null at the end of the message.
  tag() {
    if (this.eof()) return null;
    const at = this.pos;
    const t = this.varint();
    const field = Number(t >> 3n);
    if (field === 0 || field > 0x1fffffff) throw new Error(`protobuf: bad field number ${field} at byte ${at}`);
    return { field, wire: Number(t & 7n) };
  }

  skip(wire) {
    switch (wire) {
      case 0: this.varint(); break;
      case 1: this.bytes(8); break;
      case 2: this.bytes(this.length()); break;
      case 5: this.bytes(4); break;
      default: throw new Error(`protobuf: unsupported wire type ${wire}`);
    }
  }
}

// Read a repeated scalar field that may be packed (wire 2) or not. `one`
// reads a single element from a reader; the values are pushed to `out`.
function readRepeated(r, wire, scalarWire, one, out) {
  if (wire === 2) {
    const len = r.length();
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

// The sub-messages of field `field` (wire type 2) in buf[start:end], as
// [start, end] ranges, in order.
function subMessages(buf, start, end, field) {
  const r = new Reader(buf, start, end);
  const out = [];
  let t;
  while ((t = r.tag()) !== null) {
    if (t.field === field && t.wire === 2) {
      const len = r.length();
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
    if (t.field === field && t.wire === 2) s = Buffer.from(r.bytes(r.length())).toString('utf8');
    else r.skip(t.wire);
  }
  return s;
}

// The integer of varint field `field` in buf[start:end] (`absent` when absent).
function intField(buf, start, end, field, absent = 0) {
  const r = new Reader(buf, start, end);
  let t;
  let v = absent;
  while ((t = r.tag()) !== null) {
    if (t.field === field && t.wire === 0) v = Number(BigInt.asIntN(64, r.varint()));
    else r.skip(t.wire);
  }
  return v;
}

module.exports = {
  Reader, readRepeated, subMessages, stringField, intField, readF32, readF64, readI64, readU64, readI32,
};
