// The dashboard in a real browser: Chromium (test/helpers/chromium.ts: the one npm install brings,
// or CHROMIUM_PATH) driven by playwright-core against a real HTTP
// server (createServer + @hono/node-server on 127.0.0.1, port 0) on a temp SQLite file, with the
// real `openai` client talking to the fake OpenAI server so that the LLM's answers, latency and
// failures are under the test's control. The server runs with --token, so the journey starts at
// the login page and every later step goes through the login cookie.
//
// The tests are one journey, in order: log in → the list → task.add → checkpoint + fork → retry →
// a tool call approved in the page (the tool on a local tool server) → an answer shown as it is
// written → the stream dropped by the server mid-answer and resumed by event id → a parent's
// children spawned while its page is open, linked both ways and from the list.
// Screenshots land in test-output/screenshots/.
import { serve, type ServerType } from '@hono/node-server';
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { spawnAgent } from '../../src/durable/spawn-agent.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { createServer } from '../../src/http/app.js';
import { launchChromium } from '../helpers/chromium.js';
import { startRuntime } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../support/tool-server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCREENSHOTS = path.join(ROOT, 'test-output', 'screenshots');
const TOKEN = 'browser-token-123';
/** How long a UI condition may take to hold (each step is milliseconds when things work). */
const WAIT = { timeout: 10_000 };
/** The LLM answers this task slowly, so that the chart is seen in callingLLM before it is back in idle. */
const SLOW_TASK = 'second task (slow)';
const DOOMED_TASK = 'doomed task';
/** The model answers this task with a call of the `lookup` tool (marked for approval), then with FINAL_ANSWER. */
const TOOL_TASK = 'Will it rain in Oslo?';
const FINAL_ANSWER = 'Yes: rain in Oslo all day.';
/** Streamed word by word, 150 ms apart, so that the page is seen writing it. */
const STREAMED_TASK = 'Describe the weather, slowly';
const STREAMED_DELTAS = ['Light ', 'rain ', 'in ', 'the ', 'morning, ', 'then ', 'sun ', 'over ', 'the ', 'fjord.'];
/** Held after three deltas while the server drops the page's stream; every word differs, so a duplicate shows. */
const HELD_TASK = 'Count to ten';
const HELD_DELTAS = ['One ', 'two ', 'three ', 'four ', 'five ', 'six ', 'seven ', 'eight ', 'nine ', 'ten.'];
/** The text the page shows after the first `n` deltas. */
const prefix = (deltas: string[], n: number) => deltas.slice(0, n).join('');

/** A parent that spawns a child agent (of its own machine) at each `child.add`, named `<its id>:c<n>`. */
const familyDefinition: MachineDefinition = {
  name: 'family',
  machine: setup({ types: { context: {} as { spawned: number } } }).createMachine({
    id: 'family',
    version: '1',
    context: { spawned: 0 },
    initial: 'open',
    states: {
      open: {
        on: {
          'child.add': {
            actions: [
              assign({ spawned: ({ context }) => context.spawned + 1 }),
              spawnAgent('family', { id: ({ self, context }) => `${self.id}:c${context.spawned}` }),
            ],
          },
        },
      },
    },
  }),
};

/**
 * Put in the page before its script: records what every EventSource of the page receives, so that
 * a test sees each connection's events (the page's own code is not touched).
 */
const RECORD_STREAMS = `(() => {
  const Native = window.EventSource;
  const streams = (window.__streams = []);
  window.EventSource = class extends Native {
    constructor(url, init) {
      super(url, init);
      const stream = { url: String(url), events: [] };
      streams.push(stream);
      for (const type of ['snapshot', 'token', 'restart', 'dropped']) {
        this.addEventListener(type, (e) => stream.events.push({ type, id: e.lastEventId, data: JSON.parse(e.data) }));
      }
    }
  };
})();`;
interface RecordedStream {
  url: string;
  events: { type: string; id: string; data: any }[];
}

