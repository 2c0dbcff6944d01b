/** The page of agents `listAgents` reads, for both SQL stores. */
import type { AgentQuery, AgentRecord, Page } from '../store.js';
import { decodeCursor, encodeCursor, toAgent, type AgentRow } from '../rows.js';
import type { SqlDialect, SqlQuery } from './dialect.js';

/**
 * Agents in creation order, filtered by machine and status, after the cursor's position. One row
 * more than the page is read: it says whether a next page exists (`toAgentPage`).
 */
export function listAgentsQuery(query: AgentQuery, dialect: SqlDialect): SqlQuery {
  const params: unknown[] = [];
  const param = (value: unknown) => dialect.param(params.push(value));
  const where: string[] = [];
  if (query.machine !== undefined) where.push(`a.machine = ${param(query.machine)}`);
  if (query.status !== undefined) where.push(`a.status = ${param(query.status)}`);
  if (query.parent !== undefined) where.push(`a.parent = ${param(query.parent)}`);
  const after = decodeCursor(query.cursor);
  if (after !== undefined) where.push(`a.pos > ${param(after)}`);
  const filter = where.length > 0 ? `where ${where.join(' and ')}` : '';
  return { text: `select a.* from agents a ${filter} order by a.pos limit ${param(query.limit + 1)}`, params };
}

export function toAgentPage(rows: readonly AgentRow[], limit: number): Page<AgentRecord> {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(toAgent), nextCursor: rows.length > limit && last ? encodeCursor(last.pos) : null };
}
