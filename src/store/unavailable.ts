/**
 * Which driver errors mean "the store cannot take writes now" (a full disk, a read-only or vanished
 * file, a failing disk, a database out of reach), as opposed to a bug or a refused write. Both
 * stores map their errors through here, and so does the HTTP edge for a read that failed the same
 * way: such a failure is a 503 the caller may retry, and the runtime holds its agents' writes
 * instead of failing them (runtime/committer.ts).
 *
 * Matched on the codes the drivers put on their errors (better-sqlite3's `SQLITE_*`, pg's
 * SQLSTATE, Node's errno), never on a driver class: this module loads neither driver.
 */
import { StoreUnavailableError, type StoreUnavailableReason } from '../core/errors.js';

/**
 * The error as a StoreUnavailableError when it is one of those failures (its cause kept); undefined
 * otherwise. `errno: false` leaves Node's file-system codes out, for an error that may not come
 * from the store at all (the HTTP edge: an ENOENT there may be anything's).
 */
export function asStoreUnavailable(err: unknown, options: { errno?: boolean } = {}): StoreUnavailableError | undefined {
  if (err instanceof StoreUnavailableError) return err;
  const reason = reasonOf(err, options.errno ?? true);
  if (!reason) return undefined;
  const detail = err instanceof Error ? err.message : String(err);
  return StoreUnavailableError.because(reason, `The store cannot take writes now (${reason}): ${detail}`, err);
}

/** Throws `err`, as a StoreUnavailableError when it is one of those failures. */
export function rethrowClassified(err: unknown): never {
  throw asStoreUnavailable(err) ?? err;
}

function reasonOf(err: unknown, errno: boolean): StoreUnavailableReason | undefined {
  // The failure may be wrapped (a flusher's error around the fsync's errno): a few causes deep.
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const fromCode = typeof code === 'string' ? (sqliteReason(code) ?? postgresReason(code) ?? socketReason(code) ?? (errno ? fileReason(code) : undefined)) : undefined;
    const reason = fromCode ?? postgresMessageReason(e.message);
    if (reason) return reason;
  }
  return undefined;
}

/** better-sqlite3: the (extended) result code, e.g. SQLITE_FULL, SQLITE_READONLY_DBMOVED, SQLITE_IOERR_WRITE. */
function sqliteReason(code: string): StoreUnavailableReason | undefined {
  if (!code.startsWith('SQLITE_')) return undefined;
  if (code === 'SQLITE_FULL') return 'disk_full';
  // SQLite's own word for a database file moved or deleted since it was opened.
  if (code === 'SQLITE_READONLY_DBMOVED') return 'file_gone';
  if (code.startsWith('SQLITE_READONLY')) return 'read_only';
  if (code.startsWith('SQLITE_IOERR')) return 'io_error';
  // A file it needs (the WAL, the -shm) cannot be opened any more.
  if (code.startsWith('SQLITE_CANTOPEN')) return 'file_gone';
  return undefined;
}

/** Node's errno codes from the file system (the WAL's fsync, the database file's stat). */
function fileReason(code: string): StoreUnavailableReason | undefined {
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return 'disk_full';
    case 'EROFS':
    case 'EACCES':
    case 'EPERM':
      return 'read_only';
    case 'EIO':
      return 'io_error';
    case 'ENOENT':
      return 'file_gone';
    default:
      return undefined;
  }
}

/** Node's errno codes from a socket: the database connection. */
function socketReason(code: string): StoreUnavailableReason | undefined {
  switch (code) {
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EPIPE':
      return 'database_unreachable';
    default:
      return undefined;
  }
}

/** PostgreSQL's SQLSTATE (five characters). */
function postgresReason(code: string): StoreUnavailableReason | undefined {
  if (!/^[0-9A-Z]{5}$/.test(code)) return undefined;
  // Class 08: connection exception; 57P01-03: the server shuts down, crashed, or does not take connections yet;
  // 53300: too many connections.
  if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') return 'database_unreachable';
  if (code === '53100') return 'disk_full';
  // A hot standby (or default_transaction_read_only): it answers, but takes no writes.
  if (code === '25006') return 'read_only';
  if (code === '58030') return 'io_error';
  return undefined;
}

/** pg reports a connection that ends or never comes with plain Errors that carry no code. */
function postgresMessageReason(message: string): StoreUnavailableReason | undefined {
  return /^Connection terminated|^timeout expired|connection error and is not queryable/.test(message) ? 'database_unreachable' : undefined;
}
