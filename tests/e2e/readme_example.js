#!/usr/bin/env node
'use strict';
// The JavaScript streaming example of docs/streaming.md, run as written so it
// cannot rot.
//
//   node readme_example.js --original denoiser_gru.onnx --dir DIR
//
// DIR/optional and DIR/required each hold denoiser_gru.stateful.onnx, the
// model rewritten with that --state-inputs mode (run_readme_example.sh makes
// them). The example is the ```js block of docs/streaming.md that calls
// StatefulSession; it runs verbatim, in each folder, with `chunks` (x [2, 12, 8]
// in chunks of 5, 4 and 3 frames) and `masks` in scope and require('rnnstate')
// giving js/rnnstate, as a project that installed the package would; README.md
// must show its last three lines as they are. The masks
// put together must equal the original model's output on the whole sequence;
// and running each chunk as a stream of its own (the state forgotten) must
// give something else, so the check can tell.
// Exit status: 0 pass, 1 fail.

const fs = require('fs');
const path = require('path');
const lib = require('./lib');

const DOC = path.join(__dirname, '..', '..', 'docs', 'streaming.md');
const README = path.join(__dirname, '..', '..', 'README.md');
const PACKAGE = path.join(__dirname, '..', '..', 'js', 'rnnstate');

// The ```js block of the doc that uses StatefulSession.
function exampleBlock() {
  const blocks = [...fs.readFileSync(DOC, 'utf8').matchAll(/```js\n([\s\S]*?)```\n/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.includes('StatefulSession.create('));
  if (!block) throw new Error(`${DOC} has no \`\`\`js block calling StatefulSession.create`);
  return block;
}

// Runs the example in `dir` on `chunks`; returns its `masks`.
async function runExample(block, dir, chunks) {
  const AsyncFunction = (async () => {}).constructor;
  const requireAsUser = (name) => require(name === 'rnnstate' ? PACKAGE : name);
  const masks = [];
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    await new AsyncFunction('require', 'chunks', 'masks', block)(requireAsUser, chunks, masks);
  } finally {
    process.chdir(cwd);
  }
  return masks;
}

async function main(argv) {
  const args = lib.parseArgs(argv, { original: 'string', dir: 'string' });
  for (const k of ['original', 'dir']) if (!args[k]) throw new Error(`--${k} is required`);
  const ort = lib.requireOrt();
  let failed = 0;
  const check = (name, ok, detail) => {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
    if (!ok) failed++;
  };
  const block = exampleBlock();
  console.log(`docs/streaming.md example:\n${block}`);
  // README.md shows the example's last three lines, the session's.
  const lines = block.trimEnd().split('\n').slice(-3).join('\n');
  check('README.md shows the example\'s three lines verbatim', fs.readFileSync(README, 'utf8').includes(`\`\`\`js\n${lines}\n\`\`\``));
  const x = lib.randomTensor('float32', [2, 12, 8], 1234, 'x');
  const chunks = [[0, 5], [5, 9], [9, 12]].map(([s, e]) => lib.toOrt(ort, lib.sliceAxis(x, 1, s, e)));
  const session = await lib.createSession(ort, args.original);
  const original = lib.asPlain((await session.run({ x: lib.toOrt(ort, x) })).mask);
  const tol = { atol: 1e-5, rtol: 0 };
  for (const mode of ['required', 'optional']) {
    const dir = path.join(args.dir, mode);
    const streamed = lib.concatAxis((await runExample(block, dir, chunks)).map(lib.asPlain), 1);
    const c1 = lib.compareTensors(streamed, original, tol);
    check(`${mode}: 3 chunks through the example = the original model on the whole sequence`, c1.ok,
      lib.describeComparison(c1, original.dims));
    // Each chunk a stream of its own: the state restarts from zeros.
    const forgetful = [];
    for (const c of chunks) forgetful.push(lib.asPlain((await runExample(block, dir, [c]))[0]));
    const c2 = lib.compareTensors(lib.concatAxis(forgetful, 1), original, tol);
    check(`${mode}: restarting from zeros at each chunk differs (the check can tell)`, !c2.ok,
      lib.describeComparison(c2, original.dims));
  }
  console.log(`readme_example: ${failed ? 'FAIL' : 'PASS'}`);
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  console.error(`readme_example: FAIL: ${e.stack}`);
  process.exit(1);
});
