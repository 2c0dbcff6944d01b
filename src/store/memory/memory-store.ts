import { ConflictError, InvalidInputError } from '../../core/errors.js';
import type {
  ActionRecord,
  AgentQuery,
  AgentRecord,
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
  PendingTimer,
} from '../store.js';
import type { CheckpointFormat } from '../checkpoint-encoding.js';
import { oldestKept } from '../retention.js';
import { formatCode, wholeSnapshot, type StoredReader } from '../rows.js';
import { referencedClosure } from '../snapshot-parts.js';
import { planWrites, type AgentRead, type WritePlan } from '../write-plan.js';

interface AgentData {
  pos: number;
  resting: boolean;
  record: AgentRecord;
  input: unknown;
  /** As written: an encoded snapshot is put back together from `parts` (and its chain) when read, as SQL stores do. */
  checkpoints: (CheckpointRecord & { format?: CheckpointFormat; baseSeq?: number; timers?: PendingTimer[] })[];
  /** The earliest deadline of its last checkpoint's delays (the SQL stores' `wake_at`). */
  wakeAt: number | null;
  parts: Map<string, string>;
  /** With the body hash kept under its key (`bodyHash`), as the SQL stores' `body_hash` column. */
  events: (EventRecord & { bodyHash: string | null })[];
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
    return { agent: rowCopy(this.insert(agent)), created: true };
  }

  private insert(agent: NewAgent): AgentRecord {
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
      prunedBefore: 0,
      parent: agent.parent ?? null,
    };
    const checkpoints = first ? [{ ...first, state: copy(first.state), agentId: agent.id, seq: 1, createdAt: agent.createdAt }] : [];
    this.agents.set(agent.id, { pos: this.nextPos++, resting: false, wakeAt: null, record, input: copy(agent.input ?? {}), checkpoints, parts: new Map(), events: [], actions: [] });
    return record;
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
        (query.status === undefined || a.record.status === query.status) &&
        (query.parent === undefined || a.record.parent === query.parent),
    );
    const page = matching.slice(0, query.limit);
    const last = page.at(-1);
    return { items: page.map((a) => rowCopy(a.record)), nextCursor: matching.length > query.limit && last ? String(last.pos) : null };
  }

  async eventsAfter(agentId: string, position: number): Promise<EventRecord[]> {
    return (this.agents.get(agentId)?.events ?? [])
      .filter((e) => e.seq > position)
      .map(({ bodyHash: _bodyHash, ...e }) => ({ ...e, event: copy(e.event) }));
  }

  /**
   * The write plan every store runs (`../write-plan.ts`), applied to the maps. What only this store
   * does: it has no transaction, so it checks what a database's keys would refuse (a checkpoint seq
   * written twice) before changing anything.
   */
  async commit(writes: readonly Write[]): Promise<WriteResult[]> {
    const agent = (id: string): AgentRead | undefined => this.agents.get(id)?.record;
    const committedEvent = (agentId: string, key: string) => this.agents.get(agentId)?.events.find((e) => e.idempotencyKey === key);
    const plan = planWrites(writes, { agent, committedEvent });
    this.checkKeys(plan);
    this.write(plan);
    return plan.results;
  }

  private checkKeys(plan: WritePlan): void {
    const seqs = new Set<string>();
    for (const { write: w } of plan.checkpoints) {
      const key = `${w.agentId}@${w.seq}`;
      if (seqs.has(key) || this.agents.get(w.agentId)!.checkpoints.some((c) => c.seq === w.seq)) {
        throw new ConflictError(`Checkpoint ${key} already exists.`);
      }
      seqs.add(key);
    }
  }

  private write(plan: WritePlan): void {
    for (const child of plan.spawned) this.insert(child);
    // Each agent's newest checkpoint state, shared with its row: nothing here mutates it, and reads copy it.
    const states = new Map<string, unknown>();
    for (const { write: w, state: text } of plan.checkpoints) {
      const data = this.agents.get(w.agentId)!;
      const state: unknown = JSON.parse(text);
      states.set(w.agentId, state);
      for (const part of w.parts ?? []) if (!data.parts.has(part.hash)) data.parts.set(part.hash, part.body);
      data.checkpoints.push({
        agentId: w.agentId, seq: w.seq, machineVersion: w.machineVersion, eventType: w.eventType,
        state, status: w.status, progress: w.progress, snapshot: w.snapshot, format: w.format, baseSeq: w.baseSeq, createdAt: w.createdAt,
        ...(w.timers?.length ? { timers: copy(w.timers) } : {}),
      });
      for (const a of w.actions) {
        // As a SQL store reads it back: JSON cannot hold `undefined`, so it is null.
        data.actions.push({ seq: w.seq, action: a.action, payload: copy(a.payload) ?? null, result: copy(a.result) ?? null, createdAt: w.createdAt });
      }
    }
    for (const { write: w, seq } of plan.events) {
      const bodyHash = w.bodyHash ?? null;
      this.agents.get(w.agentId)!.events.push({ agentId: w.agentId, seq, event: copy(w.event), idempotencyKey: w.idempotencyKey, bodyHash, createdAt: w.at });
    }
    for (const w of plan.effects) {
      // Later checkpoints may refer to an effect's parts (the encoder counts them stored).
      const parts = this.agents.get(w.agentId)!.parts;
      for (const part of w.parts ?? []) if (!parts.has(part.hash)) parts.set(part.hash, part.body);
      if (this.effects.has(w.idempotencyKey)) continue; // the first result stays
      this.effects.set(w.idempotencyKey, { idempotencyKey: w.idempotencyKey, agentId: w.agentId, seq: w.seq, result: copy(w.result) ?? null, createdAt: w.createdAt });
    }
    for (const after of plan.agents) {
      const data = this.agents.get(after.id)!;
      const record = data.record;
      Object.assign(record, { status: after.status, inboxPosition: after.inboxPosition, eventSeq: after.eventSeq });
      if (after.checkpoint) {
        Object.assign(record, { state: states.get(after.id), progress: after.checkpoint.progress, lastSeq: after.checkpoint.lastSeq });
        data.resting = after.checkpoint.resting;
        data.wakeAt = after.checkpoint.wakeAt;
      }
      if (after.error) record.error = after.error.text === null ? null : (JSON.parse(after.error.text) as AgentRecord['error']);
      if (after.updatedAt !== undefined) record.updatedAt = after.updatedAt;
    }
  }

  async listCheckpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    return newest(this.agents.get(agentId)?.checkpoints ?? [], options).map(({ seq, eventType, state, status, progress, createdAt }) => ({
      seq, eventType, state: copy(state), status, progress, createdAt,
    }));
  }

  async getCheckpoint(agentId: string, seq: number) {
    const found = this.agents.get(agentId)?.checkpoints.find((c) => c.seq === seq);
    if (!found) return undefined;
    const { format: _format, baseSeq: _baseSeq, timers: _timers, ...checkpoint } = found;
    return { ...checkpoint, state: copy(found.state), snapshot: (await this.whole(found)).text };
  }

  async listActions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    return newest(this.agents.get(agentId)?.actions ?? [], options).map((a) => copy(a));
  }

  async findEffect(idempotencyKey: string) {
    const found = this.effects.get(idempotencyKey);
    return found && copy(found);
  }

  async loadActiveAgents(options: { skipResting?: boolean } = {}): Promise<RestorableAgent[]> {
    const agents = [...this.agents.values()]
      .filter((a) => a.record.status === 'active')
      .filter((a) => !options.skipResting || !a.resting || a.record.eventSeq > a.record.inboxPosition)
      .map((a) => this.restorable(a));
    return Promise.all(agents);
  }

  async dueAgents(before: number, limit: number): Promise<{ id: string; wakeAt: number }[]> {
    return [...this.agents.values()]
      .filter((a) => a.record.status === 'active' && a.wakeAt !== null && a.wakeAt <= before)
      .sort((a, b) => a.wakeAt! - b.wakeAt!)
      .slice(0, limit)
      .map((a) => ({ id: a.record.id, wakeAt: a.wakeAt! }));
  }

  async loadRestorable(id: string): Promise<RestorableAgent | undefined> {
    const data = this.agents.get(id);
    return data?.record.status === 'active' ? this.restorable(data) : undefined;
  }

  async pruneHistory(agentId: string, rule: RetentionRule, options: { parts: boolean }): Promise<PruneResult> {
    const data = this.agents.get(agentId);
    const nothing = { checkpoints: 0, actions: 0, events: 0, parts: 0, prunedBefore: data?.record.prunedBefore ?? 0 };
    if (!data) return nothing;
    const firstSince = rule.keepSince === undefined ? undefined : data.checkpoints.find((c) => c.createdAt >= rule.keepSince!)?.seq;
    let kept = oldestKept(data.record.lastSeq, rule, firstSince);
    if (kept === undefined) return nothing;
    const at = data.checkpoints.find((c) => c.seq === kept);
    if (at?.format === 'delta' && at.baseSeq !== undefined) kept = at.baseSeq;
    if (kept <= data.record.prunedBefore) return nothing;
    const before = { checkpoints: data.checkpoints.length, actions: data.actions.length, events: data.events.length, parts: data.parts.size };
    const keptAt = data.checkpoints.find((c) => c.seq === kept)?.createdAt ?? '';
    // An event sent under an idempotency key keeps its place, its body cut to its type: the same key
    // must still answer the same seq, however late it is sent again.
    const consumed = (e: EventRecord) => e.seq <= data.record.inboxPosition && e.createdAt < keptAt;
    let trimmed = 0;
    data.events = data.events
      .filter((e) => !consumed(e) || e.idempotencyKey !== null)
      .map((e) => (consumed(e) && Object.keys(e.event).length > 1 ? (trimmed++, { ...e, event: { type: e.event.type } }) : e));
    data.checkpoints = data.checkpoints.filter((c) => c.seq >= kept);
    data.actions = data.actions.filter((a) => a.seq >= kept);
    data.record.prunedBefore = kept;
    if (options.parts) {
      // Actions and effects are kept as values here: only checkpoints refer to parts.
      const live = referencedClosure(
        data.checkpoints.filter((c) => c.format && c.format !== 'json').map((c) => c.snapshot),
        (hashes) => new Map(hashes.flatMap((h) => (data.parts.has(h) ? [[h, data.parts.get(h)!] as const] : []))),
      );
      for (const hash of [...data.parts.keys()]) if (!live.has(hash)) data.parts.delete(hash);
    }
    return {
      checkpoints: before.checkpoints - data.checkpoints.length,
      actions: before.actions - data.actions.length,
      events: before.events - data.events.length + trimmed,
      parts: before.parts - data.parts.size,
      prunedBefore: kept,
    };
  }

  async deleteEndedAgents(options: { endedBefore: string; limit: number }): Promise<string[]> {
    const ended = [...this.agents.values()]
      .filter(({ record }) => (record.status === 'done' || record.status === 'stopped') && record.updatedAt < options.endedBefore)
      .sort((a, b) => a.record.updatedAt.localeCompare(b.record.updatedAt))
      .slice(0, options.limit)
      .map(({ record }) => record.id);
    for (const id of ended) {
      this.agents.delete(id);
      for (const [key, effect] of this.effects) if (effect.agentId === id) this.effects.delete(key);
    }
    return ended;
  }

  async sizeBytes(): Promise<number> {
    return 0; // nothing on disk
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

  private readonly reader: StoredReader = {
    parts: (agentId) => this.agents.get(agentId)?.parts ?? new Map(),
    chain: (agentId, from, to) => (this.agents.get(agentId)?.checkpoints ?? []).filter((c) => c.seq >= from && c.seq <= to).map((c) => c.snapshot),
  };

  private whole(checkpoint: AgentData['checkpoints'][number]): Promise<{ text: string; parts: string[] }> {
    const row = { snapshot: checkpoint.snapshot, encoded: formatCode(checkpoint.format), baseSeq: checkpoint.baseSeq ?? null };
    return wholeSnapshot(checkpoint.agentId, checkpoint.seq, row, this.reader);
  }

  private async restorable(data: AgentData): Promise<RestorableAgent> {
    const { record, input, checkpoints } = data;
    const checkpoint = checkpoints.find((c) => c.seq === record.lastSeq);
    const { id, machine, inboxPosition, eventSeq, createdAt, parent } = record;
    const agent = { id, machine, inboxPosition, eventSeq, createdAt, ...(parent ? { parent } : {}), ...(checkpoint ? {} : { input: copy(input) }) };
    if (!checkpoint) return { agent, checkpoint: undefined };
    const { state: _state, status: _status, format: _format, baseSeq: _baseSeq, ...restorableCheckpoint } = checkpoint;
    const { text, parts } = await this.whole(checkpoint);
    return { agent, checkpoint: { ...copy(restorableCheckpoint), snapshot: text, ...(parts.length > 0 ? { parts } : {}) } };
  }
}

/** An agent row for a caller: its state is shared with the last checkpoint, so it is copied too. */
function rowCopy(record: AgentRecord): AgentRecord {
  return { ...record, state: copy(record.state) };
}



function newest<T>(rows: readonly T[], options: HistoryOptions): readonly T[] {
  return options.newest === undefined ? rows : options.newest === 0 ? [] : rows.slice(-options.newest);
}

function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
