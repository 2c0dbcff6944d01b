import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { WalFlusher } from '../../src/store/sqlite/wal-flusher.js';
import { tempDbFile } from './temp.js';

/** An fsync that waits until the test releases it (or fails it): a power loss cannot be staged here. */
export function heldFsync() {
  const held: { fd: number; done: (err: NodeJS.ErrnoException | null) => void }[] = [];
  return {
    held,
    fsync: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void held.push({ fd, done }),
    release: () => held.shift()!.done(null),
    fail: () => held.shift()!.done(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })),
  };
}

/** A SQLite store at FULL (SQLite at NORMAL + the flusher) whose fsyncs go through `sync`. */
export function storeWithFsync(sync: ReturnType<typeof heldFsync>): { file: string; store: SqliteStore } {
  const file = tempDbFile();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  migrate(db);
  return { file, store: new SqliteStore(db, file, new WalFlusher(`${file}-wal`, sync.fsync)) };
}

/** A few turns of the event loop: enough for the committer to flush and the store to call fsync. */
export async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}
