// The fsync that makes synchronous=FULL: its ordering against acknowledgements, how concurrent
// commits share it, and what a failed one does. The fsync is held by hand here (a power loss cannot
// be staged on this machine); the store test checks the real one reaches the WAL file.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { heldFsync, storeWithFsync, turns } from '../helpers/held-fsync.js';

const agent = (id: string) => ({ id, machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });

describe('WalFlusher: synchronous=FULL off the main thread', () => {
  it('acknowledges a commit only once the fsync of the WAL that follows it is done', async () => {
    const sync = heldFsync();
    const { file, store } = storeWithFsync(sync);
    let acknowledged = false;
    const created = store.createAgent(agent('a1')).then(() => (acknowledged = true));
    await turns();
    expect(sync.held).toHaveLength(1);
    expect(fs.fstatSync(sync.held[0]!.fd).ino).toBe(fs.statSync(`${file}-wal`).ino);
    expect(acknowledged).toBe(false);
    sync.release();
    await created;
    expect(acknowledged).toBe(true);
    await store.close();
  });

  it('has commits made during an fsync share one more, which starts only after it', async () => {
    const sync = heldFsync();
    const { store } = storeWithFsync(sync);
    const first = store.createAgent(agent('a1'));
    await turns();
    const later = [store.createAgent(agent('a2')), store.createAgent(agent('a3')), store.createAgent(agent('a4'))];
    let laterDone = 0;
    for (const p of later) void p.then(() => laterDone++);
    await turns();
    expect(sync.held).toHaveLength(1); // the one for a1; a2–a4 wait: it may have started before their writes
    sync.release();
    await first;
    await turns();
    expect(laterDone).toBe(0);
    expect(sync.held).toHaveLength(1); // one fsync for the three
    sync.release();
    await Promise.all(later);
    expect(sync.held).toHaveLength(0);
    await store.close();
  });

  it('fails the commit whose fsync fails, and every later one, without trying again', async () => {
    const sync = heldFsync();
    const { store } = storeWithFsync(sync);
    const first = store.createAgent(agent('a1'));
    await turns();
    sync.fail();
    await expect(first).rejects.toThrow(/fsync of .*-wal failed.*acknowledges nothing more/);
    await expect(store.createAgent(agent('a2'))).rejects.toThrow(/acknowledges nothing more/);
    expect(sync.held).toHaveLength(0);
    expect(await store.getAgent('a2')).toBeUndefined(); // refused before writing, not only unacknowledged
    await store.close();
  });
});
