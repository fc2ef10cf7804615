// The chat page of bonsai serve. No framework and no build step: the page
// talks to the server's own OpenAI API (same origin), keeps conversations in
// localStorage, and renders replies with a small Markdown subset built from
// escaped text (model output never reaches the DOM as HTML).
'use strict';

const STORE_CONVERSATIONS = 'bonsai.conversations';
const STORE_SETTINGS = 'bonsai.settings';
const STORE_CURRENT = 'bonsai.current';

const $ = (id) => document.getElementById(id);

// ---- storage ---------------------------------------------------------------

function loadJson(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text ? JSON.parse(text) : fallback;
  } catch {
    return fallback;
  }
}

function saveJson(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (error) {
    showError(`Could not save in this browser: ${error.message}`);
  }
}

const defaultSettings = {
  system: '',
  temperature: 0.8,
  maxTokens: null,
  thinking: true,
  apiKey: '',
};

const state = {
  conversations: loadJson(STORE_CONVERSATIONS, []),
  settings: { ...defaultSettings, ...loadJson(STORE_SETTINGS, {}) },
  currentId: localStorage.getItem(STORE_CURRENT),
  running: null, // { controller, message, conversation } while a reply streams
};

function saveConversations() {
  saveJson(STORE_CONVERSATIONS, state.conversations);
  if (state.currentId) localStorage.setItem(STORE_CURRENT, state.currentId);
}

function newId() {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

function current() {
  return state.conversations.find((c) => c.id === state.currentId) || null;
}

function startConversation() {
  const conversation = { id: newId(), title: 'New chat', created: Date.now(), messages: [] };
  state.conversations.unshift(conversation);
  state.currentId = conversation.id;
  saveConversations();
  return conversation;
}

// ---- Markdown (a safe subset) ---------------------------------------------

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// Inline markup of one escaped line: code spans first, so that their
// contents are left alone, then bold, italics and http(s) links.
function inline(escaped) {
  const parts = escaped.split(/(`[^`]+`)/g);
  return parts
    .map((part) => {
      if (part.length > 2 && part.startsWith('`') && part.endsWith('`')) return `<code>${part.slice(1, -1)}</code>`;
      return part
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>')
        .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>');
    })
    .join('');
}

function renderMarkdown(text) {
  const lines = text.split('\n');
  const out = [];
  let paragraph = [];
  let list = null; // 'ul' or 'ol'
  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join('<br>')}</p>`);
    paragraph = [];
  };
  const closeList = () => {
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flushParagraph();
      closeList();
      const code = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
      const language = fence[1] ? ` class="language-${escapeHtml(fence[1])}"` : '';
      out.push(`<pre><code${language}>${escapeHtml(code.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (heading) {
      flushParagraph();
      closeList();
      const level = Math.min(heading[1].length + 2, 6); // under the page's own headings
      out.push(`<h${level}>${inline(escapeHtml(heading[2]))}</h${level}>`);
    } else if (bullet || numbered) {
      flushParagraph();
      const kind = bullet ? 'ul' : 'ol';
      if (list !== kind) {
        closeList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline(escapeHtml((bullet || numbered)[1]))}</li>`);
    } else if (line.trim() === '') {
      flushParagraph();
      closeList();
    } else {
      closeList();
      paragraph.push(escapeHtml(line));
    }
  }
  flushParagraph();
  closeList();
  return out.join('');
}

// Splits a reply into its reasoning (<think>...</think>, also when the
// template opened the block itself) and the answer.
function splitReasoning(text) {
  const open = text.indexOf('<think>');
  const close = text.indexOf('</think>');
  if (close >= 0) {
    const start = open >= 0 && open < close ? open + '<think>'.length : 0;
    return { reasoning: text.slice(start, close).trim(), content: text.slice(close + '</think>'.length).replace(/^\s+/, '') };
  }
  if (open >= 0) return { reasoning: text.slice(open + '<think>'.length).trim(), content: text.slice(0, open) };
  return { reasoning: '', content: text };
}

