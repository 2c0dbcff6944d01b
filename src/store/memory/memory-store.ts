import { ConflictError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import type {
  ActionRecord,
  AgentQuery,
  AgentRecord,
  CheckpointRecord,
  CheckpointSummary,
  EffectRecord,
  EventRecord,
  HistoryOptions,
  InboxEvent,
  NewAgent,
  Page,
  RestorableAgent,
  Store,
  StoreStats,
  Write,
  WriteResult,
  AppendResult,
} from '../store.js';

interface AgentData {
  pos: number;
  resting: boolean;
  record: AgentRecord;
  input: unknown;
  checkpoints: CheckpointRecord[];
  events: EventRecord[];
  actions: ActionRecord[];
}

/**
 * A Store in process memory: nothing survives the process. For tests and for measuring what
 * durability costs (the benchmark runs the same runtime on it and on SQLite). Values are copied
 * through JSON on the way in, as a database would, so no caller can mutate stored state.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly location = ':memory:';
  private readonly agents = new Map<string, AgentData>();
  private readonly effects = new Map<string, EffectRecord>();
  private nextPos = 1;

  async createAgent(agent: NewAgent) {
    const existing = this.agents.get(agent.id);
    if (existing) return { agent: rowCopy(existing.record), created: false };
    const first = agent.snapshot;
    const record: AgentRecord = {
      id: agent.id,
      machine: agent.machine,
      machineVersion: agent.machineVersion,
      status: first?.status ?? 'active',
      state: first ? copy(first.state) : null,
      progress: first?.progress ?? 0,
      lastSeq: first ? 1 : 0,
      inboxPosition: 0,
      eventSeq: 0,
      error: null,
      createdAt: agent.createdAt,
      updatedAt: agent.createdAt,
    };
    const checkpoints = first ? [{ ...first, state: copy(first.state), agentId: agent.id, seq: 1, createdAt: agent.createdAt }] : [];
    this.agents.set(agent.id, { pos: this.nextPos++, resting: false, record, input: copy(agent.input ?? {}), checkpoints, events: [], actions: [] });
    return { agent: rowCopy(record), created: true };
  }

  async getAgent(id: string) {
    const data = this.agents.get(id);
    return data && rowCopy(data.record);
  }

  async getInput(id: string): Promise<unknown> {
    return copy(this.agents.get(id)?.input);
  }

  async listAgents(query: AgentQuery): Promise<Page<AgentRecord>> {
    const after = query.cursor === undefined ? 0 : Number(query.cursor);
    if (!Number.isInteger(after)) throw new InvalidInputError('That cursor is not one this server gave out.');
    const matching = [...this.agents.values()].filter(
      (a) =>
        a.pos > after &&
        (query.machine === undefined || a.record.machine === query.machine) &&
        (query.status === undefined || a.record.status === query.status),
    );
    const page = matching.slice(0, query.limit);
    const last = page.at(-1);
    return { items: page.map((a) => rowCopy(a.record)), nextCursor: matching.length > query.limit && last ? String(last.pos) : null };
  }

  private append(agentId: string, event: InboxEvent, idempotencyKey: string | null, at: string): AppendResult {
    const data = this.agents.get(agentId);
    if (!data) throw new NotFoundError('agent', agentId);
    if (idempotencyKey !== null) {
      const existing = data.events.find((e) => e.idempotencyKey === idempotencyKey);
      if (existing) return { seq: existing.seq, duplicate: true };
    }
    if (data.record.status !== 'active') throw new ConflictError(`Agent "${agentId}" is ${data.record.status}; it takes no more events.`);
    const seq = ++data.record.eventSeq;
    data.events.push({ agentId, seq, event: copy(event), idempotencyKey, createdAt: at });
    return { seq, duplicate: false };
  }

  async eventsAfter(agentId: string, position: number): Promise<EventRecord[]> {
    return (this.agents.get(agentId)?.events ?? []).filter((e) => e.seq > position).map((e) => ({ ...e, event: copy(e.event) }));
  }

  async commit(writes: readonly Write[]): Promise<WriteResult[]> {
    // All or nothing, like a transaction: check every write before applying any. Events are
    // refused one by one instead, as in the SQLite store.
    for (const w of writes) {
      if (w.kind === 'event') continue;
      const data = this.agents.get(w.agentId);
      if (!data) throw new NotFoundError('agent', w.agentId);
      if (w.kind === 'checkpoint' && data.checkpoints.some((c) => c.seq === w.seq)) {
        throw new ConflictError(`Checkpoint ${w.agentId}@${w.seq} already exists.`);
      }
    }
    return writes.map((w) => {
      if (w.kind !== 'event') return this.apply(w, this.agents.get(w.agentId)!);
      try {
        return this.append(w.agentId, w.event, w.idempotencyKey, w.at);
      } catch (err) {
        if (err instanceof NotFoundError || err instanceof ConflictError) return { refused: err };
        throw err;
      }
    });
  }

  private apply(w: Exclude<Write, { kind: 'event' }>, data: AgentData): undefined {
    const record = data.record;
    switch (w.kind) {
      case 'checkpoint': {
        // One copy, shared by the checkpoint and the agent row: nothing here mutates it, and reads copy it.
        const state = copy(w.state);
        data.checkpoints.push({
          agentId: w.agentId, seq: w.seq, machineVersion: w.machineVersion, eventType: w.eventType,
          state, status: w.status, progress: w.progress, snapshot: w.snapshot, createdAt: w.createdAt,
        });
        for (const a of w.actions) data.actions.push({ seq: w.seq, ...copy(a), createdAt: w.createdAt });
        Object.assign(record, { state, status: w.status, progress: w.progress, lastSeq: w.seq, inboxPosition: w.inboxPosition, updatedAt: w.createdAt });
        data.resting = w.resting ?? false;
        return;
      }
      case 'consume':
        record.inboxPosition = Math.max(record.inboxPosition, w.inboxPosition);
        record.updatedAt = w.at;
        return;
      case 'effect':
        if (!this.effects.has(w.idempotencyKey)) {
          this.effects.set(w.idempotencyKey, { idempotencyKey: w.idempotencyKey, agentId: w.agentId, seq: w.seq, result: copy(w.result), createdAt: w.createdAt });
        }
        return;
      case 'status':
        Object.assign(record, { status: w.status, error: w.error, updatedAt: w.at });
        return;
    }
  }

  async listCheckpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    return newest(this.agents.get(agentId)?.checkpoints ?? [], options).map(({ seq, eventType, state, status, progress, createdAt }) => ({
      seq, eventType, state: copy(state), status, progress, createdAt,
    }));
  }

  async getCheckpoint(agentId: string, seq: number) {
    const found = this.agents.get(agentId)?.checkpoints.find((c) => c.seq === seq);
    return found && { ...found, state: copy(found.state) };
  }

  async listActions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    return newest(this.agents.get(agentId)?.actions ?? [], options).map((a) => copy(a));
  }

  async findEffect(idempotencyKey: string) {
    const found = this.effects.get(idempotencyKey);
    return found && copy(found);
  }

  async loadActiveAgents(options: { skipResting?: boolean } = {}): Promise<RestorableAgent[]> {
    return [...this.agents.values()]
      .filter((a) => a.record.status === 'active')
      .filter((a) => !options.skipResting || !a.resting || a.record.eventSeq > a.record.inboxPosition)
      .map(restorable);
  }

  async loadRestorable(id: string): Promise<RestorableAgent | undefined> {
    const data = this.agents.get(id);
    return data?.record.status === 'active' ? restorable(data) : undefined;
  }

  async stats(): Promise<StoreStats> {
    const agentsByStatus = { active: 0, done: 0, error: 0, stopped: 0 };
    let inboxDepth = 0;
    for (const { record } of this.agents.values()) {
      agentsByStatus[record.status]++;
      if (record.status === 'active') inboxDepth += record.eventSeq - record.inboxPosition;
    }
    return { agentsByStatus, inboxDepth };
  }

  async close(): Promise<void> {}
}

/** An agent row for a caller: its state is shared with the last checkpoint, so it is copied too. */
function rowCopy(record: AgentRecord): AgentRecord {
  return { ...record, state: copy(record.state) };
}

function restorable({ record, input, checkpoints }: AgentData): RestorableAgent {
  const checkpoint = checkpoints.find((c) => c.seq === record.lastSeq);
  const { id, machine, inboxPosition, eventSeq, createdAt } = record;
  const agent = { id, machine, inboxPosition, eventSeq, createdAt, ...(checkpoint ? {} : { input: copy(input) }) };
  if (!checkpoint) return { agent, checkpoint: undefined };
  const { state: _state, status: _status, ...restorableCheckpoint } = checkpoint;
  return { agent, checkpoint: copy(restorableCheckpoint) };
}

function newest<T>(rows: readonly T[], options: HistoryOptions): readonly T[] {
  return options.newest === undefined ? rows : options.newest === 0 ? [] : rows.slice(-options.newest);
}

function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
