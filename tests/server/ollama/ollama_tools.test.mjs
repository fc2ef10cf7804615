// Tool calling and thinking with the official Ollama client, against a
// `bonsai serve` whose model replies a known text (the scripted fake plugin;
// the runner sets it from $BONSAI_FAKE_REPLY and, once a tool result is in
// the prompt, $BONSAI_FAKE_REPLY_AFTER). What the client makes of our
// replies, and what it sends back, is what is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';

const host = process.env.BONSAI_BASE_URL;
const apiKey = process.env.BONSAI_API_KEY ?? '';
const model = process.env.BONSAI_MODEL_ID;
assert.ok(host && model, 'set BONSAI_BASE_URL and BONSAI_MODEL_ID');
const ollama = new Ollama({ host, headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} });

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const question = [{ role: 'user', content: 'Weather in Paris?' }];

test('a tool call comes back with object arguments and the thinking apart', async () => {
  const r = await ollama.chat({ model, messages: question, tools });
  assert.equal(r.done_reason, 'stop');
  assert.equal(r.message.content, '');
  assert.equal(r.message.thinking, 'I need the weather.');
  assert.equal(r.message.tool_calls.length, 1);
  assert.equal(r.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(r.message.tool_calls[0].function.arguments, { city: 'Paris' });
});

test('streamed, the same call and thinking arrive in the parts', async () => {
  let thinking = '';
  const calls = [];
  for await (const part of await ollama.chat({ model, messages: question, tools, stream: true })) {
    thinking += part.message.thinking ?? '';
    calls.push(...(part.message.tool_calls ?? []));
  }
  assert.equal(thinking.trim(), 'I need the weather.');
  assert.deepEqual(calls.map((c) => c.function), [
    { index: 0, name: 'get_weather', arguments: { city: 'Paris' } }]);
});

test('the call and its result go back; the model answers', async () => {
  const first = await ollama.chat({ model, messages: question, tools });
  const messages = [
    ...question,
    first.message, // as the client got it: thinking, tool_calls with object arguments
    { role: 'tool', content: '18C', tool_name: 'get_weather' },
  ];
  const r = await ollama.chat({ model, messages, tools });
  assert.equal(r.message.content, 'It is 18C in Paris.');
  assert.equal(r.message.tool_calls, undefined);
});

test('think: false leaves the thinking out', async () => {
  const r = await ollama.chat({ model, messages: question, tools, think: false });
  assert.equal(r.message.thinking, undefined);
  assert.equal(r.message.tool_calls.length, 1);
});
