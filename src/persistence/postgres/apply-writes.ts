/**
 * One `commit` call's writes, applied inside the transaction the caller opened. Same results and
 * errors as the SQLite store, plus fencing: a process writes checkpoints, consumes, effects and
 * `error` statuses only for the agents it owns (see `Store.leases`).
 */
import type pg from 'pg';
import { ConflictError, FencedError, NotFoundError } from '../../errors.js';
import type { AppendResult, Write, WriteResult } from '../store.js';
import { notificationPayload } from './inbox-listener.js';
import { json } from '../rows.js';

export interface WriteContext {
  /** This process: the owner its guarded writes must find on the agent row. */
  processId: string;
  /** Where accepted events are announced. */
  channel: string;
}

type WriteOf<K extends Write['kind']> = Extract<Write, { kind: K }>;
type Refusal = { refused: Error };

export async function applyWrites(client: pg.ClientBase, writes: readonly Write[], context: WriteContext): Promise<WriteResult[]> {
  await lockAgents(client, writes);
  const results: WriteResult[] = [];
  const announcements: string[] = [];
  /** Each agent's newest checkpoint in this batch: one announcement per agent, not per transition. */
  const newest = new Map<string, number>();
  for (const w of writes) {
    const result = await applyWrite(client, w, context.processId);
    results.push(result);
    if (result && 'refused' in result) continue;
    if (w.kind === 'event' && result && !result.duplicate) announcements.push(notificationPayload('inbox', w.agentId, result.seq));
    // Seq 0: its status changed (stopped, maybe by a process that does not run it: its owner lets it go).
    else if (w.kind === 'status') announcements.push(notificationPayload('inbox', w.agentId, 0));
    else if (w.kind === 'checkpoint') newest.set(w.agentId, w.seq);
  }
  for (const [agentId, seq] of newest) announcements.push(notificationPayload('checkpoint', agentId, seq));
  // Notifications are delivered when the transaction commits, and not at all if it rolls back.
  if (announcements.length > 0) {
    await client.query('select pg_notify($1, payload) from unnest($2::text[]) as payload', [context.channel, announcements]);
  }
  return results;
}

/**
 * Locks every agent row the batch names before writing anything, in id order: two processes'
 * batches then wait for each other instead of deadlocking (in write order, each could hold a row
 * the other needs), and no owner or status changes under the checks below.
 */
async function lockAgents(client: pg.ClientBase, writes: readonly Write[]): Promise<void> {
  const ids = [...new Set(writes.map((w) => w.agentId))];
  await client.query('select 1 from agents where id = any($1::text[]) order by id for update', [ids]);
}

function applyWrite(client: pg.ClientBase, w: Write, me: string): Promise<WriteResult> {
  switch (w.kind) {
    case 'event':
      return appendEvent(client, w);
    case 'checkpoint':
      return writeCheckpoint(client, w, me);
    case 'consume':
      return consume(client, w, me);
    case 'effect':
      return recordEffect(client, w, me);
    case 'status':
      return setStatus(client, w, me);
  }
}

/**
 * Refusals are decided by reading, never by catching an SQL error: Postgres aborts the whole
 * transaction on any error, and a refused event must leave the rest of the batch intact.
 */
async function appendEvent(client: pg.ClientBase, w: WriteOf<'event'>): Promise<AppendResult | Refusal> {
  const { rows: [agent] } = await client.query<{ status: string; event_seq: number }>(
    'select status, event_seq from agents where id = $1 for update',
    [w.agentId],
  );
  if (!agent) return { refused: new NotFoundError('agent', w.agentId) };
  if (w.idempotencyKey !== null) {
    // A statement of its own, after the row lock: it sees an event that another process committed
    // under the same key while this one waited for the lock, so the key yields one event.
    const { rows: [existing] } = await client.query<{ seq: number }>(
      'select seq from events where agent_id = $1 and idempotency_key = $2',
      [w.agentId, w.idempotencyKey],
    );
    if (existing) return { seq: existing.seq, duplicate: true };
  }
  if (agent.status !== 'active') return { refused: new ConflictError(`Agent "${w.agentId}" is ${agent.status}; it takes no more events.`) };
  const seq = agent.event_seq + 1;
  await client.query(
    `with appended as (
       insert into events (agent_id, seq, type, body, idempotency_key, created_at) values ($1, $2, $3, $4, $5, $6)
     )
     update agents set event_seq = $2 where id = $1`,
    [w.agentId, seq, w.event.type, JSON.stringify(w.event), w.idempotencyKey, w.at],
  );
  return { seq, duplicate: false };
}

