/**
 * (Over 300 lines: the record types and the ports are one seam, documented in one place.)
 *
 * THE storage interface: the only persistence type the rest of the code sees. `Store` is the
 * combination of small ports, one per use (agent rows, inbox, write batch, history, recovery,
 * ownership), so that a part of the runtime can say which one it needs. Asynchronous even though
 * better-sqlite3 is not, so that a store many processes share (Postgres) fits unchanged.
 *
 * @example
 * const store = await openSqliteStore('./data/agents.db');
 * await store.commit([{ kind: 'checkpoint', ... }]); // one transaction for the whole batch
 */
import type { SharedLlmSlots, SharedToolSlots } from '../core/shared-slots.js';
import type { SerializedError } from '../core/errors.js';
import type { CheckpointFormat } from './checkpoint-encoding.js';
import type { SnapshotPart } from './snapshot-parts.js';

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
  /** Checkpoints before this seq were pruned by a retention policy (0: none). */
  prunedBefore: number;
  /** The agent that spawned this one as its child (null: none). */
  parent: string | null;
}

export interface NewAgent {
  id: string;
  machine: string;
  machineVersion: string;
  input: unknown;
  createdAt: string;
  /** Set when forking: the first checkpoint, committed with the agent row. */
  snapshot?: CheckpointBody;
  /** Set for a child agent: the agent that spawned it. */
  parent?: string;
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

/**
 * A delayed event a machine scheduled (`after`, or `raise`/`sendTo` with a `delay`) that has not
 * fired yet, as its checkpoint keeps it: restored agents schedule it again for its deadline.
 */
export interface PendingTimer {
  /** The scheduler's id (for `after`, XState's `xstate.after.<delay>.<state>`); unique among the agent's pending delays. */
  id: string;
  /** Epoch ms at which it fires. */
  at: number;
  event: { type: string; [key: string]: unknown };
  /** The id of the invoked child it goes to; absent: the agent itself. */
  to?: string;
}

/** An event one agent's transition sends to another's inbox (`sendToAgent`). */
export interface OutboxMessage {
  to: string;
  event: InboxEvent;
  /** Its idempotency key in the recipient's inbox: `<sender>:<checkpoint seq>:<n>`, the same if the transition runs again. */
  key: string;
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
  /** The delays pending after this transition; absent: none. */
  timers?: PendingTimer[];
}

export interface ActionWrite {
  action: string;
  payload: unknown;
  result: unknown;
  /**
   * `payload` and `result` as the store keeps them, holding references to the agent's parts (an
   * LLM call's input refers to the exchange the checkpoints already hold); their parts come with
   * the checkpoint's `parts`. Without it, the values' plain JSON is stored.
   */
  stored?: { payload: string; result: string };
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
      /** How `snapshot` is written (checkpoint-encoding.ts); default `json`, the plain JSON. */
      format?: CheckpointFormat;
      /** For a `delta`: the full checkpoint its chain starts from. */
      baseSeq?: number;
      /** Parts the snapshot or the actions refer to that the store may not hold yet (kept once per agent and hash). */
      parts?: readonly SnapshotPart[];
      /** Events the transition sent to other agents: appended to their inboxes in the same transaction. */
      outbox?: OutboxMessage[];
      /**
       * Child agents the transition spawned (`parent` set): created in the same transaction, before
       * the outbox's events (which may be for them); one whose id exists already is left as it is.
       * On a shared store the committing process owns them.
       */
      spawns?: NewAgent[];
    } & CheckpointBody)
  /** An inbox event the machine ignored: consumed, but no new checkpoint. */
  | { kind: 'consume'; agentId: string; inboxPosition: number; at: string }
  | ({
      kind: 'effect';
      agentId: string;
      seq: number;
      createdAt: string;
      /** `result` as the store keeps it, referring to the agent's parts (`parts`): a tool's answer sits in the exchange too. */
      stored?: string;
      parts?: readonly SnapshotPart[];
    } & EffectWrite)
  | { kind: 'status'; agentId: string; status: AgentStatus; error: SerializedError | null; at: string }
  /**
   * An event into the agent's inbox: batched like the rest, so acknowledging events is group-committed too.
   * `bodyHash` (`eventBodyHash(event)`), with a key: kept with it, and an event under the same key
   * with another hash is refused (IdempotencyKeyReusedError) instead of answered as a duplicate.
   * Without it (the runtime's own reports: a child ends once, whatever it says) the key alone decides.
   */
  | { kind: 'event'; agentId: string; event: InboxEvent; idempotencyKey: string | null; bodyHash?: string; at: string };

