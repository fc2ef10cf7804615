// The official Anthropic client on bonsai serve's Messages API, against a
// model with random weights over the real Qwen3 vocabulary: left alone it
// never writes JSON, so every valid tool input below is the work of
// constrained decoding, checked by Ajv (an independent JSON Schema
// validator). The client sends its key as x-api-key and anthropic-version,
// as it does against Anthropic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import Ajv2020 from 'ajv/dist/2020.js';

const baseURL = process.env.BONSAI_BASE_URL;
const apiKey = process.env.BONSAI_API_KEY ?? '';
const model = process.env.BONSAI_MODEL_ID;
assert.ok(baseURL && model, 'set BONSAI_BASE_URL and BONSAI_MODEL_ID');
const opts = { baseURL, maxRetries: 0, timeout: 120_000 };
const client = new Anthropic({ ...opts, apiKey: apiKey || 'unused' });
const ajv = new Ajv2020({ strict: false });

const plain = {
  model: 'any-model-name', // any name asks for the one model served
  max_tokens: 12,
  temperature: 0,
  system: [{ type: 'text', text: 'You are terse.' }],
  messages: [{ role: 'user', content: 'Say hi' }],
};

function textOf(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// Greedy decoding is deterministic: the streamed text must equal this one.
let plainText;
let plainUsage;
test('messages.create: a Message with text, a stop reason and usage', async () => {
  const m = await client.messages.create(plain);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, model);
  assert.match(m.id, /^msg_/);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 12);
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 0);
  plainText = textOf(m);
  plainUsage = m.usage;
});

test('messages.stream: the helper rebuilds the same Message from the events', async () => {
  const stream = client.messages.stream(plain);
  let texts = '';
  const types = [];
  stream.on('text', (t) => { texts += t; });
  stream.on('streamEvent', (e) => types.push(e.type));
  const final = await stream.finalMessage();
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(texts, plainText);
  assert.equal(textOf(final), plainText);
  assert.equal(final.usage.output_tokens, plainUsage.output_tokens);
});

test('count_tokens counts the prompt a create runs', async () => {
  const { max_tokens, temperature, ...prompt } = plain;
  const counted = await client.messages.countTokens(prompt);
  assert.equal(counted.input_tokens, plainUsage.input_tokens + plainUsage.cache_read_input_tokens);
});

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1, maxLength: 12 },
    unit: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer' },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const tools = [
  { name: 'get_weather', description: 'Weather in a city', input_schema: weather },
  { name: 'get_time', input_schema: {
    type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'],
    additionalProperties: false } },
];
const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.input_schema)]));
const question = [{ role: 'user', content: 'Weather in Paris?' }];

function checkToolUse(m, name) {
  assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.ok(uses.length >= 1, JSON.stringify(m.content));
  for (const use of uses) {
    if (name) assert.equal(use.name, name);
    assert.match(use.id, /^toolu_/);
    assert.ok(validators[use.name](use.input), JSON.stringify(use.input));
  }
  return uses;
}

test('a forced tool use has input valid under its schema, every time', async () => {
  assert.equal(validators.get_weather({ city: 'Paris' }), false); // the validator does refuse
  for (let i = 0; i < 6; ++i) {
    const m = await client.messages.create({
      model, max_tokens: 160, temperature: 1.0, tools, messages: question,
      tool_choice: i % 2 ? { type: 'any' } : { type: 'tool', name: 'get_weather' } });
    checkToolUse(m, i % 2 ? null : 'get_weather');
  }
});

let streamedUse;
test('a streamed forced tool use: the helper parses the input_json_delta', async () => {
  const stream = client.messages.stream({
    model, max_tokens: 160, temperature: 1.0, tools, messages: question,
    tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true } });
  let json = '';
  stream.on('inputJson', (delta) => { json += delta; });
  const final = await stream.finalMessage();
  const uses = checkToolUse(final, 'get_weather');
  assert.equal(uses.length, 1);
  assert.deepEqual(JSON.parse(json), uses[0].input);
  streamedUse = final;
});

test('a tool_result turn: the earlier message goes back as it came', async () => {
  const use = streamedUse.content.find((b) => b.type === 'tool_use');
  const m = await client.messages.create({
    model, max_tokens: 8, temperature: 0, tools,
    messages: [
      ...question,
      { role: 'assistant', content: streamedUse.content },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: use.id, content: '18C and sunny' },
        { type: 'text', text: 'And tomorrow?' }] },
    ] });
  assert.equal(m.type, 'message');
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens >
            streamedUse.usage.input_tokens + streamedUse.usage.cache_read_input_tokens);
});

test('a bad request is a 4xx in Anthropic\'s error shape', async () => {
  await assert.rejects(client.messages.create({ ...plain, temperature: 5 }),
    (e) => e instanceof Anthropic.BadRequestError && e.status === 400 &&
      e.error?.type === 'error' && e.error?.error?.type === 'invalid_request_error' &&
      /'temperature' must be between 0 and 1/.test(e.error.error.message));
  await assert.rejects(client.messages.create({ ...plain, messages: [] }),
    (e) => e instanceof Anthropic.BadRequestError);
});

test('a wrong key is a 401 authentication_error', async (t) => {
  if (!apiKey) return t.skip('no api key');
  const bad = new Anthropic({ ...opts, apiKey: `${apiKey}-wrong` });
  await assert.rejects(bad.messages.create(plain),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401 &&
      e.error?.error?.type === 'authentication_error');
});
