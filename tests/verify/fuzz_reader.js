#!/usr/bin/env node
'use strict';
// A mutation fuzzer for js/rnnstate's readers of hostile files: the protobuf
// reader of ONNX models (readModelBytes), the rnnstate.* metadata parsers,
// the copy without defaults (withoutInitializers) and the .npy reader.
//   node fuzz_reader.js [--seconds N] [--seed S] [--work DIR] [--replay FILE...]
// Seeds: the small models of models/, models with hand-made metadata
// (stream_models.js), nested subgraphs and .npy files. Each input is a seed
// mutated a few times (bits and bytes flipped, huge varints written over
// bytes, ranges cut, copied or spliced from another seed, truncation). For
// each input it checks that
//   - the reader returns a model or throws an Error whose message is one
//     line starting with the file's label;
//   - the metadata parsers do the same on what it returned;
//   - the copy without the first initializers reads back as the same model
//     less those initializers;
//   - nothing takes longer than a second (a hang shows as the ctest timeout).
// A finding is written to WORK/finding-<sha1>.bin with its message; --replay
// runs files through the same checks. --seed 0 picks a random seed. Exit
// status: 0 nothing found, 1 a finding. Closes with 'N passed, N failed'.

const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert');
const h = require('./helpers');
const m = require('./stream_models');
const b = require('./onnx_build');

const { readModelBytes, withoutInitializers } = require(path.join(h.PACKAGE, 'lib', 'onnx_model'));
const { statePairs, timeAxes, streamInfo } = require(path.join(h.PACKAGE, 'lib', 'state'));
const { parseNpy, formatNpy } = require(path.join(h.PACKAGE, 'lib', 'npy'));
const { mulberry32, randomTensor } = h.tensor;

const LABEL = 'fuzz.onnx';
const SLOW_MS = 1000;

function parseArgs(argv) {
  const opts = { seconds: 10, seed: 1, work: path.join(os.tmpdir(), 'rnnstate-js-fuzz'), replay: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--seconds') opts.seconds = Number(argv[++i]);
    else if (a === '--seed') opts.seed = Number(argv[++i]);
    else if (a === '--work') opts.work = argv[++i];
    else if (a === '--replay') opts.replay = argv.slice(i + 1);
    else throw new Error(`fuzz_reader: unknown argument ${a}`);
    if (opts.replay) break;
  }
  if (!Number.isFinite(opts.seconds) || !Number.isInteger(opts.seed)) throw new Error('fuzz_reader: bad --seconds or --seed');
  if (opts.seed === 0) opts.seed = crypto.randomInt(1, 2 ** 31);
  return opts;
}

function seeds() {
  const out = [];
  const models = path.join(h.ROOT, 'models');
  for (const f of fs.readdirSync(models).sort()) {
    const file = path.join(models, f);
    if (f.endsWith('.onnx') && fs.statSync(file).size <= 32768) out.push({ kind: 'onnx', bytes: fs.readFileSync(file) });
  }
  const stream = { verdict: 'none', chunk_multiple: 2, blockers: [{ graph: 'main', op: 'Conv', name: 'c', reason: 'r' }] };
  out.push({ kind: 'onnx', bytes: m.pairedFrames({ stateful: true, metadata: m.metadata({ state: m.PAIRED_STATE, stream }) }) });
  out.push({ kind: 'onnx', bytes: m.causalConv({ stateful: true, metadata: m.metadata({ state: m.CONV_STATE }) }) });
  for (const [dtype, dims] of [['float32', [2, 5, 3]], ['int64', []], ['float16', [4]], ['bool', [1, 2]]]) {
    out.push({ kind: 'npy', bytes: formatNpy(randomTensor(dtype, dims, 1, 'x')) });
  }
  return out;
}

// One mutated copy of a seed (1 to 4 mutations).
function mutate(seed, all, rnd) {
  let buf = Buffer.from(seed.bytes);
  const pick = (n) => Math.floor(rnd() * n);
  const interesting = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x0a, 0x12, 0x3a, 0x72];
  for (let k = 1 + pick(4); k > 0; k--) {
    const at = pick(buf.length + 1);
    switch (pick(8)) {
      case 0: if (buf.length) buf[Math.min(at, buf.length - 1)] ^= 1 << pick(8); break;
      case 1: if (buf.length) buf[Math.min(at, buf.length - 1)] = interesting[pick(interesting.length)]; break;
      case 2: { // a huge varint over the bytes at `at` (a length or a dim)
        const v = b.varint([2n ** 40n, 2n ** 63n - 1n, 2n ** 31n, 4294967295n, BigInt(buf.length)][pick(5)]);
        buf = Buffer.concat([buf.subarray(0, at), v, buf.subarray(Math.min(buf.length, at + v.length))]);
        break;
      }
      case 3: buf = Buffer.concat([buf.subarray(0, at), buf.subarray(Math.min(buf.length, at + 1 + pick(16)))]); break;
      case 4: { // a range copied elsewhere
        const from = pick(buf.length + 1);
        const piece = buf.subarray(from, from + 1 + pick(64));
        buf = Buffer.concat([buf.subarray(0, at), piece, buf.subarray(at)]);
        break;
      }
      case 5: { // spliced from another seed
        const other = all[pick(all.length)].bytes;
        const from = pick(other.length + 1);
        buf = Buffer.concat([buf.subarray(0, at), other.subarray(from, from + 1 + pick(256))]);
        break;
      }
      case 6: buf = buf.subarray(0, at); break;
      default: buf = Buffer.concat([buf.subarray(0, at), crypto.randomBytes(0), Buffer.from([pick(256), pick(256)]), buf.subarray(at)]);
    }
  }
  return buf;
}