// ---- rendering -------------------------------------------------------------

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function renderMessage(message) {
  const node = element('div', `message ${message.role}`);
  node.appendChild(element('div', 'who', message.role === 'user' ? 'You' : 'Assistant'));
  if (message.role === 'assistant') {
    const reasoning = message.reasoning || '';
    if (reasoning) {
      const details = element('details', 'reasoning');
      details.appendChild(element('summary', '', 'Reasoning'));
      details.appendChild(element('div', 'text', reasoning));
      node.appendChild(details);
    }
    const body = element('div', 'body');
    body.innerHTML = renderMarkdown(message.content || '');
    node.appendChild(body);
    for (const call of message.toolCalls || []) {
      const box = element('div', 'tool-call');
      box.appendChild(element('div', 'who', `Tool call: ${call.name || '?'}`));
      box.appendChild(element('pre', '', call.arguments || ''));
      node.appendChild(box);
    }
    if (message.note) node.appendChild(element('div', 'note', message.note));
    if (message.stats) node.appendChild(element('div', 'stats', message.stats));
  } else {
    node.appendChild(element('div', 'body', message.content));
  }
  return node;
}

function renderMessages() {
  const box = $('messages');
  box.replaceChildren();
  const conversation = current();
  for (const message of conversation ? conversation.messages : []) box.appendChild(renderMessage(message));
  box.scrollTop = box.scrollHeight;
}

// Re-renders the last message only (while it streams).
function renderLast(message) {
  const box = $('messages');
  const node = renderMessage(message);
  if (box.lastElementChild && box.lastElementChild.classList.contains('assistant')) {
    const old = box.lastElementChild;
    const open = old.querySelector('details.reasoning')?.open;
    if (open) node.querySelector('details.reasoning')?.setAttribute('open', '');
    box.replaceChild(node, old);
  } else {
    box.appendChild(node);
  }
  box.scrollTop = box.scrollHeight;
}

function renderConversations() {
  const list = $('conversations');
  list.replaceChildren();
  for (const conversation of state.conversations) {
    const item = element('li');
    if (conversation.id === state.currentId) item.setAttribute('aria-current', 'true');
    const open = element('button', 'open', conversation.title);
    open.type = 'button';
    open.title = conversation.title;
    open.addEventListener('click', () => selectConversation(conversation.id));
    const rename = element('button', 'small', 'Rename');
    rename.type = 'button';
    rename.setAttribute('aria-label', `Rename ${conversation.title}`);
    rename.addEventListener('click', () => renameConversation(conversation.id));
    const remove = element('button', 'small', 'Delete');
    remove.type = 'button';
    remove.setAttribute('aria-label', `Delete ${conversation.title}`);
    remove.addEventListener('click', () => deleteConversation(conversation.id));
    item.append(open, rename, remove);
    list.appendChild(item);
  }
}

function render() {
  renderConversations();
  renderMessages();
}

function showError(text) {
  const box = $('error');
  box.textContent = text;
  box.hidden = !text;
}

function setRunning(running) {
  $('send').hidden = running;
  $('stop').hidden = !running;
  if (!running) $('prompt').focus();
}

// ---- conversations ---------------------------------------------------------

function selectConversation(id) {
  if (state.running) return;
  state.currentId = id;
  saveConversations();
  showError('');
  render();
  $('sidebar').classList.remove('open');
  $('toggle-chats').setAttribute('aria-expanded', 'false');
}

function renameConversation(id) {
  const conversation = state.conversations.find((c) => c.id === id);
  if (!conversation) return;
  const title = prompt('New name', conversation.title);
  if (title === null || !title.trim()) return;
  conversation.title = title.trim().slice(0, 200);
  saveConversations();
  renderConversations();
}

function deleteConversation(id) {
  if (state.running && state.running.conversation.id === id) stopReply();
  const conversation = state.conversations.find((c) => c.id === id);
  if (!conversation || !confirm(`Delete "${conversation.title}"?`)) return;
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.conversations[0]?.id || null;
  saveConversations();
  render();
}

