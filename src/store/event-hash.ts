/**
 * The hash an event is kept with under its idempotency key, so that the same key sent again with
 * another body (another type or payload) is told apart from a retry: the stores compare hashes,
 * because the body itself does not stay whole (pruning cuts an old keyed event to its type).
 */
import { createHash } from 'node:crypto';
import type { InboxEvent } from './store.js';

/** sha256 (hex) of the event's canonical JSON: object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one body. */
export function eventBodyHash(event: InboxEvent): string {
  return createHash('sha256').update(canonicalJson(event)).digest('hex');
}

/** JSON with every object's keys in code-point order; what JSON.stringify drops (undefined, functions) is dropped alike. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}
