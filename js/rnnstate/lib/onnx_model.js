'use strict';
// What the package reads of an ONNX model, straight from the protobuf wire
// format (onnxruntime-node has no metadata API, and ORT's inputNames leaves
// out inputs that have an initializer): the main graph's declared inputs and
// outputs with their types and shapes, its initializer names, metadata_props,
// and the recurrent nodes of every graph with their direction.
//   ModelProto.graph = 7, metadata_props = 14 (StringStringEntryProto:
//   key = 1, value = 2); GraphProto.node = 1, initializer = 5, input = 11,
//   output = 12; TensorProto.name = 8; NodeProto.name = 3, op_type = 4,
//   attribute = 5; AttributeProto.name = 1, s = 4, g = 6, graphs = 11.

const { Reader, subMessages, stringField, intField } = require('./protobuf');
const { readRegularFile } = require('./files');
const { ONNX_DTYPES } = require('./tensor');

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
            else if (dt.field === 2 && dt.wire === 2) v = Buffer.from(d.bytes(d.length())).toString('utf8');
            else d.skip(dt.wire);
          }
          return v;
        });
      }
    }
  }
  return info;
}

const RECURRENT_OPS = new Set(['RNN', 'GRU', 'LSTM', 'DynamicQuantizeLSTM']);

// Every string of repeated field `field` of the message in buf[start:end].
function repeatedStrings(buf, start, end, field) {
  return subMessages(buf, start, end, field).map(([s, e]) => Buffer.from(buf.subarray(s, e)).toString('utf8'));
}

// Subgraphs (If branches, Loop and Scan bodies) nested deeper than this are
// refused: the walk recurses, and a hostile file could nest them until the
// stack overflows. The C tool's default of 256 nested messages allows about
// as many (each subgraph level is 4 messages: node, attribute, graph, node).
const MAX_SUBGRAPH_DEPTH = 64;

// Walks the graph in buf[start:end] and its subgraphs (If branches, Loop and
// Scan bodies). Fills `out.recurrent` with the recurrent nodes, each { op,
// name, direction, layout, initialState: [initial_h, initial_c] value names }, and
// `out.producers` with value name -> the names it is computed from (a node's
// inputs; for a node holding subgraphs, also the values those subgraphs
// output, which is how an If's output depends on its branches; none for
// Shape and Size).
const SHAPE_ONLY_OPS = new Set(['Shape', 'Size']);

function walkGraph(buf, start, end, out, depth = 0) {
  if (depth > MAX_SUBGRAPH_DEPTH) throw new Error(`subgraphs nested more than ${MAX_SUBGRAPH_DEPTH} deep`);
  for (const [ns, ne] of subMessages(buf, start, end, 1)) {
    const op = stringField(buf, ns, ne, 4);
    const inputs = repeatedStrings(buf, ns, ne, 1);
    const outputs = repeatedStrings(buf, ns, ne, 2);
    // Shape and Size read only their input's shape, not its values: a zero
    // state sized from the frames (PyTorch's ConstantOfShape(Shape(x)))
    // does not depend on a cache concatenated in front of them.
    const sources = SHAPE_ONLY_OPS.has(op) ? [] : inputs.filter((v) => v);
    let direction = 'forward';
    let layout = 0;
    for (const [as, ae] of subMessages(buf, ns, ne, 5)) {
      const attr = stringField(buf, as, ae, 1);
      if (RECURRENT_OPS.has(op) && attr === 'direction') direction = stringField(buf, as, ae, 4) || direction;
      if (RECURRENT_OPS.has(op) && attr === 'layout') layout = intField(buf, as, ae, 3);
      for (const [gs, ge] of [...subMessages(buf, as, ae, 6), ...subMessages(buf, as, ae, 11)]) {
        walkGraph(buf, gs, ge, out, depth + 1);
        for (const [os, oe] of subMessages(buf, gs, ge, 12)) sources.push(stringField(buf, os, oe, 1));
      }
    }
    for (const v of outputs) if (v) out.producers.set(v, sources);
    if (RECURRENT_OPS.has(op)) {
      out.recurrent.push({
        op, name: stringField(buf, ns, ne, 3), direction, layout, initialState: [inputs[5] || '', inputs[6] || ''],
      });
    }
  }
  return out;
}

// True when value `name` is computed from one of the values in `sources`
// (a Set), following `producers` (see walkGraph). Linear in the graph.
function dependsOn(producers, name, sources) {
  const seen = new Set();
  const stack = [name];
  while (stack.length) {
    const v = stack.pop();
    if (!v || seen.has(v)) continue;
    if (sources.has(v)) return true;
    seen.add(v);
    for (const w of producers.get(v) || []) stack.push(w);
  }
  return false;
}

