// The Node.js half of python/tests/ort_bridge/onnxruntime.py: serves ONNX
// Runtime sessions (onnxruntime-node, whose path is argv[2]) over stdin and
// stdout, one JSON request per line, one JSON reply per line.
//   {"cmd": "load", "path": P}                    -> {"ok": {"id": N}}
//   {"cmd": "run", "id": N, "feeds": {name: T}, "outputs": [names]} -> {"ok": {name: T}}
// where T is {"dtype", "dims", "data": base64 of the little-endian values}.
'use strict';
const ort = require(process.argv[2]);
const readline = require('readline');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};
const sessions = [];

async function handle(req) {
  if (req.cmd === 'load') {
    sessions.push(await ort.InferenceSession.create(req.path));
    return { id: sessions.length - 1 };
  }
  if (req.cmd === 'run') {
    const feeds = {};
    for (const [name, t] of Object.entries(req.feeds)) {
      const A = ARRAYS[t.dtype];
      if (!A) throw new Error(`dtype ${t.dtype} of ${name} is not supported by the bridge`);
      const bytes = new Uint8Array(Buffer.from(t.data, 'base64')); // a fresh, aligned buffer
      feeds[name] = new ort.Tensor(t.dtype, new A(bytes.buffer, 0, bytes.byteLength / A.BYTES_PER_ELEMENT),
                                   t.dims);
    }
    const res = await sessions[req.id].run(feeds);
    const outs = {};
    for (const name of req.outputs) {
      const t = res[name];
      const d = t.data;
      outs[name] = { dtype: t.type, dims: t.dims,
                     data: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('base64') };
    }
    return outs;
  }
  throw new Error(`unknown command ${req.cmd}`);
}

let chain = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  chain = chain.then(() => handle(JSON.parse(line)))
    .then((ok) => ({ ok }), (e) => ({ error: String((e && e.message) || e) }))
    .then((reply) => process.stdout.write(JSON.stringify(reply) + '\n'));
});
