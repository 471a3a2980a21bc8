'use strict';
// rnnstate: StatefulSession streams a model rewritten by rnnstate-rewrite;
// verify() is what the rnnstate-verify command runs.
const { StatefulSession } = require('./lib/session');
const { verify } = require('./lib/verify');
const { readModelInfo } = require('./lib/onnx_model');
const { readNpy, formatNpy } = require('./lib/npy');

module.exports = { StatefulSession, verify, readModelInfo, readNpy, formatNpy };