function exportConversations() {
  const blob = new Blob([JSON.stringify({ bonsai_conversations: 1, conversations: state.conversations }, null, 2)], {
    type: 'application/json',
  });
  const link = element('a');
  link.href = URL.createObjectURL(blob);
  link.download = 'bonsai-conversations.json';
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// Keeps only well-formed conversations from an imported file.
function validConversation(c) {
  return (
    c && typeof c.id === 'string' && typeof c.title === 'string' && Array.isArray(c.messages) &&
    c.messages.every((m) => m && (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string')
  );
}

async function importConversations(file) {
  try {
    const data = JSON.parse(await file.text());
    const list = Array.isArray(data) ? data : data.conversations;
    if (!Array.isArray(list)) throw new Error('no "conversations" list');
    const good = list.filter(validConversation);
    if (!good.length) throw new Error('no conversation in it has the expected shape');
    const known = new Set(state.conversations.map((c) => c.id));
    for (const c of good) {
      if (known.has(c.id)) c.id = newId();
      state.conversations.push(c);
    }
    saveConversations();
    showError(good.length < list.length ? `Imported ${good.length} of ${list.length} conversations (the rest were malformed).` : '');
    render();
  } catch (error) {
    showError(`Could not import ${file.name}: ${error.message}`);
  }
}

// ---- the API ---------------------------------------------------------------

function headers() {
  const result = { 'Content-Type': 'application/json' };
  if (state.settings.apiKey) result.Authorization = `Bearer ${state.settings.apiKey}`;
  return result;
}

// The error text of a failed answer, in OpenAI's error shape when it is one.
async function errorText(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body?.error?.message) message = `${response.status}: ${body.error.message}`;
  } catch {
    // not JSON: the status line says it
  }
  if (response.status === 401) message += ' (set the API key in Settings)';
  return message;
}

async function loadModel() {
  try {
    const response = await fetch('/v1/models', { headers: headers() });
    if (!response.ok) {
      $('model').textContent = response.status === 401 ? 'API key needed' : '';
      return;
    }
    const list = await response.json();
    $('model').textContent = list?.data?.[0]?.id || '';
  } catch {
    $('model').textContent = '';
  }
}

function requestBody(conversation) {
  const messages = [];
  if (state.settings.system.trim()) messages.push({ role: 'system', content: state.settings.system });
  for (const m of conversation.messages) {
    if (m.role === 'assistant' && m.pending) continue;
    messages.push({ role: m.role, content: m.content });
  }
  const body = {
    messages,
    stream: true,
    stream_options: { include_usage: true },
    temperature: Number(state.settings.temperature),
    chat_template_kwargs: { enable_thinking: Boolean(state.settings.thinking) },
  };
  if (state.settings.maxTokens !== null && state.settings.maxTokens !== '') body.max_tokens = Number(state.settings.maxTokens);
  return body;
}

// Reads server-sent events: calls onData with each `data:` payload.
async function readEvents(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) if (line.startsWith('data: ')) onData(line.slice(6));
    }
  }
}

function applyDelta(message, delta) {
  if (typeof delta.content === 'string') message.raw += delta.content;
  if (typeof delta.reasoning_content === 'string') message.reasoningStream += delta.reasoning_content;
  for (const call of delta.tool_calls || []) {
    const index = call.index ?? 0;
    message.toolCalls[index] ??= { name: '', arguments: '' };
    if (call.function?.name) message.toolCalls[index].name = call.function.name;
    if (call.function?.arguments) message.toolCalls[index].arguments += call.function.arguments;
  }
  const parts = splitReasoning(message.raw);
  message.reasoning = (message.reasoningStream + parts.reasoning).trim();
  message.content = parts.content;
}

