/**
 * What one `commit` batch does, decided once for every store: each write's result, the rows to
 * insert, each agent row's values after the whole batch, and the changes other processes hear of.
 * The writes are played in order against the agent rows as they were committed before the batch,
 * exactly as applying them one by one would; each store then writes the plan its own way (Postgres
 * with a few multi-row statements, SQLite with its prepared statements, memory with its maps).
 *
 * The rules, the same in every store:
 * - A write other than an event must name an existing agent, or the whole batch fails
 *   (NotFoundError) and nothing of it is written.
 * - An event is taken for an active agent (the next seq of its inbox), and refused for an unknown
 *   agent (NotFoundError) or one that has ended (ConflictError); a key seen before gives its event
 *   back, whatever the agent's status, unless both events carry a body hash and they differ: then
 *   the key was reused for another event (IdempotencyKeyReusedError). A key kept without a hash
 *   (the runtime's own reports, events stored before hashes were) answers any body.
 * - A checkpoint, consume or effect is taken only while the agent is active: a stopped or finished
 *   agent never comes back to life. Otherwise it is refused with a FencedError, as a write from a
 *   process that no longer runs the agent is: the runtime lets such an agent go without calling it
 *   a failure.
 * - A status write ends an active agent. A stop is taken from any process and leaves an agent that
 *   has already ended as it is (it is not refused: stopping twice is not an error); an `error`
 *   status is also taken for an agent whose last checkpoint ended it in error (the runtime records
 *   that error next); any other status write for an ended agent is refused (FencedError).
 * - On a store many processes share, the process that runs the agent is the only one whose
 *   checkpoints, consumes, effects and status writes other than a stop are taken (FencedError).
 *
 * - A checkpoint's spawns (child agents) are created with it, unless an agent with that id exists
 *   (then nothing: a transition run again after a crash spawns the same ids); on a shared store
 *   the committing process owns them. A refused checkpoint spawns nothing.
 *
 * A refused write changes nothing and fails no other write of the batch.
 */
import { ConflictError, FencedError, IdempotencyKeyReusedError, NotFoundError } from '../core/errors.js';
import type { AgentChange, AgentStatus, NewAgent, Write, WriteResult } from './store.js';
import { nextDeadline } from './timers.js';

export type WriteOf<K extends Write['kind']> = Extract<Write, { kind: K }>;

/** What the plan reads of each agent row the batch names, as committed before the batch. */
export interface AgentRead {
  id: string;
  status: AgentStatus;
  eventSeq: number;
  inboxPosition: number;
  /** On a store with owners: the process that runs the agent (null: none). */
  owner?: string | null;
}

export interface PlanInput {
  /** The row of agent `id` as committed before the batch; undefined: no such agent. Asked once per agent the batch names. */
  agent(id: string): AgentRead | undefined;
  /** The event committed before the batch under this idempotency key, if any (asked only for existing agents). */
  committedEvent(agentId: string, idempotencyKey: string): KeyedEvent | undefined;
  /** On a store many processes share: this process, the owner that its guarded writes must find. */
  processId?: string;
  /** List the `changes` (a store that other processes share announces them; the others need not). */
  announce?: boolean;
}

/**
 * An agent row after the batch: one row per agent however many writes named it (the stores write
 * each changed row once, with its final values).
 */
/** What a key answers: its event's seq, and the body hash kept with it (null: none was). */
export interface KeyedEvent {
  seq: number;
  bodyHash: string | null;
}

export interface AgentAfter {
  id: string;
  status: AgentStatus;
  inboxPosition: number;
  eventSeq: number;
  /** Whether the batch accepted events into its inbox (`eventSeq` moved). */
  eventsAccepted: boolean;
  /** From its last applied checkpoint; absent when none was: the checkpoint columns keep their values. */
  checkpoint?: { state: string; progress: number; lastSeq: number; resting: boolean; wakeAt: number | null };
  /** From its last applied checkpoint, consume or status write; absent when only events touched it. */
  updatedAt?: string;
  /** From its last applied status write; absent when none was (`text: null` clears the column). */
  error?: { text: string | null };
}

export interface AcceptedEvent {
  write: WriteOf<'event'>;
  seq: number;
}

export interface AppliedCheckpoint {
  write: WriteOf<'checkpoint'>;
  /** JSON text of `write.state`, for the checkpoint row and the agent row alike. */
  state: string;
}

export interface WritePlan {
  /** One per write, in write order. */
  results: WriteResult[];
  /** Only the rows some applied write changes. */
  agents: AgentAfter[];
  /** In write order. */
  checkpoints: AppliedCheckpoint[];
  events: AcceptedEvent[];
  /** At most one per idempotency key: the first. Under a key recorded by an earlier batch, the store keeps that first result. */
  effects: WriteOf<'effect'>[];
  /** With `announce`: accepted events and status changes in write order, then each agent's newest checkpoint. */
  changes: AgentChange[];
  /** Child agents to create (with `parent`), in write order; the stores insert them before anything else. */
  spawned: NewAgent[];
}

