'use strict';
// StatefulSession: runs a model rewritten by rnnstate-rewrite call after call,
// feeding each state pair's output back as its input (recurrent and context
// pairs alike), in chunks whose length along the time axes is a multiple of
// the model's chunk_multiple (rnnstate.stream).

const { readModelFile, withoutInitializers } = require('./onnx_model');
const {
  statePairs, timeAxes, streamInfo, describeBlockers, resolveStateShape, fed,
} = require('./state');
const { zerosTensor } = require('./tensor');
const { loadOrt, asOrtTensor, externalDataHint, optionsForBytesOf } = require('./ort');

// The ORT source for a model whose state inputs must take fed values. With
// --state-inputs=optional a state input has a default (an initializer of
// the same name), and onnxruntime-node silently ignores a feed for such an
// input: the stream would restart from zeros at every call. So those
// initializers are left out of an in-memory copy, which ORT loads instead of
// the file (and finds the file's external data, see optionsForBytesOf).
// Returns the path itself when there is nothing to leave out.
function sessionSource(path, bytes, model, pairs) {
  const defaults = pairs.map((p) => p.input).filter((n) => model.initializers.has(n));
  return defaults.length ? withoutInitializers(bytes, defaults, path) : path;
}

class StatefulSession {
  // Opens a rewritten model. The pairs come from its metadata (rnnstate.state)
  // unless options.pairs ([{ input, output }]) gives them, e.g. for a model
  // never run through rnnstate-rewrite; the time axes likewise from
  // rnnstate.time unless options.time ([{ input, axis }]) gives them.
  // options.sessionOptions go to ort.InferenceSession.create.
  // A model whose verdict (rnnstate.stream) is `none` cannot stream exactly:
  // create() refuses it, naming the rewriter's blockers, unless
  // options.allowInexact is true (the outputs will then differ from one
  // whole-sequence call). An `unknown` verdict opens with a warning
  // (process.emitWarning, code RNNSTATE_STREAM_UNKNOWN) unless options.quiet
  // (rnnstate-verify names the verdict in its own report).
  static async create(path, options = {}) {
    const { bytes, model } = readModelFile(path);
    const stream = streamInfo(model, path);
    if (stream && stream.verdict === 'none' && !options.allowInexact) {
      throw new Error(`${path}: the model cannot stream exactly (rnnstate.stream: verdict none): feeding the state `
        + `pairs back will not reproduce the whole-sequence outputs: ${describeBlockers(stream)} `
        + '(options.allowInexact: true streams it anyway)');
    }
    if (stream && stream.verdict === 'unknown' && !options.quiet) {
      process.emitWarning(`${path}: the rewriter could not tell whether the model streams exactly `
        + `(rnnstate.stream: verdict unknown): ${describeBlockers(stream)}`, { code: 'RNNSTATE_STREAM_UNKNOWN' });
    }
    const pairs = options.pairs || statePairs(model, path);
    if (!pairs) {
      throw new Error(`${path}: no state pairs (no rnnstate.state metadata): rewrite the model with rnnstate-rewrite, `
        + 'or pass them as options.pairs');
    }
    const known = new Set(model.inputs.map((i) => i.name));
    const outputs = new Set(model.outputs.map((o) => o.name));
    for (const p of pairs) {
      if (!known.has(p.input) || !outputs.has(p.output)) {
        throw new Error(`${path}: state pair ${p.input} -> ${p.output} is not a graph input and output of the model`);
      }
    }
    const ort = loadOrt();
    const source = sessionSource(path, bytes, model, pairs);
    // A copy in memory finds its external data in the file's directory.
    const sessionOptions = typeof source === 'string' ? options.sessionOptions || {}
      : optionsForBytesOf(path, options.sessionOptions);
    let session;
    try {
      session = await ort.InferenceSession.create(source, sessionOptions);
    } catch (e) {
      throw new Error(`${path}: ONNX Runtime cannot load the model: ${e.message}${externalDataHint(e.message)}`);
    }
    return new StatefulSession(session, model, pairs, options.time || timeAxes(model, path) || [], stream, path);
  }

