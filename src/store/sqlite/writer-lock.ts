/**
 * One writer per SQLite file: the lock a process holds for as long as its store is open.
 *
 * Two processes running one file's agents would both restore them and split their state, so the
 * writer takes a lock first, one the operating system releases when the holder dies, even by
 * SIGKILL: no stale pid file ever decides anything. Node has no flock, and we add no native code, so
 * the lock is SQLite's own: a sidecar database `<file>.lock`, opened by better-sqlite3 and kept in
 * `BEGIN EXCLUSIVE` for the store's lifetime. SQLite locks with POSIX fcntl locks, which the kernel
 * drops with the process; another opener (with no busy timeout) gets SQLITE_BUSY at once. Within one
 * process SQLite tracks its own locks per file, so a second open here is refused the same way.
 *
 * The lock is a file of its own, not the database: the database's WAL locks (readers, the
 * checkpointer, `-shm`) are left exactly as they were, and read-only openers take no lock at all.
 *
 * POSIX locks belong to the process and go when ANY descriptor of the file is closed: nothing but
 * this module's SQLite connection may open `<file>.lock` (SQLite itself defers such closes while a
 * lock is held, which is why the in-process refusal is safe). The holder's pid, host and start are
 * written to `<file>.lock.json` once the lock is held, only so that a refused opener can say who
 * holds it; that note is removed while the lock is still held, at release.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StoreLockedError, StoreUnavailableError } from '../../core/errors.js';
import { canWrite } from './writable.js';

/** Who holds a file's lock, as the holder wrote it down. */
interface HolderNote {
  pid: number;
  host: string;
  since: string;
}

export class WriterLock {
  private constructor(
    private readonly connection: Database.Database,
    private readonly noteFile: string,
  ) {}

  /**
   * Takes the writer lock of the database `file` (its real path: a symlink or another spelling of the
   * path finds the same lock), or throws a `StoreLockedError` naming the holder.
   */
  static acquire(file: string): WriterLock {
    const named = path.resolve(file); // for messages: the path as the caller knows it, made absolute
    const real = realPath(file);
    const lockFile = `${real}.lock`;
    const noteFile = `${lockFile}.json`;
    let connection: Database.Database;
    try {
      connection = new Database(lockFile, { timeout: 0 });
    } catch (err) {
      throw new StoreUnavailableError(named, new Error(`cannot create its lock file ${lockFile}: ${messageOf(err)}`));
    }
    try {
      // The journal in memory: the lock file stays one empty file, with no -journal beside it.
      connection.pragma('journal_mode = MEMORY');
      connection.exec('BEGIN EXCLUSIVE');
      // Opened read-only (a lock file this process may not write), it would hold a shared lock only,
      // which a second such process could share.
      if (!canWrite(connection)) throw new Error('this process may not write it');
    } catch (err) {
      connection.close();
      if (isBusy(err)) throw new StoreLockedError(named, ...describeHolder(readNote(noteFile)));
      throw new StoreUnavailableError(named, new Error(`cannot take its lock ${lockFile}: ${messageOf(err)}`));
    }
    const lock = new WriterLock(connection, noteFile);
    lock.writeNote();
    return lock;
  }

  /** Releases the lock (after the database is closed). The note goes first, while the lock is still held. */
  release(): void {
    if (!this.connection.open) return;
    fs.rmSync(this.noteFile, { force: true });
    this.connection.close(); // ends the open transaction: the lock is free
  }

  private writeNote(): void {
    const note: HolderNote = { pid: process.pid, host: os.hostname(), since: new Date().toISOString() };
    // Written whole, then renamed: a refused opener never reads half a note. A note that cannot be
    // written only leaves refused openers without a pid to show.
    const partial = `${this.noteFile}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(partial, `${JSON.stringify(note)}\n`);
      fs.renameSync(partial, this.noteFile);
    } catch {
      fs.rmSync(partial, { force: true });
    }
  }
}

/**
 * The note of the live holder, if it has written one. A note left by a holder that died (SIGKILL
 * leaves it behind) names a process that no longer runs: the new holder is about to replace it, so
 * it is read again a few times, then given up on.
 */
function readNote(noteFile: string): HolderNote | undefined {
  for (let attempt = 0; attempt < 5; attempt++) {
    const note = parseNote(noteFile);
    if (note && (note.host !== os.hostname() || isRunning(note.pid))) return note;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  return undefined;
}

function parseNote(noteFile: string): HolderNote | undefined {
  try {
    const note = JSON.parse(fs.readFileSync(noteFile, 'utf8')) as Partial<HolderNote>;
    return typeof note.pid === 'number' ? { pid: note.pid, host: String(note.host ?? ''), since: String(note.since ?? '') } : undefined;
  } catch {
    return undefined;
  }
}

function describeHolder(note: HolderNote | undefined): [number | undefined, { host?: string; since?: string }] {
  if (!note) return [undefined, {}];
  // The host is worth saying only when it is not this one (a file on a shared disk).
  return [note.pid, { ...(note.host && note.host !== os.hostname() ? { host: note.host } : {}), ...(note.since ? { since: note.since } : {}) }];
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // it runs, as another user
  }
}

/** The file's real path; for a file not created yet, its directory's real path and its name. */
function realPath(file: string): string {
  const absolute = path.resolve(file);
  try {
    return fs.realpathSync(absolute);
  } catch {
    return path.join(fs.realpathSync(path.dirname(absolute)), path.basename(absolute));
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
