import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AgentsError, InvalidInputError, ReadOnlyStoreError, SchemaTooNewError, StoreUnavailableError } from '../../core/errors.js';
import type {
  ActionRecord,
  AgentQuery,
  AgentRecord,
  AgentStatus,
  CheckpointRecord,
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
  StoreStats,
  Write,
  WriteResult,
} from '../store.js';
import {
  parseOr, toAgent, toCheckpointSummary, toEvent, toWholeEffect, toRestorables, toWholeActions, toWholeCheckpoint, type ActionRow,
  type AgentRow, type CheckpointRow, type CheckpointSummaryRow, type EffectRow, type EventRow, type RestorableRow, type StoredReader,
} from '../rows.js';
import { listAgentsQuery, toAgentPage } from '../sql/agent-list.js';
import { sqliteDialect, type SqlQuery } from '../sql/dialect.js';
import { historyQuery } from '../sql/history.js';
import { RESTORABLE, WORKING } from '../sql/restorable.js';
import { migrate, schemaVersions } from './migrations.js';
import { SqlitePruning } from './sqlite-pruning.js';
import { SqliteWrites } from './sqlite-writes.js';
import { WalFlusher } from './wal-flusher.js';
import { FileIdentity } from './file-identity.js';
import { probeSqlite } from './sqlite-probe.js';
import { rethrowClassified } from '../unavailable.js';
import type { StoreProbeDepth } from '../store.js';
import { canWrite } from './writable.js';
import { WriterLock } from './writer-lock.js';

export interface SqliteStoreOptions {
  /**
   * `full` (default): every commit is fsynced before it is acknowledged, so it survives power loss
   * too; group commit keeps it affordable (one fsync per batch of many agents' transitions), and the
   * fsync runs off the main thread (see `WalFlusher`). `normal`: a commit survives a process crash
   * (kill -9) but the last ones may be lost if the machine loses power.
   */
  synchronous?: 'normal' | 'full';
  /**
   * Open an existing file to read only: no writer lock is taken (the process that runs the agents
   * may be running), nothing is migrated, and every write throws a `ReadOnlyStoreError`. A runtime on
   * it restores and runs nothing. Default false: the store takes the file's writer lock
   * (writer-lock.ts), and a file another live process holds is refused with a `StoreLockedError`.
   */
  readOnly?: boolean;
}

/**
 * Opens (creating when needed) a SQLite file in WAL mode and brings its schema up to date, after
 * taking the file's writer lock: one process at a time runs a file's agents. A file this process
 * cannot write is refused (unless `readOnly`): it would come up and then fail every write. What
 * cannot be opened throws one `StoreUnavailableError` naming the file and the cause.
 */
export async function openSqliteStore(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  if (file === ':memory:') {
    // Private to this connection: nothing to lock, and nothing to read if opened read-only.
    if (options.readOnly) throw new InvalidInputError('An in-memory SQLite store cannot be read-only: it starts empty and only its own connection sees it.');
    return openWritable(file, options, undefined);
  }
  if (options.readOnly) return openReadOnly(file);
  const folder = path.dirname(path.resolve(file));
  try {
    fs.mkdirSync(folder, { recursive: true });
  } catch (err) {
    throw new StoreUnavailableError(path.resolve(file), new Error(`its folder ${folder} cannot be created (${(err as Error).message})`));
  }
  const lock = WriterLock.acquire(file);
  try {
    return openWritable(file, options, lock);
  } catch (err) {
    lock.release();
    throw err;
  }
}

function openWritable(file: string, options: SqliteStoreOptions, lock: WriterLock | undefined): SqliteStore {
  const memory = file === ':memory:';
  let db: Database.Database | undefined;
  try {
    db = new Database(file);
    db.pragma('busy_timeout = 5000');
    if (!canWrite(db)) {
      throw new StoreUnavailableError(
        path.resolve(file),
        new Error('this process may not write the file (its permissions, or a read-only file system); start it with --read-only (or { readOnly: true }) to serve what it holds without writing'),
        { reason: 'read_only' },
      );
    }
    db.pragma('journal_mode = WAL');
    // SQLite itself always runs at NORMAL: `full` adds our own fsync after each write transaction
    // (WalFlusher); an in-memory database has nothing to sync.
    db.pragma('synchronous = NORMAL');
    const flusher = options.synchronous === 'normal' || memory ? undefined : new WalFlusher(`${path.resolve(file)}-wal`);
    db.pragma('foreign_keys = ON');
    // Agents' rows are rewritten at every transition; a longer WAL copies each hot page back once per
    // checkpoint instead of many times (measured: 7.0 → 4.7 KB written per agent checkpoint).
    db.pragma('wal_autocheckpoint = 10000');
    migrate(db);
    flusher?.syncDirectory();
    return new SqliteStore(db, file, flusher, { lock });
  } catch (err) {
    db?.close();
    throw memory ? err : unavailable(file, err);
  }
}

