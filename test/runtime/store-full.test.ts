// When the disk fills (issue 23): a real SQLite file made to refuse growth (`max_page_count`, the
// store's own connection: the next page it needs fails with a real SQLITE_FULL), the official
// `openai` client against the fake Chat Completions server, webhooks to the sink, requests through
// the HTTP app. While full: requests get 503 store_unavailable with Retry-After, /readyz says
// disk_full, and the agents that were mid-task keep their LLM answers (no call asked again, no
// webhook sent: each waits for its commit). Then the limit is lifted, with no restart: everything
// acknowledged completes, each task with one LLM call and one delivery.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createServer } from '../../src/http/app.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { AgentView } from '../../src/runtime/views.js';
import { runtimesClosedAfterEach, type TestRuntime } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

/** Each answer needs a few new pages (4 KiB each) wherever it lands: a full database cannot take it. */
const ANSWER_PADDING = 'x'.repeat(16_000);
const TASKS = { a: 'task a', b: 'task b', c: 'task c' } as const;
/** Acknowledged (202) before the disk fills, queued behind agent a's first task. */
const LATER_TASK = 'task a, later';

let fake: FakeOpenAI;
let sink: WebhookSink;

afterEach(async () => {
  await Promise.all([fake?.close(), sink?.close()]);
});
// After the hook above, so it runs first: the runtime closes before the servers it talks to.
const startRuntime = runtimesClosedAfterEach();

beforeEach(async () => {
  fake = await startFakeOpenAI({ answer: (task) => `answer to ${task} ${ANSWER_PADDING}` });
  sink = await startWebhookSink();
});

async function startService(): Promise<{ t: TestRuntime; app: ReturnType<typeof createServer> }> {
  const t = await startRuntime({
    llm: createOpenAiClient({ baseURL: fake.url, apiKey: 'test' }),
    // A held stream must not time out: the test holds it as long as it needs.
    defaults: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 60_000 },
    // Short retries so that a few of them fail while the disk is full; the jitter pinned.
    storeRetry: { baseDelayMs: 20, maxDelayMs: 200, seed: 23 },
    // An agent whose commit fails for another reason reloads after this: short, so that one reloaded
    // (and asking its LLM again) for a full disk would show well within the time the disk is full.
    reloadDelayMs: 10,
    logs: 'captured',
  });
  return { t, app: createServer({ runtime: t.runtime, logger: t.logger }) };
}

