// One live agent's delivery and checkpoint chain; kept in one file because its ordering rules
// (inbox, seqs, commit gate, barrier release) only hold together.
import type { SharedLlmSlots, SharedToolSlots } from '../core/shared-slots.js';
import { toolLimits as processToolLimits, type ToolLimits } from '../core/tool-limits.js';
import { estimatedTokens, gatedCall, LLM_CALL_READING } from '../llm/flow/gated-call.js';
import type { LlmGate } from '../llm/flow/llm-gate.js';
import type { Actor, AnyActorRef, AnyEventObject, AnyMachineSnapshot, AnyStateMachine, InspectionEvent } from 'xstate';
import { serializeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { CheckpointEncoder } from '../store/checkpoint-encoding.js';
import type { SnapshotPart } from '../store/snapshot-parts.js';
import type { ActionWrite, CheckpointBody, EventRecord, NewAgent, PendingTimer, Write } from '../store/store.js';
import type { WriteOf } from '../store/write-plan.js';
import { DurableTimers } from './durable-timers.js';
import { OUTBOX_EVENT, type OutboxEmit } from '../durable/send-to-agent.js';
import { SPAWN_EVENT, type SpawnEmit } from '../durable/spawn-agent.js';
import { addEndReport, addMessage, addRefusedSpawn, addSpawn } from './checkpoint-outbox.js';
import { awaitsCommit, COMMITTED_EVENT } from '../durable/commit-barrier.js';
import { AFTER_COMMIT_EVENT, createDurableActor, type TransitionSink } from './durable-machine.js';
import type { ActorDeclaration, PersistedSnapshotJson } from '../durable/definition.js';
import { actorOf, type RegisteredMachine } from './registered-machine.js';
import type { CallKey, TokenWriter } from './token-streams.js';

/** The runtime as seen by one host. */
export interface HostOwner {
  commit(write: Write): Promise<unknown>;
  findEffect(idempotencyKey: string): Promise<{ result: unknown } | undefined>;
  committed(host: AgentHost, checkpoint: CommittedCheckpoint): void;
  streamTokens(agentId: string, key: CallKey, resumed: boolean): TokenWriter;
  failed(host: AgentHost, reason: 'commit' | 'actor', err: unknown): void;
  /** A spawn's child as its row is created, or why it cannot be (no such machine here, a bad id or input). */
  childOf(spawn: SpawnEmit, parent: string, at: string): NewAgent | { refused: string } | undefined;
  /** An event into another agent's inbox, outside any transition (a report to a parent). */
  sendEvent(agentId: string, event: { type: string; [key: string]: unknown }, idempotencyKey: string): Promise<unknown>;
  readonly log: Logger;
  /** The gate in front of the LLM, shared by every agent of the runtime (none: calls go straight through). */
  readonly llmGate?: LlmGate | undefined;
  /** On a store many processes share: the slots that keep all their LLM calls within the gate's ceiling. */
  readonly llmSlots?: SharedLlmSlots | undefined;
  /** Where tool calls wait under their tools' `concurrency` (this process's line). */
  readonly toolLimits?: ToolLimits | undefined;
  /** On a store many processes share: the slots that keep each tool's calls in all of them within its limit. */
  readonly toolSlots?: SharedToolSlots | undefined;
  /** XState's inspection observer for every agent actor (and the actors it invokes). */
  readonly inspect?: ((event: InspectionEvent) => void) | undefined;
}

export interface CommittedCheckpoint {
  seq: number;
  eventType: string;
  action?: ActionWrite;
  /** What the machine declares the action's actor to be. */
  actor?: ActorDeclaration;
  /** Epoch ms of the transition (the commit came after). */
  transitionAt: number;
  /** The agents its messages went to (`sendToAgent`): their inboxes have them now. */
  sentTo?: string[];
  /** The child agents it spawned: their rows exist now. */
  spawned?: string[];
  state: unknown;
  status: CheckpointBody['status'];
  progress: number;
  context: unknown;
  at: string;
}

/** What a live agent's view shows of its last committed checkpoint. */
export type LatestState = Pick<CommittedCheckpoint, 'seq' | 'state' | 'status' | 'progress' | 'context' | 'at'>;

type StartPoint =
  | { kind: 'fresh'; input: unknown }
  /** From a committed checkpoint: its seq, its snapshot as read by `readSnapshot`, its progress and time. */
  | { kind: 'restore'; snapshot: PersistedSnapshotJson; seq: number; progress: number; at: string; parts: readonly string[]; timers?: readonly PendingTimer[] };

/**
 * One live agent: its actor, the ordered delivery of its inbox, and the chain of its checkpoints.
 * A checkpoint's seq is assigned here, in transition order; the inbox position it carries is the
 * last event delivered, so consuming an event and checkpointing its effect are one write.
 */
export class AgentHost implements TransitionSink {
  readonly actor: Actor<AnyStateMachine>;
  private seq: number;
  private delivered: number;
  private deliveringSeq: number | undefined;
  private readonly inbox: EventRecord[] = [];
  private lastCommit: Promise<unknown> = Promise.resolve();
  /** The newest checkpoint committed (its seq): children its transition invoked may start. */
  private committedSeq: number;
  /** What the effects of the newest checkpoint deferred until its commit (actor starts, first): run together then. */
  private afterCommit: { seq: number; runs: (() => void)[]; quiet: boolean } | undefined;
  /** Children started and not yet finished; created on first use (most live agents are idle). */
  private childStarts: Map<string, { input: unknown; startedAt: number }> | undefined;
  private stopped = false;
  /** This agent's snapshots as the store keeps them: what changed, the rest by reference (see snapshot-parts.ts). */
  private readonly encoder = new CheckpointEncoder();
  /** Restored from a checkpoint (not fresh: a fresh actor's initial snapshot is seq 1 before it starts). */
  private readonly restored: boolean;
  private streamedSinceStart = false;
  /** The delays the machine scheduled and that have not fired: kept with each checkpoint (durable-timers.ts). */
  private readonly timers = new DurableTimers(this);
  /** The event of the macrostep that left the snapshot as it was, while its deferred effects run. */
  private unchangedBy: AnyEventObject | undefined;
  /** The checkpoint of the transition whose deferred effects run now: they may schedule or cancel delays. */
  private openCheckpoint: WriteOf<'checkpoint'> | undefined;
  /** Delays to schedule again once started (restored from a checkpoint). */
  private readonly restoredTimers: readonly PendingTimer[];
  /** The last committed checkpoint, for views. */
  private lastCommitted: LatestState | undefined;

  constructor(
    readonly agentId: string,
    readonly createdAt: string,
    readonly machine: RegisteredMachine,
    private readonly owner: HostOwner,
    from: StartPoint,
    inboxPosition: number,
    /** The agent that spawned this one (child agents report to it when they end). */
    readonly parent: string | undefined = undefined,
  ) {
    this.seq = from.kind === 'restore' ? from.seq : 0;
    this.committedSeq = this.seq;
    this.restored = from.kind === 'restore';
    this.delivered = inboxPosition;
    if (from.kind === 'restore') {
      // The store holds the parts it restored from: the next checkpoints refer to them without writing them again.
      this.encoder.knowStored(from.parts);
      // State and context from the snapshot itself: the checkpoint's state column is a copy of its value.
      const { snapshot, progress, at } = from;
      this.lastCommitted = { seq: from.seq, state: snapshot.value, status: 'active', progress, context: snapshot.context ?? null, at };
    }
    this.restoredTimers = (from.kind === 'restore' && from.timers) || NO_TIMERS;
    const options = { clock: this.timers, ...(owner.inspect ? { inspect: owner.inspect } : {}) };
    this.actor = createDurableActor(
      machine.durable,
      this,
      from.kind === 'restore'
        ? { id: agentId, snapshot: from.snapshot as never, ...options }
        : { id: agentId, input: from.input as never, ...options },
    );
    this.timers.attach(this.actor);
    // One listener for both: a live agent pays for one, not one per kind of emitted event.
    this.actor.on('*', (emitted) => {
      if (emitted.type === OUTBOX_EVENT) this.sendToAgent(emitted as unknown as OutboxEmit);
      else if (emitted.type === SPAWN_EVENT) this.spawnChild(emitted as unknown as SpawnEmit);
    });
  }

  /**
   * An LLM call waits for capacity in line by when this agent's step began: the time of the
   * checkpoint that invoked it, which a restored agent has too, so a restart keeps its place.
   */
  throughLlmGate<T>(input: unknown, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    const gate = this.owner.llmGate;
    if (!gate) return call();
    const since = this.lastCommitted ? Date.parse(this.lastCommitted.at) : Date.now();
    const slots = this.owner.llmSlots;
    const shared = slots && {
      slots,
      limit: gate.ceiling,
      // A slot outlives its call by a margin only: a process killed mid-call frees it soon after.
      holdMs: callTimeoutMs(input) + SLOT_MARGIN_MS,
      onUnavailable: (err: unknown) => this.owner.log.warn({ agentId: this.agentId, err }, 'could not reach the shared LLM slots; the call keeps within this process limit'),
    };
    // The estimate serializes the whole request: only when a tokens-per-minute limit needs it.
    const tokens = gate.countsTokens ? estimatedTokens(input) : 0;
    return gatedCall(gate, { agentId: this.agentId, since, tokens }, signal, call, { ...LLM_CALL_READING, ...(shared ? { shared } : {}) });
  }

  /** Starts the actor unless restoring put it in error; returns that error. */
  start(): { error: unknown } | undefined {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status === 'error') return { error: snapshot.error };
    // Every actor needs an error observer: an unobserved error is re-thrown and kills the process.
    this.actor.subscribe({ error: (err) => this.fail('actor', err) });
    this.actor.start();
    // Its delays go on from where the checkpoint left them (their original deadlines).
    if (this.restoredTimers.length > 0) this.timers.rearm(this.actor, this.restoredTimers);
    // Restored at a commit barrier: the checkpoint it came from is committed, so it may move on.
    if (this.restored) this.releaseBarrier();
    return undefined;
  }

  /** Hands inbox events over; they are delivered strictly in seq order, each once. */
  offer(events: readonly EventRecord[]): void {
    for (const record of events) {
      if (record.seq <= this.delivered || this.inbox.some((e) => e.seq === record.seq)) continue;
      this.inbox.push(record);
    }
    this.inbox.sort((a, b) => a.seq - b.seq);
    this.pump();
  }

  /** What the last committed checkpoint shows (undefined until the first one of a fresh agent commits). */
  get latest(): LatestState | undefined {
    return this.lastCommitted;
  }

  /** Inbox events handed over and not yet delivered to the actor. */
  get waitingEvents(): number {
    return this.inbox.length;
  }

  /** Seq of the last inbox event handed to the actor. */
  get inboxPosition(): number {
    return this.delivered;
  }

  /** Whether the inbox event `seq` was delivered or waits to be. */
  knows(seq: number): boolean {
    return seq <= this.delivered || this.inbox.some((e) => e.seq === seq);
  }

  /** Nothing runs and nothing waits to be delivered: only a new event can move this agent. */
  isResting(): boolean {
    const snapshot = this.actor.getSnapshot() as AnyMachineSnapshot;
    return !this.stopped && this.inbox.length === 0 && restsIn(snapshot);
  }

  /** The current (possibly not yet committed) snapshot. */
  snapshot(): AnyMachineSnapshot {
    return this.actor.getSnapshot() as AnyMachineSnapshot;
  }

  /** Stops the actor (aborting its in-flight calls) without writing anything for it. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.timers.stop();
    this.actor.stop();
  }

  /** Resolves when every checkpoint written so far is committed. */
  settled(): Promise<void> {
    return this.lastCommit.then(
      () => undefined,
      () => undefined,
    );
  }

  // --- TransitionSink -------------------------------------------------------------------------

  onTransition(previous: AnyMachineSnapshot | undefined, next: AnyMachineSnapshot, event: AnyEventObject, persistedSnapshot: unknown): void {
    // First: it throws for a context JSON cannot hold, and then nothing of this transition may count.
    const persisted = this.encoder.encode(persistedSnapshot, this.seq + 1);
    const seq = ++this.seq;
    const transitionAt = Date.now();
    const at = new Date(transitionAt).toISOString();
    const status = next.status === 'done' ? 'done' : next.status === 'error' ? 'error' : 'active';
    const progress = progressOf(next);
    const logged = previous ? this.actionFor(previous, event) : undefined;
    const action = logged?.action;
    const parts = logged?.parts.length ? [...persisted.parts, ...logged.parts] : persisted.parts;
    const barrier = awaitsCommit(next);
    const write: WriteOf<'checkpoint'> = {
      kind: 'checkpoint',
      agentId: this.agentId,
      seq,
      inboxPosition: this.delivered,
      createdAt: at,
      machineVersion: this.machine.version,
      eventType: event.type,
      state: next.value,
      status,
      progress,
      snapshot: persisted.text,
      format: persisted.format,
      ...(persisted.baseSeq !== undefined ? { baseSeq: persisted.baseSeq } : {}),
      parts,
      resting: restsIn(next),
      actions: action ? [action] : [],
    };
    if (this.timers.size > 0) write.timers = this.timers.list(next.children);
    else this.timers.saved();
    // A child's end goes to its parent's inbox with the checkpoint that ended it (child-events.ts).
    if (status !== 'active' && this.parent !== undefined) addEndReport(write, this.parent, next);
    // Its deferred effects (run right after this returns, before the write is flushed) may still change the delays.
    this.openCheckpoint = write;
    this.unchangedBy = undefined;
    const commit = this.owner.commit(write);
    this.lastCommit = commit;
    commit.then(
      () => {
        // Its deferred effects ran long ago (right after the transition): the write is not kept alive.
        if (this.openCheckpoint === write) this.openCheckpoint = undefined;
        this.committedSeq = seq;
        // Only what views show: the checkpoint's action (an LLM call's input and answer) is not kept alive.
        this.lastCommitted = { seq, state: next.value, status, progress, context: next.context, at };
        this.owner.committed(this, {
          seq, eventType: event.type, action, actor: logged?.actor, transitionAt, state: next.value, status, progress, context: next.context, at,
          ...(write.outbox ? { sentTo: write.outbox.map((m) => m.to) } : {}),
          ...(write.spawns ? { spawned: write.spawns.map((s) => s.id) } : {}),
        });
        // Only when this is still the newest transition: a later one in the same barrier state
        // releases it once that one is committed, so a barrier is never left on a stale checkpoint.
        if (barrier && seq === this.seq) this.releaseBarrier();
      },
      (err: unknown) => this.fail('commit', err),
    );
  }

  onIgnored(event: AnyEventObject): void {
    // Its deferred effects may still schedule or cancel a delay (a transition with only a delayed
    // `raise` leaves the snapshot as it was): then they write a checkpoint of their own.
    this.openCheckpoint = undefined;
    this.unchangedBy = event;
    if (this.deliveringSeq === undefined) return;
    const commit = this.owner.commit({
      kind: 'consume',
      agentId: this.agentId,
      inboxPosition: this.deliveringSeq,
      at: new Date().toISOString(),
    });
    this.lastCommit = commit;
    commit.catch((err: unknown) => this.fail('commit', err));
    this.owner.log.debug({ agentId: this.agentId, event: event.type }, 'event ignored in the current state');
  }

  findEffect(idempotencyKey: string): Promise<{ result: unknown } | undefined> {
    return this.owner.findEffect(idempotencyKey);
  }

  recordEffect(idempotencyKey: string, seq: number, result: unknown): void {
    // Not awaited: the write is queued before the done event's checkpoint, so it commits no later.
    // A tool's answer is in the exchange too: stored once, as a part both refer to.
    const stored = this.encoder.encodeValue(result);
    const commit = this.owner.commit({
      kind: 'effect', agentId: this.agentId, seq, idempotencyKey, result, createdAt: new Date().toISOString(),
      ...(stored.encoded && !stored.plainOnly ? { stored: stored.text } : {}),
      ...(stored.parts.length > 0 ? { parts: stored.parts } : {}),
    });
    this.lastCommit = commit;
    commit.catch((err: unknown) => this.fail('commit', err));
  }

  async reportToParent(event: { type: string; [key: string]: unknown }, key: string): Promise<void> {
    if (this.parent === undefined) return;
    // An ended parent takes no event (ConflictError), one that is gone neither: nothing to tell.
    await this.owner.sendEvent(this.parent, event, key).catch((err: unknown) => {
      if (!(err instanceof Error && (err.name === 'ConflictError' || err.name === 'NotFoundError'))) throw err;
    });
  }

  streamTokens(key: CallKey): TokenWriter {
    // The first call after a restore asks again what the previous process may have been streaming.
    const resumed = this.restored && !this.streamedSinceStart;
    this.streamedSinceStart = true;
    return this.owner.streamTokens(this.agentId, key, resumed);
  }

  waitForToolCapacity(pool: { key: unknown; name: string; tool: string }, limit: number, signal: AbortSignal): Promise<() => void> {
    const { toolLimits: limits = processToolLimits, toolSlots: slots } = this.owner;
    const shared = slots && {
      slots,
      pool: pool.name,
      onUnavailable: (err: unknown) => this.owner.log.warn({ agentId: this.agentId, tool: pool.tool, err }, "could not reach the shared tool slots; the call keeps within this process's limit"),
    };
    return limits.acquire(pool.key, pool.tool, limit, this.agentId, signal, shared);
  }

  startAfterCommit(child: AnyActorRef, input: unknown, start: () => void, quiet: boolean): void {
    this.runAfterCommit(() => {
      (this.childStarts ??= new Map()).set(child.id, { input, startedAt: Date.now() });
      start();
    }, quiet);
  }

  runAfterCommit(run: () => void, quiet = false): void {
    // XState runs a macrostep's deferred effects right after `transition` returns, before anything
    // else can transition this actor: the newest checkpoint is the one whose effects these are.
    if (this.committedSeq === this.seq) return run();
    let batch = this.afterCommit;
    if (batch?.seq !== this.seq) {
      const created = { seq: this.seq, runs: [] as (() => void)[], quiet: true };
      batch = this.afterCommit = created;
      this.lastCommit.then(
        () => {
          if (this.afterCommit === created) this.afterCommit = undefined;
          if (this.stopped) return;
          const runAll = () => created.runs.forEach((r) => r());
          // Starts that send nothing back (promises: the agent's usual LLM and tool calls) need no
          // macrostep of their own: an event less per call.
          if (created.quiet) runAll();
          else this.actor.send({ type: AFTER_COMMIT_EVENT, run: runAll } as AnyEventObject);
        },
        () => {
          // Not committed: the host is going down and will restore from the store.
        },
      );
    }
    batch.runs.push(run);
    batch.quiet &&= quiet;
  }

  heldForStart(child: AnyActorRef, event: AnyEventObject): string {
    return this.timers.hold(this.actor, child, event);
  }

  heldDelivered(heldId: string): void {
    this.timers.release(heldId);
  }

  afterPendingStarts(run: () => void): void {
    const batch = this.afterCommit;
    if (batch?.seq !== this.seq) return run();
    batch.runs.push(run);
    batch.quiet = false;
  }

  // --- internals ------------------------------------------------------------------------------

  /**
   * The checkpoint the current macrostep's deferred effects belong to. One whose transition left
   * the snapshot as it was (a transition with only a delayed `raise`, or only a message) gets a
   * checkpoint of that same snapshot, to carry what they did.
   */
  private currentCheckpoint(): WriteOf<'checkpoint'> | undefined {
    if (!this.openCheckpoint && this.unchangedBy) {
      const snapshot = this.snapshot();
      this.onTransition(snapshot, snapshot, this.unchangedBy, this.actor.getPersistedSnapshot());
    }
    return this.openCheckpoint;
  }

  /** `sendToAgent`: the message goes with the checkpoint of the transition that sent it (send-to-agent.ts). */
  private sendToAgent(message: OutboxEmit): void {
    const write = this.currentCheckpoint();
    if (!write) {
      this.owner.log.warn({ agentId: this.agentId, to: message.to, event: message.event?.type }, 'a message sent outside a transition was dropped');
      return;
    }
    addMessage(write, message.to, message.event);
  }

  /**
   * `spawnAgent`: the child is created with the checkpoint of the transition that spawned it
   * (spawn-agent.ts). One that cannot be (an unknown machine, a bad id or input) is reported to this
   * agent at once, as the child's failure, in the same checkpoint: a parent waiting for it learns why.
   */
  private spawnChild(spawn: SpawnEmit): void {
    const write = this.currentCheckpoint();
    if (!write) {
      this.owner.log.warn({ agentId: this.agentId, child: spawn.id }, 'a spawn outside a transition was dropped');
      return;
    }
    const child = this.owner.childOf(spawn, this.agentId, write.createdAt);
    if (!child) return; // spawns are not this runtime's to make (RuntimeOptions.childAgents)
    if ('refused' in child) {
      this.owner.log.error({ agentId: this.agentId, child: spawn.id, machine: spawn.machine }, child.refused);
      addRefusedSpawn(write, String(spawn.id), child.refused);
      return;
    }
    addSpawn(write, child);
  }

  /** For DurableTimers: the machine scheduled or cancelled a delay, in the current macrostep's deferred effects. */
  timersChanged(timers: PendingTimer[]): void {
    const write = this.currentCheckpoint();
    if (!write) return;
    if (timers.length > 0) write.timers = timers;
    else delete write.timers;
  }

  /**
   * For DurableTimers: a delay fired and its event wrote no checkpoint of this agent (it changed
   * nothing, or went to a child). A checkpoint of the same snapshot stores the set without it.
   */
  delayFired(eventType: string): void {
    const snapshot = this.snapshot();
    if (this.stopped || snapshot.status !== 'active') return;
    this.onTransition(snapshot, snapshot, { type: eventType }, this.actor.getPersistedSnapshot());
  }

  /** Tells a machine resting at a commit barrier that its checkpoint is durable. */
  private releaseBarrier(): void {
    if (this.stopped || !awaitsCommit(this.snapshot())) return;
    this.actor.send({ type: COMMITTED_EVENT });
  }

  private pump(): void {
    if (this.deliveringSeq !== undefined) return; // re-entrant call from inside a transition
    while (!this.stopped && this.inbox[0]?.seq === this.delivered + 1 && this.actor.getSnapshot().status === 'active') {
      const record = this.inbox.shift()!;
      this.delivered = record.seq;
      this.deliveringSeq = record.seq;
      try {
        this.actor.send(record.event);
      } finally {
        this.deliveringSeq = undefined;
      }
    }
  }

  /** The action-log row for a transition caused by an invoked actor finishing (done or error). */
  private actionFor(
    previous: AnyMachineSnapshot,
    event: AnyEventObject,
  ): { action: ActionWrite; actor: ActorDeclaration; parts: readonly SnapshotPart[] } | undefined {
    if (!event.type.startsWith('xstate.')) return undefined; // most events: skip the regex
    const match = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type);
    if (!match) return undefined;
    const childId = match[2]!;
    const child = previous.children[childId] as AnyActorRef | undefined;
    const src = typeof child?.src === 'string' ? child.src : childId;
    const started = this.childStarts?.get(childId);
    this.childStarts?.delete(childId);
    const actor = actorOf(this.machine, src);
    if (actor.kind === 'wait') return undefined;
    const ms = started ? Date.now() - started.startedAt : null;
    const attempt = (previous.context as { attempt?: unknown } | undefined)?.attempt;
    const payload = { id: childId, input: started?.input ?? null, ...(typeof attempt === 'number' ? { attempt } : {}) };
    const result =
      match[1] === 'done'
        ? { ok: true, output: (event as { output?: unknown }).output ?? null, ms }
        : { ok: false, error: toErrorData((event as { error?: unknown }).error), ms };
    // An LLM call's input is the exchange so far, which the checkpoints hold as parts already: the
    // action log refers to them instead of storing the exchange once per call.
    const storedPayload = this.encoder.encodeValue(payload);
    const storedResult = this.encoder.encodeValue(result);
    const parts = [...storedPayload.parts, ...storedResult.parts];
    // Both as references, or both plain: a row has one flag for the two.
    const encoded = (storedPayload.encoded || storedResult.encoded) && !storedPayload.plainOnly && !storedResult.plainOnly;
    const action: ActionWrite = { action: src, payload, result, ...(encoded ? { stored: { payload: storedPayload.text, result: storedResult.text } } : {}) };
    return { action, actor, parts };
  }

  private fail(reason: 'commit' | 'actor', err: unknown): void {
    if (this.stopped) return;
    this.stop();
    this.owner.failed(this, reason, err);
  }
}

