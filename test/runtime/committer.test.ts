// Group commit with pipelining: the next batch is written while the previous one's fsync runs, yet
// every write is acknowledged only once durable, and in the order written.
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { GroupCommitter } from '../../src/runtime/committer.js';
import { StoreHealth } from '../../src/runtime/store-health.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { heldFsync, storeWithFsync, turns } from '../helpers/held-fsync.js';
import { tempDbFile } from '../helpers/temp.js';

describe('GroupCommitter', () => {
  it('writes the next batch during the previous fsync, and acknowledges each only when durable, in order', async () => {
    const sync = heldFsync();
    const { store } = storeWithFsync(sync);
    const { held } = sync;
    const created = store.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    await turns();
    sync.release();
    await created;

    const committer = new GroupCommitter(store);
    const acknowledged: string[] = [];
    const event = (type: string) => ({ kind: 'event' as const, agentId: 'a1', event: { type }, idempotencyKey: null, at: new Date().toISOString() });
    const first = committer.enqueue(event('first')).then(() => acknowledged.push('first'));
    await turns();
    const second = committer.enqueue(event('second')).then(() => acknowledged.push('second'));
    await turns();
    // Both batches are written (a process crash now keeps both), neither is acknowledged yet.
    expect((await store.eventsAfter('a1', 0)).map((e) => e.event.type)).toEqual(['first', 'second']);
    expect(acknowledged).toEqual([]);
    expect(held).toHaveLength(1);
    sync.release();
    await first;
    await turns();
    expect(acknowledged).toEqual(['first']); // the second waits for an fsync that began after its write
    sync.release();
    await second;
    expect(acknowledged).toEqual(['first', 'second']);
    await committer.drain();
    await store.close();
  });

  it("holds an agent's writes in order while the store is full and rejects the requests of the same batch at once", async () => {
    const store = await openSqliteStore(tempDbFile(), { synchronous: 'normal' });
    await store.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    const committer = new GroupCommitter(store, new StoreHealth(silentLogger, { baseDelayMs: 10, maxDelayMs: 50, seed: 1 }));
    // Full for real: SQLite refuses the next page (SQLITE_FULL), and each event needs a few.
    store.db.pragma(`max_page_count = ${store.db.pragma('page_count', { simple: true }) as number}`);
    const event = (type: string) => ({ kind: 'event' as const, agentId: 'a1', event: { type, padding: 'x'.repeat(20_000) }, idempotencyKey: null, at: new Date().toISOString() });
    const settled: string[] = [];
    const first = committer.enqueue(event('first'), 'agent').then(() => settled.push('first'));
    const request = committer.enqueue(event('request')).catch((err: unknown) => err);
    const second = committer.enqueue(event('second'), 'agent').then(() => settled.push('second'));

    const refused = await request;
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect(refused).toMatchObject({ reason: 'disk_full' });
    expect((refused as StoreUnavailableError).retryAfterMs).toBeGreaterThan(0);
    expect(committer.holding).toBe(true);
    // While held, a request fails at once, without reaching the store.
    await expect(committer.enqueue(event('later request'))).rejects.toMatchObject({ code: 'store_unavailable', reason: 'disk_full' });
    const third = committer.enqueue(event('third'), 'agent').then(() => settled.push('third'));
    await turns(20);
    expect(settled).toEqual([]);

    store.db.pragma('max_page_count = 1073741823');
    await Promise.all([first, second, third]);
    expect(settled).toEqual(['first', 'second', 'third']);
    expect((await store.eventsAfter('a1', 0)).map((e) => e.event.type)).toEqual(['first', 'second', 'third']);
    expect(committer.health.ready).toBe(true);
    expect(committer.holding).toBe(false);
    await committer.enqueue(event('after'));
    await committer.drain();
    await store.close();
  });
});
