/** An agent's checkpoints and actions, oldest first, for both SQL stores. */
import type { HistoryOptions } from '../store.js';
import type { SqlDialect, SqlQuery } from './dialect.js';

/** What a history listing reads of each row (a checkpoint's snapshot is read one at a time, by seq). */
const COLUMNS = {
  checkpoints: 'seq, event_type, state, status, progress, created_at',
  actions: 'seq, action, payload, result, encoded, created_at',
} as const;

export type HistoryTable = keyof typeof COLUMNS;

/**
 * All of an agent's rows of `table`, or with `newest: n` only the last n: read backwards along the
 * primary key (agent_id, seq), so that a long history is not read whole, then put back oldest first.
 */
export function historyQuery(table: HistoryTable, agentId: string, options: HistoryOptions, dialect: SqlDialect): SqlQuery {
  const rows = `select ${COLUMNS[table]} from ${table} where agent_id = ${dialect.param(1)}`;
  if (options.newest === undefined) return { text: `${rows} order by seq`, params: [agentId] };
  return {
    text: `select * from (${rows} order by seq desc limit ${dialect.param(2)}) newest order by seq`,
    params: [agentId, options.newest],
  };
}
