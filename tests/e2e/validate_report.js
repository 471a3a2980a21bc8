#!/usr/bin/env node
'use strict';
// Validates rnnstate-rewrite --json reports against docs/report.schema.json.
//
//   node validate_report.js REPORT.json...     (- reads standard input)
//
// Besides the schema, it checks what a schema cannot say: the summary counts
// match the models, a model with an updated node or an added pair is
// "rewritten" (and an "unchanged" or "annotated" one has neither; an
// "annotated" one has state pairs, whose batch_axis is within the shape), and
// every name in a
// node's inputs_added / outputs_added is the input / output of a state pair.
// Prints one line per report; exit status 0 all valid, 1 some report is
// invalid, 2 bad command line or unreadable file.

const fs = require('fs');
const path = require('path');

const SCHEMA = path.join(__dirname, '..', '..', 'docs', 'report.schema.json');

function loadAjv() {
  try {
    return require('ajv/dist/2020');
  } catch (e) {
    console.error('validate_report: cannot load ajv: run `npm ci --onnxruntime-node-install=skip` in '
      + `${__dirname} (${e.message.split('\n')[0]})`);
    process.exit(2);
  }
}

// Problems a JSON Schema cannot express; returns a list of messages.
function crossCheck(report) {
  const problems = [];
  const count = (status) => report.models.filter((m) => m.status === status).length;
  const want = {
    models: report.models.length,
    rewritten: count('rewritten'),
    annotated: count('annotated'),
    unchanged: count('unchanged'),
    errors: count('error'),
  };
  for (const [k, v] of Object.entries(want)) {
    if (report.summary[k] !== v) problems.push(`summary.${k} is ${report.summary[k]}, the models say ${v}`);
  }
  report.models.forEach((m, i) => {
    const where = `models[${i}] (${m.input})`;
    const changed = m.nodes.some((n) => n.status === 'updated') || m.state.some((p) => p.added);
    if (changed && m.status !== 'rewritten') problems.push(`${where}: something was added but status is ${m.status}`);
    if (!changed && m.status === 'rewritten') problems.push(`${where}: status rewritten but no node updated and no pair added`);
    if (m.status === 'annotated' && !m.state.length) problems.push(`${where}: status annotated but no state pair`);
    for (const p of m.state) {
      if (p.batch_axis !== null && p.batch_axis >= p.shape.length) {
        problems.push(`${where}: pair ${p.input} -> ${p.output}: batch_axis ${p.batch_axis} outside shape [${p.shape}]`);
      }
    }
    const inputs = new Set(m.state.map((p) => p.input));
    const outputs = new Set(m.state.map((p) => p.output));
    if (inputs.size !== m.state.length) problems.push(`${where}: two state pairs share an input`);
    for (const n of m.nodes) {
      for (const name of n.inputs_added) {
        if (!inputs.has(name)) problems.push(`${where}: node ${n.name}: added input ${name} is in no state pair`);
      }
      for (const name of n.outputs_added) {
        if (!outputs.has(name)) problems.push(`${where}: node ${n.name}: added output ${name} is in no state pair`);
      }
    }
  });
  return problems;
}

function main(argv) {
  if (!argv.length || argv.includes('--help')) {
    console.error('usage: node validate_report.js REPORT.json... (- for standard input)');
    return 2;
  }
  const Ajv2020 = loadAjv();
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const validate = ajv.compile(JSON.parse(fs.readFileSync(SCHEMA, 'utf8')));
  let bad = 0;
  for (const file of argv) {
    let report;
    try {
      report = JSON.parse(fs.readFileSync(file === '-' ? 0 : file, 'utf8'));
    } catch (e) {
      console.error(`validate_report: ${file}: ${e.message}`);
      return 2;
    }
    const problems = validate(report)
      ? crossCheck(report)
      : validate.errors.map((e) => `${e.instancePath || '/'} ${e.message}`
        + (e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''));
    if (problems.length) {
      bad++;
      console.log(`FAIL report schema: ${file}`);
      for (const p of problems) console.log(`  ${p}`);
    } else {
      console.log(`PASS report schema: ${file} (${report.models.length} model(s))`);
    }
  }
  return bad ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
