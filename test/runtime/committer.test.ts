// Group commit with pipelining: the next batch is written while the previous one's fsync runs, yet
// every write is acknowledged only once durable, and in the order written.
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/persistence/sqlite/migrations.js';
import { SqliteStore } from '../../src/persistence/sqlite/sqlite-store.js';
import { WalFlusher } from '../../src/persistence/sqlite/wal-flusher.js';
import { GroupCommitter } from '../../src/runtime/committer.js';
import { tempDbFile } from '../helpers/temp.js';

describe('GroupCommitter', () => {
  it('writes the next batch during the previous fsync, and acknowledges each only when durable, in order', async () => {
    const held: ((err: null) => void)[] = [];
    const file = tempDbFile();
    fs.mkdirSync(file.slice(0, file.lastIndexOf('/')), { recursive: true });
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    migrate(db);
    const store = new SqliteStore(db, file, new WalFlusher(`${file}-wal`, (_fd, done) => void held.push(done)));
    const turns = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    const created = store.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    await turns();
    held.shift()!(null);
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
    held.shift()!(null);
    await first;
    await turns();
    expect(acknowledged).toEqual(['first']); // the second waits for an fsync that began after its write
    held.shift()!(null);
    await second;
    expect(acknowledged).toEqual(['first', 'second']);
    await committer.drain();
    await store.close();
  });
});
