// Drives `bonsai serve` with the official OpenAI client, so that what real
// applications see (object shapes, SSE framing, error classes) is checked
// end to end. run.sh starts the server and sets the environment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.BONSAI_URL;
const apiKey = process.env.BONSAI_API_KEY ?? '';
const model = process.env.BONSAI_MODEL_ID;
assert.ok(baseURL && model, 'set BONSAI_URL and BONSAI_MODEL_ID');

// No retries: an error must surface as the first reply, not after backoff.
const opts = { baseURL, maxRetries: 0, timeout: 60_000 };
// The client refuses an empty key, so send a placeholder when none is required.
const client = new OpenAI({ ...opts, apiKey: apiKey || 'unused' });

const chatReq = {
  model,
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hi' },
  ],
  max_tokens: 12,
  temperature: 0,
};
const complReq = { model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 };
const FINISH = ['stop', 'length'];

function checkUsage(u, maxCompletion) {
  assert.ok(u, 'usage present');
  assert.ok(u.prompt_tokens > 0, `prompt_tokens ${u.prompt_tokens}`);
  assert.ok(u.completion_tokens >= 1 && u.completion_tokens <= maxCompletion,
    `completion_tokens ${u.completion_tokens}`);
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

test('models.list has exactly the served model', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, [model]);
});

// Greedy decoding is deterministic, so the streamed text must match this one.
let chatText;
test('chat completion', async () => {
  const r = await client.chat.completions.create(chatReq);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(FINISH.includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, 12);
  chatText = c.message.content;
});

test('chat completion, streamed', async () => {
  const stream = await client.chat.completions.create({
    ...chatReq, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  let text = '';
  for await (const ch of stream) {
    chunks.push(ch);
    text += ch.choices[0]?.delta?.content ?? '';
  }
  assert.ok(chunks.length >= 2, `${chunks.length} chunks`);
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const finished = chunks.filter((ch) => ch.choices[0]?.finish_reason != null);
  assert.equal(finished.length, 1, 'exactly one chunk carries finish_reason');
  assert.ok(FINISH.includes(finished[0].choices[0].finish_reason));
  const last = chunks.at(-1);
  assert.equal(last.choices.length, 0, 'usage chunk has no choices');
  checkUsage(last.usage, 12);
  assert.equal(text, chatText);
});

let complText;
test('text completion', async () => {
  const r = await client.completions.create(complReq);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(FINISH.includes(r.choices[0].finish_reason),
    `finish_reason ${r.choices[0].finish_reason}`);
  checkUsage(r.usage, 8);
  complText = r.choices[0].text;
});

test('text completion, streamed', async () => {
  const stream = await client.completions.create({ ...complReq, stream: true });
  let text = '';
  for await (const ch of stream) text += ch.choices[0]?.text ?? '';
  assert.equal(text, complText);
});

test('chat logprobs: one entry per token, alternatives best first', async () => {
  const r = await client.chat.completions.create({ ...chatReq, logprobs: true, top_logprobs: 3 });
  const c = r.choices[0];
  const entries = c.logprobs.content;
  assert.equal(entries.length, r.usage.completion_tokens);
  const bytes = [];
  for (const e of entries) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
    assert.equal(e.token, e.top_logprobs[0].token); // temperature 0: the best one
    bytes.push(...e.bytes);
  }
  assert.equal(Buffer.from(bytes).toString('utf8'), c.message.content);
});

test('completion logprobs in the legacy shape', async () => {
  const r = await client.completions.create({ ...complReq, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(Object.keys(lp.top_logprobs[0]).length, 2);
  assert.equal(lp.text_offset[0], 0);
});

test('any model name asks for the one model served', async () => {
  const r = await client.chat.completions.create({ ...chatReq, model: 'gpt-4o-mini' });
  assert.equal(r.model, model);
  assert.equal(r.choices[0].message.content, chatText);
});

test('an endpoint the server lacks is 404', async () => {
  await assert.rejects(client.models.retrieve('no-such-model'),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

test('negative max_tokens is 400', async () => {
  await assert.rejects(
    client.chat.completions.create({ ...chatReq, max_tokens: -5 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
});

test('wrong api key is 401', async (t) => {
  if (!apiKey) return t.skip('no api key');
  const bad = new OpenAI({ ...opts, apiKey: `${apiKey}-wrong` });
  await assert.rejects(bad.models.list(),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});
