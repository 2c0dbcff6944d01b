import type Database from 'better-sqlite3';

/**
 * Whether SQLite can write through this connection. SQLite opens a file it may not write (mode
 * 0444, a read-only mount, an immutable file) read-only without a word, and better-sqlite3's
 * `readonly` only echoes the option it was given: such a store would come up healthy and then fail
 * every write. So a write is tried and undone: a table created in a savepoint, rolled back before
 * anything reaches the file (nor the WAL). Works inside an open transaction too (the writer lock's).
 */
export function canWrite(db: Database.Database): boolean {
  db.exec('savepoint writable_probe');
  try {
    db.exec('create table writable_probe (x)');
    return true;
  } catch (err) {
    if (isReadOnly(err)) return false;
    throw err;
  } finally {
    db.exec('rollback to writable_probe; release writable_probe');
  }
}

function isReadOnly(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_READONLY');
}
