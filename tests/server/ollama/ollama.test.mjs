// The official Ollama client on bonsai serve's Ollama API, against a model
// with random weights over the real Qwen3 vocabulary: left alone it never
// writes JSON, so every reply valid under a `format` schema is the work of
// constrained decoding, checked by Ajv (an independent JSON Schema
// validator). A tool that only knows Ollama's address reaches bonsai the
// same way (docs/server.md, "Ollama API").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import Ajv2020 from 'ajv/dist/2020.js';

const host = process.env.BONSAI_BASE_URL;
const apiKey = process.env.BONSAI_API_KEY ?? '';
const modelId = process.env.BONSAI_MODEL_ID;
assert.ok(host && modelId, 'set BONSAI_BASE_URL and BONSAI_MODEL_ID');
const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined;
const ollama = new Ollama({ host, headers });
const ajv = new Ajv2020({ strict: false });
const name = `${modelId}:latest`;

test('list and ps show the one model served', async () => {
  const { models } = await ollama.list();
  assert.deepEqual(models.map((m) => m.name), [name]);
  assert.equal(models[0].details.format, 'gguf');
  assert.equal(models[0].details.family, 'qwen3');
  assert.ok(models[0].size > 0);
  const running = await ollama.ps();
  assert.deepEqual(running.models.map((m) => m.name), [name]);
  assert.match((await ollama.version()).version, /^\d+\.\d+\.\d+$/);
});

test('show describes the model', async () => {
  const shown = await ollama.show({ model: 'whatever-name' });
  assert.equal(shown.details.family, 'qwen3');
  assert.equal(shown.model_info['general.architecture'], 'qwen3');
  assert.equal(shown.model_info['qwen3.context_length'], 512); // the server's -c
  assert.ok(shown.capabilities.includes('tools'));
});

const chatRequest = {
  model: 'llama3.2', // any name asks for the one model served
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hi' },
  ],
  think: false,
  options: { temperature: 0, num_predict: 12 },
};

function checkFinal(r, most) {
  assert.equal(r.done, true);
  assert.ok(['stop', 'length'].includes(r.done_reason), r.done_reason);
  assert.equal(r.model, name);
  assert.ok(r.eval_count >= 1 && r.eval_count <= most, `eval_count ${r.eval_count}`);
  assert.ok(r.prompt_eval_count > 0);
  for (const d of ['total_duration', 'prompt_eval_duration', 'eval_duration'])
    assert.ok(Number.isInteger(r[d]) && r[d] >= 0, `${d} ${r[d]}`);
}

test('chat at temperature 0: the streamed text equals the plain reply', async () => {
  const plain = await ollama.chat(chatRequest);
  assert.equal(plain.message.role, 'assistant');
  checkFinal(plain, 12);
  let streamed = '';
  let last;
  for await (const part of await ollama.chat({ ...chatRequest, stream: true })) {
    streamed += part.message.content;
    last = part;
  }
  assert.equal(streamed, plain.message.content);
  checkFinal(last, 12);
  assert.equal(last.eval_count, plain.eval_count);
});

test('generate, plain and streamed', async () => {
  const request = { model: modelId, prompt: 'Once upon a time', think: false,
    options: { temperature: 0, num_predict: 8 } };
  const plain = await ollama.generate(request);
  checkFinal(plain, 8);
  let streamed = '';
  for await (const part of await ollama.generate({ ...request, stream: true }))
    streamed += part.response;
  assert.equal(streamed, plain.response);
  const raw = await ollama.generate({ ...request, raw: true });
  checkFinal(raw, 8);
});

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 20 },
    age: { type: 'integer' },
    mood: { enum: ['happy', 'sad', 'calm'] },
    pets: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
  },
  required: ['name', 'age', 'mood', 'pets'],
  additionalProperties: false,
};

test('format with a schema: every reply is valid, several seeds', async () => {
  const validate = ajv.compile(person);
  assert.equal(validate({ name: 'x' }), false); // the validator does refuse
  for (let seed = 1; seed <= 6; ++seed) {
    const r = await ollama.chat({
      model: modelId, messages: [{ role: 'user', content: 'Describe someone.' }],
      format: person, think: seed % 2 === 0, options: { temperature: 1.0, seed, num_predict: 140 } });
    const value = JSON.parse(r.message.content);
    assert.ok(validate(value), `seed ${seed}: ${r.message.content}`);
    assert.equal(r.done_reason, 'stop');
  }
  const json = await ollama.generate({ model: modelId, prompt: 'JSON please', format: 'json',
    think: false, options: { temperature: 1.0, seed: 3, num_predict: 60 } });
  const value = JSON.parse(json.response);
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), json.response);
});

test('a bad request is an error with Ollama\'s message', async () => {
  await assert.rejects(
    ollama.chat({ ...chatRequest, options: { mirostat: 2 } }),
    (e) => e.name === 'ResponseError' && e.status_code === 400 &&
      /options\.mirostat/.test(e.error));
});
