import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { AgentsError, InvalidInputError, ReadOnlyStoreError, StoreUnavailableError } from '../../core/errors.js';
import type {
  ActionRecord,
  AgentQuery,
  AgentRecord,
  AgentStatus,
  CheckpointSummary,
  EffectRecord,
  EventRecord,
  HistoryOptions,
  NewAgent,
  Page,
  PruneResult,
  RestorableAgent,
  RetentionRule,
  Store,
  StoreProbeDepth,
  StoreStats,
  Write,
  WriteResult,
} from '../store.js';
import { applyWrites } from './apply-writes.js';
import { checkSchemaName, clientConfig, redactUrl } from './connection.js';
import { InboxListener, inboxChannel } from './inbox-listener.js';
import { NOT_HELD, PostgresLeases } from './leases.js';
import { PostgresLlmSlots } from './llm-slots.js';
import { PostgresToolSlots } from './tool-slots.js';
import { assertSchemaCurrent, migrate } from './migrations.js';
import {
  parseOr,
  toAgent,
  toCheckpointSummary,
  toRestorables,
  toWholeActions,
  toWholeCheckpoint,
  toWholeEffect,
  toEvent,
  type ActionRow,
  type AgentRow,
  type CheckpointRow,
  type CheckpointSummaryRow,
  type EffectRow,
  type EventRow,
  type StoredReader,
  type RestorableRow,
} from '../rows.js';
import { postgresReader } from './parts.js';
import { deleteEndedAgents, pruneHistory, sizeBytes } from './pruning.js';
import { listAgentsQuery, toAgentPage } from '../sql/agent-list.js';
import { postgresDialect } from '../sql/dialect.js';
import { historyQuery } from '../sql/history.js';
import { RESTORABLE, WORKING } from '../sql/restorable.js';
import { WriteConnection } from './write-connection.js';
import { CommitQueue } from './commit-queue.js';
import { rethrowClassified } from '../unavailable.js';

export interface PostgresStoreOptions {
  /** The schema to work in, created when missing. Default: the connection's own (normally `public`). */
  schema?: string;
  /** How long a lease lasts unless renewed (default 10 s). */
  leaseMs?: number;
  /** This process's id in the lease table. Default: host, pid and a random suffix, unique per start. */
  processId?: string;
  /** Connections for reads and lease statements (default 5); commits and notifications have one each besides. */
  poolSize?: number;
  /**
   * Read what is stored and write nothing: the schema is not migrated (it must be current), a runtime
   * on it takes no lease and runs nothing, and every write throws a `ReadOnlyStoreError`.
   */
  readOnly?: boolean;
}

/** How long a lease lasts unless renewed; the server's --lease-ms default too. */
export const DEFAULT_LEASE_MS = 10_000;
const DEFAULT_POOL_SIZE = 5;

/**
 * Connects to Postgres, creates the schema when asked for one that is missing, brings its tables
 * up to date and starts listening for inbox events. Many processes may share the database.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  if (options.schema !== undefined) checkSchemaName(options.schema);
  // Notifications carry it space-separated (inbox-listener.ts): a space would make them unreadable.
  if (options.processId !== undefined && !/^\S{1,200}$/.test(options.processId)) {
    throw new InvalidInputError('processId must be 1–200 characters without spaces.');
  }
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) throw new InvalidInputError(`leaseMs must be a positive number (got ${leaseMs}).`);
  const config = clientConfig(url, options.schema);
  const pool = new pg.Pool({ ...config, max: options.poolSize ?? DEFAULT_POOL_SIZE });
  // An idle connection that breaks is reported here; the pool drops it and connects anew when needed.
  pool.on('error', () => undefined);
  const location = `${redactUrl(url)}${options.schema === undefined ? '' : `#${options.schema}`}`;
  let listener: InboxListener | undefined;
  try {
    const schema = await prepareSchema(pool, options.schema, options.readOnly === true);
    listener = new InboxListener(config, inboxChannel(schema));
    await listener.start();
  } catch (err) {
    await listener?.close();
    await pool.end();
    // Ours (a schema too new, a bad name) are sentences already; the driver's get the location said.
    throw err instanceof AgentsError ? err : new StoreUnavailableError(location, err);
  }
  const processId = options.processId ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return new PostgresStore(pool, new WriteConnection(config), listener, location, processId, leaseMs, options.readOnly === true);
}

/** Migrates the schema (creating it when one was named), or for a read-only store checks it is current; returns its name. */
async function prepareSchema(pool: pg.Pool, schema: string | undefined, readOnly: boolean): Promise<string> {
  const client = await pool.connect();
  try {
    const name = schema ?? (await currentSchema(client));
    if (readOnly) await assertSchemaCurrent(client, name);
    else await migrate(client, name, { create: schema !== undefined });
    return name;
  } finally {
    client.release();
  }
}

