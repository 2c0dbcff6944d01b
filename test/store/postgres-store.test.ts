// The Postgres store: the shared contract plus leases, fencing, claims, notifications and migrations
// (long: each of those is a concern only this store has, tested against a real server).
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { FencedError, InvalidInputError, NotFoundError, SchemaTooNewError } from '../../src/core/errors.js';
import { clientConfig, redactUrl } from '../../src/store/postgres/connection.js';
import { inboxChannel } from '../../src/store/postgres/inbox-listener.js';
import { migrations } from '../../src/store/postgres/migrations.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import type { RestorableAgent, Write } from '../../src/store/store.js';
import { freshSchema, postgresUrl, sql } from '../helpers/postgres.js';
import { appendEvent, checkpoint, storeContract } from './store-contract.js';

storeContract('Postgres', () => openPostgresStore(postgresUrl, { schema: freshSchema() }));

const opened: PostgresStore[] = [];

/** A store on `schema`, closed after the test. */
async function open(schema: string, options: Omit<PostgresStoreOptions, 'schema'> = {}): Promise<PostgresStore> {
  const store = await openPostgresStore(postgresUrl, { schema, ...options });
  opened.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

const at = () => new Date().toISOString();
const newAgent = (id: string) => ({ id, machine: 'agent', machineVersion: '1', input: { tasks: [id] }, createdAt: at() });

/** Polls `probe` until it gives a value (no fixed sleeps: leases run out on the database's clock). */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function ownerOf(schema: string, id: string): Promise<string | null | undefined> {
  const [row] = await sql<{ owner: string | null }>('select owner from agents where id = $1', [id], schema);
  return row?.owner;
}

describe('Postgres store schema', () => {
  it('creates the schema and every table from nothing', async () => {
    const schema = freshSchema();
    await open(schema);
    const tables = await sql<{ table_name: string }>(
      'select table_name from information_schema.tables where table_schema = $1 order by table_name',
      [schema],
    );
    expect(tables.map((t) => t.table_name)).toEqual([
      'actions', 'agent_inputs', 'agents', 'checkpoints', 'effects', 'events', 'llm_slots', 'processes', 'schema_migrations', 'snapshot_parts', 'tool_slots',
    ]);
    expect(await sql('select id, name from schema_migrations order by id', [], schema)).toEqual(
      migrations.map(({ id, name }) => ({ id, name })),
    );
  });

  it('reopens a schema without migrating twice and keeps its data', async () => {
    const schema = freshSchema();
    const first = await open(schema);
    await first.createAgent(newAgent('a1'));
    await first.close();
    const before = await sql('select id, applied_at from schema_migrations order by id', [], schema);
    const second = await open(schema);
    expect(await second.getAgent('a1')).toMatchObject({ id: 'a1', status: 'active' });
    expect(await sql('select id, applied_at from schema_migrations order by id', [], schema)).toEqual(before);
  });

  it('lets several processes open a fresh schema at the same moment', async () => {
    const schema = freshSchema();
    const stores = await Promise.all(Array.from({ length: 4 }, () => open(schema)));
    await stores[0]!.createAgent(newAgent('a1'));
    expect(await stores[3]!.getAgent('a1')).toMatchObject({ id: 'a1' });
    expect(await sql('select id from schema_migrations', [], schema)).toHaveLength(migrations.length);
  });

  it('refuses a schema migrated by a newer version', async () => {
    const schema = freshSchema();
    await (await open(schema)).close();
    await sql(`insert into schema_migrations (id, name, applied_at) values (999, 'future', now())`, [], schema);
    await expect(openPostgresStore(postgresUrl, { schema })).rejects.toBeInstanceOf(SchemaTooNewError);
  });

  it('refuses a schema name it cannot use as a plain identifier, before connecting', async () => {
    await expect(openPostgresStore('postgres://nowhere.invalid/x', { schema: 'a"; drop table x' })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
  });

  it('refuses a process id its notifications could not carry (a space), before connecting', async () => {
    await expect(openPostgresStore('postgres://nowhere.invalid/x', { processId: 'host 1' })).rejects.toThrow('processId must be');
  });

  it('names its location without the password', async () => {
    const schema = freshSchema();
    expect((await open(schema)).location).toBe(`${redactUrl(postgresUrl)}#${schema}`);
    expect(redactUrl('postgres://app:s3cret@db.example:5432/agents')).toBe('postgres://app:***@db.example:5432/agents');
    expect(redactUrl('postgres://db.example/agents?password=s3cret')).toBe('postgres://db.example/agents?password=***');
  });

  it("keeps the schema's search_path when the URL carries options of its own", () => {
    const config = clientConfig('postgres://db.example/agents?options=-c%20statement_timeout%3D5000&sslmode=disable', 'tenant');
    expect(config.options).toBe('-c statement_timeout=5000 -c search_path="tenant"');
    expect(config.connectionString).toBe('postgres://db.example/agents?sslmode=disable');
  });

  it('gives snapshots back byte for byte and integers as numbers', async () => {
    const store = await open(freshSchema());
    await store.createAgent(newAgent('a1'));
    const snapshot = '{"value":"s1","context":{"text":"é 日本 🎉 \\u0000 \\"q\\" \\\\","n":1.5e300},  "spaced" : true}';
    await store.commit([checkpoint('a1', 1, { snapshot, progress: 2.5 })]);
    await appendEvent(store, 'a1', { type: 'x' });
    expect((await store.getCheckpoint('a1', 1))?.snapshot).toBe(snapshot);
    expect((await store.loadRestorable('a1'))?.checkpoint?.snapshot).toBe(snapshot);
    const agent = await store.getAgent('a1');
    expect(agent).toMatchObject({ lastSeq: 1, eventSeq: 1, inboxPosition: 0, progress: 2.5 });
    expect(typeof agent?.lastSeq).toBe('number');
    expect(typeof (await store.eventsAfter('a1', 0))[0]?.seq).toBe('number');
    expect(await store.stats()).toEqual({ agentsByStatus: { active: 1, done: 0, error: 0, stopped: 0 }, inboxDepth: 1 });
  });

  it('closes once however often it is asked, and commits nothing after', async () => {
    const store = await openPostgresStore(postgresUrl, { schema: freshSchema() });
    await store.createAgent(newAgent('a1'));
    const pending = store.commit([checkpoint('a1', 1)]);
    await Promise.all([store.close(), store.close()]);
    await expect(pending).resolves.toEqual([undefined]);
    await expect(store.commit([checkpoint('a1', 2)])).rejects.toThrow(/closed/);
  });
});

describe('Postgres leases', () => {
  /** Two processes, A and B, on one schema, with short leases, both holding one. */
  async function twoProcesses(leaseMs = 1000) {
    const schema = freshSchema();
    const a = await open(schema, { processId: 'A', leaseMs });
    const b = await open(schema, { processId: 'B', leaseMs });
    expect(await a.leases.renew()).toBe(true);
    expect(await b.leases.renew()).toBe(true);
    return { schema, a, b };
  }

  /** Agents spawned by a process that never takes a lease: orphans from the start. */
  async function orphans(schema: string, ids: string[]): Promise<PostgresStore> {
    const gone = await open(schema, { processId: 'gone' });
    for (const id of ids) await gone.createAgent(newAgent(id));
    return gone;
  }

  const ids = (agents: RestorableAgent[]) => agents.map((r) => r.agent.id);

  it('passes an agent to another process when its lease runs out, and fences the old owner', async () => {
    const { schema, a, b } = await twoProcesses();
    await a.createAgent(newAgent('x'));
    await a.createAgent(newAgent('y'));
    expect(await ownerOf(schema, 'x')).toBe('A');
    expect(await a.commit([checkpoint('x', 1)])).toEqual([undefined]);

    await a.leases.renew();
    expect(await b.leases.claim('x')).toBe('elsewhere');
    expect(await b.leases.claim('nobody')).toBeUndefined();

    // A stops renewing; B keeps asking until A's lease has run out.
    const claimed = await waitFor('A’s lease to run out', async () => {
      const result = await b.leases.claim('x');
      return result === 'elsewhere' ? undefined : result;
    });
    expect(claimed).toMatchObject({ agent: { id: 'x', eventSeq: 0 }, checkpoint: { seq: 1 } });
    expect(await ownerOf(schema, 'x')).toBe('B');

    // A has not noticed yet: its writes for x are refused and change nothing, its write for y lands.
    const fencedBatch: Write[] = [
      checkpoint('x', 2),
      { kind: 'consume', agentId: 'x', inboxPosition: 5, at: at() },
      { kind: 'effect', agentId: 'x', seq: 2, idempotencyKey: 'x:2', result: null, createdAt: at() },
      { kind: 'status', agentId: 'x', status: 'error', error: { name: 'Error', message: 'boom' }, at: at() },
      checkpoint('y', 1),
    ];
    const results = await a.commit(fencedBatch);
    for (const result of results.slice(0, 4)) expect(result).toEqual({ refused: expect.any(FencedError) });
    expect(results[4]).toBeUndefined();
    expect(await a.getAgent('x')).toMatchObject({ status: 'active', lastSeq: 1, inboxPosition: 0, error: null });
    expect(await a.getCheckpoint('x', 2)).toBeUndefined();
    expect(await a.findEffect('x:2')).toBeUndefined();
    expect(await a.getAgent('y')).toMatchObject({ lastSeq: 1 });
    // The new owner writes on.
    expect(await b.commit([checkpoint('x', 2)])).toEqual([undefined]);

    // A learns its lease ran out: it lets go of what it still owned, then starts a fresh lease.
    expect(await a.leases.renew()).toBe(false);
    expect(await ownerOf(schema, 'y')).toBeNull();
    expect(await ownerOf(schema, 'x')).toBe('B');
    expect(await a.leases.renew()).toBe(true);
  });

  it('hands each orphan to exactly one of two processes claiming at the same moment', async () => {
    const { schema, a, b } = await twoProcesses(30_000);
    const all = Array.from({ length: 200 }, (_, i) => `o${String(i).padStart(3, '0')}`);
    await orphans(schema, all);
    // Small claims in a loop, from both at once: many statements overlap, each skipping what the other holds.
    const claimAll = async (store: PostgresStore) => {
      const claimed: RestorableAgent[] = [];
      for (let batch = await store.leases.claimOrphans({ limit: 10 }); batch.length > 0; batch = await store.leases.claimOrphans({ limit: 10 })) {
        expect(ids(batch)).toEqual([...ids(batch)].sort()); // oldest first
        claimed.push(...batch);
      }
      return claimed;
    };
    const [fromA, fromB] = await Promise.all([claimAll(a), claimAll(b)]);
    const claimedA = ids(fromA);
    const claimedB = ids(fromB);
    expect(claimedA.filter((id) => claimedB.includes(id))).toEqual([]);
    expect([...claimedA, ...claimedB].sort()).toEqual(all);
    expect(claimedA.length).toBeGreaterThan(0);
    expect(claimedB.length).toBeGreaterThan(0);
    expect(fromA[0]).toMatchObject({ agent: { input: { tasks: [claimedA[0]] } }, checkpoint: undefined });
    const owners = await sql<{ owner: string; n: number }>('select owner, count(*)::int as n from agents group by owner order by owner', [], schema);
    expect(owners).toEqual([
      { owner: 'A', n: claimedA.length },
      { owner: 'B', n: claimedB.length },
    ]);
  });

  it('does not take an agent that another process claimed while this claim waited for its row', async () => {
    const { schema, a, b } = await twoProcesses(30_000);
    await orphans(schema, ['x']);
    // A's claim of x, held open: B's claim reads x as an orphan, then waits for the row.
    const inFlight = new pg.Client({ connectionString: postgresUrl, options: `-c search_path=${schema}` });
    await inFlight.connect();
    try {
      await inFlight.query('begin');
      await inFlight.query(`update agents set owner = 'A' where id = 'x'`);
      const { rows: [holder] } = await inFlight.query<{ pid: number }>('select pg_backend_pid() as pid');
      const claiming = b.leases.claim('x');
      await waitFor('B’s claim to wait for the row', async () => {
        const waiting = await sql('select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [holder!.pid]);
        return waiting.length > 0 ? true : undefined;
      });
      await inFlight.query('commit');
      // Postgres re-checks the claim's condition on the row A committed: A is alive, so B leaves it.
      expect(await claiming).toBe('elsewhere');
      expect(await ownerOf(schema, 'x')).toBe('A');
    } finally {
      await inFlight.end();
    }
    expect(await a.leases.claim('x')).toMatchObject({ agent: { id: 'x' } });
  });

  it('leaves resting orphans without pending events on disk when asked', async () => {
    const { schema, a } = await twoProcesses(30_000);
    const gone = await orphans(schema, ['working', 'resting', 'resting-with-mail']);
    await gone.commit([
      checkpoint('working', 1, { resting: false }),
      checkpoint('resting', 1, { resting: true }),
      checkpoint('resting-with-mail', 1, { resting: true }),
    ]);
    await appendEvent(gone, 'resting-with-mail', { type: 'task.add', task: 't' });
    const working = await a.leases.claimOrphans({ limit: 10, skipResting: true });
    expect(ids(working)).toEqual(['working', 'resting-with-mail']);
    expect(working[1]).toMatchObject({ agent: { eventSeq: 1, inboxPosition: 0 }, checkpoint: { seq: 1 } });
    expect(await ownerOf(schema, 'resting')).toBe('gone');
    expect(ids(await a.leases.claimOrphans({ limit: 10 }))).toEqual(['resting']);
  });

  it('frees a resigning process’s agents at once', async () => {
    const { schema, a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    expect(await b.leases.claim('x')).toBe('elsewhere');
    await a.leases.resign();
    expect(await ownerOf(schema, 'x')).toBeNull();
    expect(await b.leases.claim('x')).toMatchObject({ agent: { id: 'x', input: { tasks: ['x'] } }, checkpoint: undefined });
    expect(await ownerOf(schema, 'x')).toBe('B');
    expect(await sql('select id from processes order by id', [], schema)).toEqual([{ id: 'B' }]);
  });

  it('claims an agent it already owns, and no stopped one', async () => {
    const { a } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    await a.createAgent(newAgent('s'));
    await a.commit([{ kind: 'status', agentId: 's', status: 'stopped', error: null, at: at() }]);
    expect(await a.leases.claim('x')).toMatchObject({ agent: { id: 'x' } });
    expect(await a.leases.claim('s')).toBeUndefined();
  });

  it("announces an event committed by one process to another's listeners", async () => {
    const { a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    const heard: [string, number][] = [];
    b.leases.onChange((c) => c.kind === 'event' && heard.push([c.agentId, c.seq]));
    await appendEvent(a, 'x', { type: 'x' });
    await waitFor('the first notification', async () => (heard.length >= 1 ? true : undefined));
    // A listener added after a notification hears the next ones too; a duplicate is not announced.
    const later: [string, number][] = [];
    b.leases.onChange((c) => c.kind === 'event' && later.push([c.agentId, c.seq]));
    await appendEvent(a, 'x', { type: 'y' }, 'k');
    await appendEvent(a, 'x', { type: 'y' }, 'k');
    await appendEvent(a, 'x', { type: 'z' });
    await waitFor('the third notification', async () => (heard.length >= 3 ? true : undefined));
    expect(heard).toEqual([['x', 1], ['x', 2], ['x', 3]]);
    expect(later).toEqual([['x', 2], ['x', 3]]);
  });

  it("announces each agent's newest checkpoint of a commit, and a status change with the agent's owner", async () => {
    const { a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    await a.createAgent(newAgent('y'));
    await b.createAgent(newAgent('theirs'));
    const checkpoints: [string, number][] = [];
    const statuses: [string, string | null][] = [];
    b.leases.onChange((c) => {
      if (c.kind === 'checkpoint') checkpoints.push([c.agentId, c.seq]);
      else if (c.kind === 'status') statuses.push([c.agentId, c.owner]);
    });
    // Three transitions of x and one of y in one commit; a refused (fenced) one is not announced.
    const results = await a.commit([checkpoint('x', 1), checkpoint('x', 2), checkpoint('y', 1), checkpoint('x', 3), checkpoint('theirs', 1)]);
    expect(results[4]).toEqual({ refused: expect.any(FencedError) });
    await a.commit([{ kind: 'status', agentId: 'y', status: 'stopped', error: null, at: at() }]);
    await waitFor('the status change', async () => (statuses.length >= 1 ? true : undefined));
    expect(checkpoints).toEqual([['x', 3], ['y', 1]]);
    // With the process that held it then: only that one needs to act on it.
    expect(statuses).toEqual([['y', a.leases.processId]]);
  });

  it('hears only its own schema', async () => {
    const { a } = await twoProcesses(30_000);
    const other = await open(freshSchema());
    await a.createAgent(newAgent('x'));
    await other.createAgent(newAgent('mine'));
    const heard: string[] = [];
    other.leases.onChange((c) => c.kind === 'event' && heard.push(c.agentId));
    await appendEvent(a, 'x', { type: 'x' });
    await appendEvent(other, 'mine', { type: 'x' });
    // Notifications arrive in commit order: had the other schema's come through, it would be first.
    await waitFor('its own notification', async () => (heard.length >= 1 ? true : undefined));
    expect(heard).toEqual(['mine']);
  });

  it('listens again after its connection drops', async () => {
    const { schema, a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    const heard: number[] = [];
    b.leases.onChange((c) => c.kind === 'event' && heard.push(c.seq));
    const listening = `listen "${inboxChannel(schema)}"`;
    const listeners = () => sql<{ pid: number }>('select pid from pg_stat_activity where query = $1', [listening]);
    const before = (await listeners()).map((r) => r.pid);
    expect(before).toHaveLength(2);
    await sql('select pg_terminate_backend(pid) from pg_stat_activity where query = $1', [listening]);
    await waitFor('both listeners to reconnect', async () => {
      const now = (await listeners()).map((r) => r.pid);
      return now.length === 2 && now.every((pid) => !before.includes(pid)) ? true : undefined;
    });
    await appendEvent(a, 'x', { type: 'x' });
    await waitFor('the notification after reconnecting', async () => (heard.length >= 1 ? true : undefined));
    expect(heard).toEqual([1]);
  });

  it('takes one event per idempotency key sent through two processes at once', async () => {
    const { a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    const pairs = await Promise.all(
      keys.map((key) => Promise.all([appendEvent(a, 'x', { type: 'x', via: 'A' }, key), appendEvent(b, 'x', { type: 'x', via: 'B' }, key)])),
    );
    for (const [fromA, fromB] of pairs) {
      expect(fromA.seq).toBe(fromB.seq);
      expect([fromA.duplicate, fromB.duplicate].sort()).toEqual([false, true]);
    }
    const events = await a.eventsAfter('x', 0);
    expect(events.map((e) => e.seq)).toEqual(keys.map((_, i) => i + 1));
    expect(events.map((e) => e.idempotencyKey).sort()).toEqual([...keys].sort());
    expect(await a.getAgent('x')).toMatchObject({ eventSeq: keys.length });
  });

  it('commits batches that name the same agents in opposite orders from two processes without deadlocking', async () => {
    const { a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('p'));
    await b.createAgent(newAgent('q'));
    const event = (agentId: string): Write => ({ kind: 'event', agentId, event: { type: 'x' }, idempotencyKey: null, at: at() });
    const rounds = Array.from({ length: 25 }, () =>
      Promise.all([a.commit([event('p'), event('q')]), b.commit([event('q'), event('p')])]),
    );
    await Promise.all(rounds);
    expect(await a.getAgent('p')).toMatchObject({ eventSeq: 50 });
    expect(await a.getAgent('q')).toMatchObject({ eventSeq: 50 });
  });

  it('creates an agent once when two processes spawn it at the same moment', async () => {
    const { schema, a, b } = await twoProcesses(30_000);
    const [fromA, fromB] = await Promise.all([a.createAgent(newAgent('x')), b.createAgent(newAgent('x'))]);
    expect([fromA.created, fromB.created].sort()).toEqual([false, true]);
    expect(await ownerOf(schema, 'x')).toBe(fromA.created ? 'A' : 'B');
    expect(fromA.agent).toEqual(fromB.agent);
  });

  it('lists exactly the owned active agents with events not yet consumed', async () => {
    const { a, b } = await twoProcesses(30_000);
    for (const id of ['busy', 'idle', 'caught-up', 'stopped']) await a.createAgent(newAgent(id));
    await b.createAgent(newAgent('theirs'));
    for (const id of ['busy', 'busy', 'caught-up', 'stopped', 'theirs']) await appendEvent(b, id, { type: 'x' });
    await a.commit([
      { kind: 'consume', agentId: 'caught-up', inboxPosition: 1, at: at() },
      { kind: 'consume', agentId: 'busy', inboxPosition: 1, at: at() },
      { kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at() },
    ]);
    expect(await a.leases.pendingInboxes()).toEqual([{ agentId: 'busy', eventSeq: 2 }]);
    expect(await b.leases.pendingInboxes()).toEqual([{ agentId: 'theirs', eventSeq: 1 }]);
  });

  it('takes a stop from any process, after which the owner’s checkpoints are refused', async () => {
    const { a, b } = await twoProcesses(30_000);
    await a.createAgent(newAgent('x'));
    expect(await b.commit([{ kind: 'status', agentId: 'x', status: 'error', error: null, at: at() }])).toEqual([
      { refused: expect.any(FencedError) },
    ]);
    expect(await b.commit([{ kind: 'status', agentId: 'x', status: 'stopped', error: null, at: at() }])).toEqual([undefined]);
    expect(await a.commit([checkpoint('x', 1)])).toEqual([{ refused: expect.any(FencedError) }]);
    expect(await a.getAgent('x')).toMatchObject({ status: 'stopped', lastSeq: 0, state: null });
    expect(await a.listCheckpoints('x')).toEqual([]);
  });
});

describe('Postgres commits in flight together', () => {
  it('merges the calls that wait into one transaction, and a call that fails fails alone', async () => {
    const store = await open(freshSchema());
    for (const id of ['a', 'b', 'c']) await store.createAgent(newAgent(id));
    // Not awaited one by one: while the first runs, the others wait and go together.
    const calls = [
      store.commit([checkpoint('a', 1)]),
      store.commit([checkpoint('b', 1), checkpoint('b', 2)]),
      store.commit([checkpoint('nobody', 1)]),
      store.commit([checkpoint('c', 1)]),
      store.commit([{ kind: 'event', agentId: 'a', event: { type: 'x' }, idempotencyKey: null, at: at() }]),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
    // Each call gets its own results back, in its own order.
    expect((settled[1] as PromiseFulfilledResult<unknown[]>).value).toEqual([undefined, undefined]);
    expect((settled[4] as PromiseFulfilledResult<unknown[]>).value).toEqual([{ seq: 1, duplicate: false }]);
    expect((await store.listCheckpoints('b')).map((c) => c.seq)).toEqual([1, 2]);
    expect((await store.getAgent('c'))?.lastSeq).toBe(1);
    expect(await store.getCheckpoint('nobody', 1)).toBeUndefined();
  });

  it('refuses a commit once closing has begun', async () => {
    const store = await openPostgresStore(postgresUrl, { schema: freshSchema() });
    await store.createAgent(newAgent('a'));
    const closing = store.close();
    await expect(store.commit([checkpoint('a', 1)])).rejects.toThrow('The Postgres store is closed.');
    await closing;
  });
});
