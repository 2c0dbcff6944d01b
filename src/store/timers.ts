import type { PendingTimer } from './store.js';

/** The earliest deadline of a checkpoint's pending delays, or null: what the agent row's `wake_at` holds. */
export function nextDeadline(timers: readonly PendingTimer[] | undefined): number | null {
  if (!timers?.length) return null;
  let next = Infinity;
  for (const t of timers) if (t.at < next) next = t.at;
  return next;
}

/** A checkpoint row's `timers` column: JSON, or null for none. */
export function parseTimers(text: string | null | undefined): PendingTimer[] | undefined {
  if (!text) return undefined;
  const timers = JSON.parse(text) as unknown;
  return Array.isArray(timers) && timers.length > 0 ? (timers as PendingTimer[]) : undefined;
}
