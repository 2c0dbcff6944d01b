import fs from 'node:fs';
import path from 'node:path';
import { StoreUnavailableError } from '../../core/errors.js';

/**
 * `synchronous=FULL` without blocking the event loop.
 *
 * In WAL mode, FULL differs from NORMAL by one fsync of the WAL file at every commit (NORMAL syncs
 * only around checkpoints, which keeps the file consistent across a power loss but may lose the
 * last commits). better-sqlite3 runs that fsync on the main thread, where it stalls every agent for
 * the length of a disk flush (measured: a fifth of the agent loop's time at FULL). So the store
 * runs SQLite at NORMAL and calls `flush()` after each write transaction: the same fsync, on libuv's
 * thread pool, awaited before the commit is acknowledged. Agents keep computing meanwhile, and the
 * commits made during one fsync share the next.
 *
 * A failed fsync leaves durability unknown (the kernel may have dropped the dirty pages), so the
 * flusher refuses every later flush with the same error: nothing more is acknowledged until the
 * process restarts and SQLite recovers the file.
 */
export class WalFlusher {
  private fd: number | undefined;
  private inFlight: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly walFile: string,
    private readonly fsync: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void = fs.fsync,
  ) {}

  /** Makes the WAL file's directory entry durable; once, after the WAL file exists. */
  syncDirectory(): void {
    const dir = fs.openSync(path.dirname(this.walFile), 'r');
    try {
      fs.fsyncSync(dir);
    } finally {
      fs.closeSync(dir);
    }
  }

  /** Throws the failure of an earlier fsync: after one, nothing more is written. */
  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  /** Resolves once everything committed before the call is on disk. */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.inFlight) {
      this.inFlight = this.fsyncOnce().finally(() => {
        this.inFlight = undefined;
      });
      return this.inFlight;
    }
    // The fsync under way may have started before this caller's commit: one more follows it,
    // shared by every caller that arrives until it starts.
    this.queued ??= this.inFlight
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.flush();
      });
    return this.queued;
  }

  /** Waits for the fsyncs under way, then closes the file. */
  async close(): Promise<void> {
    await this.queued?.catch(() => undefined);
    await this.inFlight?.catch(() => undefined);
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private fsyncOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      let fd: number;
      try {
        // Read-write although nothing is written: Windows flushes only handles opened for writing.
        // Closing it (at close()) releases no SQLite lock: SQLite locks the database and -shm files, not the WAL.
        fd = this.fd ??= fs.openSync(this.walFile, 'r+');
      } catch (err) {
        reject(this.fail(err));
        return;
      }
      this.fsync(fd, (err) => (err ? reject(this.fail(err)) : resolve()));
    });
  }

  private fail(cause: unknown): Error {
    // io_error whatever the errno: unlike a full disk, this does not pass when space is freed.
    this.failure ??= StoreUnavailableError.because(
      'io_error',
      `fsync of ${this.walFile} failed, so recent commits may not be durable; this process acknowledges nothing more (restart it)`,
      cause,
    );
    return this.failure;
  }
}
