// Streamed tokens end to end in one process: a real HTTP server (@hono/node-server on 127.0.0.1),
// the real `openai` client streaming from the fake OpenAI server, and a real WHATWG EventSource
// client (the `eventsource` package) that reconnects by itself with Last-Event-ID.
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import { EventSource } from 'eventsource';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer } from '../../src/http/app.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { startRuntime } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { Hono } from 'hono';
import { streamAgentEvents } from '../../src/http/routes/stream.js';
import type { AppEnv } from '../../src/http/env.js';
import { silentLogger } from '../../src/core/logger.js';
import { sseReader } from './harness.js';

interface Received {
  event: string;
  id: string;
  data: any;
}

let fake: FakeOpenAI | undefined;
let runtime: Runtime | undefined;
let server: Server | undefined;
const sources: EventSource[] = [];

afterEach(async () => {
  for (const source of sources.splice(0)) source.close();
  if (server) {
    const s = server;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }
  await runtime?.close();
  await fake?.close();
  fake = runtime = server = undefined;
});

const ANSWER = 'The quick brown fox jumps over the lazy dog, twice, and then it rests.';

async function start(): Promise<string> {
  fake = await startFakeOpenAI({ answer: () => ANSWER });
  ({ runtime } = await startRuntime({
    llm: createOpenAiClient({ apiKey: 'test', baseURL: fake.url }),
    defaults: { maxAttempts: 3, baseDelayMs: 10, timeoutMs: 5_000 },
  }));
  const app = createServer({ runtime });
  server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
    s.once('error', reject);
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An EventSource on the agent's stream, every event it receives in `events`. */
function listen(url: string): { source: EventSource; events: Received[] } {
  const source = new EventSource(url);
  sources.push(source);
  const events: Received[] = [];
  for (const type of ['snapshot', 'token', 'restart']) {
    source.addEventListener(type, (e) => events.push({ event: type, id: e.lastEventId, data: JSON.parse(e.data) }));
  }
  return { source, events };
}

/** The text of a call as a client puts it together: the deltas after its last `restart`. */
function textOf(events: Received[], seq: number, turn: number): { text: string; indexes: number[] } {
  let deltas: { delta: string; index: number }[] = [];
  for (const e of events) {
    if (e.data.seq !== seq || e.data.turn !== turn) continue;
    if (e.event === 'restart') deltas = [];
    if (e.event === 'token') deltas.push(e.data);
  }
  return { text: deltas.map((d) => d.delta).join(''), indexes: deltas.map((d) => d.index) };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function spawnAgent(base: string, id: string, tasks: string[]): Promise<void> {
  const res = await fetch(`${base}/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ machine: 'agent', id, input: { tasks } }) });
  expect(res.status).toBe(201);
}

async function committedAnswer(id: string, seq: number): Promise<string> {
  return vi.waitFor(
    async () => {
      const view = await runtime!.view(id);
      const result = (view.context as { results: { seq: number; response: string }[] }).results.find((r) => r.seq === seq);
      if (!result) throw new Error(`task ${seq} not done yet`);
      return result.response;
    },
    { timeout: 10_000, interval: 20 },
  );
}

describe('token events of GET /agents/:id/stream', () => {
  it('streams the answer word by word; the deltas of the turn concatenated are the committed answer', { timeout: 30_000 }, async () => {
    const base = await start();
    fake!.setChunkInterval(2);
    await spawnAgent(base, 't1', []);
    const { events } = listen(`${base}/agents/t1/stream`);
    await vi.waitFor(() => expect(events.length).toBeGreaterThan(0));
    await fetch(`${base}/agents/t1/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'task.add', task: 'go' }) });
    const answer = await committedAnswer('t1', 1);
    expect(answer).toBe(ANSWER);
    await vi.waitFor(() => expect(events.filter((e) => e.event === 'snapshot').at(-1)?.data.progress).toBe(1));
    const { text, indexes } = textOf(events, 1, 0);
    expect(text).toBe(ANSWER);
    expect(indexes).toEqual(range(ANSWER.split(' ').length));
    // Ids grow in order: each token's after the snapshot of the checkpoint that started its call.
    const tokens = events.filter((e) => e.event === 'token');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    const firstToken = events.indexOf(tokens[0]!);
    expect(events.slice(0, firstToken).some((e) => e.event === 'snapshot' && JSON.stringify(e.data.state).includes('callingLLM'))).toBe(true);
  });

  it('a client whose connection drops mid-answer reconnects by itself with Last-Event-ID and gets exactly the rest', { timeout: 30_000 }, async () => {
    const base = await start();
    const hold = fake!.holdAfter(3);
    await spawnAgent(base, 't2', ['tell me']);
    const { events } = listen(`${base}/agents/t2/stream`);
    await hold.reached;
    await vi.waitFor(() => expect(events.filter((e) => e.event === 'token')).toHaveLength(3));
    const opened: string[] = [];
    // The server drops every connection (a proxy's timeout, a restart of a load balancer): the stream's too.
    server!.on('request', (req) => opened.push(String(req.headers['last-event-id'] ?? '')));
    server!.closeAllConnections();
    hold.release();
    expect(await committedAnswer('t2', 1)).toBe(ANSWER);
    await vi.waitFor(() => expect(opened.length).toBeGreaterThan(0), { timeout: 5_000 });
    // It came back from the last event it had: the third token's id.
    expect(opened[0]).toBe(events.filter((e) => e.event === 'token')[2]!.id);
    await vi.waitFor(() => expect(textOf(events, 1, 0).text).toBe(ANSWER), { timeout: 5_000 });
    expect(textOf(events, 1, 0).indexes).toEqual(range(ANSWER.split(' ').length));
    expect(events.some((e) => e.event === 'restart')).toBe(false);
  });

  it('a call cut off mid-stream is asked again: restart, then the new answer whole', { timeout: 30_000 }, async () => {
    const base = await start();
    await spawnAgent(base, 't3', []);
    const { events } = listen(`${base}/agents/t3/stream`);
    await vi.waitFor(() => expect(events.length).toBeGreaterThan(0));
    // The first asking streams 4 words and breaks off; the retry answers whole.
    fake!.enqueueFaults({ kind: 'cut', afterDeltas: 4 });
    await fetch(`${base}/agents/t3/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'task.add', task: 'again' }) });
    expect(await committedAnswer('t3', 1)).toBe(ANSWER);
    await vi.waitFor(() => expect(textOf(events, 1, 0).text).toBe(ANSWER));
    const ofTurn = events.filter((e) => e.event !== 'snapshot');
    const restart = ofTurn.findIndex((e) => e.event === 'restart');
    expect(restart).toBe(4); // after the four words of the first asking
    expect(ofTurn[restart]!.data).toEqual({ seq: 1, turn: 0 });
    expect(ofTurn.slice(0, 4).map((e) => e.data.delta).join('')).toBe(ANSWER.split(' ').slice(0, 4).map((w) => `${w} `).join(''));
  });

  it('resumes after a token id from a fresh connection (?from=) with no duplicate; a resume after the end is 204; a bad id is 400', { timeout: 30_000 }, async () => {
    const base = await start();
    const hold = fake!.holdAfter(5);
    await spawnAgent(base, 't4', ['one']);
    await hold.reached;

    // A new client mid-call: the current view, then the call's text so far.
    const first = sseReader(await fetch(`${base}/agents/t4/stream`));
    const had = await readEvents(first, 6);
    expect(had.map((e) => e.event)).toEqual(['snapshot', 'token', 'token', 'token', 'token', 'token']);
    await first.cancel();
    // Back from the second token: the three after it, no snapshot (it had that checkpoint's view).
    const again = sseReader(await fetch(`${base}/agents/t4/stream?from=${encodeURIComponent(had[2]!.id)}`));
    const rest = await readEvents(again, 3);
    expect(rest.map((e) => [e.event, e.data.index])).toEqual([['token', 2], ['token', 3], ['token', 4]]);
    expect([...had.slice(1, 3), ...rest].map((e) => e.data.delta).join('')).toBe(ANSWER.split(' ').slice(0, 5).map((w) => `${w} `).join(''));
    hold.release();
    // The same connection goes on live: the rest of the answer.
    const live = await readEvents(again, ANSWER.split(' ').length - 5);
    expect([...had.slice(1, 3), ...rest, ...live].map((e) => e.data.delta).join('')).toBe(ANSWER);
    await again.cancel();

    expect(await committedAnswer('t4', 1)).toBe(ANSWER);
    await vi.waitFor(async () => expect((await runtime!.view('t4')).state).toBe('idle'));
    await fetch(`${base}/agents/t4/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'finish' }) });
    await vi.waitFor(async () => expect((await runtime!.view('t4')).status).toBe('done'));
    const ended = sseEvents(await (await fetch(`${base}/agents/t4/stream`)).text());
    expect(ended.map((e) => [e.event, e.data.status])).toEqual([['snapshot', 'done']]);
    const afterEnd = await fetch(`${base}/agents/t4/stream`, { headers: { 'last-event-id': ended[0]!.id } });
    expect(afterEnd.status).toBe(204);

    for (const bad of ['x', '1.2', '-1', '1.1.0.UPPER.3']) {
      const res = await fetch(`${base}/agents/t4/stream`, { headers: { 'last-event-id': bad } });
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_event_id');
    }
  });
});