/**
 * Every agent the batch may read or change: what each write names, a checkpoint's spawns and the
 * recipients of its outbox. For a store that reads (and locks) the rows before planning.
 */
export function agentsNamed(writes: readonly Write[]): string[] {
  const ids = new Set<string>();
  for (const w of writes) {
    ids.add(w.agentId);
    if (w.kind !== 'checkpoint') continue;
    for (const child of w.spawns ?? []) ids.add(child.id);
    for (const m of w.outbox ?? []) ids.add(m.to);
  }
  return [...ids];
}

/** The events under an idempotency key the batch may append: keyed event writes and every outbox message. */
export function keyedEvents(writes: readonly Write[]): { agentId: string; key: string }[] {
  return writes.flatMap((w) => {
    if (w.kind === 'event') return w.idempotencyKey === null ? [] : [{ agentId: w.agentId, key: w.idempotencyKey }];
    if (w.kind === 'checkpoint') return (w.outbox ?? []).map((m) => ({ agentId: m.to, key: m.key }));
    return [];
  });
}

/** Plays `writes` in order. Throws NotFoundError for a write other than an event that names no agent. */
export function planWrites(writes: readonly Write[], input: PlanInput): WritePlan {
  return new WritePlanner(input).play(writes);
}

/**
 * An agent row as the writes so far left it, and then after the batch. A class, not a spread copy
 * of the row read: this runs for every agent of every batch, and `{ ...row, more }` takes V8's slow
 * path (~1.5 µs each).
 */
class AgentState implements AgentAfter {
  readonly id: string;
  readonly owner: string | null;
  status: AgentStatus;
  eventSeq: number;
  inboxPosition: number;
  eventsAccepted = false;
  checkpoint: AgentAfter['checkpoint'] = undefined;
  updatedAt: string | undefined = undefined;
  error: AgentAfter['error'] = undefined;
  changed = false;

  constructor(read: AgentRead) {
    this.id = read.id;
    this.owner = read.owner ?? null;
    this.status = read.status;
    this.eventSeq = read.eventSeq;
    this.inboxPosition = read.inboxPosition;
  }
}

class WritePlanner {
  /** Every agent the batch named so far; null: no such agent. */
  private readonly agents = new Map<string, AgentState | null>();
  /** Keys of the events accepted in this batch: agent id → key → its event. */
  private readonly acceptedKeys = new Map<string, Map<string, KeyedEvent>>();
  private readonly effectKeys = new Set<string>();
  private readonly plan: WritePlan = { results: [], agents: [], checkpoints: [], events: [], effects: [], changes: [], spawned: [] };
  /** Each agent's newest applied checkpoint: one change per agent, not per transition. */
  private readonly newest = new Map<string, number>();

  constructor(private readonly input: PlanInput) {}

  play(writes: readonly Write[]): WritePlan {
    for (const w of writes) this.plan.results.push(this.apply(w));
    for (const [agentId, seq] of this.newest) this.plan.changes.push({ kind: 'checkpoint', agentId, seq });
    for (const agent of this.agents.values()) if (agent?.changed) this.plan.agents.push(agent);
    return this.plan;
  }

  private agent(id: string): AgentState | undefined {
    let agent = this.agents.get(id);
    if (agent === undefined) {
      const read = this.input.agent(id);
      this.agents.set(id, (agent = read ? new AgentState(read) : null));
    }
    return agent ?? undefined;
  }

  private apply(w: Write): WriteResult {
    switch (w.kind) {
      case 'event':
        return this.event(w);
      case 'checkpoint':
        return this.checkpoint(w);
      case 'consume':
        return this.consume(w);
      case 'effect':
        return this.effect(w);
      case 'status':
        return this.status(w);
    }
  }