let file: string;
let fake: FakeOpenAI;
let toolServer: ToolServer;
let runtime: Runtime;
let server: ServerType;
/** The sockets of the SSE responses being written, with their request's URL: a test drops them from the server side. */
const streamSockets = new Map<Socket, string>();
let shutdown: AbortController;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  fake = await startFakeOpenAI();
  fake.setLatency((call) => (call.userContent === SLOW_TASK ? 1_500 : 5));
  fake.setReplyPolicy((call) => {
    if (call.userContent === STREAMED_TASK) return { deltas: STREAMED_DELTAS };
    if (call.userContent === HELD_TASK) return { deltas: HELD_DELTAS };
    if (call.userContent !== TOOL_TASK) return undefined;
    const toolResultsIn = call.rawMessages.some((m) => m.role === 'tool');
    return toolResultsIn ? { content: FINAL_ANSWER } : { toolCalls: [{ id: 'call_rain', name: 'lookup', arguments: { city: 'Oslo' } }] };
  });
  toolServer = await startToolServer();
  toolServer.respond('lookup', { kind: 'json', body: { forecast: 'rain', city: 'Oslo' } });
  ({ runtime, file } = await startRuntime({
    machines: [
      agentDefinition({ llm: createOpenAiClient({ apiKey: 'test', baseURL: fake.url }), defaults: { maxAttempts: 2, baseDelayMs: 10, timeoutMs: 5_000 } }),
      familyDefinition,
    ],
  }));
  shutdown = new AbortController();
  const app = createServer({ runtime, token: TOKEN, shutdown: shutdown.signal });
  server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  (server as Server).on('request', (req) => {
    if (!req.url?.includes('/stream')) return;
    streamSockets.set(req.socket, req.url);
    req.socket.once('close', () => streamSockets.delete(req.socket));
  });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  shutdown?.abort(); // ends open SSE streams
  if (server) {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      if ('closeAllConnections' in server) server.closeAllConnections();
    });
  }
  await runtime?.close();
  await fake?.close();
  await toolServer?.close();
  if (file) fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

afterEach(() => {
  expect(pageErrors, 'errors thrown by the dashboard script').toEqual([]);
});

/** The JSON API from the test (Node), with the bearer token. */
async function api<T = any>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

const activeState = (state: string) => `svg.chart g.state.active[data-state="${state}"]`;
const progressIs = (progress: string) => page.locator('#progress', { hasText: new RegExp(`^${progress}$`) }).waitFor(WAIT);
const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
const liveText = async () => (await page.textContent('#live-text')) ?? '';
/** Waits until the live answer's text is exactly `text` (shown or not). */
const liveTextIs = (text: string) => page.waitForFunction(`document.querySelector('#live-text').textContent === ${JSON.stringify(text)}`, undefined, WAIT);
const recordedStreams = () => page.evaluate<RecordedStream[]>('window.__streams');
const tokenIndexes = (stream: RecordedStream) => stream.events.filter((e) => e.type === 'token').map((e) => e.data.index as number);
/** Presses task.add in the page. */
async function addTask(task: string): Promise<void> {
  await page.fill('form[data-event="task.add"] input[name=task]', task);
  await page.click('form[data-event="task.add"] button');
}

