// A real `durable-agents serve` process on 127.0.0.1, driven with fetch: the fake OpenAI server
// answers the LLM calls, the webhook sink records the side effects, and the process is killed
// with SIGKILL mid-run and restarted on the same SQLite file.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';
import { api, AUTH, killAllServers, parseLine, startServer as startProcess, waitForAgent, type ServerProcess } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';
import { sseReader } from '../http/harness.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

let fake: FakeOpenAI | undefined;
let sink: WebhookSink | undefined;
let dir: string | undefined;

afterEach(async () => {
  await killAllServers();
  await fake?.close();
  await sink?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  fake = sink = dir = undefined;
});

/** A `serve` process on the SQLite file `db`, calling the fake OpenAI server. */
function startServer(db: string, extra: string[] = []): Promise<ServerProcess> {
  return startProcess({ store: ['--db', db], llmUrl: fake!.url, extra });
}

function setUp() {
  dir = tempDir('durable-agents-e2e-');
  return path.join(dir, 'agents.db');
}

describe('durable-agents serve (a real process)', () => {
  it('runs tasks through the LLM and the webhook, streams every transition, and exits 0 on SIGTERM', { timeout: 90_000 }, async () => {
    const db = setUp();
    fake = await startFakeOpenAI({ latencyMs: 20 });
    sink = await startWebhookSink();
    const server = await startServer(db);

    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/agents`)).status).toBe(401);
    const spawned = await api(server, 'POST', '/agents', { machine: 'agent', id: 'e2e-1', input: { webhook: sink.url } });
    expect(spawned.status).toBe(201);

    const res = await fetch(`${server.url}/agents/e2e-1/stream`, { headers: AUTH });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const stream = sseReader(res);
    const views: AgentView[] = [];
    const readUntil = async (stop: (v: AgentView) => boolean) => {
      for (;;) {
        const event = await stream.next();
        if (!event) throw new Error('the stream ended early');
        if (event.event === 'token') continue; // the LLM call's text (test/http/stream-tokens.test.ts)
        expect(event.event).toBe('snapshot');
        const view = JSON.parse(event.data) as AgentView;
        views.push(view);
        if (stop(view)) return view;
      }
    };
    await readUntil((v) => v.state === 'idle');

    for (const [n, task] of ['alpha', 'beta'].entries()) {
      const sent = await api(server, 'POST', '/agents/e2e-1/events', { type: 'task.add', task }, { 'idempotency-key': `add-${task}` });
      expect(sent).toEqual({ status: 202, body: { seq: n + 1 } });
    }
    await readUntil((v) => v.state === 'idle' && v.progress === 2);
    expect(await api(server, 'POST', '/agents/e2e-1/events', { type: 'finish' })).toMatchObject({ status: 202 });
    await readUntil((v) => v.status === 'done');
    expect(await stream.next()).toBeUndefined();

    const topStates = new Set(views.map((v) => (typeof v.state === 'string' ? v.state : Object.keys(v.state as object)[0])));
    expect([...topStates]).toEqual(expect.arrayContaining(['idle', 'callingLLM', 'persisted', 'sideEffect', 'done']));
    expect(views.map((v) => v.progress)).toEqual([...views.map((v) => v.progress)].sort((a, b) => a - b));

    expect([...sink.byKey().keys()].sort()).toEqual(['e2e-1:1', 'e2e-1:2']);
    expect(sink.deliveries.map((d) => d.body)).toEqual([
      { agentId: 'e2e-1', seq: 1, task: 'alpha', response: 'answer: alpha' },
      { agentId: 'e2e-1', seq: 2, task: 'beta', response: 'answer: beta' },
    ]);
    expect(fake.callsFor('alpha')).toHaveLength(1);
    expect(fake.calls[0]?.authorization).toBe('Bearer test');

    const checkpoints = await api(server, 'GET', '/agents/e2e-1/checkpoints');
    expect(checkpoints.body.items.at(-1)).toMatchObject({ state: 'done', progress: 2 });

    server.child.kill('SIGTERM');
    expect(await server.exit).toEqual({ code: 0, signal: null });
    expect(server.output.some((line) => parseLine(line)?.msg === 'stopped')).toBe(true);
  });

  it('completes every acknowledged task after SIGKILLs mid-run, with one webhook key per task and one body per key', { timeout: 120_000 }, async () => {
    const db = setUp();
    fake = await startFakeOpenAI({ latencyMs: 60 });
    sink = await startWebhookSink();
    let server = await startServer(db);

    const tasks = Array.from({ length: 6 }, (_, i) => `crash-1 task ${i + 1}`);
    expect((await api(server, 'POST', '/agents', { machine: 'agent', id: 'crash-1', input: { tasks, webhook: sink.url } })).status).toBe(201);
    const others = ['crash-2 task 1', 'crash-2 task 2', 'crash-2 task 3'];
    expect((await api(server, 'POST', '/agents', { machine: 'agent', id: 'crash-2', input: { tasks: others, webhook: sink.url } })).status).toBe(201);
    const added = ['crash-1 task 7', 'crash-1 task 8'];
    for (const task of added) {
      expect((await api(server, 'POST', '/agents/crash-1/events', { type: 'task.add', task }, { 'idempotency-key': task })).status).toBe(202);
    }

    // Two crashes at different points of the run.
    const kills: number[] = [];
    for (const progress of [2, 5]) {
      const view = await waitForAgent(server, 'crash-1', (v) => v.progress >= progress);
      server.child.kill('SIGKILL');
      expect(view.progress, 'killed mid-run').toBeLessThan(8);
      expect((await server.exit).signal).toBe('SIGKILL');
      kills.push(Date.now());
      server = await startServer(db);
    }

    // The acknowledged events survived, and their Idempotency-Keys with them.
    const replay = await api(server, 'POST', '/agents/crash-1/events', { type: 'task.add', task: added[0] }, { 'idempotency-key': added[0]! });
    expect(replay).toEqual({ status: 202, body: { seq: 1 } });

    await waitForAgent(server, 'crash-1', (v) => v.state === 'idle' && v.progress === 8);
    await waitForAgent(server, 'crash-2', (v) => v.state === 'idle' && v.progress === 3);

    // Guarantee 3: the distinct keys delivered are exactly the tasks processed; every delivery of a key carries the same body.
    const expected = [...tasks, ...added].map((task, i) => ({ key: `crash-1:${i + 1}`, task }));
    expected.push(...others.map((task, i) => ({ key: `crash-2:${i + 1}`, task })));
    const byKey = sink.byKey();
    expect([...byKey.keys()].sort()).toEqual(expected.map((e) => e.key).sort());
    for (const { key, task } of expected) {
      const deliveries = byKey.get(key)!;
      expect(new Set(deliveries.map((d) => d.rawBody)).size, key).toBe(1);
      expect(deliveries[0]!.body).toMatchObject({ task, response: `answer: ${task}` });
    }

    // Guarantee 2: an answer in a committed checkpoint is never asked for again.
    for (const id of ['crash-1', 'crash-2']) {
      const checkpoints = (await api(server, 'GET', `/agents/${id}/checkpoints`)).body.items as { seq: number; state: unknown; createdAt: string }[];
      for (const cp of checkpoints.filter((c) => c.state === 'persisted')) {
        const full = (await api(server, 'GET', `/agents/${id}/checkpoints/${cp.seq}`)).body;
        const task = full.snapshot.context.current.task as string;
        const persistedAt = Date.parse(cp.createdAt);
        const later = fake.callsFor(task).filter((call) => call.at > persistedAt + 5);
        expect(later, `${task} was called again after its answer was committed`).toEqual([]);
      }
    }
    for (const task of [...tasks, ...added, ...others]) {
      expect(fake.callsFor(task).length, task).toBeGreaterThanOrEqual(1);
      expect(fake.callsFor(task).length, task).toBeLessThanOrEqual(1 + kills.length);
    }

    expect((await api(server, 'POST', '/agents/crash-1/events', { type: 'finish' })).status).toBe(202);
    await waitForAgent(server, 'crash-1', (v) => v.status === 'done');
    server.child.kill('SIGINT');
    expect(await server.exit).toEqual({ code: 0, signal: null });
  });
});
