/**
 * Whether the store takes writes, as this process last found out: from its commits (the committer
 * reports each one that failed for a store reason and each that got through) and from a probe.
 * While it does not, requests fail fast (a 503 with `Retry-After`), agents' writes are held and
 * retried after an exponential backoff (runtime/committer.ts), and `/readyz` says why.
 */
import { backoffDelay, type BackoffOptions } from '../core/backoff.js';
import { StoreUnavailableError, type StoreUnavailableReason } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { nextRandom } from '../core/random.js';
import type { Store } from '../store/store.js';
import { asStoreUnavailable } from '../store/unavailable.js';

/** The defaults: a first retry after 125-250 ms, then doubling, never more than 8 s apart. */
export const STORE_RETRY: BackoffOptions = { baseDelayMs: 250, maxDelayMs: 8_000 };

export interface StoreRetryOptions extends Partial<BackoffOptions> {
  /** Seed of the jitter (tests pin it); default: drawn at start. */
  seed?: number;
}

/** What `/readyz` and the metrics show. */
export type StoreReadiness =
  | { ready: true }
  | { ready: false; reason: StoreUnavailableReason; message: string; since: string; attempts: number; retryAfterSeconds: number };

export class StoreHealth {
  private down: { error: StoreUnavailableError; since: number; attempts: number; nextTryAt: number } | undefined;
  private readonly backoff: BackoffOptions;
  private randomState: number;
  private waiters: (() => void)[] = [];
  /** Told on each change between ready and unavailable (not on each failed retry). */
  onChange?: (ready: boolean) => void;

  constructor(
    private readonly log: Logger,
    options: StoreRetryOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.backoff = { baseDelayMs: options.baseDelayMs ?? STORE_RETRY.baseDelayMs, maxDelayMs: options.maxDelayMs ?? STORE_RETRY.maxDelayMs };
    this.randomState = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  }

  get ready(): boolean {
    return this.down === undefined;
  }

  readiness(): StoreReadiness {
    const down = this.down;
    if (!down) return { ready: true };
    return {
      ready: false,
      reason: down.error.reason,
      message: down.error.message,
      since: new Date(down.since).toISOString(),
      attempts: down.attempts,
      retryAfterSeconds: this.retryAfterSeconds(),
    };
  }

  /**
   * A write or a probe failed for a store reason: unavailable (still), and the next try is a longer
   * backoff away. Returns the error saying when to try again. Logged once on the change to
   * unavailable (and when the reason changes), never per retry.
   */
  failed(err: StoreUnavailableError): StoreUnavailableError {
    const now = this.now();
    const previous = this.down;
    const attempts = (previous?.attempts ?? 0) + 1;
    const { value, state } = nextRandom(this.randomState);
    this.randomState = state;
    this.down = { error: err, since: previous?.since ?? now, attempts, nextTryAt: now + backoffDelay(attempts, this.backoff, value) };
    if (!previous) {
      this.log.error(
        { reason: err.reason, err },
        "the store takes no writes: requests get 503 store_unavailable, agents' writes are held and retried with backoff",
      );
      this.onChange?.(false);
    } else if (previous.error.reason !== err.reason) {
      this.log.warn({ reason: err.reason, was: previous.error.reason, err }, 'the store still takes no writes, for another reason');
    }
    return err.retryingIn(this.msUntilRetry());
  }

  /** A write or a write probe got through: ready again (logged once). */
  succeeded(): void {
    const down = this.down;
    if (!down) return;
    this.down = undefined;
    this.log.info({ reason: down.error.reason, downMs: this.now() - down.since, attempts: down.attempts }, 'the store takes writes again');
    this.onChange?.(true);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Until the next try: 0 when ready, or when the backoff has passed. */
  msUntilRetry(): number {
    return this.down ? Math.max(0, this.down.nextTryAt - this.now()) : 0;
  }

  /** `Retry-After` in whole seconds (at least 1: a client told 0 would come straight back). */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.msUntilRetry() / 1000));
  }

  /** The error a request gets now while the store is known unavailable; undefined when it may try. */
  refusal(): StoreUnavailableError | undefined {
    const down = this.down;
    if (!down) return undefined;
    return down.error.retryingIn(Math.max(1000, this.msUntilRetry()));
  }

  /** Resolves once the store is ready (at once when it is). */
  whenReady(): Promise<void> {
    return this.down ? new Promise((resolve) => this.waiters.push(resolve)) : Promise.resolve();
  }

  /** Wakes every `whenReady` without a change: at close. */
  release(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

/**
 * The probe: about every second (unref'd), asks the store whether it can take writes (`store.probe`).
 * While healthy the quick check (SQLite: is the file still the one opened?); while unavailable with
 * no held write to retry, once the backoff has passed, the write check. While writes are held, their
 * retry is the probe and this one waits.
 */
export class StoreProbe {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly health: StoreHealth,
    /** The committer holds writes: their retry probes the store. */
    private readonly holding: () => boolean,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  /** Probes once now (a read-only file at start shows at once), then every interval. */
  async start(): Promise<void> {
    if (!this.store.probe) return;
    this.running = this.probeOnce('write');
    await this.running;
    this.running = undefined;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
        this.schedule();
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.holding()) return;
    if (this.health.ready) return this.probeOnce('quick');
    if (this.health.msUntilRetry() === 0) return this.probeOnce('write');
  }

  private async probeOnce(depth: 'quick' | 'write'): Promise<void> {
    try {
      await this.store.probe!(depth);
    } catch (err) {
      const unavailable = asStoreUnavailable(err);
      if (unavailable) this.health.failed(unavailable);
      // Busy, or anything else: no verdict; the commits will tell.
      else this.log.debug({ err }, 'the store probe failed without a verdict');
      return;
    }
    // A quick check passing says nothing of a store found unavailable by a write: only a write check does.
    if (depth === 'write' && !this.holding()) this.health.succeeded();
  }
}
