// (Long: one seeded comparison of three stores, write for write, with its generators beside it.)
/**
 * Every store runs the same write plan (src/store/write-plan.ts) and writes it its own way: the
 * Postgres store with a few multi-row statements (apply-writes.ts), the SQLite store one row at a
 * time, the memory store in its maps. Whatever a batch mixes (kinds, agents, several writes for one
 * agent, writes for agents that have ended), each write's result and everything that can be read
 * afterwards must be the same in all three; SQLite is the reference. Where Postgres refuses more
 * (fencing: another process's agent), the rest of the batch must be what SQLite gives without
 * those writes.
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConflictError, FencedError, NotFoundError } from '../../src/core/errors.js';
import { inboxChannel } from '../../src/store/postgres/inbox-listener.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AgentStatus, Store, Write, WriteResult } from '../../src/store/store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import { checkpoint } from './store-contract.js';

const opened: Store[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function openPostgres(schema = freshSchema(), processId?: string): Promise<PostgresStore> {
  const store = await openPostgresStore(postgresUrl, { schema, ...(processId ? { processId } : {}) });
  opened.push(store);
  return store;
}

async function openSqlite(): Promise<Store> {
  const store = await openSqliteStore(':memory:');
  opened.push(store);
  return store;
}

const at = (n: number) => new Date(Date.UTC(2026, 10, 30, 5, 0, 0, 0) + n).toISOString();
const newAgent = (id: string) => ({ id, machine: 'agent', machineVersion: '1', input: { id }, createdAt: at(0) });

const event = (agentId: string, idempotencyKey: string | null = null, n = 0): Write => ({
  kind: 'event', agentId, event: { type: 'task.add', n }, idempotencyKey, at: at(n),
});
const consume = (agentId: string, inboxPosition: number): Write => ({ kind: 'consume', agentId, inboxPosition, at: at(inboxPosition + 500) });
const effect = (agentId: string, idempotencyKey: string, seq = 1): Write => ({
  kind: 'effect', agentId, idempotencyKey, seq, result: { from: agentId, seq }, createdAt: at(seq + 700),
});
const status = (agentId: string, s: AgentStatus, error: { name: string; message: string } | null = null): Write => ({
  kind: 'status', agentId, status: s, error, at: at(900),
});

/** A result with its refusal as comparable text (error objects differ between runs, not their class and message). */
function shown(result: WriteResult): unknown {
  return result && 'refused' in result ? { refused: `${result.refused.name}: ${result.refused.message}` } : result;
}

