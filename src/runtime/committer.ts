import type { Store, Write, WriteResult } from '../store/store.js';

/**
 * Group commit: writes enqueued in the same turn of the event loop (across all agents) go to the
 * store in one transaction. Batches are pipelined: the next batch is handed to the store while the
 * previous one is still being made durable (its fsync runs off the main thread), so agents whose
 * writes are not in that fsync keep moving. The store applies batches in call order and resolves
 * them in that order, so the order of writes is kept and nothing resolves before it is durable.
 */
export class GroupCommitter {
  private pending: { write: Write; resolve: (result: WriteResult) => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;
  /** The newest batch handed to the store; batches settle in order, so it settles last. */
  private newest: Promise<unknown> = Promise.resolve();
  /** Latency of each batch, for metrics. */
  onBatch?: (size: number, ms: number) => void;

  constructor(
    private readonly store: Store,
    private readonly maxBatch = 1000,
  ) {}

  /** Resolves once the write is committed, with what the store says of it (a refused event rejects). */
  enqueue(write: Write): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Resolves once everything enqueued so far is committed (or failed). */
  async drain(): Promise<void> {
    do {
      await new Promise((resolve) => setImmediate(resolve));
      await this.newest.catch(() => undefined);
    } while (this.pending.length > 0 || this.scheduled);
  }

  private flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      const started = performance.now();
      const committed = Promise.resolve().then(() => this.store.commit(batch.map((p) => p.write)));
      this.newest = committed.then(
        (results) => {
          this.onBatch?.(batch.length, performance.now() - started);
          batch.forEach((p, i) => {
            const result = results[i];
            if (result && 'refused' in result) p.reject(result.refused);
            else p.resolve(result);
          });
        },
        (err: unknown) => {
          for (const p of batch) p.reject(err);
        },
      );
    }
  }
}