async function currentSchema(client: pg.ClientBase): Promise<string> {
  const { rows: [row] } = await client.query<{ name: string | null }>('select current_schema() as name');
  if (!row?.name) throw new InvalidInputError('The connection has no schema to work in: none on its search_path exists.');
  return row.name;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly leases: PostgresLeases;
  readonly llmSlots: PostgresLlmSlots | undefined;
  readonly toolSlots: PostgresToolSlots | undefined;
  private readonly reader: StoredReader;
  private closing: Promise<void> | undefined;
  private readonly commits = new CommitQueue((writes) => {
    const context = { processId: this.leases.processId, channel: this.listener.channel };
    // Classified here, before the queue sees it: a commit the database is out of reach for fails the calls queued behind it too.
    return this.writer.transaction((client) => applyWrites(client, writes, context)).catch(rethrowClassified);
  });

  constructor(
    private readonly pool: pg.Pool,
    private readonly writer: WriteConnection,
    private readonly listener: InboxListener,
    readonly location: string,
    processId: string,
    leaseMs: number,
    /** See `PostgresStoreOptions.readOnly`; `leases` is there, for the type, but a runtime on it never uses it. */
    readonly readOnly = false,
  ) {
    this.reader = postgresReader(pool);
    this.leases = new PostgresLeases(pool, listener, processId, leaseMs, this.reader);
    this.llmSlots = readOnly ? undefined : new PostgresLlmSlots(pool, processId);
    this.toolSlots = readOnly ? undefined : new PostgresToolSlots(pool, processId);
  }

  /**
   * One statement, so the agent, its input and a fork's first checkpoint land together. A concurrent
   * spawn of the same id waits for this one to commit, then finds its row (`on conflict do nothing`).
   */
  async createAgent(agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }> {
    this.assertWritable('spawn an agent');
    const first = agent.snapshot;
    const values: unknown[] = [
      agent.id, agent.machine, agent.machineVersion, first?.status ?? 'active', first ? JSON.stringify(first.state) : null,
      first?.progress ?? 0, first ? 1 : 0, this.leases.processId, agent.createdAt, JSON.stringify(agent.input ?? {}), agent.parent ?? null,
    ];
    if (first) values.push(first.machineVersion, first.eventType, first.snapshot);
    // $11 is the parent; a fork's first checkpoint takes $12–$14.
    const { rows: [created] } = await this.pool.query<AgentRow>(
      `with created as (
         insert into agents (id, machine, machine_version, status, state, progress, last_seq, owner, created_at, updated_at, parent)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $11)
         on conflict (id) do nothing
         returning *
       ),
       spawn_input as (insert into agent_inputs (agent_id, input) select id, $10 from created)
       ${
         first
           ? `, first_checkpoint as (
                insert into checkpoints (agent_id, seq, machine_version, event_type, state, status, progress, snapshot, created_at)
                select id, 1, $12, $13, $5, $4, $6, $14, $9 from created
              )`
           : ''
       }
       select * from created`,
      values,
    ).catch(rethrowClassified);
    if (created) return { agent: toAgent(created), created: true };
    // The row that was there (or committed first): a statement of its own sees it, and none deletes agents.
    return { agent: (await this.getAgent(agent.id))!, created: false };
  }

  async getAgent(id: string): Promise<AgentRecord | undefined> {
    const { rows: [row] } = await this.pool.query<AgentRow>('select * from agents where id = $1', [id]);
    return row && toAgent(row);
  }

  async getInput(id: string): Promise<unknown> {
    const { rows: [row] } = await this.pool.query<{ input: string }>('select input from agent_inputs where agent_id = $1', [id]);
    return row && parseOr(row.input, {});
  }

  async listAgents(query: AgentQuery): Promise<Page<AgentRecord>> {
    const { text, params } = listAgentsQuery(query, postgresDialect);
    const { rows } = await this.pool.query<AgentRow>(text, params);
    return toAgentPage(rows, query.limit);
  }

  async eventsAfter(agentId: string, position: number): Promise<EventRecord[]> {
    const { rows } = await this.pool.query<EventRow>(
      'select agent_id, seq, body, idempotency_key, created_at from events where agent_id = $1 and seq > $2 order by seq',
      [agentId, position],
    );
    return rows.map(toEvent);
  }

  async commit(writes: readonly Write[]): Promise<WriteResult[]> {
    this.assertWritable('commit');
    if (writes.length === 0) return [];
    if (this.closing) throw new Error('The Postgres store is closed.');
    return this.commits.commit(writes);
  }

  async listCheckpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    const { text, params } = historyQuery('checkpoints', agentId, options, postgresDialect);
    const { rows } = await this.pool.query<CheckpointSummaryRow>(text, params);
    return rows.map(toCheckpointSummary);
  }

  async getCheckpoint(agentId: string, seq: number) {
    const { rows: [row] } = await this.pool.query<CheckpointRow>('select * from checkpoints where agent_id = $1 and seq = $2', [agentId, seq]);
    return row && toWholeCheckpoint(row, this.reader);
  }

  async listActions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    const { text, params } = historyQuery('actions', agentId, options, postgresDialect);
    const { rows } = await this.pool.query<ActionRow>(text, params);
    return toWholeActions(agentId, rows, this.reader.parts);
  }

  async findEffect(idempotencyKey: string): Promise<EffectRecord | undefined> {
    const { rows: [row] } = await this.pool.query<EffectRow>('select * from effects where idempotency_key = $1', [idempotencyKey]);
    return row && toWholeEffect(row, this.reader.parts);
  }

  async loadActiveAgents(options: { skipResting?: boolean } = {}): Promise<RestorableAgent[]> {
    const working = options.skipResting ? `and ${WORKING}` : '';
    const { rows } = await this.pool.query<RestorableRow>(`${RESTORABLE} where a.status = 'active' ${working} order by a.pos`);
    return toRestorables(rows, this.reader);
  }

  async dueAgents(before: number, limit: number): Promise<{ id: string; wakeAt: number }[]> {
    const { rows } = await this.pool.query<{ id: string; wake_at: string }>(
      `select a.id, a.wake_at from agents a
       where a.wake_at <= $1 and a.status = 'active' and (a.owner = $2 or ${NOT_HELD})
       order by a.wake_at limit $3`,
      [before, this.leases.processId, limit],
    );
    return rows.map((r) => ({ id: r.id, wakeAt: Number(r.wake_at) }));
  }

  async loadRestorable(id: string): Promise<RestorableAgent | undefined> {
    const { rows: [row] } = await this.pool.query<RestorableRow>(`${RESTORABLE} where a.id = $1 and a.status = 'active'`, [id]);
    return row && (await toRestorables([row], this.reader))[0];
  }

  async pruneHistory(agentId: string, rule: RetentionRule, options: { parts: boolean }): Promise<PruneResult> {
    this.assertWritable('prune history');
    return pruneHistory(this.pool, agentId, rule, options);
  }

  async deleteEndedAgents(options: { endedBefore: string; limit: number }): Promise<string[]> {
    this.assertWritable('delete ended agents');
    return deleteEndedAgents(this.pool, options.endedBefore, options.limit);
  }

  async sizeBytes(): Promise<number> {
    return sizeBytes(this.pool);
  }

  /** The database answers, and is not a standby (which answers but takes no writes). */
  async probe(_depth: StoreProbeDepth): Promise<void> {
    const { rows: [row] } = await this.pool.query<{ standby: boolean }>('select pg_is_in_recovery() as standby').catch(rethrowClassified);
    if (row?.standby) throw StoreUnavailableError.because('read_only', `The database at ${this.location} is a standby: it takes no writes.`);
  }

  async stats(): Promise<StoreStats> {
    const { rows } = await this.pool.query<{ status: AgentStatus; n: number; depth: number }>(
      'select status, count(*) as n, coalesce(sum(event_seq - inbox_position), 0)::bigint as depth from agents group by status',
    );
    const agentsByStatus: Record<AgentStatus, number> = { active: 0, done: 0, error: 0, stopped: 0 };
    for (const row of rows) agentsByStatus[row.status] = row.n;
    return { agentsByStatus, inboxDepth: rows.find((r) => r.status === 'active')?.depth ?? 0 };
  }

  private assertWritable(operation: string): void {
    if (this.readOnly) throw new ReadOnlyStoreError(operation);
  }

  /** Lets queued commits finish, then ends every connection. Calling it again waits for the same close. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.commits.drained();
      await this.writer.close();
      await Promise.all([this.listener.close(), this.pool.end()]);
    })();
    return this.closing;
  }
}
