// Group commit with pipelining: the next batch is written while the previous one's fsync runs, yet
// every write is acknowledged only once durable, and in the order written.
import { describe, expect, it } from 'vitest';
import { GroupCommitter } from '../../src/runtime/committer.js';
import { heldFsync, storeWithFsync, turns } from '../helpers/held-fsync.js';

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
});
