import type pg from 'pg';
import type { StoredReader } from '../rows.js';
import type { PartLoader } from '../snapshot-parts.js';

/** Reads a level of an agent's parts in one round trip, on the pool or inside a transaction's client. */
export function partLoader(db: pg.Pool | pg.ClientBase): PartLoader {
  return async (agentId, hashes) => {
    const { rows } = await db.query<{ hash: string; body: string }>(
      'select hash, body from snapshot_parts where agent_id = $1 and hash = any($2::text[])',
      [agentId, hashes],
    );
    return new Map(rows.map((row) => [row.hash, row.body]));
  };
}

/** Puts stored snapshots back together: one round trip per level of parts, one for a delta's chain. */
export function postgresReader(pool: pg.Pool): StoredReader {
  return {
    parts: partLoader(pool),
    chain: async (agentId, from, to) => {
      const { rows } = await pool.query<{ snapshot: string }>(
        'select snapshot from checkpoints where agent_id = $1 and seq between $2 and $3 order by seq',
        [agentId, from, to],
      );
      return rows.map((row) => row.snapshot);
    },
  };
}