/**
 * What `commit` says of each write, in order: an event's seq (`duplicate` when its idempotency key
 * was seen before), nothing for any other write taken, or why that one write was refused. A refused
 * write changes nothing and fails no other write:
 * - an event for an unknown agent (NotFoundError) or for one that has ended (ConflictError), or under
 *   a key seen before with another body hash, both hashes known (IdempotencyKeyReusedError);
 * - a checkpoint, consume or effect for an agent that has ended (stopped, done, error), and a status
 *   write that would change an ended agent's status (FencedError): no write brings an agent back;
 * - on a shared store, a write only the agent's owner may make, from another process (FencedError).
 * A stop for an agent that has ended is taken and changes nothing; an `error` status for an agent
 * whose last checkpoint ended it in error is taken (it records the error).
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
  /** The whole snapshot's JSON (put back together from its parts). */
  snapshot: string;
  /** Why the snapshot could not be put back together (a part or a delta is not stored): `snapshot` is then the stored text. */
  unreadable?: string;
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
  /** Only the children of this agent. */
  parent?: string;
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
    /** A child agent's parent: it reports to it when it ends. Absent: none. */
    parent?: string | null;
    /** The spawn input, read only for an agent with no checkpoint yet: it starts from it. */
    input?: unknown;
  };
  /** The last checkpoint, without its state and status columns: the snapshot carries both. */
  checkpoint: RestorableCheckpoint | undefined;
}

export type RestorableCheckpoint = Omit<CheckpointRecord, 'state' | 'status'> & {
  /** Hashes of the stored parts its snapshot was put together from: a new checkpoint need not write them again. */
  parts?: readonly string[];
  /** The delays pending after it: a restored agent schedules them again. */
  timers?: readonly PendingTimer[];
};

export type AppendResult = { seq: number; duplicate: boolean };

