/**
 * What one `commit` batch does, decided in JavaScript from the agent rows it locked: each write's
 * result, the rows to insert, each agent row's values after the whole batch, and the notifications.
 * The writes are played in order against those rows as the database would apply them one by one,
 * so that `apply-writes.ts` can then write everything with a few multi-row statements.
 */
import { ConflictError, FencedError, NotFoundError } from '../../core/errors.js';
import type { AgentStatus, Write, WriteResult } from '../store.js';
import { notificationPayload } from './inbox-listener.js';

export type WriteOf<K extends Write['kind']> = Extract<Write, { kind: K }>;
type Refusal = { refused: Error };

/** What the batch reads of each agent row it names, with the row locked. */
export interface LockedAgent {
  id: string;
  owner: string | null;
  status: AgentStatus;
  eventSeq: number;
  inboxPosition: number;
}

/**
 * An agent row after the batch: one UPDATE per row however many writes named it (an UPDATE … FROM
 * that matches a row several times applies only one of them).
 */
export interface AgentAfter {
  id: string;
  status: AgentStatus;
  inboxPosition: number;
  eventSeq: number;
  /** From its last applied checkpoint; absent when none was: the checkpoint columns keep their values. */
  checkpoint?: { state: string; progress: number; lastSeq: number; resting: boolean };
  /** From its last applied checkpoint, consume or status write; absent when only events touched it. */
  updatedAt?: string;
  /** From its last status write; absent when none was (`text: null` clears the column). */
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

export interface BatchPlan {
  /** One per write, in write order. */
  results: WriteResult[];
  /** Only the rows some applied write changes. */
  agents: AgentAfter[];
  checkpoints: AppliedCheckpoint[];
  events: AcceptedEvent[];
  /** At most one per idempotency key: the first (the later ones would do nothing, `on conflict do nothing`). */
  effects: WriteOf<'effect'>[];
  /** `pg_notify` payloads, in the order they are sent. */
  announcements: string[];
}

export interface BatchInput {
  /** Every existing agent the batch names, locked; an id missing here names no agent. */
  agents: ReadonlyMap<string, LockedAgent>;
  /** Seqs of the committed events under the idempotency keys the batch's events carry: agent id → key → seq. */
  eventKeys: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** This process: the owner its guarded writes must find on the agent row. */
  processId: string;
}

/** An agent row as the writes so far left it. */
interface AgentState extends LockedAgent, Omit<AgentAfter, 'id' | 'status' | 'inboxPosition' | 'eventSeq'> {
  changed: boolean;
}

/**
 * Plays `writes` in order. Throws NotFoundError (the caller rolls the batch back, as the SQLite store
 * does) for a write other than an event that names no agent; every other refusal is that write's
 * result and leaves the others intact.
 */
export function planBatch(writes: readonly Write[], input: BatchInput): BatchPlan {
  return new BatchPlanner(input).play(writes);
}

class BatchPlanner {
  private readonly agents = new Map<string, AgentState>();
  /** Keys of events committed before or accepted in this batch: agent id → key → seq. */
  private readonly eventKeys = new Map<string, Map<string, number>>();
  private readonly effectKeys = new Set<string>();
  private readonly plan: BatchPlan = { results: [], agents: [], checkpoints: [], events: [], effects: [], announcements: [] };
  /** Each agent's newest applied checkpoint: one announcement per agent, not per transition. */
  private readonly newest = new Map<string, number>();

  constructor(private readonly input: BatchInput) {
    for (const [id, agent] of input.agents) this.agents.set(id, { ...agent, changed: false });
    for (const [id, keys] of input.eventKeys) this.eventKeys.set(id, new Map(keys));
  }

