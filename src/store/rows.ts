/** The SQL stores' rows (SQLite and Postgres have the same tables) and their conversion into the Store's records. */
import { InvalidInputError, type SerializedError } from '../core/errors.js';
import type { ActionRecord, AgentRecord, AgentStatus, CheckpointRecord, CheckpointSummary, EffectRecord, EventRecord, InboxEvent, RestorableAgent } from './store.js';

export interface AgentRow {
  pos: number;
  id: string;
  machine: string;
  machine_version: string;
  status: AgentStatus;
  state: string | null;
  progress: number;
  last_seq: number;
  inbox_position: number;
  event_seq: number;
  error: string | null;
  created_at: string;
  updated_at: string;
}

export interface CheckpointRow {
  agent_id: string;
  seq: number;
  machine_version: string;
  event_type: string;
  state: string;
  status: string;
  progress: number;
  snapshot: string;
  created_at: string;
}

/** A row of `RESTORABLE` (sql/restorable.ts): the `c_` columns are null when the agent has no checkpoint yet. */
export type RestorableRow = Pick<AgentRow, 'id' | 'machine' | 'inbox_position' | 'event_seq' | 'created_at'> & {
  input: string | null; c_seq: number | null; c_machine_version: string; c_event_type: string;
  c_progress: number; c_snapshot: string; c_created_at: string;
};

export function toAgent(r: AgentRow): AgentRecord {
  return {
    id: r.id,
    machine: r.machine,
    machineVersion: r.machine_version,
    status: r.status,
    state: r.state === null ? null : parseOr(r.state, null),
    progress: r.progress,
    lastSeq: r.last_seq,
    inboxPosition: r.inbox_position,
    eventSeq: r.event_seq,
    error: r.error === null ? null : (parseOr(r.error, null) as SerializedError | null),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function toRestorable(r: RestorableRow): RestorableAgent {
  return {
    agent: {
      id: r.id,
      machine: r.machine,
      inboxPosition: r.inbox_position,
      eventSeq: r.event_seq,
      createdAt: r.created_at,
      ...(r.c_seq === null ? { input: parseOr(r.input, {}) } : {}),
    },
    checkpoint:
      r.c_seq === null
        ? undefined
        : {
            agentId: r.id, seq: r.c_seq, machineVersion: r.c_machine_version, eventType: r.c_event_type,
            progress: r.c_progress, snapshot: r.c_snapshot, createdAt: r.c_created_at,
          },
  };
}

export function toCheckpoint(r: CheckpointRow): CheckpointRecord {
  return {
    agentId: r.agent_id,
    seq: r.seq,
    machineVersion: r.machine_version,
    eventType: r.event_type,
    state: parseOr(r.state, null),
    status: r.status,
    progress: r.progress,
    snapshot: r.snapshot,
    createdAt: r.created_at,
  };
}

export type CheckpointSummaryRow = Omit<CheckpointRow, 'agent_id' | 'machine_version' | 'snapshot'>;
export interface EventRow { agent_id: string; seq: number; body: string; idempotency_key: string | null; created_at: string }
export interface ActionRow { seq: number; action: string; payload: string | null; result: string | null; created_at: string }
export interface EffectRow { idempotency_key: string; agent_id: string; seq: number; result: string | null; created_at: string }

export function toCheckpointSummary(r: CheckpointSummaryRow): CheckpointSummary {
  return { seq: r.seq, eventType: r.event_type, state: parseOr(r.state, null), status: r.status, progress: r.progress, createdAt: r.created_at };
}

export function toEvent(r: EventRow): EventRecord {
  return { agentId: r.agent_id, seq: r.seq, event: JSON.parse(r.body) as InboxEvent, idempotencyKey: r.idempotency_key, createdAt: r.created_at };
}

export function toAction(r: ActionRow): ActionRecord {
  return { seq: r.seq, action: r.action, payload: parseOr(r.payload, null), result: parseOr(r.result, null), createdAt: r.created_at };
}

export function toEffect(r: EffectRow): EffectRecord {
  return { idempotencyKey: r.idempotency_key, agentId: r.agent_id, seq: r.seq, result: parseOr(r.result, null), createdAt: r.created_at };
}

/** Summary columns are for display; a damaged one must not take a listing down (snapshots are checked on restore). */
export function parseOr(text: string | null, fallback: unknown): unknown {
  if (text === null) return fallback;
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

/** JSON text of a value, or SQL null for `undefined` (which JSON cannot hold). */
export function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export function encodeCursor(pos: number): string {
  return Buffer.from(`p:${pos}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const match = /^p:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  const pos = Number(match?.[1]);
  // A safe integer only: a longer one would reach Postgres as a bigint out of range.
  if (!Number.isSafeInteger(pos)) throw new InvalidInputError('That cursor is not one this server gave out.');
  return pos;
}