/**
 * Read-only: better-sqlite3's `readonly`, no lock, no migration. Reading a WAL file that another
 * process writes needs its `-shm` (SQLite opens it, or creates it when the folder allows): the
 * writer's commits are then seen as they land.
 */
function openReadOnly(file: string): SqliteStore {
  let db: Database.Database | undefined;
  try {
    if (!fs.existsSync(file)) throw new Error('there is no such file (a read-only store opens an existing one)');
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    const { current, latest } = schemaVersions(db);
    if (current > latest) throw new SchemaTooNewError(current, latest);
    if (current < latest) {
      throw new Error(
        current === 0
          ? 'it holds no durable-agents tables'
          : `its schema is at version ${current} and this build reads version ${latest}; a read-only store cannot migrate it (start a writer on it once)`,
      );
    }
    return new SqliteStore(db, file, undefined, { readOnly: true });
  } catch (err) {
    db?.close();
    throw unavailable(file, (err as { code?: unknown }).code === 'SQLITE_READONLY_DIRECTORY' ? NO_SHM : err);
  }
}

/** SQLite's own words for it ("attempt to write a readonly database") would puzzle a reader. */
const NO_SHM = new Error(
  'reading a WAL database needs its -shm file beside it, which SQLite cannot create in this read-only folder; ' +
    'it is there while a writer runs, or let this process write the folder',
);