/** Agents' rows: spawn, read, list. */
export interface AgentRows {
  /** Idempotent spawn: `created: false` returns the row that was already there. */
  createAgent(agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  /** The spawn input, kept apart from the agent row (every transition rewrites the row; the input is read rarely: by fork). */
  getInput(id: string): Promise<unknown>;
  /** In creation order; the cursor is opaque and only this store's own. */
  listAgents(query: AgentQuery): Promise<Page<AgentRecord>>;
}

/** An agent's inbox, read from a position on. */
export interface Inbox {
  /** The committed events after `position`, in seq order. */
  eventsAfter(agentId: string, position: number): Promise<EventRecord[]>;
}

/** The one way anything is written after a spawn. */
export interface WriteBatch {
  /**
   * Group commit: every write in one transaction, in order, each as `WriteResult` says; throws (and
   * writes nothing) on a storage error or when a write other than an event names no agent
   * (NotFoundError). Resolves once the batch is durable. The runtime may call it again before an
   * earlier call resolves (it writes the next batch while the previous one is being made durable):
   * batches are applied in call order and resolve in that order.
   */
  commit(writes: readonly Write[]): Promise<WriteResult[]>;
}

/** What an agent did: its checkpoints, its actions, the effects recorded under their keys. */
export interface History {
  /** Oldest first; with `newest: n`, only the last n (still oldest first): long-lived agents have long histories. */
  listCheckpoints(agentId: string, options?: HistoryOptions): Promise<CheckpointSummary[]>;
  getCheckpoint(agentId: string, seq: number): Promise<CheckpointRecord | undefined>;
  /** Oldest first; `newest` as for checkpoints. */
  listActions(agentId: string, options?: HistoryOptions): Promise<ActionRecord[]>;
  /** The first result recorded under the key: a later effect under the same key never replaces it. */
  findEffect(idempotencyKey: string): Promise<EffectRecord | undefined>;
}

/** What bringing agents back into memory reads, and the counts gauges show. */
export interface Recovery {
  /**
   * Every active agent with its last checkpoint, in creation order, for recovery at start. With
   * `skipResting`, agents that wait for an event and have none pending stay on disk (they are
   * loaded on their next event).
   */
  loadActiveAgents(options?: { skipResting?: boolean }): Promise<RestorableAgent[]>;
  /** One agent as `loadActiveAgents` gives it, to bring back into memory; undefined unless it exists and is active. */
  loadRestorable(id: string): Promise<RestorableAgent | undefined>;
  /** Counts for gauges: agents by status, and events accepted but not yet consumed. */
  stats(): Promise<StoreStats>;
  /**
   * Active agents whose last checkpoint has a delay due by `before` (epoch ms), earliest first: an
   * agent not in memory is woken for it. On a shared store, only those this process holds or no live
   * process does.
   */
  dueAgents(before: number, limit: number): Promise<{ id: string; wakeAt: number }[]>;
}

/** Which of an agent's checkpoints a retention policy keeps: any that one of the set rules keeps, and always the last. */
export interface RetentionRule {
  /** The newest this many. */
  keepNewest?: number;
  /** Those written at or after this time (ISO). */
  keepSince?: string;
}

export interface PruneResult {
  checkpoints: number;
  actions: number;
  /** Inbox events consumed before the oldest kept checkpoint was written: deleted, or for one sent under an idempotency key, cut to its type (the key still answers its seq). */
  events: number;
  parts: number;
  /** The oldest checkpoint now kept (0 when the agent has none). */
  prunedBefore: number;
}

/** Retention: pruning what a policy no longer keeps, in small transactions, never what restore or a kept checkpoint needs. */
export interface Pruning {
  /**
   * Deletes the agent's checkpoints (and action-log rows) that `rule` does not keep, except those a
   * kept checkpoint is a delta against, and the inbox events it had consumed before the oldest kept
   * checkpoint was written (one sent under an idempotency key is kept, cut to its type, so the key
   * still answers its seq); with `parts`, also the parts written before the oldest kept
   * checkpoint that nothing kept refers to. The caller passes `parts` only for an agent that no
   * encoder holds in memory (one could refer to a part it believes stored).
   */
  pruneHistory(agentId: string, rule: RetentionRule, options: { parts: boolean }): Promise<PruneResult>;
  /** Deletes up to `limit` agents that ended (done or stopped) before `endedBefore`, with everything of theirs; their ids. */
  deleteEndedAgents(options: { endedBefore: string; limit: number }): Promise<string[]>;
  /** What the store takes on disk (SQLite: its file's pages in use; Postgres: its tables and indexes). */
  sizeBytes(): Promise<number>;
}

export interface Store extends AgentRows, Inbox, WriteBatch, History, Recovery, Pruning {
  readonly kind: 'sqlite' | 'postgres' | 'memory';
  /** A description for logs (a path or a redacted URL). */
  readonly location: string;
  /**
   * Opened to read only (`readOnly: true` at open): every write throws a `ReadOnlyStoreError`, and a
   * runtime on it restores and runs nothing. Absent: false.
   */
  readonly readOnly?: boolean;
  /**
   * Present on a store that many processes share (Postgres): who runs which agent. When present,
   * `createAgent` makes this process the new agent's owner, and `commit` takes checkpoints,
   * consumes, effects and status writes other than a stop only from the owner (see `WriteResult`);
   * events and stops are taken from any process.
   */
  readonly leases?: Ownership;
  /** On a store many processes share: the slots that keep their LLM calls together within one limit. */
  readonly llmSlots?: SharedLlmSlots;
  /** On a store many processes share: the slots that keep each tool's calls in all of them within its `concurrency`. */
  readonly toolSlots?: SharedToolSlots;
  /**
   * Whether the store can take writes now, without writing anything: resolves, or throws a
   * `StoreUnavailableError` saying why not (store/unavailable.ts). `quick` runs about every second
   * while the store is healthy (SQLite: the file is still the one opened); `write` while it is
   * known unavailable and no held write is there to retry (SQLite: a write tried and undone, the
   * disk's free space; Postgres: the database answers and takes writes). Absent: no probe (memory).
   */
  probe?(depth: StoreProbeDepth): Promise<void>;
  close(): Promise<void>;
}

export type StoreProbeDepth = 'quick' | 'write';

/**
 * Who runs which agent, on a store that many processes share. A process holds a lease that it
 * renews; it owns the agents it spawned or claimed. When its lease runs out (it died, or lost the
 * store for longer than `leaseMs`), any other process may claim its agents and restore them from
 * their last checkpoint; from then on the old owner's writes for them are refused (fenced).
 */
export interface Ownership {
  /** This process's id among those sharing the store: unique per process start. */
  readonly processId: string;
  readonly leaseMs: number;
  /**
   * Takes or renews this process's lease, until `leaseMs` from now by the store's clock (never this
   * process's: the processes' clocks need not agree). False when it had already run out: other
   * processes may be claiming its agents, so it must stop running them (its next renew starts a
   * fresh lease).
   */
  renew(): Promise<boolean>;
  /**
   * Makes this process the owner of up to `limit` active agents that no live process holds (no
   * owner, or an owner whose lease has run out), oldest first, and returns them ready to restore.
   * Processes claiming at the same moment never get the same agent, and none waits for another's
   * claim. With `skipResting`, as for `loadActiveAgents`.
   */
  claimOrphans(options: { limit: number; skipResting?: boolean }): Promise<RestorableAgent[]>;
  /**
   * Makes this process the owner of one active agent unless another live process holds it.
   * `'elsewhere'`: a live process runs it; undefined: no such active agent.
   */
  claim(agentId: string): Promise<RestorableAgent | 'elsewhere' | undefined>;
  /** Agents this process owns that have inbox events accepted but not yet consumed (a missed change's safety net). */
  pendingInboxes(): Promise<{ agentId: string; eventSeq: number }[]>;
  /**
   * Called after any process commits a change of an agent that other processes act on (see
   * `AgentChange`), in commit order. A change may be missed (the store's connection dropped): the
   * runtime polls `pendingInboxes` too.
   */
  onChange(listener: (change: AgentChange) => void): void;
  /** Ends this process's lease now (clean shutdown): its agents may be claimed at once. */
  resign(): Promise<void>;
  /** Messages to the other processes (streamed LLM text relayed to their clients). */
  readonly relay?: Relay;
}

/** The name `Ownership` had first. */
export type Leases = Ownership;

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

/** Messages between the processes that share a store (Postgres: NOTIFY on a channel of its own): best effort, may be lost. */
export interface Relay {
  send(message: string): Promise<void>;
  onMessage(listener: (message: string) => void): void;
}