/**
 * Moves the agent row along and records the checkpoint, only while this process owns the agent and
 * it is still active (a checkpoint must not bring a stopped agent back).
 */
async function writeCheckpoint(client: pg.ClientBase, w: WriteOf<'checkpoint'>, me: string): Promise<WriteResult> {
  const { rowCount } = await client.query(
    `with moved as (
       update agents set state = $3, status = $4, progress = $5, last_seq = $2, inbox_position = $6, resting = $7, updated_at = $8
       where id = $1 and owner = $9 and status = 'active'
       returning id
     )
     insert into checkpoints (agent_id, seq, machine_version, event_type, state, status, progress, snapshot, created_at)
     select id, $2, $10, $11, $3, $4, $5, $12, $8 from moved`,
    [
      w.agentId, w.seq, JSON.stringify(w.state), w.status, w.progress, w.inboxPosition, w.resting === true, w.createdAt, me,
      w.machineVersion, w.eventType, w.snapshot,
    ],
  );
  if (rowCount === 0) return fenced(client, w.agentId);
  for (const a of w.actions) {
    await client.query(
      'insert into actions (agent_id, seq, action, payload, result, created_at) values ($1, $2, $3, $4, $5, $6)',
      [w.agentId, w.seq, a.action, json(a.payload), json(a.result), w.createdAt],
    );
  }
  return undefined;
}

async function consume(client: pg.ClientBase, w: WriteOf<'consume'>, me: string): Promise<WriteResult> {
  const { rowCount } = await client.query(
    'update agents set inbox_position = greatest(inbox_position, $2), updated_at = $3 where id = $1 and owner = $4',
    [w.agentId, w.inboxPosition, w.at, me],
  );
  return rowCount === 0 ? fenced(client, w.agentId) : undefined;
}

async function recordEffect(client: pg.ClientBase, w: WriteOf<'effect'>, me: string): Promise<WriteResult> {
  const { rowCount } = await client.query('select 1 from agents where id = $1 and owner = $2', [w.agentId, me]);
  if (rowCount === 0) return fenced(client, w.agentId);
  await client.query(
    'insert into effects (idempotency_key, agent_id, seq, result, created_at) values ($1, $2, $3, $4, $5) on conflict do nothing',
    [w.idempotencyKey, w.agentId, w.seq, json(w.result), w.createdAt],
  );
  return undefined;
}

/** Any process may stop an agent (the one that runs it then finds it stopped); other statuses are its owner's. */
async function setStatus(client: pg.ClientBase, w: WriteOf<'status'>, me: string): Promise<WriteResult> {
  const error = w.error ? JSON.stringify(w.error) : null;
  if (w.status === 'stopped') {
    const { rowCount } = await client.query('update agents set status = $2, error = $3, updated_at = $4 where id = $1', [
      w.agentId, w.status, error, w.at,
    ]);
    if (rowCount === 0) throw new NotFoundError('agent', w.agentId);
    return undefined;
  }
  const { rowCount } = await client.query(
    'update agents set status = $2, error = $3, updated_at = $4 where id = $1 and owner = $5',
    [w.agentId, w.status, error, w.at, me],
  );
  return rowCount === 0 ? fenced(client, w.agentId) : undefined;
}

/**
 * Why a write guarded by ownership touched no row: no such agent (thrown, so the whole batch rolls
 * back, as the SQLite store does) or another process's agent (refused; this write changes nothing).
 */
async function fenced(client: pg.ClientBase, agentId: string): Promise<Refusal> {
  const { rowCount } = await client.query('select 1 from agents where id = $1', [agentId]);
  if (rowCount === 0) throw new NotFoundError('agent', agentId);
  return { refused: new FencedError(agentId) };
}
