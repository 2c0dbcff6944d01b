import fs from 'node:fs';
import path from 'node:path';
import { StoreUnavailableError } from '../../core/errors.js';

/**
 * Which file a SQLite connection writes: the device and inode of the path when it was opened.
 *
 * SQLite keeps writing to a database file that was deleted (or replaced by another at its path):
 * its open descriptor still points at the old inode, every commit succeeds, and all of it is gone
 * at the next start, which opens whatever is at the path. So the store checks, before each write
 * transaction, that the path still names the file it opened, and refuses to write (`file_gone`)
 * otherwise: nothing it acknowledges can then vanish that way. The check is one `stat` (~2 µs),
 * beside a transaction that costs far more. Moving the same file back makes the store writable again.
 */
export class FileIdentity {
  private constructor(
    private readonly file: string,
    private readonly dev: number,
    private readonly ino: number,
  ) {}

  /** The identity of the file at `file` now; undefined for an in-memory database or a path with no file. */
  static of(file: string): FileIdentity | undefined {
    if (file === ':memory:' || file === '') return undefined;
    const resolved = path.resolve(file);
    try {
      const stat = fs.statSync(resolved);
      return new FileIdentity(resolved, stat.dev, stat.ino);
    } catch {
      return undefined;
    }
  }

  /** Throws `file_gone` unless the path still names the file opened. */
  assertInPlace(): void {
    let stat: fs.Stats | undefined;
    try {
      stat = fs.statSync(this.file, { throwIfNoEntry: false });
    } catch (err) {
      throw this.gone(err);
    }
    this.compare(stat);
  }

  /** The same check off the main thread, for a periodic probe. */
  async check(): Promise<void> {
    let stat: fs.Stats | undefined;
    try {
      stat = await fs.promises.stat(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw this.gone(err);
    }
    this.compare(stat);
  }

  private compare(stat: fs.Stats | undefined): void {
    if (!stat) throw this.gone(undefined, 'it was deleted');
    if (stat.dev !== this.dev || stat.ino !== this.ino) throw this.gone(undefined, 'another file took its place');
  }

  private gone(cause: unknown, what = 'it cannot be found'): StoreUnavailableError {
    return StoreUnavailableError.because(
      'file_gone',
      `The database file ${this.file} is not the one this process opened (${what}): nothing more is written, so that nothing acknowledged is lost with it. Put the file back, or restart the process.`,
      cause,
    );
  }
}
