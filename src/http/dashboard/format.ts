/** Small text helpers for the dashboard's pages. */

/** `42s`, `5m`, `3h`, `2d` since `iso` (relative to `now`). */
export function age(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(seconds)) return '—';
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

/** An agent's page (ids are user input: always encoded in a link). */
export const agentHref = (id: string) => `/ui/agents/${encodeURIComponent(id)}`;

/** `2026-11-30 05:41:07.123` (UTC): the contract's timestamps, easier on the eye. */
export function clock(iso: string): string {
  return iso.replace('T', ' ').replace(/Z$/, '');
}


export function pretty(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Reads `a.b.c` from a loosely typed JSON value. */
export function pick(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (!current || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export const asText = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : value === undefined || value === null ? undefined : pretty(value);
