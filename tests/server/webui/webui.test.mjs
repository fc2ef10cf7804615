// The chat page of `bonsai serve` in a real browser (Debian's Chromium,
// headless, through playwright-core): a message streams a reply that grows,
// Stop ends it and frees the server's slot, history survives a reload and
// can be renamed, deleted, exported and imported, the API key is sent and a
// wrong one is shown, server errors are shown, rendering is safe, and the
// page works by keyboard, at 360 px and in dark mode. run.sh sets the
// environment; each test starts from an empty browser profile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const { BONSAI_BIN, BONSAI_MODEL, BONSAI_CHROMIUM, BONSAI_WORK } = process.env;
assert.ok(BONSAI_BIN && BONSAI_MODEL && BONSAI_CHROMIUM && BONSAI_WORK, 'run through run.sh');

// ---- servers ---------------------------------------------------------------

const servers = [];

// Starts `bonsai serve` on a free port; resolves once /health says ok.
async function startServer(extra) {
  const child = spawn(BONSAI_BIN, ['serve', '-m', BONSAI_MODEL, '--port', '0', '--parallel', '2',
    '-c', '4096', '--backend', 'cpu',
    // The exact scalar kernels, slow enough (about 100 t/s) that a reply is
    // still streaming when the test looks at it or presses Stop.
    '--backend-options', 'kernels=reference', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  servers.push(child);
  const deadline = Date.now() + 60_000;
  let url = null;
  while (Date.now() < deadline) {
    const m = log.match(/listening on (http:\/\/[^ ]+:\d+) /);
    if (m) url = m[1];
    if (url) {
      try {
        if ((await fetch(`${url}/health`)).status === 200) return { url, log: () => log };
      } catch {
        // not up yet
      }
    }
    if (child.exitCode !== null) throw new Error(`the server exited:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server did not become healthy:\n${log}`);
}

async function metric(server, name) {
  const page = await (await fetch(`${server.url}/metrics`)).text();
  const m = page.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

let plain;
let keyed;
let browser;

before(async () => {
  [plain, keyed] = await Promise.all([startServer([]), startServer(['--api-key', 'right-key'])]);
  // Flags for a closed network and a root user (see the machine notes).
  browser = await chromium.launch({
    executablePath: BONSAI_CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  for (const child of servers) child.kill('SIGTERM');
});

// ---- page helpers ----------------------------------------------------------

async function openPage(server, options = {}) {
  const context = await browser.newContext({ acceptDownloads: true, ...options });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  await page.goto(server.url);
  return { context, page, problems };
}

async function setSettings(page, { maxTokens, temperature, apiKey, system }) {
  await page.click('#open-settings');
  if (maxTokens !== undefined) await page.fill('#max-tokens', String(maxTokens));
  if (temperature !== undefined) await page.fill('#temperature', String(temperature));
  if (apiKey !== undefined) await page.fill('#api-key', apiKey);
  if (system !== undefined) await page.fill('#system', system);
  await page.click('#save-settings');
  // The dialog's close event saves the settings in a later task; under load
  // the next key press can be handled first, so wait until they are stored.
  const expected = { maxTokens, temperature, apiKey, system };
  await page.waitForFunction((want) => {
    if (document.getElementById('settings').open) return false;
    const saved = JSON.parse(localStorage.getItem('bonsai.settings') || 'null');
    if (!saved) return false;
    return Object.entries(want).every(([key, value]) =>
      value === undefined || String(saved[key] ?? '') === String(value));
  }, expected);
}

// Types a message and sends it with Enter; resolves once its request has left,
// so that a following idle() cannot see the page before the reply started.
async function send(page, text) {
  await page.fill('#prompt', text);
  await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions') && r.method() === 'POST'),
    page.press('#prompt', 'Enter'),
  ]);
}

// Waits until no reply is streaming.
async function idle(page) {
  await page.waitForFunction(() => document.getElementById('stop').hidden, null, { timeout: 60_000 });
}

const lastReply = (page) =>
  page.evaluate(() => {
    const replies = document.querySelectorAll('.message.assistant');
    const last = replies[replies.length - 1];
    return last ? {
      text: last.querySelector('.body').textContent,
      stats: last.querySelector('.stats')?.textContent ?? '',
      note: last.querySelector('.note')?.textContent ?? '',
    } : null;
  });

// ---- tests -----------------------------------------------------------------

test('a message streams a reply that grows, then shows its tokens and speed', async () => {
  const { context, page, problems } = await openPage(plain);
  await page.waitForFunction(() => document.getElementById('model').textContent === 'tiny-q1');
  await setSettings(page, { maxTokens: 300, temperature: 0 });
  // Count the renders of the reply while it streams.
  await page.evaluate(() => {
    window.renders = 0;
    new MutationObserver(() => { window.renders += 1; })
      .observe(document.getElementById('messages'), { childList: true });
  });
  await send(page, 'Tell me about bonsai trees');
  await idle(page);
  const reply = await lastReply(page);
  assert.ok(reply.text.length > 0, 'the reply has text');
  assert.match(reply.stats, /^\d+ prompt tokens, (\d+) generated, [\d.]+ t\/s$/);
  const generated = Number(reply.stats.match(/, (\d+) generated/)[1]);
  assert.ok(generated > 1 && generated <= 300, `generated ${generated}`);
  const renders = await page.evaluate(() => window.renders);
  assert.ok(renders >= 4, `the reply was drawn ${renders} times: it did not grow while streaming`);
  assert.equal(await page.isHidden('#error'), true);
  assert.deepEqual(problems, []);
  await context.close();
});

test('Stop ends a reply mid-stream and the server frees its slot', async () => {
  const { context, page } = await openPage(plain);
  await setSettings(page, { maxTokens: 3500, temperature: 0 });
  const before = await metric(plain, 'bonsai_generated_tokens_total');
  await send(page, 'Go on and on');
  await page.waitForFunction(() => {
    const r = document.querySelectorAll('.message.assistant .body');
    return r.length && r[r.length - 1].textContent.length > 0;
  });
  await page.click('#stop');
  await idle(page);
  assert.equal((await lastReply(page)).note, 'Stopped.');
  // The server saw the client go and freed the slot long before 3,500 tokens.
  const deadline = Date.now() + 10_000;
  while (await metric(plain, 'bonsai_slots_busy') !== 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  assert.equal(await metric(plain, 'bonsai_slots_busy'), 0);
  assert.ok(await metric(plain, 'bonsai_generated_tokens_total') - before < 3500);
  await context.close();
});

test('history survives a reload and can be renamed, exported, deleted and imported', async () => {
  const { context, page } = await openPage(plain);
  await setSettings(page, { maxTokens: 8 });
  await send(page, 'Remember this conversation');
  await idle(page);
  await page.reload();
  await page.waitForSelector('#conversations li');
  assert.equal(await page.textContent('#conversations li .open'), 'Remember this conversation');
  assert.equal(await page.textContent('.message.user .body'), 'Remember this conversation');

  page.once('dialog', (d) => d.accept('Renamed chat'));
  await page.click('#conversations li button:has-text("Rename")');
  await page.waitForFunction(() => document.querySelector('#conversations li .open').textContent === 'Renamed chat');

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const saved = `${BONSAI_WORK}/exported.json`;
  await download.saveAs(saved);
  const exported = JSON.parse(readFileSync(saved, 'utf8'));
  assert.equal(exported.conversations.length, 1);
  assert.equal(exported.conversations[0].title, 'Renamed chat');
  assert.equal(exported.conversations[0].messages[0].content, 'Remember this conversation');

  page.once('dialog', (d) => d.accept());
  await page.click('#conversations li button:has-text("Delete")');
  await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 0);
  await page.setInputFiles('#import-file', saved);
  await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 1);
  assert.equal(await page.textContent('#conversations li .open'), 'Renamed chat');
  await context.close();
});

test('the API key is sent, and a missing or wrong one is shown as an error', async () => {
  const { context, page } = await openPage(keyed);
  const sent = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/v1/chat/completions')) sent.push(r.headers().authorization ?? null);
  });
  await setSettings(page, { maxTokens: 4 });
  await send(page, 'hello');
  await idle(page);
  assert.match(await page.textContent('#error'), /401.*API key/);

  await setSettings(page, { apiKey: 'wrong-key' });
  await send(page, 'hello again');
  await idle(page);
  assert.match(await page.textContent('#error'), /^401: Missing or wrong API key/);

  await setSettings(page, { apiKey: 'right-key' });
  await send(page, 'and now?');
  await idle(page);
  assert.equal(await page.isHidden('#error'), true);
  assert.match((await lastReply(page)).stats, /generated/);
  assert.deepEqual(sent, [null, 'Bearer wrong-key', 'Bearer right-key']);
  await context.close();
});

test('an error the server answers is shown, not swallowed', async () => {
  const { context, page } = await openPage(plain);
  // Far more tokens than the 4,096 of the server's context.
  await send(page, 'word '.repeat(6000));
  await idle(page);
  assert.match(await page.textContent('#error'), /^400: This model's context window is 4096 tokens/);
  // The message that failed stays; no empty reply is left behind.
  assert.equal(await page.locator('.message.assistant').count(), 0);
  await context.close();
});

test('replies render Markdown, reasoning collapsed and tool calls, and never run markup', async () => {
  const { context, page } = await openPage(plain);
  const conversation = {
    id: 'imported-1',
    title: 'Rendering',
    messages: [
      { role: 'user', content: '<b>not bold</b>' },
      {
        role: 'assistant',
        reasoning: 'I should answer with code.',
        content: 'Here:\n\n```js\nconst x = 1 < 2;\n```\n\n- **one**\n- `two`\n\n<img src=x onerror="window.hacked=1">',
        toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }],
      },
    ],
  };
  const file = `${BONSAI_WORK}/render.json`;
  writeFileSync(file, JSON.stringify({ conversations: [conversation] }));
  await page.setInputFiles('#import-file', file);
  await page.click('#conversations li .open');
  await page.waitForSelector('.message.assistant');
  assert.equal(await page.textContent('.message.user .body'), '<b>not bold</b>');
  assert.equal(await page.textContent('.message.assistant pre code'), 'const x = 1 < 2;');
  assert.equal(await page.textContent('.message.assistant li strong'), 'one');
  assert.equal(await page.getAttribute('.message.assistant details.reasoning', 'open'), null);
  assert.equal(await page.textContent('.message.assistant details.reasoning .text'), 'I should answer with code.');
  assert.match(await page.textContent('.message.assistant .tool-call'), /get_weather.*"city":"Paris"/s);
  assert.equal(await page.locator('.message img').count(), 0);
  assert.equal(await page.evaluate(() => window.hacked), undefined);
  await context.close();
});

