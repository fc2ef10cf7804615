// The corpus: tool and output shapes as agent developers write them. The
// zod ones become JSON Schema here, by zod 4's own z.toJSONSchema (what
// LangChain.js, the OpenAI Agents SDK and most TypeScript agents send); the
// Pydantic ones are what Pydantic v2's model_json_schema writes, kept as
// files in pydantic/ (the sources are in each file's "description").
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const here = dirname(fileURLToPath(import.meta.url));

const Task = z.object({
  id: z.uuid(),
  title: z.string().min(1).max(40),
  done: z.boolean(),
  get subtasks() {
    return z.array(Task).max(3);
  },
});

const Comment = z.object({
  author: z.string().max(20),
  text: z.string(),
  get replies() {
    return z.array(Comment);
  },
});

const zodShapes = {
  get_weather: z.object({
    city: z.string().min(1).max(60),
    unit: z.enum(['celsius', 'fahrenheit']),
    days: z.int().min(1).max(14).optional(),
  }),
  search_web: z.object({
    query: z.string().min(1).max(200),
    max_results: z.int().min(1).max(10).default(5),
    site: z.hostname().optional(),
    recency_days: z.int().positive().optional(),
  }),
  send_email: z.object({
    to: z.array(z.email()).min(1).max(3),
    cc: z.array(z.email()).max(3).optional(),
    subject: z.string().max(120),
    body: z.string(),
    send_at: z.iso.datetime().optional(),
  }),
  create_event: z.object({
    title: z.string().min(1),
    start: z.iso.datetime({ offset: true }),
    end: z.iso.datetime({ offset: true }),
    attendees: z.array(z.email()).max(4),
    reminder_minutes: z.int().min(0).max(120).multipleOf(5),
    location: z.string().nullable(),
  }),
  book_flight: z.object({
    from: z.string().regex(/^[A-Z]{3}$/),
    to: z.string().regex(/^[A-Z]{3}$/),
    date: z.iso.date(),
    return_date: z.iso.date().optional(),
    passengers: z.int().min(1).max(9),
    cabin: z.enum(['economy', 'premium', 'business', 'first']),
  }),
  create_issue: z.object({
    repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/),
    title: z.string().min(3).max(80),
    body: z.string().optional(),
    labels: z.array(z.enum(['bug', 'docs', 'enhancement', 'question'])).max(3),
    assignees: z.array(z.string().regex(/^[a-zA-Z0-9-]{1,39}$/)).max(2),
  }),
  run_sql: z.object({
    query: z.string().min(1),
    params: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).max(4),
    timeout_ms: z.int().min(100).max(30000).multipleOf(100),
  }),
  set_thermostat: z.object({
    room: z.enum(['living', 'kitchen', 'bedroom']),
    temperature: z.number().min(10).max(30).multipleOf(0.5),
    mode: z.enum(['heat', 'cool', 'auto']),
  }),
  transfer_money: z.object({
    from_iban: z.string().regex(/^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$/),
    to_iban: z.string().regex(/^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$/),
    amount: z.number().positive().max(1000000),
    currency: z.string().length(3).regex(/^[A-Z]+$/),
    reference: z.uuid().optional(),
  }),
  http_request: z.object({
    method: z.enum(['GET', 'POST', 'PUT', 'DELETE']),
    url: z.url(),
    headers: z.record(z.string().regex(/^[A-Za-z-]+$/), z.string()),
    timeout_s: z.number().positive().max(60),
  }),
  geocode: z.object({
    address: z.string(),
    lat: z.number().min(-90).max(90),
    lon: z.number().min(-180).max(180),
    confidence: z.number().min(0).max(1),
  }),
  extract_contact: z.object({
    name: z.string().min(1),
    email: z.email(),
    phone: z.e164().optional(),
    website: z.url().optional(),
    company: z.string().nullable(),
  }),
  sentiment: z.object({
    label: z.enum(['positive', 'neutral', 'negative']),
    score: z.number().min(0).max(1),
    aspects: z.array(z.object({
      aspect: z.string().max(30),
      sentiment: z.enum(['positive', 'neutral', 'negative']),
    })).max(3),
  }),
  classify_ticket: z.object({
    ticket: z.discriminatedUnion('type', [
      z.object({ type: z.literal('bug'), severity: z.enum(['low', 'high']),
        steps: z.array(z.string()).max(3) }),
      z.object({ type: z.literal('feature'), priority: z.int().min(1).max(5) }),
      z.object({ type: z.literal('question'), topic: z.string() }),
    ]),
  }),
  todo_tree: z.object({ root: Task }),
  thread: Comment,
  draw_shape: z.object({
    origin: z.tuple([z.number(), z.number()]),
    color: z.tuple([z.int().min(0).max(255), z.int().min(0).max(255), z.int().min(0).max(255)]),
    path: z.tuple([z.string()], z.number()),
  }),
  translate: z.object({
    source: z.string(),
    translations: z.record(z.enum(['en', 'fr', 'de']), z.string()),
    scores: z.record(z.string().regex(/^[a-z_]+$/), z.number().min(0).max(1)),
  }),
  set_reminder: z.object({
    text: z.string().max(100),
    at: z.iso.time(),
    every: z.iso.duration().optional(),
    starting: z.iso.date(),
  }),
  configure_host: z.object({
    host: z.hostname(),
    ipv4: z.ipv4(),
    ipv6: z.ipv6().optional(),
    port: z.int().min(1).max(65535),
  }),
  list_product: z.object({
    sku: z.string().regex(/^[A-Z]{3}-\d{4}$/),
    price: z.number().positive().multipleOf(0.25),
    tags: z.array(z.string().max(12)).max(5),
    size: z.tuple([z.number().positive(), z.number().positive(), z.number().positive()]),
    in_stock: z.boolean(),
    variants: z.array(z.object({ color: z.enum(['red', 'blue']), size: z.enum(['S', 'M', 'L']) }))
      .max(2),
  }),
  create_user: z.intersection(
    z.object({ id: z.uuid(), created_at: z.iso.datetime() }),
    z.object({ name: z.string(), role: z.enum(['admin', 'member']) }),
  ),
  update_profile: z.object({
    kind: z.literal('user'),
    nickname: z.string().max(20).nullable(),
    age: z.int().min(13).max(120).nullable(),
    birthday: z.iso.date().nullable(),
    website: z.url().nullable(),
  }),
  read_file: z.object({
    path: z.string().regex(/^(\/[\w.-]+)+$/),
    encoding: z.enum(['utf-8', 'latin1']).default('utf-8'),
    lines: z.tuple([z.int().nonnegative(), z.int().nonnegative()]).optional(),
    follow_links: z.boolean(),
  }),
  upload_file: z.object({
    name: z.string().regex(/^[\w-]+\.[a-z]{2,4}$/),
    content: z.base64(),
    id: z.nanoid(),
    checksum: z.string().regex(/^[0-9a-f]{8}$/),
  }),
  assign_label: z.object({
    value: z.union([z.string().max(10), z.number(), z.boolean()]),
    starts_with_ab: z.string().startsWith('ab').endsWith('!'),
  }),
};

// A model with random weights rarely ends a value early: replies run to
// max_tokens, where the budget rule closes them. 160 tokens hold the
// shortest valid value of every schema (129 bytes at most, one token each at
// worst), 230 with the tool call around it (about 70 bytes more); the
// invoice's is 254 bytes.
const maxTokens = { default: { response_format: 160, tool_choice: 230 },
  invoice: { response_format: 300, tool_choice: 350 } };

// { name, schema (JSON Schema), origin ('zod' or 'pydantic'), maxTokens (by
// mode) }
export function corpus() {
  const out = [];
  for (const [name, shape] of Object.entries(zodShapes))
    out.push({ name, schema: z.toJSONSchema(shape), origin: 'zod' });
  const dir = join(here, 'pydantic');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort())
    out.push({
      name: file.replace(/\.json$/, ''),
      schema: JSON.parse(readFileSync(join(dir, file), 'utf8')),
      origin: 'pydantic',
    });
  for (const entry of out)
    entry.maxTokens = maxTokens[entry.name] ?? maxTokens.default;
  return out;
}
