import type { Store, Write } from '../store/store.js';

/** Thrown by every store call a crashed process still attempts. */
export class ProcessCrashedError extends Error {
  constructor() {
    super('This process crashed (simulated by a path test): the store no longer takes its calls.');
    this.name = 'ProcessCrashedError';
  }
}

/**
 * A store that can be cut off as a `kill -9` would: from `crash()` on, nothing the old process does
 * reaches the database. No graceful `runtime.close()` (which would stop the actors, abort their
 * calls and drain the commit queue first): what was committed stays, the rest is lost, and the
 * connection is left as it was (no WAL checkpoint), exactly what a restarted process finds.
 */
export function crashableStore(store: Store): { store: Store; crash(): void; crashBeforeCheckpoint(seq: number): void } {
  let crashed = false;
  let crashAtSeq = Infinity;
  // A dead process's locks go with it (the kernel drops them): a SQLite store's writer lock too, so
  // that the restarted "process" can open the file. Its database connection is left as it was.
  const die = () => {
    crashed = true;
    (store as { releaseWriterLock?: () => void }).releaseWriterLock?.();
  };
  const fenced = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (!crashed && property === 'commit' && reachesCheckpoint(args[0], crashAtSeq)) die();
        if (crashed) return Promise.reject(new ProcessCrashedError());
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store: fenced,
    crash() {
      die();
    },
    /**
     * Crashes the process the moment it tries to commit checkpoint `seq` or a later one: for a
     * transition the runtime makes on its own (a commit barrier's), the only way to crash between
     * the checkpoint before it and its own.
     */
    crashBeforeCheckpoint(seq: number) {
      crashAtSeq = seq;
    },
  };
}

function reachesCheckpoint(writes: unknown, seq: number): boolean {
  return Array.isArray(writes) && (writes as Write[]).some((w) => w.kind === 'checkpoint' && w.seq >= seq);
}