test('keyboard alone, 360 px wide, light and dark', async () => {
  const { context, page } = await openPage(plain, { viewport: { width: 360, height: 740 } });
  // A short reply: without a limit the tiny model writes until the context
  // is full, which under a sanitizer on a busy machine takes minutes.
  await page.evaluate(() => localStorage.setItem('bonsai.settings',
    JSON.stringify({ system: '', temperature: 0.8, maxTokens: 16, thinking: true, apiKey: '' })));
  await page.reload();
  // Nothing wider than the screen; the conversation list folds away.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 360));
  assert.equal(await page.isVisible('#toggle-chats'), true);
  assert.equal(await page.isVisible('#sidebar'), false);
  await page.focus('#toggle-chats');
  await page.keyboard.press('Enter');
  assert.equal(await page.isVisible('#sidebar'), true);
  // The message box has focus on load: type and send with Enter.
  await page.focus('#prompt');
  await page.keyboard.type('typed, not clicked');
  await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions')),
    page.keyboard.press('Enter'),
  ]);
  await idle(page);
  assert.equal(await page.textContent('.message.user .body'), 'typed, not clicked');
  // Settings open and close from the keyboard.
  await page.focus('#open-settings');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.getElementById('settings').open), true);
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => document.getElementById('settings').open), false);
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.emulateMedia({ colorScheme: 'light' });
  const light = await background();
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await background();
  assert.notEqual(light, dark);
  assert.equal(dark, 'rgb(21, 24, 27)');
  await context.close();
});
