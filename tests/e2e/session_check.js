// StatefulSession in chunks of 4+6 equals one call on the whole sequence:
//   node session_check.js JS_PACKAGE_DIR MODEL (input x [2,10,8], output mask [2,10,K])
const { StatefulSession } = require(process.argv[2]);
const ort = require(require.resolve('onnxruntime-node', { paths: [process.argv[2]] }));

const B = 2, T = 10, F = 8;
const x = new ort.Tensor('float32', Float32Array.from({ length: B * T * F }, (_, i) => Math.sin(i)), [B, T, F]);
function slice(t0, t1) {
  const out = new Float32Array(B * (t1 - t0) * F);
  for (let b = 0; b < B; b++) out.set(x.data.subarray((b * T + t0) * F, (b * T + t1) * F), b * (t1 - t0) * F);
  return new ort.Tensor('float32', out, [B, t1 - t0, F]);
}

(async () => {
  const s = await StatefulSession.create(process.argv[3], { quiet: true });
  const whole = (await s.run({ x })).mask.data;
  s.reset();
  const first = (await s.run({ x: slice(0, 4) })).mask.data;
  const second = (await s.run({ x: slice(4, T) })).mask.data;
  const K = whole.length / (B * T);
  let diff = 0;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let k = 0; k < K; k++) {
        const got = t < 4 ? first[(b * 4 + t) * K + k] : second[(b * (T - 4) + t - 4) * K + k];
        diff = Math.max(diff, Math.abs(got - whole[(b * T + t) * K + k]));
      }
    }
  }
  console.log(`max abs ${diff}`);
  process.exit(diff < 1e-5 ? 0 : 1);
})().catch((e) => { console.log(e.message); process.exit(2); });
