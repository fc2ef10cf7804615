// The schema corpus against `bonsai serve` on a model with random weights
// over the real Qwen3 vocabulary: left alone it never writes JSON, so every
// valid reply is the work of constrained decoding. Every schema must be
// accepted, and every reply, for several seeds, as response_format and as
// a named tool call, must be valid under Ajv with ajv-formats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { corpus } from './corpus.mjs';
import { ask, makeClient, makeValidator, modes, pool } from './drive.mjs';

const model = process.env.BONSAI_MODEL_ID;
assert.ok(process.env.BONSAI_URL && model, 'set BONSAI_URL and BONSAI_MODEL_ID');
const client = makeClient();
const ajv = makeValidator();
const seeds = [1, 2];
const width = Number(process.env.CORPUS_CONCURRENCY || 4);
const entries = corpus();

test('the corpus holds at least 20 zod schemas and the Pydantic ones', () => {
  assert.ok(entries.filter((e) => e.origin === 'zod').length >= 20);
  assert.ok(entries.filter((e) => e.origin === 'pydantic').length >= 10);
});

test('every schema is accepted and every reply is valid under Ajv', async () => {
  const validators = new Map(entries.map((e) => [e.name, ajv.compile(e.schema)]));
  for (const [name, validate] of validators)
    assert.equal(validate('not an object'), false, `${name}: Ajv refuses a string`);
  const jobs = [];
  for (const entry of entries)
    for (const mode of modes)
      for (const seed of seeds)
        jobs.push(async () => ({ entry, mode, seed, ...await ask({ client, model, entry, mode,
          seed, maxTokens: entry.maxTokens[mode], validate: validators.get(entry.name) }) }));
  const results = await pool(jobs, width);
  const failures = results.filter((r) => !r.valid ||
    r.finish !== (r.mode === 'response_format' ? 'stop' : 'tool_calls'));
  for (const f of failures)
    console.log(`${f.entry.origin}/${f.entry.name} ${f.mode} seed ${f.seed}: ` +
      `${f.status} ${f.finish} ${f.why}\n  ${f.text}`);
  assert.equal(failures.length, 0, `${failures.length} of ${results.length} replies failed`);
  console.log(`${results.length} replies, all valid (${entries.length} schemas x ${modes.length} ` +
    `modes x ${seeds.length} seeds)`);
});
