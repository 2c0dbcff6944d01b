import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type {
  ActionRecord,
  AgentQuery,
  AgentRecord,
  AgentStatus,
  AppendResult,
  CheckpointRecord,
  CheckpointSummary,
  EffectRecord,
  EventRecord,
  HistoryOptions,
  NewAgent,
  Page,
  RestorableAgent,
  Store,
  StoreStats,
  Write,
  WriteResult,
} from '../store.js';
import {
  decodeCursor, encodeCursor, json, parseOr, RESTORABLE, toAction, toAgent, toCheckpoint, toCheckpointSummary, toEffect, toEvent,
  toRestorable, type ActionRow, type AgentRow, type CheckpointRow, type CheckpointSummaryRow, type EffectRow, type EventRow,
  type RestorableRow,
} from '../rows.js';
import { migrate } from './migrations.js';
import { WalFlusher } from './wal-flusher.js';

export interface SqliteStoreOptions {
  /**
   * `full` (default): every commit is fsynced before it is acknowledged, so it survives power loss
   * too; group commit keeps it affordable (one fsync per batch of many agents' transitions), and the
   * fsync runs off the main thread (see `WalFlusher`). `normal`: a commit survives a process crash
   * (kill -9) but the last ones may be lost if the machine loses power.
   */
  synchronous?: 'normal' | 'full';
}

