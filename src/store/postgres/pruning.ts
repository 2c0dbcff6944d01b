/** Retention on Postgres: each agent pruned in one short transaction, its row locked as a commit locks it. */
import type pg from 'pg';
import { AGENT_TABLES, oldestKept } from '../retention.js';
import { collectParts } from '../snapshot-parts.js';
import { partLoader } from './parts.js';
import type { PruneResult, RetentionRule } from '../store.js';

export function pruneHistory(pool: pg.Pool, agentId: string, rule: RetentionRule, options: { parts: boolean }): Promise<PruneResult> {
  return inTransaction(pool, (client) => pruneIn(client, agentId, rule, options.parts));
}

/** `work` in a transaction of its own on a pooled connection: committed, or rolled back when it throws. */
async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

async function pruneIn(client: pg.PoolClient, agentId: string, rule: RetentionRule, parts: boolean): Promise<PruneResult> {
  const { rows: [agent] } = await client.query<{ last_seq: number; pruned_before: number }>(
    'select last_seq, pruned_before from agents where id = $1 for update',
    [agentId],
  );
  if (!agent) return { checkpoints: 0, actions: 0, events: 0, parts: 0, prunedBefore: 0 };
  const nothing = { checkpoints: 0, actions: 0, events: 0, parts: 0, prunedBefore: agent.pruned_before };
  let firstSince: number | undefined;
  if (rule.keepSince !== undefined) {
    const { rows } = await client.query<{ seq: number | null }>('select seq from checkpoints where agent_id = $1 and created_at >= $2 order by seq limit 1', [agentId, rule.keepSince]);
    firstSince = rows[0]?.seq ?? undefined;
  }
  let kept = oldestKept(agent.last_seq, rule, firstSince);
  if (kept === undefined) return nothing;
  // A kept delta needs its chain from the whole checkpoint it starts at.
  const { rows: [base] } = await client.query<{ base_seq: number | null }>('select base_seq from checkpoints where agent_id = $1 and seq = $2 and encoded = 2', [agentId, kept]);
  kept = base?.base_seq ?? kept;
  if (kept <= agent.pruned_before) return nothing;
  // An event sent under an idempotency key keeps its row, its body cut to its type: the same key
  // must still answer the same seq, however late it is sent again.
  const consumedBeforeKept = `agent_id = $1 and seq <= (select inbox_position from agents where id = $1)
    and created_at < (select created_at from checkpoints where agent_id = $1 and seq = $2)`;
  const deletedEvents = (await client.query(`delete from events where idempotency_key is null and ${consumedBeforeKept}`, [agentId, kept])).rowCount ?? 0;
  const trimmedEvents =
    (
      await client.query(
        `update events set body = json_build_object('type', type)::text
         where idempotency_key is not null and body <> json_build_object('type', type)::text and ${consumedBeforeKept}`,
        [agentId, kept],
      )
    ).rowCount ?? 0;
  const events = deletedEvents + trimmedEvents;
  const checkpoints = (await client.query('delete from checkpoints where agent_id = $1 and seq < $2', [agentId, kept])).rowCount ?? 0;
  const actions = (await client.query('delete from actions where agent_id = $1 and seq < $2', [agentId, kept])).rowCount ?? 0;
  await client.query('update agents set pruned_before = $2 where id = $1', [agentId, kept]);
  let deleted = 0;
  if (parts) {
    const { rows } = await client.query<{ text: string }>(
      `select snapshot as text from checkpoints where agent_id = $1 and encoded > 0
       union all select payload from actions where agent_id = $1 and encoded and payload is not null
       union all select result from actions where agent_id = $1 and encoded and result is not null
       union all select result from effects where agent_id = $1 and encoded and result is not null`,
      [agentId],
    );
    const live = await collectParts(agentId, rows.map((r) => r.text), partLoader(client));
    // Only parts first written before the oldest kept checkpoint: a newer one may belong to a write on its way.
    deleted = (await client.query('delete from snapshot_parts where agent_id = $1 and seq < $2 and not (hash = any($3::text[]))', [agentId, kept, [...live.keys()]])).rowCount ?? 0;
  }
  return { checkpoints, actions, events, parts: deleted, prunedBefore: kept };
}

export function deleteEndedAgents(pool: pg.Pool, endedBefore: string, limit: number): Promise<string[]> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string }>(
      `select id from agents where status in ('done', 'stopped') and updated_at < $1 order by updated_at limit $2 for update skip locked`,
      [endedBefore, limit],
    );
    const ids = rows.map((r) => r.id);
    if (ids.length > 0) {
      for (const table of AGENT_TABLES) {
        await client.query(`delete from ${table} where agent_id = any($1::text[])`, [ids]);
      }
      await client.query('delete from agents where id = any($1::text[])', [ids]);
    }
    return ids;
  });
}

/** The store's tables and indexes in this schema. */
export async function sizeBytes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ bytes: string | number }>(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as bytes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = current_schema() and c.relkind = 'r'`,
  );
  return Number(rows[0]?.bytes ?? 0);
}

