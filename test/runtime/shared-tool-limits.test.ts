// A tool's `concurrency` on a store many processes share (Postgres): the store-wide slots alone
// (taken, refused at the limit, renewed, freed when a dead holder's hold runs out), and two
// runtimes, each with its own line as two processes have, whose agents call one limited HTTP tool
// through the real `openai` client and a real tool server: together they never pass the limit.
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { ToolLimits } from '../../src/core/tool-limits.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl, sql } from '../helpers/postgres.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedCall } from '../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../support/tool-server.js';

const stores: PostgresStore[] = [];
let fake: FakeOpenAI | undefined;
let tools: ToolServer | undefined;
const startRuntime = runtimesClosedAfterEach();
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  await fake?.close();
  await tools?.close();
  fake = tools = undefined;
});

async function open(schema: string): Promise<PostgresStore> {
  const store = await openPostgresStore(postgresUrl, { schema });
  stores.push(store);
  return store;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the slots of a shared store', () => {
  it('gives at most `limit` of a pool at once, pools apart; a renewed hold lasts, a lapsed one is free again', async () => {
    const schema = freshSchema();
    const [a, b] = [await open(schema), await open(schema)];
    const slotsA = a.toolSlots!;
    const slotsB = b.toolSlots!;
    expect(await slotsA.tryTake('http x', 2, 60_000)).toBe(0);
    expect(await slotsB.tryTake('http x', 2, 60_000)).toBe(1);
    expect(await slotsB.tryTake('http x', 2, 60_000)).toBeUndefined();
    // Another pool has its own slots.
    expect(await slotsB.tryTake('mcp files', 1, 60_000)).toBe(0);
    // Only its holder gives a slot back.
    await slotsB.give('http x', 0);
    expect(await slotsB.tryTake('http x', 2, 60_000)).toBeUndefined();
    await slotsA.give('http x', 0);
    expect(await slotsB.tryTake('http x', 2, 200)).toBe(0);

    // A holder that dies (never gives back) frees its slot once the hold runs out, unless renewed.
    expect(await slotsA.tryTake('code lookup', 1, 150)).toBe(0);
    await slotsA.renew('code lookup', 0, 60_000);
    await sleep(250);
    expect(await slotsB.tryTake('code lookup', 1, 60_000)).toBeUndefined();
    expect(await slotsA.tryTake('code slow', 1, 100)).toBe(0);
    await sleep(200);
    expect(await slotsB.tryTake('code slow', 1, 60_000)).toBe(0);
  });

  it('are unlogged, and a table emptied (a database that crashed empties them) fills again at the next take, LLM slots too', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    const persistence = await sql<{ relname: string; relpersistence: string }>(
      `select relname, relpersistence from pg_class where relnamespace = $1::regnamespace and relname in ('llm_slots', 'tool_slots') order by relname`,
      [schema],
    );
    expect(persistence).toEqual([
      { relname: 'llm_slots', relpersistence: 'u' },
      { relname: 'tool_slots', relpersistence: 'u' },
    ]);
    expect(await store.toolSlots!.tryTake('http x', 2, 60_000)).toBe(0);
    expect(await store.llmSlots!.tryTake(2, 60_000)).toBe(0);
    await sql(`truncate ${schema}.tool_slots, ${schema}.llm_slots`);
    expect(await store.toolSlots!.tryTake('http x', 2, 60_000)).toBe(0);
    expect(await store.toolSlots!.tryTake('http x', 2, 60_000)).toBe(1);
    expect(await store.toolSlots!.tryTake('http x', 2, 60_000)).toBeUndefined();
    expect(await store.llmSlots!.tryTake(2, 60_000)).toBe(0);
  });
});

describe("a tool's concurrency across processes sharing one database", () => {
  it('keeps the calls of two runtimes within the limit together, and frees every slot after', { timeout: 60_000 }, async () => {
    fake = await startFakeOpenAI();
    tools = await startToolServer();
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    tools.respond('limited', async () => {
      calls++;
      inFlight++;
      most = Math.max(most, inFlight);
      await sleep(60);
      inFlight--;
      return { kind: 'json', body: { ok: true } };
    });
    // Each task's first answer calls the tool once; the second answers in words.
    fake.setReplyPolicy((call: RecordedCall) =>
      call.rawMessages.at(-1)?.role === 'tool' ? { content: `done: ${call.userContent}` } : { toolCalls: [{ name: 'limited', arguments: { q: call.userContent } }] },
    );
    const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
    const schema = freshSchema();
    // Two processes: each its store (its own process id) and its own line for the tools.
    const runtimes = await Promise.all(
      [0, 1].map(async () => {
        const store = await open(schema);
        const machines = [agentDefinition({ llm, defaults: { baseDelayMs: 1, maxAttempts: 3 } })];
        return (await startRuntime({ store, machines, toolLimits: new ToolLimits() })).runtime;
      }),
    );
    const ids = Array.from({ length: 12 }, (_, i) => `t${i}`);
    for (const [i, id] of ids.entries()) {
      await runtimes[i % 2]!.spawn('agent', { id, input: { tasks: [`${id} work`], tools: [{ name: 'limited', url: tools.url('limited'), concurrency: 2 }] } });
    }
    for (const [i, id] of ids.entries()) await waitForView(runtimes[i % 2]!, id, (v) => v.state === 'idle' && v.progress === 1, 30_000);
    expect(calls).toBe(ids.length);
    // Each process alone would run 2 at once; together they ran 2, never more.
    expect(most).toBe(2);
    await expect.poll(async () => Number((await sql<{ held: string }>(`select count(*) as held from ${schema}.tool_slots where holder is not null`))[0]!.held)).toBe(0);
  });
});
