// Sends each corpus schema to an OpenAI-compatible server through the
// official client, as response_format json_schema and as a tool's parameters
// under a named tool_choice, and checks each reply with Ajv (draft 2020-12)
// and ajv-formats: a validator that knows nothing of the server's compiler.
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const modes = ['response_format', 'tool_choice'];

export function makeValidator() {
  // strict: false lets Ajv read zod's own format names (cuid, nanoid, ...)
  // as annotations, as JSON Schema says; the pattern beside them holds.
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
  addFormats(ajv);
  return ajv;
}

export function makeClient(env = process.env) {
  return new OpenAI({ baseURL: env.BONSAI_URL, apiKey: env.BONSAI_API_KEY || 'unused',
    maxRetries: 0, timeout: 300_000 });
}

// The request body's extra fields: bonsai takes enable_thinking, llama-server
// chat_template_kwargs (CORPUS_EXTRA_BODY, JSON, replaces the default).
function extraBody(env) {
  return env.CORPUS_EXTRA_BODY ? JSON.parse(env.CORPUS_EXTRA_BODY) : { enable_thinking: false };
}

// One request. Returns { accepted, status, finish, text, value, valid, why }.
export async function ask({ client, model, entry, mode, seed, maxTokens, validate,
  env = process.env }) {
  const body = {
    model,
    messages: [{ role: 'user', content: `Fill in "${entry.name}" with made-up values.` }],
    temperature: 1.0,
    seed,
    max_tokens: maxTokens,
    ...extraBody(env),
  };
  if (mode === 'response_format') {
    body.response_format = { type: 'json_schema',
      json_schema: { name: entry.name, strict: true, schema: entry.schema } };
  } else {
    body.tools = [{ type: 'function', function: { name: entry.name,
      description: `Call ${entry.name}.`, parameters: entry.schema } }];
    body.tool_choice = { type: 'function', function: { name: entry.name } };
    body.parallel_tool_calls = false;
  }
  const out = { accepted: false, status: 0, finish: '', text: '', valid: false, why: '' };
  let reply;
  try {
    reply = await client.chat.completions.create(body);
  } catch (e) {
    out.status = e.status ?? 0;
    out.why = `${e.status ?? ''} ${e.message}`.trim();
    return out;
  }
  out.accepted = true;
  out.status = 200;
  const choice = reply.choices[0];
  out.finish = choice.finish_reason;
  if (mode === 'response_format') {
    out.text = choice.message.content ?? '';
  } else {
    const calls = choice.message.tool_calls ?? [];
    if (calls.length !== 1 || calls[0].function.name !== entry.name) {
      out.why = `expected one call of ${entry.name}, got ${JSON.stringify(calls)}: ` +
        `${choice.message.content}`;
      return out;
    }
    out.text = calls[0].function.arguments;
  }
  try {
    out.value = JSON.parse(out.text);
  } catch (e) {
    out.why = `not JSON (${e.message})`;
    return out;
  }
  out.valid = validate(out.value);
  if (!out.valid)
    out.why = JSON.stringify(validate.errors);
  return out;
}

// Runs `jobs` (functions returning promises) `width` at a time, in order.
export async function pool(jobs, width) {
  const results = new Array(jobs.length);
  let next = 0;
  async function worker() {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
  return results;
}
