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
// are decoded straight from the protobuf wire format. The wire-format reader,
// the model reader and the tensor helpers are the rnnstate package's
// (js/rnnstate/lib, plain modules that need nothing installed).

const fs = require('fs');
const path = require('path');

const PACKAGE_LIB = path.join(__dirname, '..', '..', 'js', 'rnnstate', 'lib');
const {
  Reader, readRepeated, readF32, readF64, readI64, readU64, readI32,
} = require(path.join(PACKAGE_LIB, 'protobuf'));
const tensor = require(path.join(PACKAGE_LIB, 'tensor'));
const { readModelInfo } = require(path.join(PACKAGE_LIB, 'onnx_model'));
const state = require(path.join(PACKAGE_LIB, 'state'));

const {
  ONNX_DTYPES, asPlain, valueAt, makeTensor, randomTensor, zerosTensor,
} = tensor;

// ---------------------------------------------------------------------------
// TensorProto
// ---------------------------------------------------------------------------

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

// The names of a model's graph inputs, outputs and initializers. ORT's
// session.inputNames leaves out inputs that have an initializer (the
// rewriter's state defaults), so the scripts use this to see the model's full
// declared interface.
function readGraphInterface(path) {
  const info = readModelInfo(path);
  return {
    inputs: info.inputs.map((i) => i.name),
    outputs: info.outputs.map((o) => o.name),
    initializers: info.initializers,
  };
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

// The concrete shape of a state pair (its "shape" in the --json report) for
// one set of test inputs: symbolic names resolved through the model's
// declared inputs (see the package's state.js).
function resolveStateShape(shape, declaredInputs, feeds) {
  return state.resolveStateShape({ input: 'state', shape }, declaredInputs, feeds);
}

function toFloat64Array(t) {
  const out = new Float64Array(t.data.length);
  for (let i = 0; i < out.length; i++) out[i] = valueAt(t, i);
  return out;
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
// Check scripts: results, manifests, test inputs
// ---------------------------------------------------------------------------

// A bad command line or input file (exit status 2), as opposed to a failed
// check (exit status 1).
class UsageError extends Error {}

// Collects check results, printing one line per check as it goes.
class Checks {
  constructor() {
    this.passed = 0;
    this.failed = 0;
  }

  pass(name, detail) {
    this.passed++;
    console.log(`PASS ${name}${detail ? ': ' + detail : ''}`);
  }

  fail(name, detail) {
    this.failed++;
    console.log(`FAIL ${name}${detail ? ': ' + detail : ''}`);
  }

  // Record a tensor comparison; `got`/`want` may be undefined when a model
  // did not produce the output at all.
  compare(name, got, want, tol) {
    if (!got) return this.fail(name, 'output missing from the model under test');
    if (!want) return this.fail(name, 'output missing from the reference run');
    const res = compareTensors(got, want, tol);
    const detail = describeComparison(res, want.dims);
    if (res.ok) this.pass(name, detail);
    else this.fail(name, detail);
  }
}

function readJson(file, what) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${file}: ${e.message}`);
  }
}

// The first model of a --json report (the one a check script is about).
function readReportModel(file) {
  const report = readJson(file, 'report');
  const rmodel = report.models && report.models[0];
  if (!rmodel) throw new UsageError(`${file}: no models[0] in the report`);
  if (rmodel.status === 'error') throw new UsageError(`${file}: the rewriter reported an error: ${rmodel.error}`);
  return rmodel;
}

// The manifest lists inputs/outputs as { name: {...} } objects (what
// models/export_torch_models.py writes); a list of { name, ... } is accepted
// too. Returns an array of { name, ...spec }.
function namedList(v) {
  if (!v) return [];
  if (Array.isArray(v)) return v;
  return Object.entries(v).map(([name, spec]) => ({ name, ...spec }));
}

function findEntry(manifest, entryName) {
  const models = manifest.models || [];
  const hit = models.find((m) => m.file === entryName)
    || models.find((m) => path.basename(m.file || '') === path.basename(entryName));
  if (!hit) {
    throw new UsageError(`manifest has no entry for ${entryName} (entries: ${models.map((m) => m.file).join(', ')})`);
  }
  return hit;
}

// Build the full-length test inputs described by the manifest entry.
function makeInputs(inputSpecs, seed) {
  const feeds = {};
  for (const spec of inputSpecs) {
    const dtype = spec.dtype || 'float32';
    const fill = spec.fill || 'random';
    if (fill === 'random') feeds[spec.name] = randomTensor(dtype, spec.shape, seed, spec.name);
    else if (fill === 'zeros') feeds[spec.name] = zerosTensor(dtype, spec.shape);
    else if (typeof fill === 'number') {
      // a fixed value, for inputs such as a sample rate
      const t = zerosTensor(dtype, spec.shape);
      t.data.fill(typeof t.data[0] === 'bigint' ? BigInt(fill) : fill);
      feeds[spec.name] = t;
    } else throw new UsageError(`input ${spec.name}: unknown fill "${fill}"`);
  }
  return feeds;
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

// parseArgs for a check script: a bad command line is a UsageError, and
// every name in `required` must be given (unless --help is).
function parseCheckArgs(argv, spec, required) {
  let args;
  try {
    args = parseArgs(argv, { ...spec, help: 'boolean' });
  } catch (e) {
    throw new UsageError(e.message);
  }
  for (const k of args.help ? [] : required) {
    if (!args[k]) throw new UsageError(`--${k} is required`);
  }
  return args;
}

// Runs a check script's async main(argv) and exits with its status: 2 and
// the usage for a UsageError, 1 for any other error.
function runScript(name, usage, main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      if (e instanceof UsageError) {
        console.error(`${name}: ${e.message}\n${usage}`);
        process.exit(2);
      }
      console.error(`${name}: FAIL: ${e.message}`);
      process.exit(1);
    },
  );
}

module.exports = {
  boundDims: state.boundDims,
  runScript,
  parseCheckArgs,
  UsageError,
  Checks,
  readJson,
  readReportModel,
  namedList,
  findEntry,
  makeInputs,
  Reader,
  decodeTensorProto,
  loadTensorPb,
  readGraphInterface,
  readModelInfo,
  resolveStateShape,
  numel: tensor.numel,
  makeTensor,
  asPlain,
  halfToFloat: tensor.halfToFloat,
  floatToHalf: tensor.floatToHalf,
  valueAt,
  toFloat64Array,
  sliceAxis: tensor.sliceAxis,
  concatAxis: tensor.concatAxis,
  splitRanges,
  mulberry32: tensor.mulberry32,
  randomTensor: tensor.randomTensor,
  zerosTensor: tensor.zerosTensor,
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