  private event(w: WriteOf<'event'>): WriteResult {
    const agent = this.agent(w.agentId);
    if (!agent) return { refused: new NotFoundError('agent', w.agentId) };
    const keys = this.acceptedKeys.get(w.agentId);
    const existing =
      w.idempotencyKey === null ? undefined : (keys?.get(w.idempotencyKey) ?? this.input.committedEvent(w.agentId, w.idempotencyKey));
    if (existing !== undefined) {
      if (w.bodyHash !== undefined && existing.bodyHash !== null && existing.bodyHash !== w.bodyHash) {
        return { refused: new IdempotencyKeyReusedError(w.agentId, w.idempotencyKey!, existing.seq) };
      }
      return { seq: existing.seq, duplicate: true };
    }
    if (agent.status !== 'active') return { refused: new ConflictError(`Agent "${w.agentId}" is ${agent.status}; it takes no more events.`) };
    const seq = ++agent.eventSeq;
    agent.eventsAccepted = true;
    agent.changed = true;
    if (w.idempotencyKey !== null) {
      const keyed = { seq, bodyHash: w.bodyHash ?? null };
      if (keys) keys.set(w.idempotencyKey, keyed);
      else this.acceptedKeys.set(w.agentId, new Map([[w.idempotencyKey, keyed]]));
    }
    this.plan.events.push({ write: w, seq });
    if (this.input.announce) this.plan.changes.push({ kind: 'event', agentId: w.agentId, seq, owner: agent.owner });
    return { seq, duplicate: false };
  }

  private checkpoint(w: WriteOf<'checkpoint'>): WriteResult {
    const agent = this.runnable(w.agentId);
    if ('refused' in agent) return agent;
    const state = JSON.stringify(w.state);
    agent.status = w.status;
    agent.inboxPosition = w.inboxPosition;
    agent.checkpoint = { state, progress: w.progress, lastSeq: w.seq, resting: w.resting === true, wakeAt: nextDeadline(w.timers) };
    agent.updatedAt = w.createdAt;
    agent.changed = true;
    this.plan.checkpoints.push({ write: w, state });
    if (this.input.announce) this.newest.set(w.agentId, w.seq);
    for (const child of w.spawns ?? []) this.spawn(child);
    // Its messages, into their recipients' inboxes in this transaction; one for an agent that is gone is dropped.
    for (const m of w.outbox ?? []) this.event({ kind: 'event', agentId: m.to, event: m.event, idempotencyKey: m.key, at: w.createdAt });
    return undefined;
  }

  /** A child agent, new unless its id is taken (the spawning transition ran before a crash, or the id is another agent's). */
  private spawn(child: NewAgent): void {
    if (this.agent(child.id)) return;
    const owner = this.input.processId ?? null;
    this.agents.set(child.id, new AgentState({ id: child.id, status: 'active', eventSeq: 0, inboxPosition: 0, owner }));
    this.plan.spawned.push(child);
  }

  /** The inbox position only moves forward (a consume after a later checkpoint changes nothing). */
  private consume(w: WriteOf<'consume'>): WriteResult {
    const agent = this.runnable(w.agentId);
    if ('refused' in agent) return agent;
    agent.inboxPosition = Math.max(agent.inboxPosition, w.inboxPosition);
    agent.updatedAt = w.at;
    agent.changed = true;
    return undefined;
  }

  private effect(w: WriteOf<'effect'>): WriteResult {
    const agent = this.runnable(w.agentId);
    if ('refused' in agent) return agent;
    if (!this.effectKeys.has(w.idempotencyKey)) {
      this.effectKeys.add(w.idempotencyKey);
      this.plan.effects.push(w);
    }
    return undefined;
  }

  private status(w: WriteOf<'status'>): WriteResult {
    const agent = this.existing(w.agentId);
    if (w.status !== 'stopped' && !this.runs(agent)) return { refused: new FencedError(w.agentId) };
    if (agent.status !== 'active') {
      // Stopping an agent that has ended leaves it as it is (a stop and its end may cross).
      if (w.status === 'stopped') return undefined;
      // The checkpoint that ended it in error comes first; the error itself is recorded next.
      if (!(w.status === 'error' && agent.status === 'error')) return ended(agent);
    }
    agent.status = w.status;
    agent.error = { text: w.error ? JSON.stringify(w.error) : null };
    agent.updatedAt = w.at;
    agent.changed = true;
    // With the process that runs it, which must let it go when another one stopped it.
    if (this.input.announce) this.plan.changes.push({ kind: 'status', agentId: w.agentId, owner: agent.owner });
    return undefined;
  }

  /** The agent, when this process may write its checkpoints, consumes and effects: it runs the agent, which is still active. */
  private runnable(agentId: string): AgentState | { refused: FencedError } {
    const agent = this.existing(agentId);
    if (!this.runs(agent)) return { refused: new FencedError(agentId) };
    return agent.status === 'active' ? agent : ended(agent);
  }

  /** Whether this process runs the agent: always on a store that one process has to itself. */
  private runs(agent: AgentState): boolean {
    return this.input.processId === undefined || agent.owner === this.input.processId;
  }

  private existing(agentId: string): AgentState {
    const agent = this.agent(agentId);
    if (!agent) throw new NotFoundError('agent', agentId);
    return agent;
  }
}

function ended(agent: AgentState): { refused: FencedError } {
  return { refused: new FencedError(agent.id, `is ${agent.status}`) };
}
