// Writes every corpus schema to DIR as ORIGIN-NAME.json, for the compile
// benchmark (BONSAI_SCHEMA_DIR=DIR build/bin/bench_constrain) and for trying
// schemas by hand (bonsai run --json-schema-file).
//   node dump.mjs DIR   (where the test's packages are installed)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { corpus } from './corpus.mjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node dump.mjs DIR');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
const entries = corpus();
for (const e of entries)
  writeFileSync(join(dir, `${e.origin}-${e.name}.json`), JSON.stringify(e.schema, null, 2) + '\n');
console.log(`${entries.length} schemas in ${dir}`);