/** The next `n` events that are not snapshots of the same call's progress, parsed. */
async function readEvents(reader: ReturnType<typeof sseReader>, n: number): Promise<Received[]> {
  const out: Received[] = [];
  while (out.length < n) {
    const event = await reader.next();
    if (!event) throw new Error(`the stream ended after ${out.length} events`);
    out.push({ event: event.event, id: event.id ?? '', data: JSON.parse(event.data) });
  }
  return out;
}

describe('a slow stream client', () => {
  it('is dropped with a `dropped` event once too much waits for it, instead of being buffered', { timeout: 30_000 }, async () => {
    fake = await startFakeOpenAI({ answer: () => 'word '.repeat(400) });
    ({ runtime } = await startRuntime({ llm: createOpenAiClient({ apiKey: 'test', baseURL: fake.url }) }));
    await runtime.spawn('agent', { id: 'slow' });
    const app = new Hono<AppEnv>();
    app.use(async (c, next) => {
      c.set('log', silentLogger);
      await next();
    });
    app.get('/s', (c) => streamAgentEvents(c, runtime!, 'slow', { maxPendingBytes: 2_000 }));
    const res = await app.request('/s');
    const reader = sseReader(res);
    expect((await reader.next())?.event).toBe('snapshot');
    // Nothing is read while the 400 tokens come: they wait, then overflow.
    await runtime.send('slow', { type: 'task.add', task: 'long' });
    await committedAnswer('slow', 1);
    const seen: string[] = [];
    for (let event = await reader.next(); event; event = await reader.next()) seen.push(event.event);
    expect(seen.at(-1)).toBe('dropped');
    expect(seen.filter((e) => e === 'token').length).toBeLessThan(400);
  });
});

function sseEvents(text: string): Received[] {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data:'))
    .map((block) => {
      const field = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
      return { event: field('event'), id: field('id'), data: JSON.parse(field('data')) };
    });
}