// A value_info's element type as an onnxruntime-node dtype string, or null.
function dtypeOf(info) {
  return ONNX_DTYPES[info.elemType] ? ONNX_DTYPES[info.elemType][0] : null;
}

// Decodes a model from its bytes. Returns { inputs: [{ name, elemType,
// dtype, shape }], outputs: [...], initializers: Set, metadata: { key: value }
// (an object without prototype: a key "__proto__" or "constructor" is a key
// like any other), recurrentNodes: [{ op, name, direction, initialState }],
// producers (see walkGraph) }. Any fault of the bytes is one error naming
// `label`, the model.
function readModelBytes(buf, label) {
  try {
    return decodeModel(buf);
  } catch (e) {
    const why = e instanceof RangeError ? `too deeply nested (${e.message})` : e.message;
    throw new Error(`${label}: not an ONNX model (${why})`);
  }
}

function decodeModel(buf) {
  const graphs = subMessages(buf, 0, buf.length, 7);
  const metadata = Object.create(null);
  for (const [s, e] of subMessages(buf, 0, buf.length, 14)) {
    metadata[stringField(buf, s, e, 1)] = stringField(buf, s, e, 2);
  }
  if (!graphs.length) throw new Error('no graph');
  const [gs, ge] = graphs[graphs.length - 1];
  const withDtype = (info) => ({ ...info, dtype: dtypeOf(info) });
  const walked = walkGraph(buf, gs, ge, { recurrent: [], producers: new Map() });
  return {
    inputs: subMessages(buf, gs, ge, 11).map(([s, e]) => withDtype(decodeValueInfo(buf, s, e))),
    outputs: subMessages(buf, gs, ge, 12).map(([s, e]) => withDtype(decodeValueInfo(buf, s, e))),
    initializers: new Set(subMessages(buf, gs, ge, 5).map(([s, e]) => stringField(buf, s, e, 8))),
    metadata,
    recurrentNodes: walked.recurrent,
    producers: walked.producers,
  };
}

// A model file (a regular file only: see files.js) read and decoded.
function readModelFile(path) {
  const buf = new Uint8Array(readRegularFile(path, 'a model'));
  return { bytes: buf, model: readModelBytes(buf, path) };
}

// More of a model than the graph interface: declared types and shapes,
// initializer names, metadata_props, recurrent nodes (see readModelBytes).
function readModelInfo(path) {
  return readModelFile(path).model;
}

function encodeVarint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Uint8Array.from(out);
}

// The fields of the message in buf[start:end] as raw byte ranges
// { field, start, end, body: [s, e] } (body only for wire type 2).
function rawFields(buf, start, end) {
  const r = new Reader(buf, start, end);
  const out = [];
  for (;;) {
    const at = r.pos;
    const t = r.tag();
    if (!t) return out;
    let body = null;
    if (t.wire === 2) {
      const len = r.length();
      body = [r.pos, r.pos + len];
      r.pos += len;
    } else {
      r.skip(t.wire);
    }
    out.push({ field: t.field, start: at, end: r.pos, body });
  }
}

// A copy of the model bytes whose main graph lacks the initializers named in
// `names`: the graph inputs they gave a default to become plain inputs, whose
// fed values onnxruntime-node honours (it ignores a feed for an input that has
// an initializer). Bytes that cannot be copied are one error naming `label`.
function withoutInitializers(buf, names, label = 'the model') {
  try {
    return copyWithout(buf, new Set(names));
  } catch (e) {
    throw new Error(`${label}: not an ONNX model (${e.message})`);
  }
}

function copyWithout(buf, drop) {
  const parts = [];
  for (const f of rawFields(buf, 0, buf.length)) {
    if (f.field !== 7 || !f.body) {
      parts.push(buf.subarray(f.start, f.end));
      continue;
    }
    const kept = rawFields(buf, ...f.body)
      .filter((g) => !(g.field === 5 && g.body && drop.has(stringField(buf, ...g.body, 8))))
      .map((g) => buf.subarray(g.start, g.end));
    const length = kept.reduce((n, p) => n + p.length, 0);
    parts.push(Uint8Array.of(0x3a), encodeVarint(length), ...kept); // 0x3a: field 7, wire type 2
  }
  return Buffer.concat(parts);
}

module.exports = { dependsOn, readModelBytes, readModelFile, readModelInfo, withoutInitializers, decodeValueInfo };
