/** The SQL stores' rows (SQLite and Postgres have the same tables) and their conversion into the Store's records. */
import { InvalidInputError, type SerializedError } from '../core/errors.js';
import { applyDeltas, type CheckpointFormat } from './checkpoint-encoding.js';
import { collectParts, decodeParts, withParts, type PartLoader } from './snapshot-parts.js';
import type { ActionRecord, AgentRecord, AgentStatus, CheckpointRecord, CheckpointSummary, EffectRecord, EventRecord, InboxEvent, RestorableAgent } from './store.js';
import { parseTimers } from './timers.js';

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
  pruned_before: number;
  parent: string | null;
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
  /** How the snapshot is written: `FORMAT_CODES`. */
  encoded: number;
  base_seq: number | null;
  created_at: string;
}

/** A row of `RESTORABLE` (sql/restorable.ts): the `c_` columns are null when the agent has no checkpoint yet. */
export type RestorableRow = Pick<AgentRow, 'id' | 'machine' | 'inbox_position' | 'event_seq' | 'created_at' | 'parent'> & {
  input: string | null; c_seq: number | null; c_machine_version: string; c_event_type: string;
  c_progress: number; c_snapshot: string; c_encoded: number | null; c_base_seq: number | null; c_timers: string | null; c_created_at: string;
};

/** The `encoded` column of a checkpoint row. */
const FORMAT_CODES: Record<CheckpointFormat, number> = { json: 0, parts: 1, delta: 2 };

export function formatCode(format: CheckpointFormat | undefined): number {
  return FORMAT_CODES[format ?? 'json'];
}

/** What reading stored checkpoints back needs of a store besides the row itself. */
export interface StoredReader {
  parts: PartLoader;
  /** The snapshot texts of the agent's checkpoints `from` … `to`, in seq order (those that exist). */
  chain(agentId: string, from: number, to: number): Promise<readonly string[]> | readonly string[];
}

/**
 * A checkpoint's whole snapshot from its row's `snapshot`, `encoded` and `base_seq`, and the
 * hashes of the parts it took. Throws when something it needs is not stored (the caller reports
 * state corruption).
 */
export async function wholeSnapshot(
  agentId: string,
  seq: number,
  row: { snapshot: string; encoded: number | null; baseSeq: number | null },
  reader: StoredReader,
): Promise<{ text: string; parts: string[] }> {
  if (!row.encoded) return { text: row.snapshot, parts: [] };
  let skeleton = row.snapshot;
  if (row.encoded === FORMAT_CODES.delta) {
    const base = row.baseSeq ?? seq;
    const chain = await reader.chain(agentId, base, seq - 1);
    if (chain.length !== seq - base) throw new Error(`its checkpoint ${seq} is a delta whose chain from checkpoint ${base} is not all stored`);
    skeleton = applyDeltas(chain[0]!, [...chain.slice(1), row.snapshot]);
  }
  return withParts(agentId, skeleton, reader.parts);
}

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
    prunedBefore: r.pruned_before ?? 0,
    parent: r.parent ?? null,
  };
}

/**
 * Restorable agents from their rows, each snapshot whole. One whose snapshot cannot be put back
 * together says why (`unreadable`), and restoring refuses it, quarantining only that agent.
 */
export function toRestorables(rows: readonly RestorableRow[], reader: StoredReader): Promise<RestorableAgent[]> {
  // All at once: on Postgres each encoded one takes a few round trips, which the pool runs side by side.
  return Promise.all(
    rows.map(async (row) => {
      const agent = toRestorable(row);
      if (!agent.checkpoint || !row.c_encoded) return agent;
      try {
        const { text, parts } = await wholeSnapshot(row.id, agent.checkpoint.seq, { snapshot: row.c_snapshot, encoded: row.c_encoded, baseSeq: row.c_base_seq }, reader);
        return { ...agent, checkpoint: { ...agent.checkpoint, snapshot: text, parts } };
      } catch (err) {
        return { ...agent, checkpoint: { ...agent.checkpoint, unreadable: (err as Error).message } };
      }
    }),
  );
}