/** Commits, and says what came back: the results, or the error the whole batch failed with. */
async function outcome(store: Store, writes: Write[]): Promise<unknown> {
  try {
    return (await store.commit(writes)).map(shown);
  } catch (err) {
    return { threw: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

/** Everything the Store interface lets one read about these agents and effect keys. */
async function readAll(store: Store, ids: readonly string[], effectKeys: readonly string[]): Promise<unknown> {
  const agents = [];
  for (const id of ids) {
    const checkpoints = await store.listCheckpoints(id);
    agents.push({
      agent: await store.getAgent(id),
      events: await store.eventsAfter(id, 0),
      checkpoints: await Promise.all(checkpoints.map((c) => store.getCheckpoint(id, c.seq))),
      actions: await store.listActions(id),
      restorable: await store.loadRestorable(id),
    });
  }
  const effects = await Promise.all(effectKeys.map((key) => store.findEffect(key)));
  const working = (await store.loadActiveAgents({ skipResting: true })).map((r) => r.agent.id);
  return { agents, effects, working, stats: await store.stats() };
}

/** The same agents in a SQLite, a memory and a Postgres store (which then owns them). */
async function threeStores(ids: readonly string[]): Promise<{ sqlite: Store; memory: Store; postgres: PostgresStore }> {
  const sqlite = await openSqlite();
  const memory = new MemoryStore();
  const postgres = await openPostgres();
  for (const id of ids) {
    for (const store of [sqlite, memory, postgres]) await store.createAgent(newAgent(id));
  }
  return { sqlite, memory, postgres };
}

/** Commits the batch to every store: each must give what SQLite gives. */
async function sameOutcome(stores: { sqlite: Store; memory: Store; postgres: Store }, batch: Write[], label?: string): Promise<unknown> {
  const expected = await outcome(stores.sqlite, batch);
  expect(await outcome(stores.memory, batch), `memory, ${label}`).toEqual(expected);
  expect(await outcome(stores.postgres, batch), `postgres, ${label}`).toEqual(expected);
  return expected;
}

/** Everything readable is the same in every store. */
async function sameRows(stores: { sqlite: Store; memory: Store; postgres: Store }, ids: readonly string[], effectKeys: readonly string[], label?: string) {
  const expected = await readAll(stores.sqlite, ids, effectKeys);
  expect(await readAll(stores.memory, ids, effectKeys), `memory, ${label}`).toEqual(expected);
  expect(await readAll(stores.postgres, ids, effectKeys), `postgres, ${label}`).toEqual(expected);
}

/** Mulberry32: the same batches at every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Random batches over the agents, mixing every kind: several checkpoints, consumes and events for
 * one agent, keyed events repeated within a batch and across batches, events for unknown agents,
 * effects under one key, status changes, and now and then a write for an unknown agent (the whole
 * batch fails). Agents end (done, error, stopped) for good: most writes go to a few active ones,
 * some to ended ones, whose writes every store refuses the same way.
 */
function batches(ids: readonly string[], effectKeys: readonly string[], count: number, seed: number): Write[][] {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const upTo = (n: number) => Math.floor(random() * (n + 1));
  const statuses = new Map<string, AgentStatus>(ids.map((id) => [id, 'active']));
  const seqs = new Map<string, number>(ids.map((id) => [id, 0]));
  let tick = 0;
  const all: Write[][] = [];
  for (let b = 0; b < count; b++) {
    const now = new Map(statuses);
    const batch: Write[] = [];
    const size = 1 + upTo(random() < 0.2 ? 60 : 12);
    for (let i = 0; i < size; i++) {
      tick++;
      // The first few agents still active, mostly; any agent (ended ones too) now and then.
      const active = ids.filter((id) => now.get(id) === 'active').slice(0, 4);
      const agentId = active.length > 0 && random() < 0.85 ? pick(active) : pick(ids);
      const isActive = now.get(agentId) === 'active';
      const roll = random();
      if (roll < 0.35) {
        // A checkpoint for an ended agent is refused: its seq is not taken.
        const seq = seqs.get(agentId)! + 1;
        if (isActive) seqs.set(agentId, seq);
        const ending = random() < 0.015 ? pick(['done', 'error'] as const) : 'active';
        if (isActive) now.set(agentId, ending);
        batch.push(
          checkpoint(agentId, seq, {
            status: ending,
            state: random() < 0.5 ? `s${seq}` : { working: { step: seq } },
            progress: random() < 0.5 ? seq : random() * 10,
            inboxPosition: upTo(8),
            resting: random() < 0.5,
            createdAt: at(tick),
            snapshot: JSON.stringify({ value: `s${seq}`, context: { text: `é "q" \\ 🎉 ${tick}` } }),
            actions: random() < 0.3 ? [{ action: 'callLlm', payload: { n: tick }, result: random() < 0.5 ? undefined : { ok: tick } }] : [],
          }),
        );
      } else if (roll < 0.65) {
        const target = random() < 0.1 ? 'ghost' : agentId;
        batch.push(event(target, random() < 0.5 ? null : pick(['k0', 'k1', 'k2', 'k3']), tick));
      } else if (roll < 0.78) {
        batch.push(consume(agentId, upTo(8)));
      } else if (roll < 0.9) {
        batch.push(effect(agentId, pick(effectKeys), tick));
      } else {
        // Mostly `active` (changes nothing but the error and the time), sometimes an end.
        const next = random() < 0.8 ? 'active' : pick(['stopped', 'error', 'done'] as const);
        if (isActive) now.set(agentId, next);
        batch.push(status(agentId, next, next === 'error' ? { name: 'Error', message: `boom ${tick}` } : null));
      }
    }
    if (random() < 0.08) {
      // A write other than an event for an agent that does not exist: the whole batch fails.
      batch.splice(upTo(batch.length), 0, pick([consume('ghost', 1), effect('ghost', 'e-ghost'), status('ghost', 'stopped'), checkpoint('ghost', 1)]));
    } else {
      for (const [id, s] of now) statuses.set(id, s);
    }
    all.push(batch);
  }
  return all;
}

describe('Batches, write for write the same in every store', () => {
  it('gives the same results and the same rows for random batches mixing kinds and agents', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `a${String(i).padStart(2, '0')}`);
    const effectKeys = ['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e-ghost'];
    const stores = await threeStores(ids);
    const all = batches(ids, effectKeys, 80, 20261130);
    let failed = 0;
    let refusedForEnded = 0;
    for (const [n, batch] of all.entries()) {
      const expected = await sameOutcome(stores, batch, `batch ${n}`);
      if (typeof expected === 'object' && expected !== null && 'threw' in expected) failed++;
      else refusedForEnded += (expected as unknown[]).filter((r) => JSON.stringify(r)?.includes('FencedError')).length;
      if (n % 20 === 19) await sameRows(stores, ids, effectKeys, `after batch ${n}`);
    }
    await sameRows(stores, ids, effectKeys, 'at the end');
    // The batches did reach the cases they are there for.
    expect(failed).toBeGreaterThan(0);
    expect(refusedForEnded).toBeGreaterThan(10);
    const { agentsByStatus } = await stores.postgres.stats();
    for (const ended of ['done', 'error', 'stopped'] as const) expect(agentsByStatus[ended], ended).toBeGreaterThan(0);
    expect((await stores.postgres.eventsAfter('a00', 0)).some((e) => e.idempotencyKey !== null)).toBe(true);
    const repeated = all.filter((batch) => {
      const agents = batch.filter((w) => w.kind === 'checkpoint').map((w) => w.agentId);
      return new Set(agents).size < agents.length;
    });
    expect(repeated.length).toBeGreaterThan(10); // several checkpoints of one agent in one batch
  });

  it('applies several writes for one agent in order: checkpoints, consumes, events, keys, effects, an end', async () => {
    const stores = await threeStores(['x', 'y']);
    const boom = { name: 'Error', message: 'boom' };
    const steps: Write[][] = [
      [event('x', 'k'), event('x'), event('x', 'k'), event('y', 'k'), event('x', 'k2')],
      [
        checkpoint('x', 1, { inboxPosition: 2 }),
        consume('x', 5),
        checkpoint('x', 2, { inboxPosition: 1, resting: true }), // a checkpoint sets the position as it is…
        consume('x', 0), // …a consume only moves it forward
        event('x', 'k'), // a key committed by an earlier batch
        checkpoint('y', 1, { actions: [{ action: 'callLlm', payload: { t: 1 }, result: { ok: true } }] }),
        effect('x', 'e1', 1),
        effect('y', 'e1', 2), // the same key again: the first one stays
        checkpoint('x', 3, { progress: 2.5, state: { nested: ['é'] } }),
        event('x', 'k3'),
        event('x', 'k3'),
      ],
      [consume('x', 9), event('x'), consume('y', 4), checkpoint('y', 2, { inboxPosition: 3 })],
      // An end in the middle: the writes after it are refused, a key seen before still answers.
      [event('x', 'k'), event('x'), status('x', 'active'), event('x'), status('x', 'error', boom), event('x', 'k'), event('x'), status('x', 'active')],
      [status('y', 'stopped'), event('y', 'k'), event('y', 'new'), consume('y', 7), effect('y', 'e2', 3), status('y', 'stopped')],
    ];
    for (const [n, batch] of steps.entries()) await sameOutcome(stores, batch, `step ${n}`);
    await sameRows(stores, ['x', 'y'], ['e1', 'e2']);
    expect(await stores.postgres.getAgent('x')).toMatchObject({ lastSeq: 3, inboxPosition: 9, eventSeq: 7, status: 'error', error: boom });
    expect(await stores.postgres.getAgent('y')).toMatchObject({ lastSeq: 2, inboxPosition: 3, eventSeq: 1, status: 'stopped' });
    expect(await stores.postgres.findEffect('e2')).toBeUndefined();
  });

  it('refuses events one by one and keeps the rest of the batch', async () => {
    const stores = await threeStores(['x', 's']);
    for (const store of Object.values(stores)) await store.commit([status('s', 'stopped')]);
    const batch = [event('x', 'k'), event('ghost'), event('s'), checkpoint('x', 1), event('ghost', 'k'), event('x', 'k'), event('x')];
    expect(await sameOutcome(stores, batch)).toEqual([
      { seq: 1, duplicate: false },
      { refused: `NotFoundError: ${new NotFoundError('agent', 'ghost').message}` },
      { refused: `ConflictError: ${new ConflictError('Agent "s" is stopped; it takes no more events.').message}` },
      undefined,
      { refused: `NotFoundError: ${new NotFoundError('agent', 'ghost').message}` },
      { seq: 1, duplicate: true },
      { seq: 2, duplicate: false },
    ]);
    await sameRows(stores, ['x', 's'], []);
  });

  it('rolls the whole batch back for a write naming no agent, wherever it is', async () => {
    const stores = await threeStores(['x']);
    for (const store of Object.values(stores)) await store.commit([checkpoint('x', 1)]);
    const before = await readAll(stores.postgres, ['x'], ['e']);
    const writes = [event('x', 'k'), checkpoint('x', 2), consume('x', 3), effect('x', 'e'), status('x', 'stopped')];
    for (const ghost of [checkpoint('ghost', 1), consume('ghost', 1), effect('ghost', 'e'), status('ghost', 'stopped'), status('ghost', 'error')]) {
      for (const position of [0, 2, writes.length]) {
        const failed = await sameOutcome(stores, writes.toSpliced(position, 0, ghost));
        expect(failed).toEqual({ threw: `NotFoundError: ${new NotFoundError('agent', 'ghost').message}` });
      }
    }
    expect(await readAll(stores.postgres, ['x'], ['e'])).toEqual(before);
    await sameRows(stores, ['x'], ['e']);
  });

  it('rolls the whole batch back when a checkpoint seq is written twice', async () => {
    const stores = await threeStores(['x', 'y']);
    const before = await readAll(stores.sqlite, ['x', 'y'], []);
    const batch = [event('y'), checkpoint('y', 1), checkpoint('x', 1), checkpoint('x', 1)];
    await expect(stores.postgres.commit(batch)).rejects.toThrow(/checkpoints_pkey|duplicate key/);
    await expect(stores.sqlite.commit(batch)).rejects.toThrow(/UNIQUE constraint failed: checkpoints/);
    await expect(stores.memory.commit(batch)).rejects.toThrow('Checkpoint x@1 already exists.');
    await sameRows(stores, ['x', 'y'], []);
    expect(await readAll(stores.postgres, ['x', 'y'], [])).toEqual(before);
  });

  it('returns one result per write, in order, for a large batch across many agents', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `agent-${String(i).padStart(2, '0')}`);
    const stores = await threeStores(ids);
    // Agents in an order unlike the lock order (by id), each with several writes spread out.
    const batch: Write[] = [];
    for (let round = 1; round <= 4; round++) {
      for (const id of [...ids].reverse()) batch.push(event(id, round % 2 ? `k${round}` : null, round), checkpoint(id, round, { inboxPosition: round }));
    }
    const results = await sameOutcome(stores, batch);
    expect((results as unknown[]).filter((r) => r === undefined)).toHaveLength(200);
    await sameRows(stores, ids, []);
  });
});

