/**
 * One LLM call through the gate: waits for capacity, runs, and when the provider refuses it for
 * its rate (a transient 429) gives the capacity back, lowers the limit for everyone and asks again,
 * after the provider's Retry-After, keeping the call's place in the line. A refusal for rate is the
 * provider telling us to slow down, not a failure of the agent's step: it never reaches the chart,
 * so it does not use up the step's `maxAttempts` (those count other transient failures).
 */
import type { LlmGate, LlmTicket } from './llm-gate.js';
import { takeSlot, type SharedLlmSlots } from '../../core/shared-slots.js';

/** When a 429 says nothing of when to come back. */
const DEFAULT_RETRY_AFTER_MS = 1_000;
/** A provider asking for longer is asked again after this (its window may have ended early). */
const MAX_RETRY_AFTER_MS = 60_000;

export interface GatedCallOptions {
  /** The error is the provider refusing the call for its rate; with how long it asked to wait. */
  rateLimited: (err: unknown) => { retryAfterMs: number | undefined } | undefined;
  /** The tokens the call spent, from its result. */
  spent?: (result: unknown) => number | undefined;
  /** Each time a call is refused for rate (metrics). */
  onThrottled?: () => void;
  /** Seedable randomness for the jitter. */
  random?: () => number;
  /**
   * The store's slots, on a store many processes share: once the gate lets the call go, it also
   * takes one of the first `limit` slots (held at most `holdMs`), so all processes together keep
   * within the limit.
   */
  shared?: { slots: SharedLlmSlots; limit: number; holdMs: number; onUnavailable?: (err: unknown) => void };
}

export async function gatedCall<T>(
  gate: LlmGate,
  ticket: LlmTicket,
  signal: AbortSignal | undefined,
  call: () => Promise<T>,
  options: GatedCallOptions,
): Promise<T> {
  const since = ticket.since ?? Date.now();
  let notBefore = ticket.notBefore;
  for (;;) {
    const permit = await gate.acquire({ ...ticket, since, ...(notBefore === undefined ? {} : { notBefore }) }, signal);
    let slot: number | undefined;
    let result: T;
    try {
      slot = await takeSharedSlot(options.shared, signal);
      result = await call();
    } catch (err) {
      giveSharedSlot(options.shared, slot);
      const refusal = signal?.aborted ? undefined : options.rateLimited(err);
      if (!refusal) {
        permit.release();
        throw err;
      }
      permit.throttled();
      options.onThrottled?.();
      const waitMs = Math.min(MAX_RETRY_AFTER_MS, refusal.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS);
      // Jittered upwards: the calls refused together do not all come back in the same millisecond.
      notBefore = Date.now() + waitMs + Math.round((options.random ?? Math.random)() * waitMs * 0.2);
      continue;
    }
    giveSharedSlot(options.shared, slot);
    const tokens = options.spent?.(result);
    permit.release(tokens === undefined ? {} : { tokens });
    return result;
  }
}

/**
 * A slot of the store-wide limit, or none when the store cannot be asked (it is unreachable: the
 * call goes ahead within this process's own limit; its commit will wait for the store anyway).
 */
async function takeSharedSlot(shared: GatedCallOptions['shared'], signal: AbortSignal | undefined): Promise<number | undefined> {
  if (!shared) return undefined;
  try {
    return await takeSlot(shared.slots, shared.limit, shared.holdMs, signal);
  } catch (err) {
    if (signal?.aborted) throw err;
    shared.onUnavailable?.(err);
    return undefined;
  }
}

function giveSharedSlot(shared: GatedCallOptions['shared'], slot: number | undefined): void {
  if (!shared || slot === undefined) return;
  // Not awaited: a slot not given back frees itself when its hold runs out.
  shared.slots.give(slot).catch((err: unknown) => shared.onUnavailable?.(err));
}

/** How the runtime reads an LLM actor's calls: a transient 429 is a refusal for rate; an answer's usage is what it spent. */
export const LLM_CALL_READING: Pick<GatedCallOptions, 'rateLimited' | 'spent'> = {
  rateLimited(err) {
    const e = err as { status?: unknown; kind?: unknown; retryAfterMs?: unknown } | null;
    // A 429 for an exhausted quota is permanent (waiting will not refill it): the chart hears of it.
    if (e === null || typeof e !== 'object' || e.status !== 429 || e.kind === 'permanent') return undefined;
    return { retryAfterMs: typeof e.retryAfterMs === 'number' ? e.retryAfterMs : undefined };
  },
  spent(result) {
    const total = (result as { usage?: { totalTokens?: unknown } } | null)?.usage?.totalTokens;
    return typeof total === 'number' && total > 0 ? total : undefined;
  },
};

/**
 * The tokens a call is charged while it runs: its input's size in characters over four (the usual
 * rule of thumb for English text), a guess the answer's reported usage corrects.
 */
export function estimatedTokens(input: unknown): number {
  try {
    return Math.ceil((JSON.stringify(input)?.length ?? 0) / 4);
  } catch {
    return 0;
  }
}
