// Prints, for any OpenAI-compatible server, how each corpus schema fares:
// accepted or refused, and how many replies Ajv finds valid, as
// response_format and as a named tool call (docs/structured-output.md, the
// comparison with llama-server). Not a test: it reports.
//   BONSAI_URL=http://127.0.0.1:PORT/v1 BONSAI_MODEL_ID=NAME node report.mjs
// CORPUS_EXTRA_BODY (JSON) replaces bonsai's {"enable_thinking": false},
// e.g. '{"chat_template_kwargs": {"enable_thinking": false}}' for llama-server.
// For a slow server: CORPUS_SEEDS (default 1,2,3), CORPUS_MODES and
// CORPUS_ONLY (comma lists of modes and schema names), CORPUS_MAX_TOKENS
// (one max_tokens for all; a small one tells only whether schemas are
// accepted).
import { corpus } from './corpus.mjs';
import { ask, makeClient, makeValidator, modes as allModes, pool } from './drive.mjs';

const model = process.env.BONSAI_MODEL_ID;
const client = makeClient();
const ajv = makeValidator();
const seeds = (process.env.CORPUS_SEEDS || '1,2,3').split(',').map(Number);
const width = Number(process.env.CORPUS_CONCURRENCY || 4);
const modes = process.env.CORPUS_MODES ? process.env.CORPUS_MODES.split(',') : allModes;
const only = process.env.CORPUS_ONLY?.split(',');
const entries = corpus().filter((e) => !only || only.includes(e.name));
const fixedTokens = Number(process.env.CORPUS_MAX_TOKENS || 0);

const jobs = [];
for (const entry of entries) {
  const validate = ajv.compile(entry.schema);
  for (const mode of modes)
    for (const seed of seeds)
      jobs.push(async () => ({ entry, mode, seed,
        ...await ask({ client, model, entry, mode, seed,
          maxTokens: fixedTokens || entry.maxTokens[mode], validate }) }));
}
const started = Date.now();
const results = await pool(jobs, width);
const seconds = (Date.now() - started) / 1000;

const totals = Object.fromEntries(modes.map((m) => [m, { accepted: 0, valid: 0, replies: 0,
  schemasAccepted: 0, schemasAllValid: 0 }]));
console.log(`schema | ${modes.map((m) => `${m}: accepted, valid`).join(' | ')}`);
for (const entry of entries) {
  const cells = [];
  for (const mode of modes) {
    const mine = results.filter((r) => r.entry === entry && r.mode === mode);
    const accepted = mine.filter((r) => r.accepted).length;
    const valid = mine.filter((r) => r.valid).length;
    const t = totals[mode];
    t.accepted += accepted;
    t.valid += valid;
    t.replies += mine.length;
    t.schemasAccepted += accepted === mine.length ? 1 : 0;
    t.schemasAllValid += valid === mine.length ? 1 : 0;
    const why = mine.find((r) => !r.valid)?.why.slice(0, 100) ?? '';
    cells.push(`${accepted}/${mine.length}, ${valid}/${mine.length}${why ? ` (${why})` : ''}`);
  }
  console.log(`${entry.origin}/${entry.name} | ${cells.join(' | ')}`);
}
for (const mode of modes) {
  const t = totals[mode];
  console.log(`${mode}: ${t.schemasAccepted}/${entries.length} schemas accepted, ` +
    `${t.schemasAllValid}/${entries.length} with every reply valid; ` +
    `${t.valid}/${t.replies} replies valid`);
}
console.log(`${results.length} requests in ${seconds.toFixed(1)} s`);