describe('Postgres batches: what only Postgres refuses', () => {
  it("fences other processes' agents write by write, and applies the rest as SQLite does", async () => {
    const schema = freshSchema();
    const mine = await openPostgres(schema, 'A');
    const theirs = await openPostgres(schema, 'B');
    const sqlite = await openSqlite();
    for (const id of ['x', 'y', 'z']) await sqlite.createAgent(newAgent(id));
    await mine.createAgent(newAgent('x'));
    await mine.createAgent(newAgent('y'));
    await theirs.createAgent(newAgent('z'));
    const fencedHere = (agentId: string) => ({ refused: `FencedError: ${new FencedError(agentId).message}` });

    const batch: { write: Write; postgres?: unknown }[] = [
      { write: event('x') },
      { write: checkpoint('x', 1, { inboxPosition: 1 }) },
      { write: status('x', 'stopped') },
      { write: checkpoint('x', 2) }, // stopped: refused in every store, the same way
      { write: consume('x', 4) },
      { write: event('x') },
      { write: checkpoint('z', 1), postgres: fencedHere('z') }, // another process's agent
      { write: event('z', 'kz') }, // events come from any process
      { write: checkpoint('y', 1, { status: 'done' }) },
      { write: checkpoint('y', 2) }, // done
      { write: consume('z', 3), postgres: fencedHere('z') },
      { write: effect('z', 'ez'), postgres: fencedHere('z') },
      { write: status('z', 'error', { name: 'Error', message: 'no' }), postgres: fencedHere('z') },
      { write: status('z', 'active'), postgres: fencedHere('z') },
      { write: status('z', 'stopped') }, // any process may stop an agent
      { write: event('z', 'kz') },
      { write: event('z') },
      { write: effect('y', 'ey') },
    ];
    const results = await outcome(
      mine,
      batch.map((b) => b.write),
    );
    // Without the writes only Postgres refuses, SQLite gives the same results for the others and the same rows.
    const applied = batch.filter((b) => b.postgres === undefined);
    const expected = (await outcome(sqlite, applied.map((b) => b.write))) as unknown[];
    let next = 0;
    expect(results).toEqual(batch.map((b) => b.postgres ?? expected[next++]));
    expect(await readAll(mine, ['x', 'y', 'z'], ['ez', 'ey'])).toEqual(await readAll(sqlite, ['x', 'y', 'z'], ['ez', 'ey']));
    expect(await mine.getAgent('x')).toMatchObject({ status: 'stopped', lastSeq: 1, inboxPosition: 1, eventSeq: 1 });
    const refused = (results as unknown[]).map((r) => (r as { refused?: string } | undefined)?.refused?.split(':')[0]);
    expect(refused).toEqual([
      undefined, undefined, undefined, 'FencedError', 'FencedError', 'ConflictError', 'FencedError', undefined, undefined, 'FencedError',
      'FencedError', 'FencedError', 'FencedError', 'FencedError', undefined, undefined, 'ConflictError', 'FencedError',
    ]);
  });
});

