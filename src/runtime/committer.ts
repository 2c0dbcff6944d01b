import { StoreUnavailableError } from '../core/errors.js';
import { silentLogger } from '../core/logger.js';
import type { Store, Write, WriteResult } from '../store/store.js';
import { asStoreUnavailable } from '../store/unavailable.js';
import { StoreHealth } from './store-health.js';

/**
 * Who waits for a write. An `agent`'s writes (its checkpoints, consumes, effects, reports) are held
 * while the store takes none and committed once it does: the agent is not reloaded, so what it has
 * in memory (an LLM answer) is kept, and the effects its commits gate wait. A `request`'s write
 * fails at once with the StoreUnavailableError (a 503): it was not acknowledged, so nothing is lost.
 */
export type WriteOrigin = 'agent' | 'request';

interface Queued {
  write: Write;
  origin: WriteOrigin;
  resolve: (result: WriteResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: writes enqueued in the same turn of the event loop (across all agents) go to the
 * store in one transaction. Batches are pipelined: the next batch is handed to the store while the
 * previous one is still being made durable (its fsync runs off the main thread), so agents whose
 * writes are not in that fsync keep moving. The store applies batches in call order and resolves
 * them in that order, so the order of writes is kept and nothing resolves before it is durable.
 *
 * When the store cannot take a batch (a StoreUnavailableError: disk full, file read-only or gone,
 * database out of reach), its agent writes are held, in order, and retried as one queue with the
 * writes that came meanwhile, after an exponential backoff (store-health.ts); its request writes
 * are rejected. While writes are held nothing else is handed to the store, so no write of an agent
 * gets ahead of its held ones, and requests fail fast. A failure of another kind keeps the old
 * rule: the batch's writes are rejected (a host then reloads its agent from its last checkpoint).
 */
export class GroupCommitter {
  private pending: Queued[] = [];
  private scheduled = false;
  /** The newest batch handed to the store; batches settle in order, so it settles last. */
  private newest: Promise<unknown> = Promise.resolve();
  /** Agents' writes the store could not take, in write order, until a retry commits them. */
  private held: Queued[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  /** The retry under way (it took the held writes with it). */
  private retrying: Promise<void> | undefined;
  private holdingWaiters: (() => void)[] = [];
  private closed = false;
  /** Latency of each batch, for metrics. */
  onBatch?: (size: number, ms: number) => void;
  /** Agent writes held after an attempt the store could not take (each failed retry counts them again). */
  onHeld?: (writes: number) => void;
  /** A retry of held writes ended: committed, or the store still takes none. */
  onRetry?: (outcome: 'committed' | 'unavailable') => void;

  constructor(
    private readonly store: Store,
    readonly health: StoreHealth = new StoreHealth(silentLogger),
    private readonly maxBatch = 1000,
  ) {}

  /** Writes are held: the store failed them and no retry has got them through yet. */
  get holding(): boolean {
    return this.held.length > 0 || this.retrying !== undefined;
  }

  /** Writes held now, for gauges. */
  get heldWrites(): number {
    return this.held.length;
  }

  /**
   * Resolves once the write is committed, with what the store says of it (a refused event rejects).
   * A `request` write rejects at once while the store is known unavailable.
   */
  enqueue(write: Write, origin: WriteOrigin = 'request'): Promise<WriteResult> {
    if (origin === 'request') {
      const refusal = this.refusal();
      if (refusal) return Promise.reject(refusal);
    }
    return new Promise<WriteResult>((resolve, reject) => {
      this.pending.push({ write, origin, resolve, reject });
      // While writes are held, the retry takes these after them.
      if (!this.holding) this.schedule();
    });
  }

  /**
   * Why a request may not write now: writes are held, or the store was found unavailable and its
   * backoff has not passed (once it has, the request goes through and is the probe). Undefined: it may.
   */
  refusal(): StoreUnavailableError | undefined {
    if (this.health.ready) return undefined;
    if (!this.holding && this.health.msUntilRetry() === 0) return undefined;
    return this.health.refusal();
  }

  /** Throws `refusal()`, for a command that writes outside the committer (a spawn's row, a fork). */
  assertAccepting(): void {
    const refusal = this.refusal();
    if (refusal) throw refusal;
  }

  /**
   * For a request's write made outside the committer (a spawn's row, a fork): throws its error, a
   * StoreUnavailableError saying when to try again when the store took it for one (the store is then
   * known unavailable: later requests fail fast until the backoff passes).
   */
  requestFailed(err: unknown): never {
    const unavailable = asStoreUnavailable(err);
    if (!unavailable || this.closed) throw err;
    throw this.holding ? (this.health.refusal() ?? unavailable) : this.health.failed(unavailable);
  }

  /** Resolves when the committer starts holding writes (at once if it is). */
  whenHolding(): Promise<void> {
    return this.holding ? Promise.resolve() : new Promise((resolve) => this.holdingWaiters.push(resolve));
  }

  /** Resolves once everything enqueued so far is committed (or failed); held writes are not waited for. */
  async drain(): Promise<void> {
    do {
      await new Promise((resolve) => setImmediate(resolve));
      await this.newest.catch(() => undefined);
      await this.retrying;
    } while ((this.pending.length > 0 || this.scheduled) && !this.holding);
  }

  /**
   * Forgets the held writes of an agent this process let go of (stopped, its lease lost, closing):
   * its next run restores from its last committed checkpoint, and a held checkpoint committed after
   * that would clash with the new run's. Events are kept: their keys make them safe to commit.
   */
  discard(agentId: string): void {
    if (!this.holding) return;
    const mine = (q: Queued) => q.origin === 'agent' && q.write.agentId === agentId && q.write.kind !== 'event';
    const dropped = [...this.held.filter(mine), ...this.pending.filter(mine)];
    if (dropped.length === 0) return;
    this.held = this.held.filter((q) => !mine(q));
    this.pending = this.pending.filter((q) => !mine(q));
    const why = this.health.refusal() ?? StoreUnavailableError.because('io_error', 'The store took no writes; the agent was let go.');
    for (const q of dropped) q.reject(why);
  }

  /**
   * No more holding: the writes held now (and those queued behind them) are rejected, not committed;
   * their agents restore from their last committed checkpoint when the process starts again.
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const waiting = this.held.length > 0 ? [...this.held.splice(0), ...this.pending.splice(0)] : [];
    const why = this.health.refusal() ?? StoreUnavailableError.because('io_error', 'The runtime closed while the store took no writes.');
    for (const q of waiting) q.reject(why);
    this.health.release();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.holding || this.pending.length === 0) return;
    // One batch per turn: a batch the store fails is known before the next one is handed over (a
    // SQLite transaction runs at once; Postgres fails the calls queued behind it), so no agent's
    // write can commit ahead of one of its writes being held.
    const batch = this.pending.splice(0, this.maxBatch);
    if (this.pending.length > 0) this.schedule();
    const started = performance.now();
    const committed = Promise.resolve().then(() => this.store.commit(batch.map((q) => q.write)));
    this.newest = committed.then(
      (results) => {
        this.onBatch?.(batch.length, performance.now() - started);
        settle(batch, results);
        // A request that went through after the backoff was the probe: the store takes writes.
        if (!this.holding) this.health.succeeded();
      },
      (err: unknown) => this.failed(batch, err),
    );
  }

  /** A batch failed: held (agent writes) and rejected (requests) when the store is unavailable, rejected otherwise. */
  private failed(batch: Queued[], err: unknown): void {
    const unavailable = asStoreUnavailable(err);
    if (!unavailable || this.closed) {
      for (const q of batch) q.reject(err);
      return;
    }
    // A batch handed over before the first failure was known fails with it: one failure, not one per batch.
    this.hold(batch, this.holding ? (this.health.refusal() ?? unavailable) : this.health.failed(unavailable));
  }

  /** Appends the batch's agent writes to the held ones (batches fail in order: so are they), rejects its requests. */
  private hold(batch: Queued[], failure: StoreUnavailableError): void {
    let held = 0;
    for (const q of batch) {
      if (q.origin === 'agent') {
        this.held.push(q);
        held++;
      } else q.reject(failure);
    }
    if (held === 0) return;
    this.onHeld?.(held);
    for (const wake of this.holdingWaiters.splice(0)) wake();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.retrying || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retrying = this.retry().finally(() => {
        this.retrying = undefined;
        if (this.held.length > 0) this.scheduleRetry();
        else if (this.pending.length > 0) this.schedule();
      });
    }, this.health.msUntilRetry());
    // The retry is no reason to keep a process alive that has nothing else to do.
    this.retryTimer.unref();
  }

  /**
   * Commits the held writes, then those that came meanwhile, in order, in batches of `maxBatch`,
   * one after the other. The first batch the store still cannot take is held again with every
   * batch after it; the store is ready again once all went through.
   */
  private async retry(): Promise<void> {
    // Batches handed over before the first failure settle first: theirs are held before the queue is taken.
    await this.newest.catch(() => undefined);
    const queue = [...this.held.splice(0), ...this.pending.splice(0)];
    // All of them discarded (their agents let go): nothing proves the store is back; the probe will.
    if (queue.length === 0) return;
    for (let i = 0; i < queue.length; i += this.maxBatch) {
      const batch = queue.slice(i, i + this.maxBatch);
      const started = performance.now();
      let results: WriteResult[];
      try {
        results = await this.store.commit(batch.map((q) => q.write));
      } catch (err) {
        const unavailable = asStoreUnavailable(err);
        if (unavailable && this.closed) {
          // Closing: nothing more is held, and the rest is not tried.
          for (const q of queue.slice(i)) q.reject(err);
          return;
        }
        if (unavailable) {
          this.onRetry?.('unavailable');
          this.hold(queue.slice(i), this.health.failed(unavailable));
          return;
        }
        // The store answered, with another error: the old rule for this batch (its agents reload).
        for (const q of batch) q.reject(err);
        continue;
      }
      this.onBatch?.(batch.length, performance.now() - started);
      settle(batch, results);
    }
    this.onRetry?.('committed');
    this.health.succeeded();
  }
}

function settle(batch: readonly Queued[], results: readonly WriteResult[]): void {
  batch.forEach((q, i) => {
    const result = results[i];
    if (result && 'refused' in result) q.reject(result.refused);
    else q.resolve(result);
  });
}
