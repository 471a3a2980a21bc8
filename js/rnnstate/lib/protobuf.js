'use strict';
// A reader for the protobuf wire format, enough to walk the few ONNX messages
// the package needs (ModelProto's graph interface, nodes and metadata) without
// a protobuf library or the .proto schema.

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

module.exports = {
  Reader, readRepeated, subMessages, stringField, readF32, readF64, readI64, readU64, readI32,
};