async function send(text) {
  if (state.running || !text.trim()) return;
  showError('');
  const conversation = current() || startConversation();
  if (!conversation.messages.length) conversation.title = text.trim().split('\n')[0].slice(0, 60);
  conversation.messages.push({ role: 'user', content: text });
  const message = { role: 'assistant', content: '', reasoning: '', raw: '', reasoningStream: '', toolCalls: [], pending: true };
  conversation.messages.push(message);
  saveConversations();
  render();
  const controller = new AbortController();
  state.running = { controller, message, conversation };
  setRunning(true);
  const started = performance.now();
  let firstToken = 0;
  let usage = null;
  try {
    const response = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify(requestBody(conversation)),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(await errorText(response));
    await readEvents(response, (data) => {
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(`The server failed: ${chunk.error.message}`);
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return;
      if (!firstToken && (choice.delta?.content || choice.delta?.reasoning_content)) firstToken = performance.now();
      applyDelta(message, choice.delta || {});
      if (choice.finish_reason === 'length') message.note = 'Stopped at the token limit.';
      renderLast(message);
    });
    if (usage) {
      const seconds = (performance.now() - (firstToken || started)) / 1000;
      const rate = usage.completion_tokens > 1 && seconds > 0 ? ((usage.completion_tokens - 1) / seconds).toFixed(1) : '-';
      message.stats = `${usage.prompt_tokens} prompt tokens, ${usage.completion_tokens} generated, ${rate} t/s`;
    }
  } catch (error) {
    if (error.name === 'AbortError') {
      message.note = 'Stopped.';
    } else {
      showError(error.message || String(error));
      if (!message.content && !message.reasoning) conversation.messages.pop(); // nothing came
    }
  } finally {
    delete message.pending;
    delete message.raw;
    delete message.reasoningStream;
    if (!message.toolCalls.length) delete message.toolCalls;
    state.running = null;
    saveConversations();
    render();
    setRunning(false);
  }
}

function stopReply() {
  if (state.running) state.running.controller.abort();
}

// ---- settings --------------------------------------------------------------

function openSettings() {
  const s = state.settings;
  $('system').value = s.system;
  $('temperature').value = s.temperature;
  $('max-tokens').value = s.maxTokens ?? '';
  $('thinking').checked = s.thinking;
  $('api-key').value = s.apiKey;
  $('settings').showModal();
}

function saveSettings() {
  const temperature = Number($('temperature').value);
  const maxTokens = $('max-tokens').value.trim();
  state.settings = {
    system: $('system').value,
    temperature: Number.isFinite(temperature) ? temperature : defaultSettings.temperature,
    maxTokens: maxTokens === '' ? null : Number(maxTokens),
    thinking: $('thinking').checked,
    apiKey: $('api-key').value.trim(),
  };
  saveJson(STORE_SETTINGS, state.settings);
  loadModel();
}

// ---- wiring ----------------------------------------------------------------

function wire() {
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const box = $('prompt');
    const text = box.value;
    box.value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('composer').requestSubmit();
    }
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && state.running) stopReply();
  });
  $('stop').addEventListener('click', stopReply);
  $('new-chat').addEventListener('click', () => {
    if (state.running) return;
    startConversation();
    showError('');
    render();
    $('prompt').focus();
  });
  $('export').addEventListener('click', exportConversations);
  $('import').addEventListener('click', () => $('import-file').click());
  $('import-file').addEventListener('change', (event) => {
    const file = event.target.files?.[0];
    if (file) importConversations(file);
    event.target.value = '';
  });
  $('open-settings').addEventListener('click', openSettings);
  $('settings').addEventListener('close', () => {
    if ($('settings').returnValue === 'save') saveSettings();
  });
  $('toggle-chats').addEventListener('click', () => {
    const open = $('sidebar').classList.toggle('open');
    $('toggle-chats').setAttribute('aria-expanded', String(open));
  });
}

wire();
if (!current() && state.conversations.length) state.currentId = state.conversations[0].id;
render();
loadModel();
$('prompt').focus();