// The error of a reader must be an Error, one line, naming the file.
function checkError(e, where) {
  if (!(e instanceof Error)) throw new Error(`${where}: threw ${typeof e} ${String(e)}`);
  if (!e.message.startsWith(`${LABEL}: `)) throw new Error(`${where}: error does not name the file: ${e.message}`);
  if (e.message.includes('\n')) throw new Error(`${where}: error of several lines: ${JSON.stringify(e.message)}`);
}

function checkOnnx(buf) {
  let model;
  try {
    model = readModelBytes(new Uint8Array(buf), LABEL);
  } catch (e) {
    checkError(e, 'readModelBytes');
    return;
  }
  for (const [name, parse] of [['statePairs', statePairs], ['timeAxes', timeAxes], ['streamInfo', streamInfo]]) {
    try {
      parse(model, LABEL);
    } catch (e) {
      checkError(e, name);
    }
  }
  const drop = [...model.initializers].slice(0, 2);
  let copied;
  try {
    copied = withoutInitializers(new Uint8Array(buf), drop, LABEL);
  } catch (e) {
    // An earlier graph field the reader passed over (it reads the last).
    checkError(e, 'withoutInitializers');
    return;
  }
  const copy = readModelBytes(new Uint8Array(copied), LABEL);
  assert.deepStrictEqual([...copy.initializers], [...model.initializers].filter((n) => !drop.includes(n)),
    'withoutInitializers: the initializers left');
  assert.deepStrictEqual({ ...copy, initializers: null }, { ...model, initializers: null }, 'withoutInitializers: the rest');
}

function checkNpy(buf) {
  try {
    parseNpy(buf, LABEL, 1 << 20);
  } catch (e) {
    checkError(e, 'parseNpy');
  }
}

// Runs one input through its checks; returns the fault's message or null.
function runOne(kind, buf) {
  const t0 = Date.now();
  try {
    if (kind === 'npy') checkNpy(buf);
    else checkOnnx(buf);
  } catch (e) {
    return e.message;
  }
  const ms = Date.now() - t0;
  return ms > SLOW_MS ? `took ${ms} ms (more than ${SLOW_MS})` : null;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.replay) {
    let failed = 0;
    for (const file of opts.replay) {
      const buf = fs.readFileSync(file);
      const kind = buf.subarray(0, 6).toString('latin1') === '\x93NUMPY' ? 'npy' : 'onnx';
      const fault = runOne(kind, buf);
      console.log(`${fault ? 'FAIL' : 'PASS'} ${file}${fault ? `: ${fault}` : ''}`);
      if (fault) failed++;
    }
    console.log(`${opts.replay.length - failed} passed, ${failed} failed`);
    return failed ? 1 : 0;
  }
  fs.mkdirSync(opts.work, { recursive: true });
  const all = seeds();
  const rnd = mulberry32(opts.seed);
  const deadline = Date.now() + opts.seconds * 1000;
  let runs = 0;
  const findings = [];
  for (const s of all) {
    const fault = runOne(s.kind, s.bytes);
    if (fault) findings.push({ buf: s.bytes, fault: `seed: ${fault}` });
  }
  while (Date.now() < deadline && findings.length < 10) {
    const seed = all[Math.floor(rnd() * all.length)];
    const buf = mutate(seed, all, rnd);
    const fault = runOne(seed.kind, buf);
    runs++;
    if (fault) findings.push({ buf, fault });
  }
  for (const f of findings) {
    const file = path.join(opts.work, `finding-${crypto.createHash('sha1').update(f.buf).digest('hex')}.bin`);
    fs.writeFileSync(file, f.buf);
    fs.writeFileSync(`${file}.txt`, `${f.fault}\n`);
    console.log(`FAIL ${file}: ${f.fault}`);
  }
  console.log(`fuzz_reader: ${runs} mutated inputs from ${all.length} seeds in ${opts.seconds} s (seed ${opts.seed}): `
    + `${findings.length} finding(s)${findings.length ? ` (replay: node ${path.relative(process.cwd(), __filename)} --replay FILE)` : ''}`);
  console.log(`${findings.length ? 0 : 1} passed, ${findings.length ? 1 : 0} failed`);
  return findings.length ? 1 : 0;
}

process.exitCode = main();
