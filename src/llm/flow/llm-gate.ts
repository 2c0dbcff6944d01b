/**
 * One gate in front of the LLM for every agent of a runtime: how many calls may be in flight at
 * once, how many start per minute, how many tokens they spend per minute.
 *
 * - Fair: waiting calls are served in the order their agents started asking (`since`: when the
 *   agent's step began, which a restored agent knows from its checkpoint, so a restart does not
 *   send it to the back of the line). An agent asks one call at a time, so first come first served
 *   over calls is first come first served over agents: none starves.
 * - Adaptive: the provider's 429 halves the concurrency limit for everyone (at most once per
 *   "window": a refusal of a call granted before the last decrease says nothing new, the wave of
 *   refusals one burst causes halves the limit once), and every success raises it by 1/limit
 *   (additive increase, as TCP's congestion window does) up to the configured ceiling.
 * - Rates: requests per minute are spaced evenly (60000/rpm ms apart: providers enforce their
 *   minute quotas over shorter windows, so a minute's requests sent in one burst are refused);
 *   tokens per minute are a bucket refilled continuously, charged an estimate when a call starts
 *   and corrected with the usage the provider reports when it ends.
 *
 * The gate decides only when a call may start; what a refused call does next is `gatedCall`'s.
 */
export interface LlmGateOptions {
  /** Calls in flight at once, at most (the adaptive limit starts here and never goes above). */
  concurrency: number;
  /** Requests started per minute, at most; unset: no limit. */
  rpm?: number;
  /** Tokens spent per minute, at most; unset: no limit. */
  tpm?: number;
  /** The clock, in ms (tests). */
  now?: () => number;
}

/** A call waiting for capacity. */
export interface LlmTicket {
  agentId: string;
  /** When the agent started asking (ms since the epoch): the queue's order. Defaults to now. */
  since?: number;
  /** The tokens this call is expected to spend (charged against `tpm` until its usage is known). */
  tokens?: number;
  /** Not before this time (ms since the epoch): a call the provider asked to wait. */
  notBefore?: number;
}

/** The right to run one call. Exactly one of `release` or `throttled` ends it. */
export interface LlmPermit {
  /** The call ended (answered or failed for another reason); `tokens`: what it really spent, if known. */
  release(spent?: { tokens?: number }): void;
  /** The provider refused the call for its rate (429): lowers the limit for everyone. */
  throttled(): void;
}

interface Waiter extends Required<Omit<LlmTicket, 'notBefore'>> {
  notBefore: number;
  arrival: number;
  resolve: (permit: LlmPermit) => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

const MIN_LIMIT = 1;

export class LlmGate {
  readonly ceiling: number;
  private readonly rpm: number | undefined;
  private readonly tpm: number | undefined;
  private readonly now: () => number;
  /** The adaptive concurrency limit (fractional: it grows by 1/limit per success). */
  private limitNow: number;
  /** Bumped at every decrease: a permit granted before the last one does not decrease it again. */
  private epoch = 0;
  private running = 0;
  private arrivals = 0;
  private readonly queue: Waiter[] = [];
  /** The agents with calls in the queue, with how many (views ask for one agent: no scan). */
  private readonly waitingAgents = new Map<string, number>();
  /** When the next request may start under `rpm`. */
  private nextRequestAt = 0;
  /** Tokens available under `tpm` at `tokensAt` (may be negative: a call spent more than estimated). */
  private tokens: number;
  private tokensAt: number;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private peak = 0;
  private refusals = 0;

  constructor(options: LlmGateOptions) {
    if (!(options.concurrency >= 1)) throw new RangeError('LLM concurrency must be at least 1.');
    this.ceiling = Math.floor(options.concurrency);
    this.rpm = options.rpm;
    this.tpm = options.tpm;
    this.now = options.now ?? Date.now;
    this.limitNow = this.ceiling;
    this.tokens = this.tpm ?? 0;
    this.tokensAt = this.now();
  }

  /** Whether calls are charged tokens (a `tpm` limit): when not, nobody need estimate them. */
  get countsTokens(): boolean {
    return this.tpm !== undefined;
  }

  /** The concurrency limit now (adapted). */
  get limit(): number {
    return Math.max(MIN_LIMIT, Math.floor(this.limitNow));
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.running;
  }

  /** The most calls in flight at once so far. */
  get peakInFlight(): number {
    return this.peak;
  }

  /** Calls the provider refused for its rate (429) so far. */
  get throttled(): number {
    return this.refusals;
  }

  /** Calls waiting for capacity. */
  get queueDepth(): number {
    return this.queue.length;
  }

  /** Whether one of this agent's calls waits for capacity. */
  isWaiting(agentId: string): boolean {
    return this.waitingAgents.has(agentId);
  }

