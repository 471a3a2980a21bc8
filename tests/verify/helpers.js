'use strict';
// Shared by the tests of js/rnnstate (rnnstate-verify and StatefulSession) on
// real models: rewriting with the CLI, a manifest entry's test inputs as
// tensors and .npy files, running rnnstate-verify as a user would, and
// editing a model's metadata to break a rewrite on purpose.

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const ROOT = path.join(__dirname, '..', '..');
const PACKAGE = path.join(ROOT, 'js', 'rnnstate');
const VERIFY_BIN = path.join(PACKAGE, 'bin', 'rnnstate-verify.js');
const tensor = require(path.join(PACKAGE, 'lib', 'tensor'));
const { formatNpy } = require(path.join(PACKAGE, 'lib', 'npy'));
const { Reader, stringField } = require(path.join(PACKAGE, 'lib', 'protobuf'));

// The package's onnxruntime-node must be installed (npm ci in js/rnnstate).
function requirePackageInstalled() {
  if (!fs.existsSync(path.join(PACKAGE, 'node_modules', 'onnxruntime-node'))) {
    console.error(`onnxruntime-node is not installed for js/rnnstate: run 'npm ci --onnxruntime-node-install=skip' in ${PACKAGE}`);
    process.exit(1);
  }
}

function findEntry(manifestPath, file) {
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const entry = manifest.models.find((m) => m.file === file);
  if (!entry) throw new Error(`${manifestPath}: no entry for ${file}`);
  return { ...entry, chunks: entry.chunks ?? manifest.chunks ?? 3 };
}

// The entry's inputs as { name: { spec, tensor } }, filled as check_model.js
// fills them (random with seed 1234, zeros, or a fixed value), with
// `overrides` replacing dims ({ name: dims }).
function manifestInputs(entry, overrides = {}) {
  const out = {};
  for (const [name, spec] of Object.entries(entry.inputs)) {
    const dims = overrides[name] || spec.shape;
    let t;
    if (spec.fill === 'random') t = tensor.randomTensor(spec.dtype, dims, 1234, name);
    else {
      t = tensor.zerosTensor(spec.dtype, dims);
      if (typeof spec.fill === 'number') t.data.fill(typeof t.data[0] === 'bigint' ? BigInt(spec.fill) : spec.fill);
    }
    out[name] = { spec, tensor: t };
  }
  return out;
}

// Writes the entry's inputs as .npy files into dir; returns the
// --input NAME=FILE arguments of rnnstate-verify.
function writeNpyInputs(entry, dir) {
  const args = [];
  for (const [name, { tensor: t }] of Object.entries(manifestInputs(entry))) {
    const file = path.join(dir, `${name}.npy`);
    fs.writeFileSync(file, formatNpy(t));
    args.push('--input', `${name}=${file}`);
  }
  return args;
}

// Rewrites model into out with the CLI; returns the --json report's model.
function rewrite(tool, model, out, args = []) {
  const r = spawnSync(tool, [model, '-o', out, '--json', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${tool} ${model} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout).models[0];
}

// Runs rnnstate-verify --json; returns { status, result, stdout, stderr }.
function runVerify(args) {
  const r = spawnSync(process.execPath, [VERIFY_BIN, '--json', ...args], { encoding: 'utf8' });
  let result = null;
  try {
    result = JSON.parse(r.stdout);
  } catch (e) {
    result = null;
  }
  return { status: r.status, result, stdout: r.stdout, stderr: r.stderr };
}

// Prints rnnstate-verify's text report of a JSON result, one line per check
// and output, so a test log shows what was proven.
function describe(result) {
  const lines = [];
  for (const c of result.checks) {
    lines.push(`  ${c.status.toUpperCase()} ${c.name}: ${c.reason}`);
    for (const o of c.outputs) {
      lines.push(`    ${o.status.toUpperCase()} ${o.name}: max abs ${o.max_abs}, max rel ${o.max_rel}${o.reason ? ' ' + o.reason : ''}`);
    }
  }
  return lines.join('\n');
}

function encodeVarint(n) {
  const out = [];
  let v = n;
  do {
    out.push((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v = Math.floor(v / 128);
  } while (v);
  return Buffer.from(out);
}

function lengthDelimited(field, bytes) {
  return Buffer.concat([encodeVarint((field << 3) | 2), encodeVarint(bytes.length), bytes]);
}

// A copy of the model file whose metadata_props entry `key` holds `value`
// instead (ModelProto.metadata_props = 14; key = 1, value = 2).
function withMetadata(modelBytes, key, value) {
  const buf = new Uint8Array(modelBytes);
  const r = new Reader(buf);
  const parts = [];
  for (let at = r.pos, t = r.tag(); t; at = r.pos, t = r.tag()) {
    let entryKey = null;
    if (t.field === 14 && t.wire === 2) {
      const len = r.length();
      entryKey = stringField(buf, r.pos, r.pos + len, 1);
      r.pos += len;
    } else {
      r.skip(t.wire);
    }
    if (entryKey !== key) parts.push(buf.subarray(at, r.pos));
  }
  const entry = Buffer.concat([lengthDelimited(1, Buffer.from(key)), lengthDelimited(2, Buffer.from(value))]);
  return Buffer.concat([...parts, lengthDelimited(14, entry)]);
}

module.exports = {
  ROOT, PACKAGE, VERIFY_BIN, tensor, requirePackageInstalled, findEntry, manifestInputs, writeNpyInputs, rewrite,
  runVerify, describe, withMetadata,
};
