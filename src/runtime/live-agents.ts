import type { SharedLlmSlots, SharedToolSlots } from '../core/shared-slots.js';
import type { ToolLimits } from '../core/tool-limits.js';
import type { LlmGate } from '../llm/flow/llm-gate.js';
import type { InspectionEvent } from 'xstate';
import { CorruptStateError, FencedError, NotFoundError, serializeError, StoreUnavailableError, type SerializedError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { RestorableAgent, RestorableCheckpoint, Store, Write } from '../store/store.js';
import { AgentHost, type CommittedCheckpoint, type HostOwner } from './agent-host.js';
import type { GroupCommitter, WriteOrigin } from './committer.js';
import type { Observe } from './observer.js';
import type { RegisteredMachine } from './registered-machine.js';
import { readSnapshot, RestoreRefusedError } from './restore.js';
import { ID_PATTERN } from '../core/ids.js';
import { topLevelState } from '../core/state-value.js';
import { validateInput } from './registered-machine.js';
import { childEventKey } from '../durable/child-events.js';
import { failedReport } from './checkpoint-outbox.js';
import type { SpawnEmit } from '../durable/spawn-agent.js';
import type { AppendResult, InboxEvent, NewAgent } from '../store/store.js';
import { liveView, storedView, type AgentView } from './views.js';
import type { Watchers } from './watchers.js';
import type { CallKey, TokenStreams, TokenWriter } from './token-streams.js';

export interface LiveAgentsOptions {
  store: Store;
  machines: ReadonlyMap<string, RegisteredMachine>;
  committer: GroupCommitter;
  watchers: Watchers;
  tokens: TokenStreams;
  log: Logger;
  observe: Observe;
  inspect: ((event: InspectionEvent) => void) | undefined;
  /** How an agent not in memory is brought back: read it (one process) or claim it (shared store). */
  load: (agentId: string) => Promise<RestorableAgent | 'elsewhere' | undefined>;
  /** Wait before reloading an agent whose checkpoint could not be committed. */
  reloadDelayMs: number;
  /** Agents resting this long leave memory; undefined: they stay. */
  passivateAfterMs: number | undefined;
  /** Machines' spawns are dropped (RuntimeOptions.childAgents `ignore`). */
  ignoreSpawns?: boolean;
  /** The gate every LLM call of these agents goes through. */
  llmGate?: LlmGate | undefined;
  /** The store's shared LLM slots (a store many processes share). */
  llmSlots?: SharedLlmSlots | undefined;
  /** Where tool calls wait under their tools' `concurrency` (this process's line). */
  toolLimits?: ToolLimits | undefined;
  /** The store's shared tool slots (a store many processes share). */
  toolSlots?: SharedToolSlots | undefined;
}

/**
 * The agents this process runs: bringing them into memory (from a spawn, a checkpoint, a wake),
 * letting them go (stop, passivation, another process taking over), and the failure policy when one
 * of them breaks. Every host it makes reports here (it is their `HostOwner`).
 */
export class LiveAgents implements HostOwner {
  readonly log: Logger;
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  readonly llmGate: LlmGate | undefined;
  readonly llmSlots: SharedLlmSlots | undefined;
  readonly toolLimits: ToolLimits | undefined;
  readonly toolSlots: SharedToolSlots | undefined;
  private readonly hosts = new Map<string, AgentHost>();
  private readonly waking = new Map<string, Promise<AgentHost | undefined>>();
  /** Countdowns to leaving memory, one per resting host (passivation on). */
  private readonly passivation = new Map<AgentHost, NodeJS.Timeout>();
  private closing = false;
  /** Each host's top-level state at its last commit (or restore): `failed` is warned of on entry only. */
  private readonly topStates = new WeakMap<AgentHost, string>();

  constructor(private readonly options: LiveAgentsOptions) {
    this.log = options.log;
    this.inspect = options.inspect;
    this.llmGate = options.llmGate;
    this.llmSlots = options.llmSlots;
    this.toolLimits = options.toolLimits;
    this.toolSlots = options.toolSlots;
  }

  get size(): number {
    return this.hosts.size;
  }

  get(agentId: string): AgentHost | undefined {
    return this.hosts.get(agentId);
  }

  /** In memory, or being brought back. */
  holds(agentId: string): boolean {
    return this.hosts.has(agentId) || this.waking.has(agentId);
  }

  all(): IterableIterator<AgentHost> {
    return this.hosts.values();
  }

  /** Restores agents read (or claimed) from the store, skipping any already live. */
  async adopt(agents: readonly RestorableAgent[]): Promise<{ restored: number; quarantined: number }> {
    let restored = 0;
    let quarantined = 0;
    for (const { agent, checkpoint } of agents) {
      if (this.hosts.has(agent.id)) continue;
      const host = await this.activate(agent, checkpoint);
      if (host) restored++;
      else if (this.options.machines.has(agent.machine)) quarantined++;
    }
    return { restored, quarantined };
  }

  /**
   * Starts an agent here, fresh or from its checkpoint, and hands it the events that wait in its
   * inbox. An agent whose stored state cannot be restored is quarantined (undefined).
   */
  async activate(agent: RestorableAgent['agent'], checkpoint: RestorableCheckpoint | undefined): Promise<AgentHost | undefined> {
    const machine = this.options.machines.get(agent.machine);
    if (!machine) {
      this.log.warn({ agentId: agent.id, machine: agent.machine }, 'agent left as is: its machine is not registered here');
      return undefined;
    }
    let host: AgentHost;
    try {
      const from = checkpoint
        ? {
            kind: 'restore' as const, snapshot: readSnapshot(checkpoint, machine), seq: checkpoint.seq, progress: checkpoint.progress,
            at: checkpoint.createdAt, parts: checkpoint.parts ?? [], ...(checkpoint.timers ? { timers: checkpoint.timers } : {}),
          }
        : { kind: 'fresh' as const, input: agent.input };
      host = new AgentHost(agent.id, agent.createdAt, machine, this, from, agent.inboxPosition, agent.parent ?? undefined);
      // Restored in `failed`, it was warned of when it got there.
      if (host.latest) this.topStates.set(host, topLevelState(host.latest.state));
      this.hosts.set(agent.id, host);
      const failure = host.start();
      if (failure) {
        this.hosts.delete(agent.id);
        throw failure.error instanceof Error ? failure.error : new Error(String(failure.error));
      }
    } catch (err) {
      await this.quarantine(agent.id, err, agent.parent ?? undefined);
      return undefined;
    }
    if (agent.eventSeq > agent.inboxPosition) host.offer(await this.options.store.eventsAfter(agent.id, agent.inboxPosition));
    // Whatever brought it here (recovery, a wake, a fork), an agent that turns out to rest leaves again;
    // the timer re-checks once its commits have settled.
    this.schedulePassivation(host);
    return host;
  }

  /** Brings an active agent that is not in memory back from its last checkpoint (once, however many ask). */
  wake(agentId: string): Promise<AgentHost | undefined> {
    const live = this.hosts.get(agentId);
    if (live || this.closing) return Promise.resolve(live);
    let waking = this.waking.get(agentId);
    if (!waking) {
      waking = (async () => {
        // One read for the agent and its last checkpoint. Events committed meanwhile are not lost: their
        // senders offer them to the host this wake returns, and activate reads those already pending.
        const found = await this.options.load(agentId);
        const restorable = found === 'elsewhere' ? undefined : found;
        if (!restorable || this.closing) return undefined;
        return this.hosts.get(agentId) ?? (await this.activate(restorable.agent, restorable.checkpoint));
      })().finally(() => this.waking.delete(agentId));
      this.waking.set(agentId, waking);
    }
    return waking;
  }

  /** Stops a live agent here and forgets it, writing nothing (its stored state stays as it is). */
  unload(host: AgentHost): void {
    host.stop();
    this.forget(host);
    // Its writes held while the store takes none go with it: its next run starts from what is committed.
    this.options.committer.discard(host.agentId);
  }

  /** Unloads every live agent (closing, or the lease ran out). */
  unloadAll(): void {
    for (const host of [...this.hosts.values()]) this.unload(host);
  }

  /** No more agents come into memory; those here are unloaded. */
  close(): void {
    this.closing = true;
    this.unloadAll();
  }

  /**
   * Writes a status outside any transition (stopped, error) and shows it to the agent's watchers. A
   * child's parent is told in the same batch (both enqueued in one turn: one transaction).
   */
  async writeStatus(
    agentId: string,
    status: 'stopped' | 'error',
    error: SerializedError | null,
    parent?: string,
    /** `request` (a stop): fails at once while the store takes no writes; `agent` (a crash recorded): held until it does. */
    origin: WriteOrigin = 'request',
  ): Promise<void> {
    const at = new Date().toISOString();
    const written = this.options.committer.enqueue({ kind: 'status', agentId, status, error, at }, origin);
    if (parent !== undefined) {
      const failure = failedReport(
        agentId,
        status === 'stopped' ? { name: 'Stopped', code: 'stopped', message: 'The child agent was stopped.' } : { name: error?.name ?? 'Error', message: error?.message ?? 'The child agent failed.' },
      );
      const told = this.options.committer.enqueue({ kind: 'event', agentId: parent, event: failure, idempotencyKey: childEventKey.ended(agentId), at }, origin);
      // A parent that has ended (or was stopped with it) takes no event: nothing to tell.
      void told.then(() => this.deliverInbox(parent), () => undefined);
    }
    await written;
    this.notify(agentId);
  }

  /** Shows the agent's current view to its watchers (after a change that was not a transition here). */
  notify(agentId: string): void {
    this.options.watchers.publishLater(agentId, () => this.currentView(agentId));
  }

  /** The agent's view now (from memory when it is live) and the seq of the checkpoint it shows. */
  async currentView(agentId: string): Promise<{ view: AgentView; seq: number }> {
    const host = this.hosts.get(agentId);
    const live = host && liveView(host);
    if (live) return { view: live, seq: host.latest!.seq };
    const agent = await this.options.store.getAgent(agentId);
    if (!agent) throw new NotFoundError('agent', agentId);
    return { view: await storedView(this.options.store, agent), seq: agent.lastSeq };
  }

  // --- HostOwner --------------------------------------------------------------------------------

  commit(write: Write): Promise<unknown> {
    // An agent's own writes: held while the store takes none, so the agent keeps what it has.
    return this.options.committer.enqueue(write, 'agent');
  }

  streamTokens(agentId: string, key: CallKey, resumed: boolean): TokenWriter {
    return this.options.tokens.begin(agentId, key, { resumed });
  }

  findEffect(idempotencyKey: string) {
    return this.options.store.findEffect(idempotencyKey);
  }

  childOf(spawn: SpawnEmit, parent: string, at: string): NewAgent | { refused: string } | undefined {
    if (this.options.ignoreSpawns) return undefined;
    const machine = this.options.machines.get(spawn.machine);
    if (typeof spawn.id !== 'string' || !ID_PATTERN.test(spawn.id)) return { refused: `spawnAgent: the child id ${JSON.stringify(spawn.id)} is not a valid agent id (${ID_PATTERN}).` };
    if (!machine) return { refused: `spawnAgent: no machine named "${spawn.machine}" is registered here.` };
    try {
      return { id: spawn.id, machine: machine.name, machineVersion: machine.version, input: validateInput(machine, spawn.input ?? {}), createdAt: at, parent };
    } catch (err) {
      return { refused: `spawnAgent: the input of child "${spawn.id}" is not valid for "${machine.name}": ${(err as Error).message}` };
    }
  }

  /** `origin`: an agent's report (held while the store takes no writes), or a caller's (`runtime.report`: fails at once). */
  async sendEvent(agentId: string, event: InboxEvent, idempotencyKey: string, origin: WriteOrigin = 'agent'): Promise<unknown> {
    const result = (await this.options.committer.enqueue({ kind: 'event', agentId, event, idempotencyKey, at: new Date().toISOString() }, origin)) as AppendResult;
    // Not awaited, nor its failure the sender's: the event is committed, and recovery or the agent's next event delivers it.
    if (!result.duplicate) {
      this.handOver(agentId, result.seq, event, idempotencyKey).catch((err: unknown) =>
        this.log.warn({ agentId, err }, 'could not hand an event to its agent; recovery or its next event will'),
      );
    }
    return result;
  }

  /**
   * Hands an event just committed to its agent's inbox to the agent: live here, or woken (on a shared
   * store, only if no other live process holds it: that one hears of the event and reads it itself).
   * The passivation countdown is left running: when it ends it re-checks that the agent rests, and
   * an event that moves the agent reschedules it from `committed` (one its state ignores does not).
   */
  async handOver(agentId: string, seq: number, event: InboxEvent, idempotencyKey: string | null): Promise<void> {
    const host = this.hosts.get(agentId) ?? (await this.wake(agentId));
    host?.offer([{ agentId, seq, event, idempotencyKey, createdAt: '' }]);
  }

  committed(host: AgentHost, checkpoint: CommittedCheckpoint): void {
    this.options.observe('transitionCommitted', {
      agentId: host.agentId,
      machine: host.machine.name,
      seq: checkpoint.seq,
      eventType: checkpoint.eventType,
      state: checkpoint.state,
      status: checkpoint.status,
      action: checkpoint.action,
      actor: checkpoint.actor,
      at: checkpoint.transitionAt,
    });
    this.warnOnFailed(host, checkpoint);
    if (checkpoint.sentTo) for (const to of new Set(checkpoint.sentTo)) void this.deliverInbox(to);
    // Its new children start here (on a shared store this process owns them); one already live is left as
    // it is. Waking one reads the events already in its inbox.
    if (checkpoint.spawned) {
      for (const child of checkpoint.spawned) {
        this.wake(child).catch((err: unknown) => this.log.warn({ agentId: child, err }, 'could not start a new child agent; recovery or its next event will'));
      }
    }
    if (checkpoint.status !== 'active') this.forget(host);
    else if (this.options.passivateAfterMs !== undefined && host.isResting()) this.schedulePassivation(host);
    this.options.watchers.publish(host.agentId, () => liveView(host)!, checkpoint.seq);
  }

  /**
   * Events another agent here sent (`sendToAgent`) were committed to this one's inbox: a live agent
   * reads what it has not seen, one not in memory is woken (on a shared store, only if no other live
   * process holds it: that one hears of the events and reads them itself).
   */
  private async deliverInbox(agentId: string): Promise<void> {
    try {
      const host = this.hosts.get(agentId) ?? (await this.wake(agentId));
      if (host) host.offer(await this.options.store.eventsAfter(agentId, host.inboxPosition));
    } catch (err) {
      this.log.warn({ agentId, err }, 'could not hand messages to their agent; recovery or its next event will');
    }
  }

  /** The failure policy: let go of an agent run elsewhere, mark one that threw, reload one whose commit failed. */
  failed(host: AgentHost, reason: 'commit' | 'actor', err: unknown): void {
    this.forget(host);
    if (this.closing) return;
    if (err instanceof FencedError) {
      // Not a failure of the agent: another process runs it now (or it was stopped); let it go.
      this.log.info({ agentId: host.agentId }, 'agent taken over by another process or stopped elsewhere; let go here');
      this.options.observe('ownershipChanged', { change: 'fenced', agents: 1 });
      return;
    }
    this.options.observe('agentFailed', { agentId: host.agentId, reason, error: serializeError(err) });
    if (reason === 'actor') {
      this.log.error({ agentId: host.agentId, err }, 'agent crashed inside its statechart; marked error');
      void this.writeStatus(host.agentId, 'error', serializeError(err), host.parent, 'agent').catch((e: unknown) =>
        this.log.error({ agentId: host.agentId, err: e }, 'could not record the agent error'),
      );
      return;
    }
    if (err instanceof StoreUnavailableError) {
      // Agents' writes are held while the store takes none, so this is rare (one let go meanwhile):
      // reloading now would only ask its LLM again into a store that refuses the answer. Once it is back.
      this.log.warn({ agentId: host.agentId, reason: err.reason }, 'checkpoint not committed: the store takes no writes; the agent reloads once it does');
      void this.options.committer.health.whenReady().then(() => {
        if (!this.closing) void this.reload(host.agentId);
      });
      return;
    }
    this.log.error({ agentId: host.agentId, err }, 'checkpoint commit failed; reloading the agent from its last checkpoint');
    setTimeout(() => void this.reload(host.agentId), this.options.reloadDelayMs).unref();
  }

  // --- internals --------------------------------------------------------------------------------

  /**
   * An agent that parks in a top-level state named `failed` (the reference agent's, after a permanent
   * error or its last attempt) waits for a person: a warning, once per entry, with its `lastError`.
   */
  private warnOnFailed(host: AgentHost, checkpoint: CommittedCheckpoint): void {
    const state = topLevelState(checkpoint.state);
    const before = this.topStates.get(host);
    this.topStates.set(host, state);
    if (state !== 'failed' || before === 'failed') return;
    const context = checkpoint.context;
    const lastError = context && typeof context === 'object' && 'lastError' in context ? (context as { lastError: unknown }).lastError : undefined;
    this.log.warn(
      { agentId: host.agentId, machine: host.machine.name, seq: checkpoint.seq, ...(lastError === undefined ? {} : { lastError }) },
      'agent parked in failed; it waits for an event (the reference agent: retry or task.skip)',
    );
    this.options.observe('agentParked', { agentId: host.agentId, machine: host.machine.name, lastError });
  }

  /** Takes a host out of this process's books (it has stopped, or is about to). */
  private forget(host: AgentHost): void {
    clearTimeout(this.passivation.get(host));
    this.passivation.delete(host);
    if (this.hosts.get(host.agentId) === host) this.hosts.delete(host.agentId);
  }

  private async reload(agentId: string): Promise<void> {
    try {
      await this.wake(agentId);
    } catch (err) {
      this.log.error({ agentId, err }, 'reload failed; retrying');
      setTimeout(() => void this.reload(agentId), this.options.reloadDelayMs).unref();
    }
  }

  /** With passivation on, (re)starts the host's countdown to leaving memory. */
  private schedulePassivation(host: AgentHost): void {
    const afterMs = this.options.passivateAfterMs;
    if (afterMs === undefined) return;
    clearTimeout(this.passivation.get(host));
    const timer = setTimeout(() => {
      void host.settled().then(() => {
        // Re-checked after the last commit: an event or a transition may have come in meanwhile.
        if (this.passivation.get(host) !== timer) return;
        this.passivation.delete(host);
        if (this.hosts.get(host.agentId) !== host || !host.isResting() || this.closing) return;
        this.unload(host);
      });
    }, afterMs);
    timer.unref();
    this.passivation.set(host, timer);
  }

  /** State corruption is its own failure domain: this agent is parked in `error`, the others go on. */
  private async quarantine(agentId: string, err: unknown, parent?: string): Promise<void> {
    const reason = err instanceof RestoreRefusedError ? err.reason : 'restore_failed';
    const error = new CorruptStateError(agentId, err instanceof Error ? err.message : String(err), reason);
    this.log.error({ agentId, reason, err: error }, 'agent quarantined: its stored state cannot be restored');
    this.options.observe('agentFailed', { agentId, reason: 'corrupt', error: serializeError(error) });
    // Stored with the agent row: its view says why (`error.code` is the reason) after any restart.
    await this.writeStatus(agentId, 'error', { ...serializeError(error), code: reason }, parent);
  }
}
