import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../core/errors.js';
import type { StoreProbeDepth } from '../store.js';
import { rethrowClassified } from '../unavailable.js';
import type { FileIdentity } from './file-identity.js';
import type { WalFlusher } from './wal-flusher.js';

/** Less free space than this on the file's disk counts as full: the next checkpoint may not fit. */
const MIN_FREE_BYTES = 64 * 1024;

/**
 * Whether a SQLite store can take writes, without writing anything. `quick` (about every second
 * while healthy): the file is still the one opened, and no fsync has failed. `write` (while the
 * store is known unavailable and no held write is there to retry): also a write tried and undone
 * (a table created in a savepoint, rolled back before anything reaches the file: it needs a new
 * page, so a database at its size limit or a read-only connection fails it as a real write would),
 * and the free space of the file's disk. Throws a StoreUnavailableError saying why not.
 */
export async function probeSqlite(
  db: Database.Database,
  file: string,
  identity: FileIdentity | undefined,
  flusher: WalFlusher | undefined,
  depth: StoreProbeDepth,
): Promise<void> {
  await identity?.check();
  flusher?.throwIfFailed();
  if (depth === 'quick' || file === ':memory:') return;
  tryWrite(db);
  await checkFreeSpace(path.dirname(path.resolve(file)));
}

function tryWrite(db: Database.Database): void {
  // Never wait for another connection's lock here: the probe runs on the main thread. Busy is no verdict.
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  db.exec('savepoint store_probe');
  try {
    db.exec('create table store_probe (x)');
  } catch (err) {
    rethrowClassified(err);
  } finally {
    db.exec('rollback to store_probe; release store_probe');
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

async function checkFreeSpace(dir: string): Promise<void> {
  const stats = await fs.promises.statfs(dir).catch(() => undefined);
  if (!stats) return; // a file system that does not say: the next real write will
  // Root may write into the blocks reserved for it.
  const blocks = process.getuid?.() === 0 ? stats.bfree : stats.bavail;
  if (blocks * stats.bsize < MIN_FREE_BYTES) {
    throw StoreUnavailableError.because('disk_full', `The disk of ${dir} is full (${blocks * stats.bsize} bytes free).`);
  }
}