  constructor(session, model, pairs, times, stream = null, path = 'the model') {
    this.session = session;
    this.model = model;
    this.path = path;
    // { verdict, chunk_multiple, blockers } from rnnstate.stream, or null
    this.stream = stream;
    this.chunkMultiple = stream ? stream.chunk_multiple : 1;
    // Each pair with its declared shape and dtype where the pair leaves them
    // out (pairs given by the caller).
    this.pairs = pairs.map((p) => {
      const declared = model.inputs.find((i) => i.name === p.input);
      return { ...p, shape: p.shape || declared.shape, dtype: p.dtype || declared.dtype };
    });
    this.timeAxes = times;
    this.state = null;
  }

  // The graph inputs a caller feeds: all but the state inputs.
  get inputNames() {
    const state = new Set(this.pairs.map((p) => p.input));
    return this.model.inputs.map((i) => i.name).filter((n) => !state.has(n) && !this.model.initializers.has(n));
  }

  get outputNames() {
    return this.session.outputNames;
  }

  // Zeros for every state input that `feeds` leaves out, shaped for the
  // batch of these feeds (a state input fed is used as given: no zeros are
  // built for it, so a shape the feeds cannot tell is no obstacle then).
  zeroState(feeds) {
    const state = new Map();
    for (const p of this.pairs) {
      if (fed(feeds, p.input)) continue;
      if (!p.shape) {
        throw new Error(`${this.path}: state input ${p.input} has no declared shape: pass it in the first call's feeds, `
          + 'or give the pair with its shape (option pairs: [{ input, output, shape }])');
      }
      const dims = resolveStateShape(p, this.model.inputs, feeds, this.timeAxes, this.path, this.pairs);
      state.set(p.input, asOrtTensor(zerosTensor(p.dtype, dims)));
    }
    return state;
  }

  // Refuses a chunk whose length along a time axis is 0 (ONNX Runtime aborts
  // the process on some of those) or not a multiple of chunk_multiple.
  checkChunkLengths(feeds) {
    for (const t of this.timeAxes) {
      const tensor = fed(feeds, t.input);
      if (!tensor || t.axis >= tensor.dims.length) continue;
      const length = Number(tensor.dims[t.axis]);
      if (length === 0) throw new Error(`${this.path}: input ${t.input} has 0 steps along its time axis ${t.axis}`);
      if (length % this.chunkMultiple) {
        throw new Error(`${this.path}: input ${t.input} has ${length} steps along its time axis ${t.axis}: `
          + `chunks must be a multiple of ${this.chunkMultiple} steps (rnnstate.stream chunk_multiple)`);
      }
    }
  }

  // One call: `feeds` maps the model's inputs to tensors (a state input fed
  // here is used as given for this call, the first one included, instead of
  // the carried state or zeros). Returns every output,
  // the state outputs included; the state outputs are kept for the next call.
  async run(feeds, runOptions) {
    this.checkChunkLengths(feeds);
    // Maps, and an object made by Object.fromEntries for ORT: an input named
    // "__proto__" or "constructor" stays an input like any other.
    const given = new Map(Object.entries(feeds).map(([name, t]) => [name, asOrtTensor(t)]));
    const state = this.state || this.zeroState(feeds);
    const all = new Map([...state, ...given]);
    const out = await this.session.run(Object.fromEntries(all), runOptions);
    const next = new Map();
    for (const p of this.pairs) {
      const value = fed(out, p.output);
      if (!value) throw new Error(`${this.path}: the model did not return state output ${p.output}`);
      next.set(p.input, value);
    }
    this.state = next;
    return out;
  }

  // Starts the next call from zeros again (a new stream).
  reset() {
    this.state = null;
  }

  async release() {
    await this.session.release();
  }
}

module.exports = { StatefulSession };
