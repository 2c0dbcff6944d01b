// The runtime's LLM gate with real parts: agents on a real SQLite file, the real `openai` client,
// and the fake OpenAI server with a fixed capacity (429 with Retry-After beyond it).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl, sql } from '../helpers/postgres.js';
import { startRuntime, waitForView } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

let fake: FakeOpenAI | undefined;
let runtime: Runtime | undefined;

afterEach(async () => {
  await runtime?.close();
  await fake?.close();
  runtime = undefined;
  fake = undefined;
});

const AGENTS = 24;

async function spawnAll(rt: Runtime): Promise<string[]> {
  const ids = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
  for (const id of ids) await rt.spawn('agent', { id, input: { tasks: [`task of ${id}`] } });
  return ids;
}

async function everyTaskDone(rt: Runtime, ids: string[]): Promise<void> {
  for (const id of ids) await waitForView(rt, id, (v) => v.progress === 1 && v.state === 'idle', 30_000);
}

describe('the LLM gate', () => {
  it('keeps calls in flight within its concurrency, for all agents together', async () => {
    fake = await startFakeOpenAI({ latencyMs: 30 });
    // The first three calls pause mid-answer until all three are in flight: the limit is reached
    // whatever the machine's load (agents are spawned one by one), and the others must wait.
    const holds = [fake.holdAfter(1), fake.holdAfter(1), fake.holdAfter(1)];
    const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
    ({ runtime } = await startRuntime({ llm, llmLimits: { concurrency: 3 } }));
    const ids = await spawnAll(runtime);
    await Promise.all(holds.map((h) => h.reached));
    expect(runtime.llmGate?.queueDepth).toBe(AGENTS - 3);
    for (const hold of holds) hold.release();
    await everyTaskDone(runtime, ids);
    // 24 agents asking at once: the limit is reached, never passed.
    expect(fake.load.peak).toBe(3);
    expect(runtime.llmGate?.peakInFlight).toBe(3);
  });

  it("finishes every task against a provider that refuses calls beyond its capacity, and the 429s do not use up an agent's attempts", async () => {
    fake = await startFakeOpenAI({ latencyMs: 40, capacity: { concurrent: 4, retryAfter: '0.2' } });
    // The first four calls pause mid-answer until the provider has refused one: the capacity is
    // full whatever the machine's load (agents are spawned one by one, and on a slow machine each
    // call could end before the next starts), so the default gate's 16 meets a refusal.
    const holds = [fake.holdAfter(1), fake.holdAfter(1), fake.holdAfter(1), fake.holdAfter(1)];
    const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
    // One attempt: were a refusal counted, its agent would park in failed.
    ({ runtime } = await startRuntime({ llm, defaults: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 50 } }));
    const ids = await spawnAll(runtime);
    await Promise.all(holds.map((h) => h.reached));
    await vi.waitFor(() => expect(fake!.load.refused).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
    for (const hold of holds) hold.release();
    await everyTaskDone(runtime, ids);
    const answered = fake.calls.filter((c) => c.outcome === 'ok').length;
    expect(answered).toBe(AGENTS);
    expect(fake.load.peak).toBeLessThanOrEqual(4);
    // The default gate starts at 16 in flight: the calls past the provider's 4 are refused, then the
    // limit halves (once per wave: on a loaded machine one halving may be all it sees), and the
    // refusals stop being most of the calls. It climbs back by 1/limit per answer: from 8, the 24
    // answers take it below 11, never back to 16 (seen at 10 under a parallel run).
    expect(fake.load.refused).toBeGreaterThan(0);
    expect(fake.load.refused).toBeLessThan(answered);
    console.log(`llm-gate: ${fake.load.refused} refused, limit ${runtime.llmGate!.limit}`);
    expect(runtime.llmGate!.limit).toBeLessThanOrEqual(11);
    // The refusals are in the metrics, as the provider's doing, not the agents' failures.
    const metrics = createMetrics();
    metrics.observeRuntime(runtime);
    const text = await metrics.render();
    expect(text).toContain(`durable_agents_llm_throttled_total ${fake.load.refused}`);
    expect(text).toMatch(/durable_agents_llm_queue_depth 0/);
    expect(text).toContain(`durable_agents_llm_concurrency_limit ${runtime.llmGate!.limit}\n`);
  });

  it("shows an agent whose call waits for capacity as waiting, not failing", async () => {
    fake = await startFakeOpenAI();
    const hold = fake.holdAfter(1);
    const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
    ({ runtime } = await startRuntime({ llm, llmLimits: { concurrency: 1 } }));
    await runtime.spawn('agent', { id: 'first', input: { tasks: ['first task'] } });
    await hold.reached;
    await runtime.spawn('agent', { id: 'second', input: { tasks: ['second task'] } });
    const waiting = await waitForView(runtime, 'second', (v) => v.waiting === 'llm_capacity');
    expect(waiting.status).toBe('active');
    expect((await runtime.view('first')).waiting).toBeUndefined();
    hold.release();
    const done = await waitForView(runtime, 'second', (v) => v.progress === 1);
    expect(done.waiting).toBeUndefined();
  });
});

describe('the LLM limit on a store many processes share (Postgres)', () => {
  it('keeps the calls of two runtimes on one database within one limit together', async () => {
    fake = await startFakeOpenAI({ latencyMs: 40 });
    // The first three calls pause until all three are in flight, from either runtime: the shared
    // limit is reached whatever the machine's load.
    const holds = [fake.holdAfter(1), fake.holdAfter(1), fake.holdAfter(1)];
    const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
    const schema = freshSchema();
    const stores = [await openPostgresStore(postgresUrl, { schema }), await openPostgresStore(postgresUrl, { schema })];
    // Two processes' runtimes (each store is a process: its own id and lease), each allowed 3.
    const runtimes = await Promise.all(
      stores.map(async (store) => (await startRuntime({ store, llm, llmLimits: { concurrency: 3 } })).runtime),
    );
    try {
      const ids: string[] = [];
      for (let i = 0; i < 16; i++) {
        const id = `shared-${i}`;
        // Alternating: each runtime runs the agents it spawned (it holds their leases).
        await runtimes[i % 2]!.spawn('agent', { id, input: { tasks: [`task of ${id}`] } });
        ids.push(id);
      }
      await Promise.all(holds.map((h) => h.reached));
      for (const hold of holds) hold.release();
      for (const [i, id] of ids.entries()) await waitForView(runtimes[i % 2]!, id, (v) => v.progress === 1 && v.state === 'idle', 30_000);
      // Together they reached 3 and never passed it; each alone never passed its 3 either.
      expect(fake.load.peak).toBe(3);
      for (const r of runtimes) expect(r.llmGate!.peakInFlight).toBeLessThanOrEqual(3);
      const rows = await sql<{ held: string }>(`select count(*) as held from ${schema}.llm_slots where holder is not null`);
      expect(Number(rows[0]!.held)).toBe(0);
    } finally {
      for (const r of runtimes) await r.close();
    }
  });
});