  play(writes: readonly Write[]): BatchPlan {
    for (const w of writes) this.plan.results.push(this.apply(w));
    for (const [agentId, seq] of this.newest) this.plan.announcements.push(notificationPayload({ kind: 'checkpoint', agentId, seq }));
    for (const agent of this.agents.values()) {
      if (!agent.changed) continue;
      const { owner: _owner, changed: _changed, ...after } = agent;
      this.plan.agents.push(after);
    }
    return this.plan;
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

  /** An unknown agent or one no longer active refuses the event; a key seen before gives its event back. */
  private event(w: WriteOf<'event'>): WriteResult {
    const agent = this.agents.get(w.agentId);
    if (!agent) return { refused: new NotFoundError('agent', w.agentId) };
    const keys = this.eventKeys.get(w.agentId);
    const existing = w.idempotencyKey === null ? undefined : keys?.get(w.idempotencyKey);
    if (existing !== undefined) return { seq: existing, duplicate: true };
    if (agent.status !== 'active') return { refused: new ConflictError(`Agent "${w.agentId}" is ${agent.status}; it takes no more events.`) };
    const seq = ++agent.eventSeq;
    agent.changed = true;
    if (w.idempotencyKey !== null) {
      if (keys) keys.set(w.idempotencyKey, seq);
      else this.eventKeys.set(w.agentId, new Map([[w.idempotencyKey, seq]]));
    }
    this.plan.events.push({ write: w, seq });
    this.plan.announcements.push(notificationPayload({ kind: 'event', agentId: w.agentId, seq, owner: agent.owner }));
    return { seq, duplicate: false };
  }

  /** Only while this process owns the agent and it is still active: a checkpoint must not bring a stopped agent back. */
  private checkpoint(w: WriteOf<'checkpoint'>): WriteResult {
    const agent = this.existing(w.agentId);
    if (agent.owner !== this.input.processId || agent.status !== 'active') return fenced(w.agentId);
    const state = JSON.stringify(w.state);
    agent.status = w.status;
    agent.inboxPosition = w.inboxPosition;
    agent.checkpoint = { state, progress: w.progress, lastSeq: w.seq, resting: w.resting === true };
    agent.updatedAt = w.createdAt;
    agent.changed = true;
    this.plan.checkpoints.push({ write: w, state });
    this.newest.set(w.agentId, w.seq);
    return undefined;
  }

  /** The inbox position only moves forward (a consume after a later checkpoint changes nothing). */
  private consume(w: WriteOf<'consume'>): WriteResult {
    const agent = this.existing(w.agentId);
    if (agent.owner !== this.input.processId) return fenced(w.agentId);
    agent.inboxPosition = Math.max(agent.inboxPosition, w.inboxPosition);
    agent.updatedAt = w.at;
    agent.changed = true;
    return undefined;
  }

  private effect(w: WriteOf<'effect'>): WriteResult {
    const agent = this.existing(w.agentId);
    if (agent.owner !== this.input.processId) return fenced(w.agentId);
    if (!this.effectKeys.has(w.idempotencyKey)) {
      this.effectKeys.add(w.idempotencyKey);
      this.plan.effects.push(w);
    }
    return undefined;
  }

  /** Any process may stop an agent (the one that runs it then finds it stopped); other statuses are its owner's. */
  private status(w: WriteOf<'status'>): WriteResult {
    const agent = this.existing(w.agentId);
    if (w.status !== 'stopped' && agent.owner !== this.input.processId) return fenced(w.agentId);
    agent.status = w.status;
    agent.error = { text: w.error ? JSON.stringify(w.error) : null };
    agent.updatedAt = w.at;
    agent.changed = true;
    // Seq 0: its status changed (stopped, maybe by a process that does not run it: its owner lets it go).
    this.plan.announcements.push(notificationPayload({ kind: 'status', agentId: w.agentId, owner: agent.owner }));
    return undefined;
  }

  /** A write other than an event must name an agent, or the whole batch rolls back (as in the SQLite store). */
  private existing(agentId: string): AgentState {
    const agent = this.agents.get(agentId);
    if (!agent) throw new NotFoundError('agent', agentId);
    return agent;
  }
}

function fenced(agentId: string): Refusal {
  return { refused: new FencedError(agentId) };
}
