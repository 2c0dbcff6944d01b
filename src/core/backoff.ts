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

/** The contract's rule for an HTTP answer from an LLM API or a webhook: 408, 429 and 5xx may pass if retried. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Parses an HTTP Retry-After header (delta-seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  // RFC 9110: delay-seconds is digits (some servers add a fraction); anything else must be an HTTP
  // date, which starts with a day name. Number() and Date.parse alone accept ' ', '1e3', '0x10', '-1'.
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun),? /.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
