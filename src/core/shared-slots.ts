/**
 * The LLM concurrency limit of a store shared by many processes (Postgres): a call runs only while
 * it holds one of the store's slots, so the calls in flight of all processes together never pass
 * the limit. Each process's own gate (llm-gate.ts) still decides its order and adapts its limit;
 * a slot is taken once the gate lets a call go, and given back when it ends.
 */
export interface SharedLlmSlots {
  /**
   * Takes a free slot of the first `limit`, held at most `holdMs` (a process that dies frees its
   * slots when that runs out); undefined when all are held.
   */
  tryTake(limit: number, holdMs: number): Promise<number | undefined>;
  give(slot: number): Promise<void>;
}

/**
 * The tools' concurrency limits of a store shared by many processes (Postgres): one set of slots per
 * pool (an HTTP tool's URL, an MCP server, a code tool's name), so the calls of one tool in flight
 * across all processes never pass its limit. Each process's own line (tool-limits.ts) still decides
 * the order; a slot is taken once the call's turn comes there, and given back when it ends.
 */
export interface SharedToolSlots {
  /** As `SharedLlmSlots.tryTake`, within `pool`. */
  tryTake(pool: string, limit: number, holdMs: number): Promise<number | undefined>;
  /** Holds a slot `holdMs` longer from now: a tool call has no end it must keep to, so its slot is renewed while it runs. */
  renew(pool: string, slot: number, holdMs: number): Promise<void>;
  give(pool: string, slot: number): Promise<void>;
}

/** How a waiting call sleeps between two tries, at first and at most (doubling, with jitter). */
const FIRST_WAIT_MS = 10;
const LONGEST_WAIT_MS = 200;

/**
 * Waits for a slot: tries, then sleeps (jittered, doubling up to 200 ms) and tries again, until it
 * gets one or `signal` aborts. Polling, not LISTEN/NOTIFY: slots free up every few hundred ms under
 * load, and a missed notification would leave a call waiting for nothing.
 */
export async function takeSlot(slots: Pick<SharedLlmSlots, 'tryTake'>, limit: number, holdMs: number, signal: AbortSignal | undefined, random: () => number = Math.random): Promise<number> {
  let waitMs = FIRST_WAIT_MS;
  for (;;) {
    signal?.throwIfAborted();
    const slot = await slots.tryTake(limit, holdMs);
    if (slot !== undefined) return slot;
    await sleep(waitMs / 2 + random() * (waitMs / 2), signal);
    waitMs = Math.min(LONGEST_WAIT_MS, waitMs * 2);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
