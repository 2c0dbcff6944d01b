export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Exponential backoff with "equal jitter": attempt n waits between half and all of
 * min(max, base·2^(n-1)). Pure (randomness is passed in) so tests and the statechart can pin it.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: number): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random * ceiling) / 2);
}

/** The provider's Retry-After wins when it asks for longer than our own backoff, up to a sane cap. */
export function retryDelay(backoffMs: number, retryAfterMs: number | undefined, capMs: number): number {
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs)) return backoffMs;
  return Math.max(backoffMs, Math.min(retryAfterMs, capMs));
}

/** Parses an HTTP Retry-After header (delta-seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