/** Our own errors are sentences already; anything else (SqliteError, a file system error) gets the file named. */
function unavailable(file: string, err: unknown): AgentsError {
  return err instanceof AgentsError ? err : new StoreUnavailableError(path.resolve(file), err);
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly readOnly: boolean;
  private readonly lock: WriterLock | undefined;
  private readonly sql;
  private readonly writes: SqliteWrites;
  private readonly pruning: SqlitePruning;
  private readonly create: (agent: NewAgent) => { agent: AgentRecord; created: boolean };
  /** The shared queries' statements, prepared once per text (a listing has a few texts, by its filters). */
  private readonly statements = new Map<string, Database.Statement>();
  /** Puts stored snapshots back together (../rows.ts `wholeSnapshot`). */
  private readonly reader: StoredReader;
  /** The file opened, checked before each write (file-identity.ts); none in memory. */
  private readonly identity: FileIdentity | undefined;

  constructor(
    /**
     * The connection, for reading (tests, inspection). Write agent rows only through the store: its
     * commits keep the rows they read and wrote, and see other connections' writes, not this one's.
     */
    readonly db: Database.Database,
    readonly location: string,
    private readonly flusher?: WalFlusher,
    /** `lock`: the file's writer lock, released at close; `readOnly`: every write throws (see `SqliteStoreOptions`). */
    access: { lock?: WriterLock | undefined; readOnly?: boolean } = {},
  ) {
    this.lock = access.lock;
    this.readOnly = access.readOnly === true;
    const q = (text: string) => db.prepare(text);
    this.sql = {
      agentById: q('select * from agents where id = ?'),
      inputOf: q('select input from agent_inputs where agent_id = ?'),
      insertAgent: q(
        `insert into agents (id, machine, machine_version, status, state, progress, last_seq, created_at, updated_at, parent)
         values (@id, @machine, @machineVersion, @status, @state, @progress, @lastSeq, @createdAt, @createdAt, @parent)`,
      ),
      insertInput: q('insert into agent_inputs (agent_id, input) values (?, ?)'),
      insertCheckpoint: q(
        `insert into checkpoints (agent_id, seq, machine_version, event_type, state, status, progress, snapshot, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // A level of parts at once (a long conversation's restore reads ~1,000 parts in 4 or 5 levels).
      parts: q('select hash, body from snapshot_parts where agent_id = ? and hash in (select value from json_each(?))').raw(),
      chain: q('select snapshot from checkpoints where agent_id = ? and seq between ? and ? order by seq').pluck(),
      eventsAfter: q('select * from events where agent_id = ? and seq > ? order by seq'),
      checkpoint: q('select * from checkpoints where agent_id = ? and seq = ?'),
      effect: q('select * from effects where idempotency_key = ?'),
      active: q(`${RESTORABLE} where a.status = 'active' order by a.pos`),
      working: q(`${RESTORABLE} where a.status = 'active' and ${WORKING} order by a.pos`),
      restorable: q(`${RESTORABLE} where a.id = ? and a.status = 'active'`),
      due: q(`select id, wake_at as wakeAt from agents where wake_at <= ? and status = 'active' order by wake_at limit ?`),
      countByStatus: q('select status, count(*) as n from agents group by status'),
      inboxDepth: q(`select sum(event_seq - inbox_position) as depth from agents where status = 'active'`),
    };
    this.writes = new SqliteWrites(db);
    this.pruning = new SqlitePruning(db);
    this.reader = {
      parts: (agentId, hashes) => new Map(this.sql.parts.all(agentId, JSON.stringify(hashes)) as [string, string][]),
      chain: (agentId, from, to) => this.sql.chain.all(agentId, from, to) as string[],
    };

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
        parent: agent.parent ?? null,
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
    this.identity = FileIdentity.of(location);
  }

  async createAgent(agent: NewAgent) {
    this.assertWritable('spawn an agent');
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
    return toAgentPage(this.all<AgentRow>(listAgentsQuery(query, sqliteDialect)), query.limit);
  }

  async eventsAfter(agentId: string, position: number): Promise<EventRecord[]> {
    return (this.sql.eventsAfter.all(agentId, position) as EventRow[]).map(toEvent);
  }

  async commit(writes: readonly Write[]): Promise<WriteResult[]> {
    this.assertWritable('commit');
    return writes.length > 0 ? this.durably(() => this.writes.commit(writes)) : [];
  }

  /** Runs a write transaction, then resolves once it is durable (at `full`); nothing is written after a failed fsync. */
  private async durably<T>(write: () => T): Promise<T> {
    try {
      this.identity?.assertInPlace();
      this.flusher?.throwIfFailed();
      const result = write();
      await this.flusher?.flush();
      return result;
    } catch (err) {
      // A full disk, a read-only or vanished file, a failing disk: a StoreUnavailableError the runtime waits out.
      rethrowClassified(err);
    }
  }

  async probe(depth: StoreProbeDepth): Promise<void> {
    await probeSqlite(this.db, this.location, this.identity, this.flusher, depth);
  }


  async listCheckpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    return this.all<CheckpointSummaryRow>(historyQuery('checkpoints', agentId, options, sqliteDialect)).map(toCheckpointSummary);
  }

  async getCheckpoint(agentId: string, seq: number): Promise<CheckpointRecord | undefined> {
    const row = this.sql.checkpoint.get(agentId, seq) as CheckpointRow | undefined;
    return row && toWholeCheckpoint(row, this.reader);
  }

  async listActions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    return toWholeActions(agentId, this.all<ActionRow>(historyQuery('actions', agentId, options, sqliteDialect)), this.reader.parts);
  }

  async findEffect(idempotencyKey: string): Promise<EffectRecord | undefined> {
    const row = this.sql.effect.get(idempotencyKey) as EffectRow | undefined;
    return row && toWholeEffect(row, this.reader.parts);
  }

  async loadActiveAgents(options: { skipResting?: boolean } = {}): Promise<RestorableAgent[]> {
    return toRestorables((options.skipResting ? this.sql.working : this.sql.active).all() as RestorableRow[], this.reader);
  }

  async dueAgents(before: number, limit: number): Promise<{ id: string; wakeAt: number }[]> {
    return this.sql.due.all(before, limit) as { id: string; wakeAt: number }[];
  }

  async loadRestorable(id: string): Promise<RestorableAgent | undefined> {
    const row = this.sql.restorable.get(id) as RestorableRow | undefined;
    return row && (await toRestorables([row], this.reader))[0];
  }

  async pruneHistory(agentId: string, rule: RetentionRule, options: { parts: boolean }): Promise<PruneResult> {
    this.assertWritable('prune history');
    this.identity?.assertInPlace();
    this.flusher?.throwIfFailed();
    const result = this.pruning.pruneHistory(agentId, rule, options);
    // Most runs find nothing for most agents: no fsync for a transaction that wrote nothing.
    if (result.checkpoints + result.actions + result.events + result.parts > 0) await this.flusher?.flush();
    return result;
  }

  async deleteEndedAgents(options: { endedBefore: string; limit: number }): Promise<string[]> {
    this.assertWritable('delete ended agents');
    return this.durably(() => this.pruning.deleteEndedAgents(options.endedBefore, options.limit));
  }

  async sizeBytes(): Promise<number> {
    return this.pruning.sizeBytes();
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
    // Last: the WAL is checkpointed and closed before another process may open the file as its writer.
    this.lock?.release();
  }

  /**
   * Lets go of the writer lock and nothing else, as the kernel does for a process that dies: for
   * in-process crash simulations (testing/crashable-store.ts), whose next "process" opens the file.
   */
  releaseWriterLock(): void {
    this.lock?.release();
  }

  private assertWritable(operation: string): void {
    if (this.readOnly) throw new ReadOnlyStoreError(operation);
  }

  private all<Row>({ text, params }: SqlQuery): Row[] {
    let statement = this.statements.get(text);
    if (!statement) this.statements.set(text, (statement = this.db.prepare(text)));
    return statement.all(...params) as Row[];
  }
}
