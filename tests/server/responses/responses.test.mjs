// The official OpenAI client on bonsai serve's Responses API, against a model
// with random weights over the real Qwen3 vocabulary: left alone it never
// writes JSON, so every valid function call below is the work of constrained
// decoding, checked by Ajv (an independent JSON Schema validator). What the
// client makes of our Response objects and typed events, and what it sends
// back, is what is checked.
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

const plain = {
  model,
  instructions: 'You are terse.',
  input: 'Say hi',
  max_output_tokens: 12,
  temperature: 0,
  reasoning: { effort: 'minimal' }, // thinking off
};

function checkUsage(u, most) {
  assert.ok(u.input_tokens > 0, `input_tokens ${u.input_tokens}`);
  assert.ok(u.output_tokens >= 1 && u.output_tokens <= most, `output_tokens ${u.output_tokens}`);
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
}

// Greedy decoding is deterministic: the streamed text must equal this one.
let plainText;
test('responses.create: a Response with a message and its output_text', async () => {
  const r = await client.responses.create(plain);
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.model, model);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  const message = r.output.find((item) => item.type === 'message');
  assert.ok(message, JSON.stringify(r.output));
  assert.equal(message.role, 'assistant');
  assert.equal(message.content[0].type, 'output_text');
  assert.equal(r.output_text, message.content[0].text);
  checkUsage(r.usage, 12);
  plainText = r.output_text;
});

test('responses.stream: typed events the helper assembles into the same Response', async () => {
  const stream = client.responses.stream(plain);
  const types = [];
  let deltas = '';
  stream.on('event', (e) => types.push(e.type));
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
  assert.ok(types.includes('response.output_item.added'));
  assert.equal(deltas, plainText);
  assert.equal(final.output_text, plainText);
  checkUsage(final.usage, 12);
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
  { type: 'function', name: 'get_weather', parameters: weather, strict: true },
  { type: 'function', name: 'get_time', strict: true, parameters: {
    type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'],
    additionalProperties: false } },
];
const validate = ajv.compile(weather);

// A forced call, sampled at temperature 1 (the Responses API takes no
// seed): what holds for every sample is checked. With parallel calls
// allowed the model may make several, each of the named function.
async function forcedCall(extra = {}) {
  const r = await client.responses.create({
    model, input: 'Weather in Paris?', tools, temperature: 1.0, max_output_tokens: 160,
    tool_choice: { type: 'function', name: 'get_weather' }, ...extra });
  const calls = r.output.filter((item) => item.type === 'function_call');
  if (extra.parallel_tool_calls === false)
    assert.equal(calls.length, 1, JSON.stringify(r.output));
  else
    assert.ok(calls.length >= 1, JSON.stringify(r.output));
  for (const call of calls) {
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_/);
    assert.ok(validate(JSON.parse(call.arguments)), call.arguments);
  }
  return r;
}

test('a forced function call has arguments valid under its schema, every time', async () => {
  assert.equal(validate({ city: 'Paris' }), false); // the validator does refuse
  for (let i = 0; i < 6; ++i)
    await forcedCall({ reasoning: { effort: i % 2 ? 'minimal' : 'low' }, parallel_tool_calls: false });
});

test('tool_choice required, streamed: the helper rebuilds a valid call', async () => {
  const stream = client.responses.stream({
    model, input: 'Weather?', tools, tool_choice: 'required', temperature: 1.0,
    max_output_tokens: 160, reasoning: { effort: 'minimal' } });
  let argumentDeltas = '';
  stream.on('response.function_call_arguments.delta', (e) => { argumentDeltas += e.delta; });
  const final = await stream.finalResponse();
  const calls = final.output.filter((item) => item.type === 'function_call');
  assert.ok(calls.length >= 1, JSON.stringify(final.output));
  assert.equal(argumentDeltas, calls.map((c) => c.arguments).join(''));
  for (const call of calls) {
    const schema = tools.find((t) => t.name === call.name).parameters;
    assert.ok(ajv.compile(schema)(JSON.parse(call.arguments)), call.arguments);
  }
});

test('a function_call_output turn: the earlier output goes back as it came', async () => {
  const first = await forcedCall({ reasoning: { effort: 'minimal' }, parallel_tool_calls: false });
  const call = first.output.find((item) => item.type === 'function_call');
  const second = await client.responses.create({
    model, tools, temperature: 0, max_output_tokens: 8, reasoning: { effort: 'minimal' },
    input: [
      { role: 'user', content: 'Weather in Paris?' },
      ...first.output,
      { type: 'function_call_output', call_id: call.call_id, output: '18C and sunny' },
    ],
  });
  assert.ok(['completed', 'incomplete'].includes(second.status));
  assert.ok(second.usage.input_tokens > first.usage.input_tokens);
});

test('store: true is refused with a 400 that says why', async () => {
  await assert.rejects(client.responses.create({ ...plain, store: true }),
    (e) => e instanceof OpenAI.BadRequestError && /keeps no responses/.test(e.message));
  await assert.rejects(client.responses.create({ ...plain, previous_response_id: 'resp_x' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'previous_response_id');
});