/** Opens (creating when needed) a SQLite file in WAL mode and brings its schema up to date. */
export async function openSqliteStore(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // SQLite itself always runs at NORMAL: `full` adds our own fsync after each write transaction
  // (WalFlusher); an in-memory database has nothing to sync.
  db.pragma('synchronous = NORMAL');
  const flusher = options.synchronous === 'normal' || file === ':memory:' ? undefined : new WalFlusher(`${path.resolve(file)}-wal`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // Agents' rows are rewritten at every transition; a longer WAL copies each hot page back once per
  // checkpoint instead of many times (measured: 7.0 → 4.7 KB written per agent checkpoint).
  db.pragma('wal_autocheckpoint = 10000');
  migrate(db);
  flusher?.syncDirectory();
  return new SqliteStore(db, file, flusher);
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly sql;
  private readonly commitBatch: (writes: readonly Write[]) => WriteResult[];
  private readonly create: (agent: NewAgent) => { agent: AgentRecord; created: boolean };

  constructor(
    readonly db: Database.Database,
    readonly location: string,
    private readonly flusher?: WalFlusher,
  ) {
    const q = (text: string) => db.prepare(text);
    this.sql = {
      agentById: q('select * from agents where id = ?'),
      inputOf: q('select input from agent_inputs where agent_id = ?'),
      insertAgent: q(
        `insert into agents (id, machine, machine_version, status, state, progress, last_seq, created_at, updated_at)
         values (@id, @machine, @machineVersion, @status, @state, @progress, @lastSeq, @createdAt, @createdAt)`,
      ),
      insertInput: q('insert into agent_inputs (agent_id, input) values (?, ?)'),
      insertCheckpoint: q(
        `insert into checkpoints (agent_id, seq, machine_version, event_type, state, status, progress, snapshot, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      updateAfterCheckpoint: q(
        `update agents set state = ?, status = ?, progress = ?, last_seq = ?, inbox_position = ?, resting = ?, updated_at = ? where id = ?`,
      ),
      consume: q('update agents set inbox_position = max(inbox_position, ?), updated_at = ? where id = ?'),
      setStatus: q('update agents set status = ?, error = ?, updated_at = ? where id = ?'),
      insertAction: q('insert into actions (agent_id, seq, action, payload, result, created_at) values (?, ?, ?, ?, ?, ?)'),
      insertEffect: q(
        'insert into effects (idempotency_key, agent_id, seq, result, created_at) values (?, ?, ?, ?, ?) on conflict do nothing',
      ),
      inboxOf: q('select status, event_seq from agents where id = ?'),
      eventByKey: q('select seq from events where agent_id = ? and idempotency_key = ?'),
      insertEvent: q('insert into events (agent_id, seq, type, body, idempotency_key, created_at) values (?, ?, ?, ?, ?, ?)'),
      bumpEventSeq: q('update agents set event_seq = ? where id = ?'),
      eventsAfter: q('select * from events where agent_id = ? and seq > ? order by seq'),
      checkpoints: q(
        'select seq, event_type, state, status, progress, created_at from checkpoints where agent_id = ? order by seq',
      ),
      newestCheckpoints: q(
        'select seq, event_type, state, status, progress, created_at from checkpoints where agent_id = ? order by seq desc limit ?',
      ),
      checkpoint: q('select * from checkpoints where agent_id = ? and seq = ?'),
      actions: q('select seq, action, payload, result, created_at from actions where agent_id = ? order by seq'),
      newestActions: q('select seq, action, payload, result, created_at from actions where agent_id = ? order by seq desc limit ?'),
      effect: q('select * from effects where idempotency_key = ?'),
      active: q(`${RESTORABLE} where a.status = 'active' order by a.pos`),
      countByStatus: q('select status, count(*) as n from agents group by status'),
      inboxDepth: q(`select sum(event_seq - inbox_position) as depth from agents where status = 'active'`),
      working: q(`${RESTORABLE} where a.status = 'active' and (a.resting = 0 or a.event_seq > a.inbox_position) order by a.pos`),
      restorable: q(`${RESTORABLE} where a.id = ? and a.status = 'active'`),
    };

    this.commitBatch = db.transaction((writes: readonly Write[]) => writes.map((w) => this.applyWrite(w)));

    this.create = db.transaction((agent: NewAgent) => {
      const existing = this.sql.agentById.get(agent.id) as AgentRow | undefined;
      if (existing) return { agent: toAgent(existing), created: false };
      const first = agent.snapshot;
      this.sql.insertAgent.run({
        id: agent.id,
        machine: agent.machine,
        machineVersion: agent.machineVersion,
        status: first?.status ?? 'active',
        state: first ? JSON.stringify(first.state) : null,
        progress: first?.progress ?? 0,
        lastSeq: first ? 1 : 0,
        createdAt: agent.createdAt,
      });
      this.sql.insertInput.run(agent.id, JSON.stringify(agent.input ?? {}));
      if (first) {
        this.sql.insertCheckpoint.run(
          agent.id, 1, first.machineVersion, first.eventType, JSON.stringify(first.state), first.status, first.progress,
          first.snapshot, agent.createdAt,
        );
      }
      return { agent: toAgent(this.sql.agentById.get(agent.id) as AgentRow), created: true };
    }).immediate as never;
  }

  private applyWrite(w: Write): WriteResult {
    switch (w.kind) {
      case 'event':
        try {
          return this.append(w);
        } catch (err) {
          // Checked before anything is written, so refusing this event leaves the batch intact.
          if (err instanceof NotFoundError || err instanceof ConflictError) return { refused: err };
          throw err;
        }
      case 'checkpoint': {
        const state = JSON.stringify(w.state);
        this.sql.insertCheckpoint.run(
          w.agentId, w.seq, w.machineVersion, w.eventType, state, w.status, w.progress, w.snapshot, w.createdAt,
        );
        const { changes } = this.sql.updateAfterCheckpoint.run(
          state, w.status, w.progress, w.seq, w.inboxPosition, w.resting ? 1 : 0, w.createdAt, w.agentId,
        );
        // No agent row: throwing rolls the batch back, so no orphan checkpoint is left (as in the memory store).
        if (changes === 0) throw new NotFoundError('agent', w.agentId);
        for (const a of w.actions) {
          this.sql.insertAction.run(w.agentId, w.seq, a.action, json(a.payload), json(a.result), w.createdAt);
        }
        return;
      }
      // Every write names an existing agent, or the batch rolls back (as in the memory store).
      case 'consume':
        if (this.sql.consume.run(w.inboxPosition, w.at, w.agentId).changes === 0) throw new NotFoundError('agent', w.agentId);
        return;
      case 'effect':
        if (!this.sql.inboxOf.get(w.agentId)) throw new NotFoundError('agent', w.agentId);
        this.sql.insertEffect.run(w.idempotencyKey, w.agentId, w.seq, json(w.result), w.createdAt);
        return;
      case 'status':
        if (this.sql.setStatus.run(w.status, w.error ? JSON.stringify(w.error) : null, w.at, w.agentId).changes === 0) {
          throw new NotFoundError('agent', w.agentId);
        }
        return;
    }
  }

  private append(w: Extract<Write, { kind: 'event' }>): AppendResult {
    const agent = this.sql.inboxOf.get(w.agentId) as Pick<AgentRow, 'status' | 'event_seq'> | undefined;
    if (!agent) throw new NotFoundError('agent', w.agentId);
    if (w.idempotencyKey !== null) {
      const existing = this.sql.eventByKey.get(w.agentId, w.idempotencyKey) as { seq: number } | undefined;
      if (existing) return { seq: existing.seq, duplicate: true };
    }
    if (agent.status !== 'active') throw new ConflictError(`Agent "${w.agentId}" is ${agent.status}; it takes no more events.`);
    const seq = agent.event_seq + 1;
    this.sql.insertEvent.run(w.agentId, seq, w.event.type, JSON.stringify(w.event), w.idempotencyKey, w.at);
    this.sql.bumpEventSeq.run(seq, w.agentId);
    return { seq, duplicate: false };
  }

  async createAgent(agent: NewAgent) {
    return this.durably(() => this.create(agent));
  }

  async getAgent(id: string) {
    const row = this.sql.agentById.get(id) as AgentRow | undefined;
    return row && toAgent(row);
  }

  async getInput(id: string): Promise<unknown> {
    const row = this.sql.inputOf.get(id) as { input: string } | undefined;
    return row && parseOr(row.input, {});
  }

  async listAgents(query: AgentQuery): Promise<Page<AgentRecord>> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.machine !== undefined) (where.push('a.machine = ?'), params.push(query.machine));
    if (query.status !== undefined) (where.push('a.status = ?'), params.push(query.status));
    const after = decodeCursor(query.cursor);
    if (after !== undefined) (where.push('a.pos > ?'), params.push(after));
    const rows = this.db
      .prepare(
        `select a.* from agents a ${where.length ? `where ${where.join(' and ')}` : ''} order by a.pos limit ?`,
      )
      .all(...params, query.limit + 1) as AgentRow[];
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return { items: page.map(toAgent), nextCursor: rows.length > query.limit && last ? encodeCursor(last.pos) : null };
  }

  async eventsAfter(agentId: string, position: number): Promise<EventRecord[]> {
    return (this.sql.eventsAfter.all(agentId, position) as EventRow[]).map(toEvent);
  }

  async commit(writes: readonly Write[]): Promise<WriteResult[]> {
    return writes.length > 0 ? this.durably(() => this.commitBatch(writes)) : [];
  }

  /** Runs a write transaction, then resolves once it is durable (at `full`); nothing is written after a failed fsync. */
  private async durably<T>(write: () => T): Promise<T> {
    this.flusher?.throwIfFailed();
    const result = write();
    await this.flusher?.flush();
    return result;
  }

  async listCheckpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    const rows = (
      options.newest === undefined
        ? this.sql.checkpoints.all(agentId)
        : this.sql.newestCheckpoints.all(agentId, options.newest).reverse()
    ) as CheckpointSummaryRow[];
    return rows.map(toCheckpointSummary);
  }

  async getCheckpoint(agentId: string, seq: number) {
    const row = this.sql.checkpoint.get(agentId, seq) as CheckpointRow | undefined;
    return row && toCheckpoint(row);
  }

  async listActions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    const rows = (
      options.newest === undefined ? this.sql.actions.all(agentId) : this.sql.newestActions.all(agentId, options.newest).reverse()
    ) as ActionRow[];
    return rows.map(toAction);
  }

  async findEffect(idempotencyKey: string): Promise<EffectRecord | undefined> {
    const row = this.sql.effect.get(idempotencyKey) as EffectRow | undefined;
    return row && toEffect(row);
  }

  async loadActiveAgents(options: { skipResting?: boolean } = {}): Promise<RestorableAgent[]> {
    return ((options.skipResting ? this.sql.working : this.sql.active).all() as RestorableRow[]).map(toRestorable);
  }

  async loadRestorable(id: string): Promise<RestorableAgent | undefined> {
    const row = this.sql.restorable.get(id) as RestorableRow | undefined;
    return row && toRestorable(row);
  }

  async stats(): Promise<StoreStats> {
    const agentsByStatus: Record<AgentStatus, number> = { active: 0, done: 0, error: 0, stopped: 0 };
    for (const row of this.sql.countByStatus.all() as { status: AgentStatus; n: number }[]) agentsByStatus[row.status] = row.n;
    const { depth } = this.sql.inboxDepth.get() as { depth: number | null };
    return { agentsByStatus, inboxDepth: depth ?? 0 };
  }

  async close() {
    await this.flusher?.close();
    if (this.db.open) this.db.close();
  }
}
