/**
 * The crash tests read the action log straight from the database, while a worker writes it: an
 * action's payload and result may refer to the agent's stored parts (src/store/snapshot-parts.ts),
 * so these put them back together the way the store does, from the raw rows.
 */
import { decodeParts, referencedParts } from '../../src/store/snapshot-parts.js';

export interface StoredAction {
  agent_id: string;
  payload: string | null;
  result: string | null;
  encoded: number | boolean;
}

export interface WholeAction {
  agentId: string;
  payload: { input?: { messages?: unknown } } | null;
  result: { ok?: boolean; output?: { content?: unknown; toolCalls?: { id: string }[] } } | null;
}

/** Synchronously (SQLite): `body` reads one part of one agent. */
export function wholeAction(row: StoredAction, body: (agentId: string, hash: string) => string | undefined): WholeAction {
  const whole = (text: string | null) => {
    if (text === null) return null;
    if (!row.encoded) return JSON.parse(text) as never;
    const bodies = new Map<string, string>();
    const load = (stored: string) => {
      for (const hash of referencedParts(stored)) {
        if (bodies.has(hash)) continue;
        const found = body(row.agent_id, hash);
        if (found === undefined) continue;
        bodies.set(hash, found);
        load(found);
      }
    };
    load(text);
    return JSON.parse(decodeParts(text, bodies)) as never;
  };
  return { agentId: row.agent_id, payload: whole(row.payload), result: whole(row.result) };
}

/** The same with bodies read beforehand (Postgres: every part of the agents concerned, in one query). */
export function wholeActionFrom(row: StoredAction, bodies: ReadonlyMap<string, string>): WholeAction {
  return wholeAction(row, (agentId, hash) => bodies.get(`${agentId}/${hash}`));
}
