// Tool calling and reasoning with the official OpenAI client, against a
// `bonsai serve` whose model replies a known text (the scripted fake plugin;
// run.sh sets it from $BONSAI_FAKE_REPLY and, once a tool result is in the
// prompt, $BONSAI_FAKE_REPLY_AFTER). What the client makes of our replies,
// and what it sends back, is what is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.BONSAI_URL;
const apiKey = process.env.BONSAI_API_KEY ?? '';
const model = process.env.BONSAI_MODEL_ID;
assert.ok(baseURL && model, 'set BONSAI_URL and BONSAI_MODEL_ID');
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 60_000 });

const parameters = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
};
const tools = [{ type: 'function', function: { name: 'get_weather', parameters } }];
const question = [{ role: 'user', content: 'Weather in Paris?' }];

test('a tool call comes back as tool_calls, with the reasoning apart', async () => {
  const r = await client.chat.completions.create({ model, messages: question, tools });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, null);
  assert.equal(c.message.reasoning_content, 'I need the weather.');
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof call.function.arguments, 'string');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
});

test('the streaming helper assembles the same call from the chunks', async () => {
  const stream = client.beta.chat.completions.stream({ model, messages: question, tools });
  const done = await stream.finalChatCompletion();
  const c = done.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.message.tool_calls[0].function.arguments), { city: 'Paris' });
});

test('runTools: call, tool result, answer', async () => {
  const calls = [];
  const runner = client.beta.chat.completions.runTools({
    model,
    messages: question,
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather',
        parameters,
        parse: JSON.parse,
        function: async (args) => { calls.push(args); return `18C in ${args.city}`; },
      },
    }],
  });
  const answer = await runner.finalContent();
  assert.deepEqual(calls, [{ city: 'Paris' }]);
  assert.equal(answer, 'It is 18C in Paris.');
  // The loop sent the call and its result back: three messages before the answer.
  const sent = runner.messages.map((m) => m.role);
  assert.deepEqual(sent.slice(0, 3), ['user', 'assistant', 'tool']);
});

test('tool_choice required keeps a reply that already calls the tool', async () => {
  // The model's own reply follows the format, so constrained decoding changes nothing.
  const r = await client.chat.completions.create({
    model, messages: question, tools, tool_choice: 'required' });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.reasoning_content, 'I need the weather.');
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.message.tool_calls[0].function.arguments), { city: 'Paris' });
});

test('tool_choice naming a function that is not offered is a 400 that says why', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model, messages: question, tools,
      tool_choice: { type: 'function', function: { name: 'get_time' } } }),
    (e) => e instanceof OpenAI.BadRequestError && /not in 'tools'/.test(e.message));
});