describe('Postgres batch notifications', () => {
  it("announces accepted events and status changes in write order, then each agent's newest checkpoint", async () => {
    const schema = freshSchema();
    const store = await openPostgres(schema);
    for (const id of ['x', 'y', 'w']) await store.createAgent(newAgent(id));
    const listener = new pg.Client({ connectionString: postgresUrl });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query(`listen ${pg.escapeIdentifier(inboxChannel(schema))}`);
    try {
      await store.commit([
        checkpoint('w', 1),
        event('x'),
        event('x', 'k'),
        event('x', 'k'), // a duplicate: not announced again
        checkpoint('x', 1),
        checkpoint('w', 2),
        status('y', 'stopped'),
        event('y'), // refused: not announced
        checkpoint('y', 1), // refused: not announced
        event('ghost'), // refused
        checkpoint('x', 2),
        event('x'),
      ]);
      await store.commit([event('x', 'k')]); // only a duplicate: nothing to announce
      await store.commit([event('x', 'last')]);
      // Inbox notifications carry the agent's owner then: only that process needs to act on them.
      const me = store.leases.processId;
      await vi.waitFor(() => expect(heard).toContain(`e x 4 ${me}`), { timeout: 5000 });
      expect(heard).toEqual([`e x 1 ${me}`, `e x 2 ${me}`, `s y 0 ${me}`, `e x 3 ${me}`, 'c w 2', 'c x 2', `e x 4 ${me}`]);
    } finally {
      await listener.end();
    }
  });
});