const NO_TIMERS: readonly PendingTimer[] = Object.freeze([]);

/**
 * Only an event can move this snapshot: it is active, runs no child, and is no commit barrier (a
 * barrier moves on by itself once committed, so after a crash recovery must restore it).
 */
function restsIn(snapshot: AnyMachineSnapshot): boolean {
  return snapshot.status === 'active' && isEmpty(snapshot.children) && !awaitsCommit(snapshot);
}

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}

function progressOf(snapshot: AnyMachineSnapshot): number {
  const progress = (snapshot.context as { progress?: unknown } | undefined)?.progress;
  return typeof progress === 'number' ? progress : 0;
}

function toErrorData(error: unknown): unknown {
  if (!(error instanceof Error)) return error ?? null;
  const { stack: _stack, ...rest } = serializeError(error);
  const extra = error as { kind?: unknown; status?: unknown; retryAfterMs?: unknown };
  return { ...rest, kind: extra.kind, status: extra.status, retryAfterMs: extra.retryAfterMs };
}

/** How long past its call's time limit a shared LLM slot stays held. */
const SLOT_MARGIN_MS = 10_000;
/** When an LLM actor's input names no time limit. */
const DEFAULT_CALL_TIMEOUT_MS = 60_000;

function callTimeoutMs(input: unknown): number {
  const ms = (input as { timeoutMs?: unknown } | null)?.timeoutMs;
  return typeof ms === 'number' && ms > 0 ? ms : DEFAULT_CALL_TIMEOUT_MS;
}