function post(app: ReturnType<typeof createServer>, url: string, body: unknown) {
  return app.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function viewOf(app: ReturnType<typeof createServer>, id: string): Promise<AgentView> {
  return (await (await app.request(`/agents/${id}`)).json()) as AgentView;
}

/** The pages a database can take before it must grow the file: its free list. */
function freeBytes(t: TestRuntime): number {
  const { db } = t.store;
  return (db.pragma('freelist_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
}

describe('a store whose disk is full', () => {
  it('holds the answers of the agents mid-task, answers requests 503 store_unavailable, and completes every acknowledged task once it has room', async () => {
    const { t, app } = await startService();
    // Each agent's LLM call pauses after its first delta: they are mid-task when the disk fills.
    const holds = Object.keys(TASKS).map(() => fake.holdAfter(1));
    for (const [id, task] of Object.entries(TASKS)) {
      const res = await post(app, '/agents', { machine: 'agent', id, input: { tasks: [task], webhook: sink.url } });
      expect(res.status).toBe(201);
    }
    await Promise.all(holds.map((h) => h.reached));
    const later = await post(app, '/agents/a/events', { type: 'task.add', task: LATER_TASK });
    expect(later.status).toBe(202);

    // Full: the file may not grow by one page, and what is free in it cannot take an answer.
    const pages = t.store.db.pragma('page_count', { simple: true }) as number;
    t.store.db.pragma(`max_page_count = ${pages}`);
    expect(freeBytes(t)).toBeLessThan(ANSWER_PADDING.length);
    for (const hold of holds) hold.release();

    // The answers are in; their checkpoints are refused, held, and retried a few times (backoff).
    await vi.waitFor(
      () => {
        const readiness = t.runtime.storeReadiness();
        expect(readiness).toMatchObject({ ready: false, reason: 'disk_full' });
        expect(readiness.ready === false && readiness.attempts).toBeGreaterThanOrEqual(6);
      },
      { timeout: 15_000, interval: 20 },
    );
    expect(fake.calls.filter((c) => c.outcome === 'ok')).toHaveLength(3);

    const spawned = await post(app, '/agents', { machine: 'agent', id: 'd', input: { tasks: ['task d'] } });
    expect(spawned.status).toBe(503);
    expect(Number(spawned.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await spawned.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'disk_full' } });
    const sent = await post(app, '/agents/b/events', { type: 'task.add', task: 'task b, refused' });
    expect(sent.status).toBe(503);
    expect(sent.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await sent.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'disk_full' } });
    const ready = await app.request('/readyz');
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ ok: false, reason: 'disk_full' });
    expect((await app.request('/healthz')).status).toBe(200);
    const metrics = await (await app.request('/metrics')).text();
    expect(metrics).toMatch(/^durable_agents_store_ready 0$/m);
    expect(Number(/^durable_agents_held_writes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    // Views show what is committed: each agent still calling its LLM, as its last checkpoint says.
    for (const id of Object.keys(TASKS)) expect((await viewOf(app, id)).state).toEqual({ callingLLM: 'requesting' });

    // While full: one LLM call per task (none asked again), no webhook (each waits for its answer's commit).
    const whileFull = perTask();
    expect(whileFull).toEqual({
      [TASKS.a]: { llmCalls: 1, deliveries: 0 },
      [TASKS.b]: { llmCalls: 1, deliveries: 0 },
      [TASKS.c]: { llmCalls: 1, deliveries: 0 },
      [LATER_TASK]: { llmCalls: 0, deliveries: 0 },
    });
    console.log('while full, per task:', JSON.stringify(whileFull));

    // Room again, no restart: the held writes commit, the agents go on from what they kept.
    t.store.db.pragma('max_page_count = 1073741823');
    for (const [id, tasks] of [['a', 2], ['b', 1], ['c', 1]] as const) {
      await vi.waitFor(
        async () => {
          const view = await viewOf(app, id);
          expect({ state: view.state, progress: view.progress }).toEqual({ state: 'idle', progress: tasks });
        },
        { timeout: 15_000, interval: 20 },
      );
    }
    expect(perTask()).toEqual({
      [TASKS.a]: { llmCalls: 1, deliveries: 1 },
      [TASKS.b]: { llmCalls: 1, deliveries: 1 },
      [TASKS.c]: { llmCalls: 1, deliveries: 1 },
      [LATER_TASK]: { llmCalls: 1, deliveries: 1 },
    });
    expect([...sink.byKey().entries()].map(([key, d]) => [key, d.length]).sort()).toEqual([
      ['a:1', 1],
      ['a:2', 1],
      ['b:1', 1],
      ['c:1', 1],
    ]);
    expect(await (await app.request('/readyz')).json()).toEqual({ ok: true });
    expect((await post(app, '/agents', { machine: 'agent', id: 'd', input: {} })).status).toBe(201);
    // Said once each way, not once per retry.
    const said = (msg: string) => t.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(msg));
    expect(said('the store takes no writes')).toHaveLength(1);
    expect(said('the store takes no writes')[0]).toMatchObject({ level: 50, reason: 'disk_full' });
    expect(said('the store takes writes again')).toHaveLength(1);
    // No agent was reloaded (that is what asked the LLM again before).
    expect(said('checkpoint commit failed')).toEqual([]);
  });

  it('a spawn whose own row does not fit gets 503 disk_full, and the next one after the backoff goes through once there is room', async () => {
    const { t, app } = await startService();
    // Full to the last page, with the free list used up: the next agent row cannot fit.
    t.store.db.pragma(`max_page_count = ${t.store.db.pragma('page_count', { simple: true }) as number}`);
    const big = { tasks: [], system: 'y'.repeat(64_000) };
    const refused = await post(app, '/agents', { machine: 'agent', id: 'big', input: big });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'disk_full' } });
    expect((await app.request('/agents/big')).status).toBe(404); // nothing of it was stored
    expect(await (await app.request('/readyz')).json()).toEqual({ ok: false, reason: 'disk_full' });

    t.store.db.pragma('max_page_count = 1073741823');
    // No held write to retry: the probe (a write tried and undone) finds room once the backoff passes.
    await vi.waitFor(async () => expect(await (await app.request('/readyz')).json()).toEqual({ ok: true }), { timeout: 10_000, interval: 20 });
    expect((await post(app, '/agents', { machine: 'agent', id: 'big', input: big })).status).toBe(201);
  });
});

describe('closing while writes are held', () => {
  it('does not wait for the store: what was held is given up, and a restart goes on from the last commit', async () => {
    const { t } = await startService();
    const hold = fake.holdAfter(1);
    await t.runtime.spawn('agent', { id: 'a', input: { tasks: [TASKS.a], webhook: sink.url } });
    await hold.reached;
    t.store.db.pragma(`max_page_count = ${t.store.db.pragma('page_count', { simple: true }) as number}`);
    hold.release();
    await vi.waitFor(() => expect(t.runtime.storeReadiness().heldWrites).toBeGreaterThan(0), { timeout: 15_000, interval: 10 });
    await t.runtime.close();
    expect(sink.deliveries).toEqual([]);

    // The limit was the closed connection's: the file takes writes again, as a disk with room would.
    const restarted = await startRuntime({ file: t.file, llm: createOpenAiClient({ baseURL: fake.url, apiKey: 'test' }) });
    await vi.waitFor(async () => expect((await restarted.runtime.view('a')).progress).toBe(1), { timeout: 15_000, interval: 20 });
    // Memory is all that kept the answer: asked again after the restart, as after any crash; delivered once.
    expect(perTask()[TASKS.a]).toEqual({ llmCalls: 2, deliveries: 1 });
  });
});

/** LLM calls answered and webhook deliveries, by task. */
function perTask(): Record<string, { llmCalls: number; deliveries: number }> {
  const tasks = [...Object.values(TASKS), LATER_TASK];
  return Object.fromEntries(
    tasks.map((task) => [
      task,
      {
        llmCalls: fake.calls.filter((c) => c.userContent === task && c.outcome === 'ok').length,
        deliveries: sink.deliveries.filter((d) => (d.body as { task?: string }).task === task).length,
      },
    ]),
  );
}