/** A checkpoint from its row, its snapshot whole. */
export async function toWholeCheckpoint(r: CheckpointRow, reader: StoredReader): Promise<CheckpointRecord> {
  const checkpoint = toCheckpoint(r);
  if (r.encoded) {
    try {
      checkpoint.snapshot = (await wholeSnapshot(r.agent_id, r.seq, { snapshot: r.snapshot, encoded: r.encoded, baseSeq: r.base_seq }, reader)).text;
    } catch (err) {
      checkpoint.unreadable = (err as Error).message;
    }
  }
  return checkpoint;
}

/** Actions from their rows, their payloads and results put back together from the agent's parts. */
export async function toWholeActions(agentId: string, rows: readonly ActionRow[], load: PartLoader): Promise<ActionRecord[]> {
  // The parts of every row in one walk: a level of parts is one read for the whole page.
  const encoded = rows.filter((row) => row.encoded);
  const texts = encoded.flatMap((row) => [row.payload, row.result]).filter((text): text is string => text !== null);
  const bodies = texts.length > 0 ? await collectParts(agentId, texts, load) : new Map<string, string>();
  const whole = (text: string | null) => (text === null ? null : decodeParts(text, bodies));
  return rows.map((row) => toAction(row.encoded ? { ...row, payload: whole(row.payload), result: whole(row.result) } : row));
}

function toRestorable(r: RestorableRow): RestorableAgent {
  return {
    agent: {
      id: r.id,
      machine: r.machine,
      inboxPosition: r.inbox_position,
      eventSeq: r.event_seq,
      createdAt: r.created_at,
      ...(r.parent ? { parent: r.parent } : {}),
      ...(r.c_seq === null ? { input: parseOr(r.input, {}) } : {}),
    },
    checkpoint:
      r.c_seq === null
        ? undefined
        : {
            agentId: r.id, seq: r.c_seq, machineVersion: r.c_machine_version, eventType: r.c_event_type,
            progress: r.c_progress, snapshot: r.c_snapshot, createdAt: r.c_created_at,
            ...(r.c_timers ? { timers: parseTimers(r.c_timers) } : {}),
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

export type CheckpointSummaryRow = Omit<CheckpointRow, 'agent_id' | 'machine_version' | 'snapshot' | 'encoded'>;
export interface EventRow { agent_id: string; seq: number; body: string; idempotency_key: string | null; created_at: string }
export interface ActionRow { seq: number; action: string; payload: string | null; result: string | null; encoded?: number | boolean; created_at: string }
export interface EffectRow { idempotency_key: string; agent_id: string; seq: number; result: string | null; encoded?: number | boolean; created_at: string }

export function toCheckpointSummary(r: CheckpointSummaryRow): CheckpointSummary {
  return { seq: r.seq, eventType: r.event_type, state: parseOr(r.state, null), status: r.status, progress: r.progress, createdAt: r.created_at };
}

export function toEvent(r: EventRow): EventRecord {
  return { agentId: r.agent_id, seq: r.seq, event: JSON.parse(r.body) as InboxEvent, idempotencyKey: r.idempotency_key, createdAt: r.created_at };
}

export function toAction(r: ActionRow): ActionRecord {
  return { seq: r.seq, action: r.action, payload: parseOr(r.payload, null), result: parseOr(r.result, null), createdAt: r.created_at };
}

/** An effect from its row, its result put back together from the agent's parts. */
export async function toWholeEffect(r: EffectRow, load: PartLoader): Promise<EffectRecord> {
  if (!r.encoded || r.result === null) return toEffect(r);
  return toEffect({ ...r, result: (await withParts(r.agent_id, r.result, load)).text });
}

function toEffect(r: EffectRow): EffectRecord {
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