  /** Resolves with a permit once the call may start; rejects with the signal's reason if it aborts first. */
  acquire(ticket: LlmTicket, signal?: AbortSignal): Promise<LlmPermit> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<LlmPermit>((resolve, reject) => {
      const now = this.now();
      const waiter: Waiter = {
        agentId: ticket.agentId,
        since: ticket.since ?? now,
        tokens: Math.max(0, ticket.tokens ?? 0),
        notBefore: ticket.notBefore ?? 0,
        arrival: this.arrivals++,
        resolve,
        reject,
        signal,
        onAbort: undefined,
      };
      if (signal) {
        waiter.onAbort = () => {
          const at = this.queue.indexOf(waiter);
          if (at >= 0) this.dequeue(at);
          reject(abortReason(signal));
          this.pump();
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.enqueue(waiter);
      this.pump();
    });
  }

  /** Stops the gate's timer (the waiting calls stay waiting: their agents are stopping too). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  // --- internals --------------------------------------------------------------------------------

  private enqueue(waiter: Waiter): void {
    this.queue.splice(this.placeOf(waiter), 0, waiter);
    this.waitingAgents.set(waiter.agentId, (this.waitingAgents.get(waiter.agentId) ?? 0) + 1);
  }

  private dequeue(at: number): void {
    const [waiter] = this.queue.splice(at, 1);
    const left = (this.waitingAgents.get(waiter!.agentId) ?? 1) - 1;
    if (left > 0) this.waitingAgents.set(waiter!.agentId, left);
    else this.waitingAgents.delete(waiter!.agentId);
  }

  /** Binary search: after every waiter that started asking earlier (arrival order breaks ties). */
  private placeOf(waiter: Waiter): number {
    let low = 0;
    let high = this.queue.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      const other = this.queue[mid]!;
      if (other.since < waiter.since || (other.since === waiter.since && other.arrival < waiter.arrival)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Grants what capacity allows, oldest first; sets a timer for when more may be granted. */
  private pump(): void {
    const now = this.now();
    this.refillTokens(now);
    let wakeAt = Infinity;
    for (let i = 0; i < this.queue.length && this.running < this.limit; ) {
      const waiter = this.queue[i]!;
      if (waiter.notBefore > now) {
        // Asked by the provider to wait: the others may go meanwhile.
        wakeAt = Math.min(wakeAt, waiter.notBefore);
        i++;
        continue;
      }
      // Rates are first come first served: a waiter that does not fit holds the line, so a large
      // call is not overtaken forever by small ones.
      const readyAt = this.rateReadyAt(waiter, now);
      if (readyAt > now) {
        wakeAt = Math.min(wakeAt, readyAt);
        break;
      }
      this.dequeue(i);
      this.grant(waiter, now);
    }
    this.armTimer(wakeAt);
  }

  /** When the rates let this waiter start. */
  private rateReadyAt(waiter: Waiter, now: number): number {
    let at = now;
    if (this.rpm !== undefined) at = Math.max(at, this.nextRequestAt);
    if (this.tpm !== undefined) {
      // A call larger than a whole minute's tokens waits for a full bucket, not forever.
      const need = Math.min(waiter.tokens, this.tpm);
      if (this.tokens < need) at = Math.max(at, now + ((need - this.tokens) * 60_000) / this.tpm);
    }
    return at;
  }

  private grant(waiter: Waiter, now: number): void {
    if (waiter.signal && waiter.onAbort) waiter.signal.removeEventListener('abort', waiter.onAbort);
    this.running++;
    this.peak = Math.max(this.peak, this.running);
    if (this.rpm !== undefined) this.nextRequestAt = Math.max(this.nextRequestAt, now) + 60_000 / this.rpm;
    const charged = this.tpm === undefined ? 0 : waiter.tokens;
    this.tokens -= charged;
    const epoch = this.epoch;
    let ended = false;
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      this.running--;
      return true;
    };
    waiter.resolve({
      release: (spent) => {
        if (!end()) return;
        if (this.tpm !== undefined && spent?.tokens !== undefined) this.tokens -= spent.tokens - charged;
        this.limitNow = Math.min(this.ceiling, this.limitNow + 1 / this.limitNow);
        this.pump();
      },
      throttled: () => {
        if (!end()) return;
        this.refusals++;
        // The refused call spent nothing: its estimate goes back.
        this.tokens += charged;
        if (epoch === this.epoch) {
          this.epoch++;
          this.limitNow = Math.max(MIN_LIMIT, this.limitNow / 2);
        }
        this.pump();
      },
    });
  }

  private refillTokens(now: number): void {
    if (this.tpm === undefined) return;
    this.tokens = Math.min(this.tpm, this.tokens + ((now - this.tokensAt) * this.tpm) / 60_000);
    this.tokensAt = now;
  }

  private armTimer(at: number): void {
    if (at === Infinity || at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(0, at - this.now()),
    );
    this.timer.unref();
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The call was aborted while it waited for LLM capacity.', 'AbortError');
}
