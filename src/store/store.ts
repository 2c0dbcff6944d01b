/**
 * THE storage interface: the only persistence type the rest of the code sees. Asynchronous even
 * though better-sqlite3 is not, so that the Postgres store (many processes, leases) fits unchanged.
 *
 * @example
 * const store = await openSqliteStore('./data/agents.db');
 * await store.commit([{ kind: 'checkpoint', ... }]); // one transaction for the whole batch
 */
import type { SerializedError } from '../core/errors.js';

export const AGENT_STATUSES = ['active', 'done', 'error', 'stopped'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export interface AgentRecord {
  id: string;
  machine: string;
  machineVersion: string;
  status: AgentStatus;
  /** The XState state value of the last checkpoint (null before the first one). */
  state: unknown;
  progress: number;
  /** Seq of the last committed checkpoint (0: none yet). */
  lastSeq: number;
  /** Seq of the last inbox event consumed by a committed checkpoint. */
  inboxPosition: number;
  /** Seq of the last event accepted into the inbox. */
  eventSeq: number;
  error: SerializedError | null;
  createdAt: string;
  updatedAt: string;
}

export interface NewAgent {
  id: string;
  machine: string;
  machineVersion: string;
  input: unknown;
  createdAt: string;
  /** Set when forking: the first checkpoint, committed with the agent row. */
  snapshot?: CheckpointBody;
}

export interface InboxEvent {
  type: string;
  [key: string]: unknown;
}

export interface EventRecord {
  agentId: string;
  seq: number;
  event: InboxEvent;
  idempotencyKey: string | null;
  createdAt: string;
}

/** What a checkpoint row holds besides its keys. */
export interface CheckpointBody {
  machineVersion: string;
  /** The event that caused the transition (`xstate.init` for the first). */
  eventType: string;
  state: unknown;
  status: Exclude<AgentStatus, 'stopped'>;
  progress: number;
  /** JSON text of `actor.getPersistedSnapshot()`. */
  snapshot: string;
  /**
   * Nothing runs for this agent until its next event (no invoked actor in flight): recovery may
   * leave it on disk, and a process may passivate it. Optional for forks (derived on restore).
   */
  resting?: boolean;
}

export interface ActionWrite {
  action: string;
  payload: unknown;
  result: unknown;
}

export interface EffectWrite {
  idempotencyKey: string;
  result: unknown;
}

/** One unit of a group commit. All writes of one `commit` call land in one transaction. */
export type Write =
  | ({
      kind: 'checkpoint';
      agentId: string;
      seq: number;
      inboxPosition: number;
      createdAt: string;
      actions: ActionWrite[];
    } & CheckpointBody)
  /** An inbox event the machine ignored: consumed, but no new checkpoint. */
  | { kind: 'consume'; agentId: string; inboxPosition: number; at: string }
  | { kind: 'effect'; agentId: string; seq: number; createdAt: string } & EffectWrite
  | { kind: 'status'; agentId: string; status: AgentStatus; error: SerializedError | null; at: string }
  /** An event into the agent's inbox: batched like the rest, so acknowledging events is group-committed too. */
  | { kind: 'event'; agentId: string; event: InboxEvent; idempotencyKey: string | null; at: string };

/**
 * What `commit` says of each write, in order: an event's seq, or why that one event was refused
 * (unknown agent, agent not active). A refused event changes nothing and fails no other write.
 */
export type WriteResult = AppendResult | { refused: Error } | undefined;

export interface CheckpointSummary {
  seq: number;
  eventType: string;
  state: unknown;
  status: string;
  progress: number;
  createdAt: string;
}

export interface CheckpointRecord extends CheckpointSummary {
  agentId: string;
  machineVersion: string;
  snapshot: string;
}

export interface ActionRecord {
  seq: number;
  action: string;
  payload: unknown;
  result: unknown;
  createdAt: string;
}

export interface EffectRecord {
  idempotencyKey: string;
  agentId: string;
  seq: number;
  result: unknown;
  createdAt: string;
}

export interface HistoryOptions {
  newest?: number;
}

export interface AgentQuery {
  machine?: string;
  status?: AgentStatus;
  limit: number;
  /** Opaque cursor from a previous page (the last id seen). */
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * An active agent to bring back after a restart, with its last checkpoint when it has one. Only what
 * restoring needs is read: recovery reads thousands of these before any agent runs again.
 */
export interface RestorableAgent {
  agent: Pick<AgentRecord, 'id' | 'machine' | 'inboxPosition' | 'eventSeq' | 'createdAt'> & {
    /** The spawn input, read only for an agent with no checkpoint yet: it starts from it. */
    input?: unknown;
  };
  /** The last checkpoint, without its state and status columns: the snapshot carries both. */
  checkpoint: RestorableCheckpoint | undefined;
}

export type RestorableCheckpoint = Omit<CheckpointRecord, 'state' | 'status'>;

export type AppendResult = { seq: number; duplicate: boolean };

export interface Store {
  readonly kind: 'sqlite' | 'postgres' | 'memory';
  /** A description for logs (a path or a redacted URL). */
  readonly location: string;

  /** Idempotent spawn: `created: false` returns the row that was already there. */
  createAgent(agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  /** The spawn input, kept apart from the agent row (every transition rewrites the row; the input is read rarely: by fork). */
  getInput(id: string): Promise<unknown>;
  listAgents(query: AgentQuery): Promise<Page<AgentRecord>>;

  eventsAfter(agentId: string, position: number): Promise<EventRecord[]>;

  /**
   * Group commit: every write in one transaction, in order; throws (and writes nothing) on a storage
   * error. Resolves once the batch is durable. The runtime may call it again before an earlier call
   * resolves (it writes the next batch while the previous one is being made durable): batches must
   * be applied in call order and resolve in that order.
   */
  commit(writes: readonly Write[]): Promise<WriteResult[]>;

  /** Oldest first; with `newest: n`, only the last n (still oldest first): long-lived agents have long histories. */
  listCheckpoints(agentId: string, options?: HistoryOptions): Promise<CheckpointSummary[]>;
  getCheckpoint(agentId: string, seq: number): Promise<CheckpointRecord | undefined>;
  /** Oldest first; `newest` as for checkpoints. */
  listActions(agentId: string, options?: HistoryOptions): Promise<ActionRecord[]>;
  findEffect(idempotencyKey: string): Promise<EffectRecord | undefined>;

  /**
   * Every active agent with its last checkpoint, for recovery at start. With `skipResting`, agents
   * that wait for an event and have none pending stay on disk (they are loaded on their next event).
   */
  loadActiveAgents(options?: { skipResting?: boolean }): Promise<RestorableAgent[]>;
  /** One agent as `loadActiveAgents` gives it, to bring back into memory; undefined unless it exists and is active. */
  loadRestorable(id: string): Promise<RestorableAgent | undefined>;

  /** Counts for gauges: agents by status, and events accepted but not yet consumed. */
  stats(): Promise<StoreStats>;

  /**
   * Present on a store that many processes share (Postgres): who runs which agent. When present,
   * `createAgent` makes this process the new agent's owner, and `commit` refuses (`{ refused:
   * FencedError }`, writing nothing) a checkpoint, consume, effect or `error` status write for an
   * agent this process does not own; events and `stopped` status writes are taken from any process.
   */
  readonly leases?: Leases;

  close(): Promise<void>;
}

/**
 * Leases for a store shared by many processes. A process holds a lease that it renews; it owns the
 * agents it spawned or claimed. When its lease runs out (it died, or lost the database for longer
 * than `leaseMs`), any other process may claim its agents and restore them from their last
 * checkpoint; from then on the old owner's writes for them are refused (fenced).
 */
export interface Leases {
  /** This process's id in the lease table: unique per process start. */
  readonly processId: string;
  readonly leaseMs: number;
  /**
   * Takes or renews this process's lease (until now + leaseMs, by the database's clock). False when
   * it had already run out: other processes may be claiming its agents, so it must stop running
   * them (its next renew starts a fresh lease).
   */
  renew(): Promise<boolean>;
  /**
   * Makes this process the owner of up to `limit` active agents that no live process holds (no
   * owner, or an owner whose lease has run out), oldest first, skipping rows another process is
   * claiming at the same moment (`FOR UPDATE SKIP LOCKED`). With `skipResting`, as for
   * `loadActiveAgents`. Returns them ready to restore.
   */
  claimOrphans(options: { limit: number; skipResting?: boolean }): Promise<RestorableAgent[]>;
  /**
   * Makes this process the owner of one active agent unless another live process holds it.
   * `'elsewhere'`: a live process runs it; undefined: no such active agent.
   */
  claim(agentId: string): Promise<RestorableAgent | 'elsewhere' | undefined>;
  /** Agents this process owns that have inbox events accepted but not yet consumed (a missed notification's safety net). */
  pendingInboxes(): Promise<{ agentId: string; eventSeq: number }[]>;
  /** Called after any process commits a change of an agent that other processes act on (see `AgentChange`). */
  onChange(listener: (change: AgentChange) => void): void;
  /** Ends this process's lease now (clean shutdown): its agents may be claimed at once. */
  resign(): Promise<void>;
}

/**
 * A change committed by some process, as every process sharing the store hears of it:
 * - `event`: an event `seq` was accepted into the agent's inbox; `owner` held the agent then (null:
 *   none), so only that process needs to deliver it.
 * - `status`: the agent's status was changed by a status write (stopped from any process, or an error
 *   where it ran): a copy running elsewhere must end, and watchers show the new status.
 * - `checkpoint`: the newest checkpoint of one commit (several transitions of one agent in one commit
 *   are one change): watchers in other processes follow it.
 */
export type AgentChange =
  | { kind: 'event'; agentId: string; seq: number; owner: string | null }
  | { kind: 'status'; agentId: string; owner: string | null }
  | { kind: 'checkpoint'; agentId: string; seq: number };

export interface StoreStats {
  agentsByStatus: Record<AgentStatus, number>;
  inboxDepth: number;
}
