#!/usr/bin/env node
'use strict';
// Prints what the tests need to know about an ONNX model, as JSON:
//   node model_info.js MODEL.onnx
// { "inputs": [{ "name", "elemType", "shape" }], "outputs": [...],
//   "initializers": [names], "metadata": { key: value } }
// (shape: Numbers, symbolic names, or null per dimension). Used by
// tests/cli/test_batch.sh; decodes the protobuf wire format itself (lib.js).
const lib = require('./lib');

if (process.argv.length !== 3) {
  console.error('usage: node model_info.js MODEL.onnx');
  process.exit(2);
}
try {
  const info = lib.readModelInfo(process.argv[2]);
  console.log(JSON.stringify({ ...info, initializers: [...info.initializers] }));
} catch (e) {
  console.error(`model_info: ${e.message}`);
  process.exit(1);
}
