// Structured output through the official OpenAI client, on a model with
// random weights over the real Qwen3 vocabulary: left alone it never writes
// JSON, so every valid reply below is the work of constrained decoding. Each
// reply is checked by Ajv, an independent JSON Schema validator (draft
// 2020-12), over many seeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';

const baseURL = process.env.BONSAI_URL;
const model = process.env.BONSAI_MODEL_ID;
assert.ok(baseURL && model, 'set BONSAI_URL and BONSAI_MODEL_ID');
const client = new OpenAI({
  baseURL, apiKey: process.env.BONSAI_API_KEY || 'unused', maxRetries: 0, timeout: 120_000 });
const ajv = new Ajv2020({ strict: false });
const seeds = Array.from({ length: 10 }, (_, i) => i + 1);

const schemas = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 20 },
      age: { type: 'integer' },
      mood: { enum: ['happy', 'sad', 'calm'] },
      pets: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
      home: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/address' }] },
    },
    required: ['name', 'age', 'mood', 'pets', 'home'],
    additionalProperties: false,
    $defs: {
      address: {
        type: 'object',
        properties: { zip: { type: 'string', pattern: '^[0-9]{5}$' }, city: { type: 'string' } },
        required: ['zip'],
        additionalProperties: false,
      },
    },
  },
  readings: {
    type: 'array',
    minItems: 2,
    maxItems: 4,
    items: {
      type: 'object',
      properties: {
        sensor: { const: 'thermo' },
        value: { type: 'number' },
        ok: { type: 'boolean' },
        note: { type: ['string', 'null'] },
      },
      required: ['sensor', 'value', 'ok'],
      additionalProperties: false,
    },
  },
  free_extra: {
    type: 'object',
    properties: { id: { type: 'integer' } },
    required: ['id'],
    additionalProperties: { type: 'string', minLength: 2 },
  },
  code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2,4}$' },
};

async function ask(schema, seed, extra = {}) {
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Reply in JSON.' }],
    temperature: 1.0,
    seed,
    max_tokens: 140,
    response_format: { type: 'json_schema', json_schema: { name: 'reply', strict: true, schema } },
    ...extra,
  });
  return r.choices[0];
}

for (const [name, schema] of Object.entries(schemas)) {
  test(`json_schema "${name}": every reply is valid, ${seeds.length} seeds`, async () => {
    const validate = ajv.compile(schema);
    assert.equal(validate({ not: 'this' }), false); // the validator does refuse
    for (const seed of seeds) {
      const choice = await ask(schema, seed, { enable_thinking: seed % 2 === 0 });
      const value = JSON.parse(choice.message.content);
      assert.ok(validate(value), `seed ${seed}: ${choice.message.content}\n` +
        JSON.stringify(validate.errors));
      assert.equal(choice.finish_reason, 'stop');
    }
  });
}

test('json_object: every reply is an object', async () => {
  for (const seed of seeds.slice(0, 4)) {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'JSON please' }], temperature: 1.0, seed,
      max_tokens: 60, response_format: { type: 'json_object' } });
    const value = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof value, 'object');
    assert.ok(value !== null && !Array.isArray(value));
  }
});

test('a streamed constrained reply adds up to a valid value', async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'x' }], temperature: 1.0, seed: 7, max_tokens: 140,
    stream: true,
    response_format: { type: 'json_schema', json_schema: { name: 'p', schema: schemas.person } } });
  let text = '';
  for await (const chunk of stream)
    text += chunk.choices[0]?.delta?.content ?? '';
  assert.ok(ajv.compile(schemas.person)(JSON.parse(text)), text);
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
  { type: 'function', function: { name: 'get_weather', parameters: weather } },
  { type: 'function', function: { name: 'get_time', parameters: {
    type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'],
    additionalProperties: false } } },
];

test('tool_choice required: every reply calls a tool with valid arguments', async () => {
  const byName = Object.fromEntries(tools.map((t) => [t.function.name,
    ajv.compile(t.function.parameters)]));
  for (const seed of seeds) {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Weather?' }], temperature: 1.0, seed,
      max_tokens: 160, tools, tool_choice: 'required' });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const call of c.message.tool_calls) {
      const validate = byName[call.function.name];
      assert.ok(validate, call.function.name);
      assert.ok(validate(JSON.parse(call.function.arguments)), call.function.arguments);
    }
  }
});

test('a named tool_choice calls that tool', async () => {
  const validate = ajv.compile(weather);
  for (const seed of seeds.slice(0, 4)) {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Time?' }], temperature: 1.0, seed,
      max_tokens: 120, tools, parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    const calls = r.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'get_weather');
    assert.ok(validate(JSON.parse(calls[0].function.arguments)), calls[0].function.arguments);
  }
});

test('an unsupported keyword is a 400 naming it', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: {
        type: 'object', properties: { when: { type: 'string', not: { const: 'x' } } } } } } }),
    (e) => e instanceof OpenAI.BadRequestError && /'not' is not supported/.test(e.message));
});
