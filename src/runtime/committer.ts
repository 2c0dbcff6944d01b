import type { Store, Write, WriteResult } from '../persistence/store.js';

/**
 * Group commit: writes enqueued in the same turn of the event loop (across all agents) go to the
 * store in one transaction. Batches are committed one after another, so the order of writes is kept.
 */
export class GroupCommitter {
  private pending: { write: Write; resolve: (result: WriteResult) => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;
  private running: Promise<void> = Promise.resolve();
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
        setImmediate(() => {
          this.running = this.running.then(() => this.flush());
        });
      }
    });
  }

  /** Resolves once everything enqueued so far is committed (or failed). */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.scheduled) {
      await new Promise((resolve) => setImmediate(resolve));
      await this.running;
    }
    await this.running;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      const started = performance.now();
      let results: WriteResult[];
      try {
        results = await this.store.commit(batch.map((p) => p.write));
      } catch (err) {
        for (const p of batch) p.reject(err);
        continue;
      }
      this.onBatch?.(batch.length, performance.now() - started);
      batch.forEach((p, i) => {
        const result = results[i];
        if (result && 'refused' in result) p.reject(result.refused);
        else p.resolve(result);
      });
    }
  }
}