describe('dashboard in Chromium', () => {
  it('asks for the token: a wrong one is refused, the right one sets an HttpOnly cookie and opens the list', async () => {
    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe('/ui/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/');

    await page.fill('input[name=token]', 'not-the-token');
    await page.click('button[type=submit]');
    await page.waitForSelector('#login-error', WAIT);
    expect(await context.cookies()).toEqual([]);
    await shot('login-refused.png');

    await page.fill('input[name=token]', TOKEN);
    await Promise.all([page.waitForURL(`${base}/`, WAIT), page.click('button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Agents');
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    // The API itself still wants the token from anyone without the cookie.
    expect((await fetch(`${base}/agents`)).status).toBe(401);
  });

  it('lists an agent with its status, state and progress, filters the list, and links to the agent', async () => {
    expect((await api('POST', '/agents', { machine: 'agent', id: 'alpha', input: { tasks: ['first task'] } })).status).toBe(201);
    await page.goto(`${base}/`);
    const row = 'tr[data-agent="alpha"]';
    await page.waitForSelector(row, WAIT);
    // The list refreshes itself: the agent ends up idle with one task done.
    await page
      .locator(row)
      .filter({ has: page.locator('[data-cell=state]', { hasText: /^idle$/ }) })
      .filter({ has: page.locator('[data-cell=progress]', { hasText: /^1$/ }) })
      .waitFor(WAIT);
    expect(await page.textContent(`${row} .badge`)).toBe('active');

    await page.selectOption('#filters select[name=status]', 'done');
    await page.waitForSelector(row, { ...WAIT, state: 'detached' });
    await page.selectOption('#filters select[name=status]', 'active');
    await page.waitForSelector(row, WAIT);
    await page.fill('#filters input[name=q]', 'no-such-agent');
    await page.waitForSelector(row, { ...WAIT, state: 'detached' });
    await page.fill('#filters input[name=q]', 'alp');
    await page.waitForSelector(row, WAIT);
    expect(new URL(page.url()).search).toBe('?status=active&q=alp');
    await shot('agents-list.png');

    await Promise.all([page.waitForURL(`${base}/ui/agents/alpha`, WAIT), page.click(`${row} a`)]);
    await page.waitForSelector(activeState('idle'), WAIT);
  });

  it('moves the highlighted state live after a task.add pressed in the page', async () => {
    await page.goto(`${base}/ui/agents/alpha`);
    await page.waitForSelector(activeState('idle'), WAIT);
    expect(await page.isVisible('form[data-event="retry"]')).toBe(false); // idle does not take retry

    await page.fill('form[data-event="task.add"] input[name=task]', SLOW_TASK);
    await page.click('form[data-event="task.add"] button');
    // The LLM takes 1.5 s for this task: the SSE stream moves the highlight to callingLLM.requesting...
    await page.waitForSelector(activeState('callingLLM.requesting'), WAIT);
    expect(await page.$$eval('svg.chart g.state.active', (gs) => gs.map((g) => g.getAttribute('data-state')))).toEqual([
      'callingLLM',
      'callingLLM.requesting',
    ]);
    await shot('agent-calling-llm.png');
    // ...and back to idle once the answer is persisted and the effect ran.
    await page.waitForSelector(activeState('idle'), WAIT);
    await progressIs('2');
    expect(await page.$$eval('svg.chart g.state.active', (gs) => gs.length)).toBe(1);
    // The action log shows the call with its prompt, answer and attempt.
    await page.waitForSelector(`#actions tr[data-action=callLlm] >> text=answer: ${SLOW_TASK}`, WAIT);
  });

  it('shows a picked checkpoint with its state and context, and forks a new agent from it', async () => {
    await page.goto(`${base}/ui/agents/alpha`);
    const checkpoints = await api<{ items: { seq: number; state: unknown }[] }>('GET', '/agents/alpha/checkpoints');
    const persisted = checkpoints.body.items.filter((cp) => cp.state === 'persisted').at(-1)!; // the slow task's answer
    await page.click(`#checkpoints button[data-seq="${persisted.seq}"]`);
    await page.waitForSelector('#checkpoint-detail:not([hidden])', WAIT);
    expect(await page.textContent('#checkpoint-state')).toBe('persisted');
    const context = JSON.parse((await page.textContent('#checkpoint-context'))!);
    expect(context).toMatchObject({ answer: `answer: ${SLOW_TASK}`, current: { seq: 2, task: SLOW_TASK }, progress: 1 });
    await page.waitForSelector('svg.chart g.state.then[data-state="persisted"]', WAIT);
    await shot('agent-checkpoint.png');

    const callsBefore = fake.callsFor(SLOW_TASK).length;
    await Promise.all([page.waitForURL((url) => url.pathname.startsWith('/ui/agents/') && !url.pathname.endsWith('/alpha'), WAIT), page.click('#fork')]);
    const forkId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1)!);
    expect(await page.textContent('#agent-id')).toBe(forkId);
    // The fork resumes after the persisted answer: the effect runs, the LLM is not asked again.
    await page.waitForSelector(activeState('idle'), WAIT);
    await progressIs('2');
    expect(fake.callsFor(SLOW_TASK)).toHaveLength(callsBefore);
    expect((await api<AgentView>('GET', `/agents/${encodeURIComponent(forkId)}`)).body).toMatchObject({ state: 'idle', progress: 2 });

    // idle takes `finish`: the fork ends in its final state, and the page says it takes no more events.
    await page.click('form[data-event="finish"] button');
    await page.waitForSelector(activeState('done'), WAIT);
    await page.locator('#status .badge', { hasText: /^done$/ }).waitFor(WAIT);
    await page.waitForSelector('#no-events:not([hidden])', WAIT);
    expect(await page.isVisible('form[data-event="task.add"]')).toBe(false);
    await page.waitForSelector('#stop', { ...WAIT, state: 'detached' });
  });

  it('retries a failed agent: a permanent 401 parks it in failed, the retry button brings it back once the LLM is fixed', async () => {
    fake.setFaultPolicy((call) => (call.userContent === DOOMED_TASK ? { kind: 'status', status: 401 } : undefined));
    // Spawned through the page's own form.
    await page.goto(`${base}/`);
    await page.fill('#spawn input[name=id]', 'beta');
    await page.fill('#spawn textarea[name=input]', JSON.stringify({ tasks: [DOOMED_TASK] }));
    await Promise.all([page.waitForURL(`${base}/ui/agents/beta`, WAIT), page.click('#spawn button[type=submit]')]);

    await page.waitForSelector(activeState('failed'), WAIT);
    await page.waitForSelector('form[data-event="retry"]:not([hidden])', WAIT);
    expect(await page.isVisible('form[data-event="task.skip"]')).toBe(true);
    expect(await page.textContent('#last-error')).toContain('permanent');
    await page.waitForSelector('#actions tr[data-action=callLlm] .fail', WAIT);
    expect(fake.callsFor(DOOMED_TASK)).toHaveLength(1); // a permanent error is not retried by itself
    await shot('agent-failed.png');

    fake.setFaultPolicy(undefined);
    await page.click('form[data-event="retry"] button');
    await page.waitForSelector(activeState('idle'), WAIT);
    await progressIs('1');
    await page.waitForSelector('form[data-event="retry"]', { ...WAIT, state: 'hidden' });
    await page.waitForSelector('#last-error', { ...WAIT, state: 'detached' });
    expect(fake.callsFor(DOOMED_TASK)).toHaveLength(2);
    await page.waitForSelector(`#actions tr[data-action=callLlm] >> text=answer: ${DOOMED_TASK}`, WAIT);
    await shot('agent-retried.png');

    // Stop agent (after a confirm dialog): the agent is stopped for good and takes no more events.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#stop');
    await page.locator('#status .badge', { hasText: /^stopped$/ }).waitFor(WAIT);
    await page.waitForSelector('#no-events:not([hidden])', WAIT);
    expect((await api<AgentView>('GET', '/agents/beta')).body.status).toBe('stopped');

    // Back on the list: every agent of the journey, the fork included, with its progress.
    await page.goto(`${base}/`);
    await page.locator('#agents tbody tr[data-agent]').nth(2).waitFor(WAIT);
    expect(await page.$$eval('#agents tbody tr[data-agent]', (rows) => rows.map((r) => r.getAttribute('data-agent')))).toHaveLength(3);
    await page.locator('tr[data-agent="beta"] .badge', { hasText: /^stopped$/ }).waitFor(WAIT);
    await shot('agents-list-all.png');
  });

  it('shows a tool call waiting for approval, runs it once Approve is pressed in the page, and shows its result and the answer', async () => {
    const tools = [{ name: 'lookup', url: toolServer.url('lookup'), approval: true, parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
    expect((await api('POST', '/agents', { machine: 'agent', id: 'gamma', input: { tasks: [TOOL_TASK], tools } })).status).toBe(201);
    await page.goto(`${base}/ui/agents/gamma`);
    const pending = '#approvals [data-approval="call_rain"]';
    await page.waitForSelector(pending, WAIT);
    await page.waitForSelector(activeState('sideEffect.awaitingApproval'), WAIT);
    expect(await page.textContent(pending)).toContain('lookup');
    expect(await page.textContent(pending)).toContain('"city": "Oslo"');
    expect(await page.textContent(pending)).toContain('gamma:1:call_rain');
    // The call is in the conversation already, with its key; nothing has run.
    await page.waitForSelector('#conversation .tool-call[data-call="call_rain"] >> text=gamma:1:call_rain', WAIT);
    expect(toolServer.deliveries).toHaveLength(0);
    await shot('agent-awaiting-approval.png');

    await page.click(`${pending} form[data-event="tool.approve"] button`);
    // The decision is committed, the call runs, the model answers: the page follows over the stream.
    await page.waitForSelector('#approvals', { ...WAIT, state: 'detached' });
    await page.waitForSelector(activeState('idle'), WAIT);
    await progressIs('1');
    const toolMessage = '#conversation li.message.tool[data-call="call_rain"]';
    await page.waitForSelector(`${toolMessage} .ok`, WAIT);
    expect(await page.textContent(toolMessage)).toContain('{"forecast":"rain","city":"Oslo"}');
    expect(await page.textContent(toolMessage)).toContain('gamma:1:call_rain');
    await page.waitForSelector(`#conversation .response >> text=${FINAL_ANSWER}`, WAIT);
    await page.waitForSelector('#actions tr[data-action=runTools] >> text=gamma:1:call_rain', WAIT);
    expect(toolServer.deliveries.map((d) => [d.idempotencyKey, d.body?.arguments])).toEqual([['gamma:1:call_rain', { city: 'Oslo' }]]);
    await shot('agent-tool-approved.png');
  });
  it('shows the answer in the page as the model writes it, then in the conversation once committed', async () => {
    // The held call of the next step outlives the default 5 s limit of a stream sending nothing.
    const input = { tasks: [], retry: { timeoutMs: 30_000 } };
    expect((await api('POST', '/agents', { machine: 'agent', id: 'delta', input })).status).toBe(201);
    await page.addInitScript(RECORD_STREAMS); // every later page load of the journey
    await page.goto(`${base}/ui/agents/delta`);
    await page.waitForSelector(activeState('idle'), WAIT);
    expect(await page.isVisible('#live-answer')).toBe(false);

    fake.setChunkInterval(150);
    try {
      await addTask(STREAMED_TASK);
      await page.waitForSelector('#live-answer', WAIT);
      expect(await page.textContent('#live-turn')).toBe('task 1 · turn 0');
      await page.waitForFunction(`document.querySelector('#live-text').textContent.length > 0`, undefined, WAIT);
      const first = await liveText();
      await page.waitForFunction(`document.querySelector('#live-text').textContent.length > ${first.length}`, undefined, WAIT);
      const second = await liveText();
      // Read before the fake sent its last delta: the call was still being written.
      expect(fake.callsFor(STREAMED_TASK)[0]!.deltasSent).toBeLessThan(STREAMED_DELTAS.length);
      const prefixes = STREAMED_DELTAS.map((_, n) => prefix(STREAMED_DELTAS, n + 1));
      expect(prefixes.slice(0, -1)).toContain(first);
      expect(prefixes.slice(0, -1)).toContain(second);
      expect(second.length).toBeGreaterThan(first.length);
      expect(await page.isVisible('#live-answer')).toBe(true);
      await shot('agent-live-answer.png');

      // Committed: the conversation shows the whole answer, and the live answer is gone.
      const response = '#conversation .task[data-task="1"] .response .text';
      await page.waitForSelector(response, WAIT);
      expect(await page.textContent(response)).toBe(prefix(STREAMED_DELTAS, STREAMED_DELTAS.length));
      await page.waitForSelector('#live-answer', { ...WAIT, state: 'hidden' });
      expect(await liveText()).toBe(prefix(STREAMED_DELTAS, STREAMED_DELTAS.length));
      await page.waitForSelector(activeState('idle'), WAIT);
      await progressIs('1');
    } finally {
      fake.setChunkInterval(0);
    }
    // One connection, every delta once, in order.
    const streams = await recordedStreams();
    expect(streams.map((s) => s.url)).toEqual(['/agents/delta/stream']);
    expect(tokenIndexes(streams[0]!)).toEqual(STREAMED_DELTAS.map((_, i) => i));
  });

  it('resumes the answer from the last event id when the server drops the stream mid-answer, with no delta twice', async () => {
    const hold = fake.holdAfter(3);
    await page.goto(`${base}/ui/agents/delta`);
    await page.waitForSelector(activeState('idle'), WAIT);
    await addTask(HELD_TASK);
    await hold.reached;
    await liveTextIs(prefix(HELD_DELTAS, 3));
    expect(await page.textContent('#live-turn')).toBe('task 2 · turn 0');
    const [opened] = await recordedStreams();
    const last = opened!.events.at(-1)!;
    expect(last).toMatchObject({ type: 'token', data: { seq: 2, turn: 0, index: 2, delta: HELD_DELTAS[2] } });

    // The drop, from the server's side: the socket of the page's SSE response is destroyed, as a
    // proxy timing out or a server going away would (no `dropped` event: the HTTP server here cannot
    // be made to see a slow reader on demand). EventSource then reconnects by itself, sending
    // Last-Event-ID; that reconnection is answered 502, as a proxy whose upstream restarts does, so
    // that EventSource gives up (CLOSED) and the page's own code must come back with `?from=` and
    // the id it kept. Only that one request is answered by the browser; the rest is the real server.
    const ownReconnects: (string | undefined)[] = [];
    const isOwnReconnect = (url: URL) => url.pathname === '/agents/delta/stream' && !url.searchParams.has('from');
    await page.route(isOwnReconnect, async (route) => {
      ownReconnects.push((await route.request().allHeaders())['last-event-id']);
      await route.fulfill({ status: 502, contentType: 'text/plain', body: 'Bad gateway: upstream restarting' });
    });
    const resumedUrl = `${base}/agents/delta/stream?from=${encodeURIComponent(last.id)}`;
    const resumed = page.waitForResponse((res) => res.url() === resumedUrl, WAIT);
    const dropped = [...streamSockets].filter(([, url]) => url.startsWith('/agents/delta/stream'));
    expect(dropped).toHaveLength(1);
    for (const [socket] of dropped) socket.destroy();
    expect((await resumed).status()).toBe(200);
    await page.unroute(isOwnReconnect);
    expect(ownReconnects).toEqual([last.id]); // the browser kept the same id the page did
    expect(await liveText()).toBe(prefix(HELD_DELTAS, 3)); // nothing lost or doubled meanwhile
    await shot('agent-live-answer-resumed.png');

    // The rest of the answer streams over the resumed connection, each delta once.
    hold.release();
    const response = '#conversation .task[data-task="2"] .response .text';
    await page.waitForSelector(response, WAIT);
    expect(await page.textContent(response)).toBe(prefix(HELD_DELTAS, HELD_DELTAS.length));
    await page.waitForSelector('#live-answer', { ...WAIT, state: 'hidden' });
    expect(await liveText()).toBe(prefix(HELD_DELTAS, HELD_DELTAS.length));
    await progressIs('2');
    const streams = await recordedStreams();
    expect(streams.map((s) => s.url)).toEqual(['/agents/delta/stream', `/agents/delta/stream?from=${encodeURIComponent(last.id)}`]);
    expect(tokenIndexes(streams[0]!)).toEqual([0, 1, 2]);
    expect(tokenIndexes(streams[1]!)).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(streams[1]!.events.filter((e) => e.type === 'restart')).toEqual([]);
  });

  it("shows an agent's children as they are spawned, each linked to its page, which links back to its parent", async () => {
    expect((await api('POST', '/agents', { machine: 'family', id: 'fam' })).status).toBe(201);
    await page.goto(`${base}/ui/agents/fam`);
    await page.waitForSelector(activeState('open'), WAIT);
    expect(await page.$$('[data-live="family"] *')).toHaveLength(0); // no parent, no children yet
    const childLinks = () => page.$$eval('#children a', (as) => as.map((a) => [a.getAttribute('href'), a.textContent]));
    const childCountIs = (n: number) => page.waitForFunction(`document.querySelectorAll('#children li').length === ${n}`, undefined, WAIT);
    const addChild = () => page.click('form[data-event="child.add"] button');

    // Spawned while the page is open: each one shows up with the snapshot of the transition that spawned it.
    await addChild();
    await childCountIs(1);
    await addChild();
    await childCountIs(2);
    const { body: view } = await api<AgentView>('GET', '/agents/fam');
    expect(view.children).toEqual(['fam:c1', 'fam:c2']);
    expect(await childLinks()).toEqual([
      ['/ui/agents/fam%3Ac1', 'fam:c1'],
      ['/ui/agents/fam%3Ac2', 'fam:c2'],
    ]);
    expect(await page.$('#parent')).toBeNull();

    // A redrawn page without them (drawn from a view that does not carry children) leaves them shown;
    // the checkpoints section, swapped from the same page, shows that the page was redrawn.
    const withoutFamily = async (route: Route) => {
      if (route.request().resourceType() !== 'fetch') return route.continue();
      const res = await route.fetch();
      const html = (await res.text()).replace(/(<div data-live="family">)[\s\S]*?(<\/div><div class="events")/, '$1$2');
      expect(html).toContain('<div data-live="family"></div>');
      await route.fulfill({ response: res, body: html });
    };
    const pageUrl = (url: URL) => url.pathname === '/ui/agents/fam';
    await page.route(pageUrl, withoutFamily);
    const checkpointsShown = await page.$$eval('#checkpoints button[data-seq]', (bs) => bs.length);
    await addChild();
    await page.waitForFunction(`document.querySelectorAll('#checkpoints button[data-seq]').length === ${checkpointsShown + 1}`, undefined, WAIT);
    await page.unroute(pageUrl, withoutFamily);
    expect((await childLinks()).map(([, id]) => id)).toEqual(['fam:c1', 'fam:c2']);
    // The next redraw is the server's again: with the third child, and the fourth.
    await addChild();
    await childCountIs(4);
    expect((await childLinks()).map(([, id]) => id)).toEqual(['fam:c1', 'fam:c2', 'fam:c3', 'fam:c4']);
    await shot('agent-children.png');

    // A child's page: its parent linked, no children of its own; the link goes back.
    await Promise.all([page.waitForURL((url) => decodeURIComponent(url.pathname) === '/ui/agents/fam:c2', WAIT), page.click('#children a >> text=fam:c2')]);
    expect(await page.textContent('#agent-id')).toBe('fam:c2');
    expect(await page.getAttribute('#parent a', 'href')).toBe('/ui/agents/fam');
    expect(await page.$('#children')).toBeNull();
    await shot('agent-child.png');
    await Promise.all([page.waitForURL(`${base}/ui/agents/fam`, WAIT), page.click('#parent a')]);
    expect(await page.textContent('#agent-id')).toBe('fam');

    // The list says whose child each one is, linked.
    await page.goto(`${base}/?machine=family`);
    const row = 'tr[data-agent="fam:c1"]';
    await page.waitForSelector(row, WAIT);
    expect(await page.textContent(`${row} [data-cell=parent]`)).toBe('child of fam');
    expect(await page.$('tr[data-agent="fam"] [data-cell=parent]')).toBeNull();
    await Promise.all([page.waitForURL(`${base}/ui/agents/fam`, WAIT), page.click(`${row} [data-cell=parent] a`)]);
  });
});
