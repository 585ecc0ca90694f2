// The ort-webgpu backend's worker: ONNX Runtime's WebGPU execution provider (npm
// onnxruntime-node, Dawn on Vulkan) behind ort_webgpu_backend.py, which speaks the dmlcts
// protocol and builds the models. This process only creates sessions and runs them.
//
// Its pipe protocol is the dmlcts frame (4-byte little-endian header length, a JSON header,
// then the payloads listed in the header's "payloads"):
//   {type: "info"}                               -> {type: "info", versions, execution_providers}
//   {type: "session", id} + [model bytes]        -> {type: "ok"} | {type: "error", message}
//   {type: "run", id, inputs: [{name, dtype, dims}]} + [input bytes...]
//                                                -> {type: "ok", outputs: [{dtype, dims}]} + [bytes...]
//   {type: "release", id}                        -> (no reply)
//
// Every session disables the CPU fallback (session.disable_cpu_ep_fallback = '1'): a node the
// WebGPU provider cannot take fails the session instead of running on the CPU provider.

import ort from 'onnxruntime-node';
import { pathToFileURL } from 'node:url';

export const SESSION_OPTIONS = {
  executionProviders: ['webgpu'],
  logSeverityLevel: 3,
  extra: { session: { disable_cpu_ep_fallback: '1' } },
};

const sessions = new Map();
let pending = Buffer.alloc(0);
let busy = Promise.resolve();

function send(header, payloads = []) {
  const text = Buffer.from(JSON.stringify({ ...header, payloads: payloads.map((p) => p.length) }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(text.length, 0);
  process.stdout.write(Buffer.concat([length, text, ...payloads]));
}

function tensor(dtype, dims, bytes) {
  // A copy: the typed array must own aligned memory of its own.
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return new ort.Tensor(dtype, typedArray(dtype, copy.buffer), dims);
}

function typedArray(dtype, buffer) {
  switch (dtype) {
    case 'float64': return new Float64Array(buffer);
    case 'float32': return new Float32Array(buffer);
    case 'float16': return new Uint16Array(buffer);
    case 'int64': return new BigInt64Array(buffer);
    case 'uint64': return new BigUint64Array(buffer);
    case 'int32': return new Int32Array(buffer);
    case 'uint32': return new Uint32Array(buffer);
    case 'int16': return new Int16Array(buffer);
    case 'uint16': return new Uint16Array(buffer);
    case 'int8': return new Int8Array(buffer);
    case 'uint8': return new Uint8Array(buffer);
    default: throw new Error(`unknown dtype ${dtype}`);
  }
}

function bytesOf(t) {
  const data = t.data;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

async function handle(header, payloads) {
  try {
    if (header.type === 'info') {
      send({ type: 'info', versions: ort.env.versions, node: process.versions.node,
        backends: ort.listSupportedBackends().map((b) => b.name) });
    } else if (header.type === 'session') {
      const session = await ort.InferenceSession.create(payloads[0], SESSION_OPTIONS);
      sessions.set(header.id, session);
      send({ type: 'ok' });
    } else if (header.type === 'run') {
      const session = sessions.get(header.id);
      if (!session) throw new Error(`no session ${header.id}`);
      const feeds = {};
      header.inputs.forEach((input, i) => {
        feeds[input.name] = tensor(input.dtype, input.dims, payloads[i]);
      });
      const results = await session.run(feeds);
      const outputs = session.outputNames.map((name) => results[name]);
      send({ type: 'ok', outputs: outputs.map((t) => ({ dtype: t.type, dims: t.dims })) },
        outputs.map(bytesOf));
    } else if (header.type === 'release') {
      const session = sessions.get(header.id);
      sessions.delete(header.id);
      if (session) await session.release();
    } else {
      send({ type: 'error', message: `unknown request ${JSON.stringify(header.type)}` });
    }
  } catch (e) {
    send({ type: 'error', message: String(e && e.message ? e.message : e) });
  }
}

function drain() {
  for (;;) {
    if (pending.length < 4) return;
    const size = pending.readUInt32LE(0);
    if (size > (16 << 20)) {
      send({ type: 'error', message: `a header of ${size} bytes` });
      process.exit(1);
    }
    if (pending.length < 4 + size) return;
    const header = JSON.parse(pending.subarray(4, 4 + size).toString('utf8'));
    const lengths = header.payloads || [];
    const total = lengths.reduce((a, b) => a + b, 0);
    if (pending.length < 4 + size + total) return;
    let at = 4 + size;
    const payloads = lengths.map((n) => {
      const p = pending.subarray(at, at + n);
      at += n;
      return Buffer.from(p);
    });
    pending = pending.subarray(at);
    busy = busy.then(() => handle(header, payloads));
  }
}

// Serves only when run as the worker (the tests import SESSION_OPTIONS from it).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdin.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    drain();
  });
  process.stdin.on('end', () => {
    busy.then(() => process.exit(0));
  });
}
