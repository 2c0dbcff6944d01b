import type { AnyMachineSnapshot, InspectionEvent } from 'xstate';
import { ConflictError, CorruptStateError, FencedError, InvalidEventError, InvalidInputError, NotFoundError, serializeError } from '../core/errors.js';
import { topLevelState } from '../core/state-value.js';
import { silentLogger, type Logger } from '../core/logger.js';
import type { ActionRecord, AgentQuery, AgentRecord, CheckpointRecord, CheckpointSummary, HistoryOptions, InboxEvent, Page, RestorableAgent, RestorableCheckpoint, Store, Write } from '../store/store.js';
import { describeIssues } from '../core/validation-issues.js';
import { AgentHost, type CommittedCheckpoint, type HostOwner, type LatestState } from './agent-host.js';
import { GroupCommitter } from './committer.js';
import { LeaseKeeper } from './lease-keeper.js';
import { assertValidId, generateId } from './ids.js';
import type { MachineDefinition, PersistedSnapshotJson } from '../durable/definition.js';
import { registerMachine, type RegisteredMachine } from './registered-machine.js';
import type { RuntimeObserver } from './observer.js';
import { toAgentView, type AgentView } from './views.js';

export interface RuntimeOptions {
  store: Store;
  machines: readonly MachineDefinition[];
  logger?: Logger;
  /**
   * Restore every active agent at creation (default true). On a shared store (Postgres) the runtime
   * always takes its lease and adopts the agents no live process runs: that is its recovery.
   */
  recover?: boolean;
  /** Wait before reloading an agent whose checkpoint could not be committed. */
  reloadDelayMs?: number;
  /**
   * Passivation: an agent that has rested this long (nothing in flight, waiting for an event) leaves
   * memory; its next event brings it back from the store, and recovery leaves resting agents on disk.
   * Memory then follows the working set, not the number of agents. Unset: agents stay in memory.
   */
  passivateAfterMs?: number;
  /** Metrics and traces hook in here. */
  observer?: RuntimeObserver;
  /** XState's `inspect` option for every agent actor, e.g. a Stately inspector's (see observability/inspector.ts). */
  inspect?: (event: InspectionEvent) => void;
}

export type ViewListener = (view: AgentView) => void;

/**
 * @example
 * const runtime = await createRuntime({ store: await openSqliteStore('./data/agents.db'), machines: [agentDefinition({ llm })] });
 * await runtime.spawn('agent', { id: 'a1', input: { tasks: ['Summarize …'] } });
 * await runtime.send('a1', { type: 'task.add', task: 'Extract entities …' });
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const runtime = new Runtime(options);
  // On a shared store, recovery is taking the lease and adopting the agents no live process runs.
  if (runtime.leaseKeeper) await runtime.startLeases();
  else if (options.recover !== false) await runtime.recover();
  return runtime;
}

export class Runtime implements HostOwner {
  readonly store: Store;
  readonly log: Logger;
  readonly machines: ReadonlyMap<string, RegisteredMachine>;
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  private readonly committer: GroupCommitter;
  private readonly live = new Map<string, AgentHost>();
  private readonly listeners = new Map<string, Set<ViewListener>>();
  private readonly reloadDelayMs: number;
  private readonly passivateAfterMs: number | undefined;
  private readonly waking = new Map<string, Promise<AgentHost | undefined>>();
  /** Shared store: for watched agents that another process runs, the last seq shown and the reads in flight. */
  private readonly remote = new Map<string, { seen: number | undefined; reading: Promise<void> }>();
  private readonly observer: RuntimeObserver;
  /** Present on a store shared by many processes: this process runs only the agents it holds. */
  readonly leaseKeeper: LeaseKeeper | undefined;
  private closing = false;

  constructor(options: RuntimeOptions) {
    this.store = options.store;
    this.log = options.logger ?? silentLogger;
    this.machines = new Map(options.machines.map((def) => [def.name, registerMachine(def)]));
    this.committer = new GroupCommitter(options.store);
    this.observer = options.observer ?? {};
    const inspect = options.inspect;
    // XState calls it inside the agent's transition: a throw there would put the agent in error.
    this.inspect = inspect && ((event) => this.observe('inspect', () => inspect(event)));
    this.committer.onBatch = (size, ms) => this.observe('batchCommitted', () => this.observer.batchCommitted?.({ size, ms }));
    this.observe('machinesRegistered', () => this.observer.machinesRegistered?.([...this.machines.values()]));
    this.reloadDelayMs = options.reloadDelayMs ?? 1000;
    this.passivateAfterMs = options.passivateAfterMs;
    const leases = options.store.leases;
    this.leaseKeeper =
      leases &&
      new LeaseKeeper(
        leases,
        {
          adopt: async (agents) => {
            const { restored } = await this.adopt(agents);
            this.observe('ownershipChanged', () => this.observer.ownershipChanged?.({ change: 'adopted', agents: restored }));
          },
          inboxEvent: (agentId, seq, owner) => void this.pullInbox(agentId, seq, owner),
          statusChanged: (agentId) => void this.statusChanged(agentId),
          checkpointCommitted: (agentId, seq) => this.followRemote(agentId, seq),
          leaseLost: () => {
            const agents = this.live.size;
            this.dropAll();
            this.observe('ownershipChanged', () => this.observer.ownershipChanged?.({ change: 'lease-lost', agents }));
          },
          log: this.log,
        },
        { skipResting: this.passivateAfterMs !== undefined },
      );
  }

  get liveAgents(): number {
    return this.live.size;
  }

  /** Creates an agent; the same id again with the same machine returns the existing one. */
  async spawn(machineName: string, options: { id?: string; input?: unknown } = {}): Promise<{ view: AgentView; created: boolean }> {
    const machine = this.machine(machineName);
    const id = options.id ?? generateId();
    assertValidId(id);
    const input = parseWith(machine.input, options.input ?? {}, 'input');
    const { agent, created } = await this.store.createAgent({
      id,
      machine: machine.name,
      machineVersion: machine.version,
      input,
      createdAt: new Date().toISOString(),
    });
    if (agent.machine !== machine.name) {
      throw new ConflictError(`Agent "${id}" already exists with machine "${agent.machine}".`);
    }
    if (created) {
      const host = await this.activate({ ...agent, input }, undefined);
      await host?.settled();
    }
    return { view: await this.view(id), created };
  }

  /** Commits an event to the agent's inbox; the agent processes its inbox in order, each event once. */
  async send(agentId: string, event: InboxEvent, idempotencyKey?: string): Promise<{ seq: number; duplicate: boolean }> {
    const machine = this.live.get(agentId)?.machine ?? this.machine((await this.agentOrThrow(agentId)).machine);
    const checked = validateEvent(machine, event);
    // Through the group committer: under load, many requests' events share one transaction (one fsync).
    const result = (await this.committer.enqueue({
      kind: 'event',
      agentId,
      event: checked,
      idempotencyKey: idempotencyKey ?? null,
      at: new Date().toISOString(),
    })) as { seq: number; duplicate: boolean };
    if (!result.duplicate) {
      // The passivation countdown is left running: when it ends it re-checks that the agent rests, and
      // an event that moves the agent reschedules it from `committed` (one its state ignores does not).
      const host = this.live.get(agentId) ?? (await this.wake(agentId));
      host?.offer([{ agentId, seq: result.seq, event: checked, idempotencyKey: idempotencyKey ?? null, createdAt: '' }]);
    }
    return result;
  }

  /** Stops an active agent for good (its last checkpoint stays); other statuses are left as they are. */
  async stop(agentId: string): Promise<void> {
    const agent = await this.agentOrThrow(agentId);
    const host = this.live.get(agentId);
    if (host) this.unload(host);
    if (agent.status === 'active') await this.writeStatus(agentId, 'stopped', null);
  }

  /** A new agent restored from one checkpoint of another, started. */
  async fork(agentId: string, seq: number, newId: string = generateId()): Promise<AgentView> {
    assertValidId(newId);
    const source = await this.agentOrThrow(agentId);
    const checkpoint = await this.store.getCheckpoint(agentId, seq);
    if (!checkpoint) throw new NotFoundError('checkpoint', `${agentId}@${seq}`);
    const { agent, created } = await this.store.createAgent({
      id: newId,
      machine: source.machine,
      machineVersion: checkpoint.machineVersion,
      input: await this.store.getInput(agentId),
      createdAt: new Date().toISOString(),
      snapshot: { ...checkpoint, status: checkpoint.status === 'done' ? 'done' : 'active' },
    });
    if (!created) throw new ConflictError(`An agent with id "${newId}" already exists.`);
    if (agent.status === 'active') await this.activate(agent, { ...checkpoint, agentId: newId, seq: 1 });
    return this.view(newId);
  }

  async view(agentId: string): Promise<AgentView> {
    const host = this.live.get(agentId);
    // A live agent's status is its last checkpoint's: stopping or failing it takes it out of `live`.
    if (host?.latest) return liveView(host, host.latest);
    return this.storedView(await this.agentOrThrow(agentId));
  }

  async list(query: AgentQuery): Promise<Page<AgentView>> {
    const page = await this.store.listAgents(query);
    const items = await Promise.all(page.items.map((agent) => this.viewOf(agent)));
    return { items, nextCursor: page.nextCursor };
  }

  /** The view of an agent whose row the caller already holds: only an agent not in memory needs its checkpoint read. */
  async viewOf(agent: AgentRecord): Promise<AgentView> {
    const host = this.live.get(agent.id);
    return host?.latest ? liveView(host, host.latest) : this.storedView(agent);
  }

  private async storedView(agent: AgentRecord): Promise<AgentView> {
    const checkpoint = agent.lastSeq > 0 ? await this.store.getCheckpoint(agent.id, agent.lastSeq) : undefined;
    return toAgentView(agent, checkpoint && { ...checkpoint, context: contextOf(checkpoint), updatedAt: agent.updatedAt });
  }

  /** The agent's checkpoints, oldest first (with `newest: n`, the last n); NotFoundError for an unknown agent. */
  async checkpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    const checkpoints = await this.store.listCheckpoints(agentId, options);
    if (checkpoints.length === 0) await this.agentOrThrow(agentId); // an unknown agent is an error, not an empty list
    return checkpoints;
  }

  /** One checkpoint whole, its snapshot parsed; NotFoundError for an unknown agent or seq, CorruptStateError for a damaged snapshot. */
  async checkpoint(agentId: string, seq: number): Promise<Omit<CheckpointRecord, 'snapshot'> & { snapshot: Record<string, unknown> }> {
    const checkpoint = await this.store.getCheckpoint(agentId, seq);
    if (!checkpoint) {
      await this.agentOrThrow(agentId);
      throw new NotFoundError('checkpoint', `${agentId}@${seq}`);
    }
    const snapshot = parseJsonObject(checkpoint.snapshot);
    if (!snapshot) throw new CorruptStateError(agentId, `checkpoint ${seq} does not hold a JSON snapshot object.`);
    return { ...checkpoint, snapshot };
  }

  /** The agent's action log, oldest first (with `newest: n`, the last n); NotFoundError for an unknown agent. */
  async actions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    const actions = await this.store.listActions(agentId, options);
    if (actions.length === 0) await this.agentOrThrow(agentId);
    return actions;
  }

  /**
   * The event types the agent's current state would take now (guards that need a payload count as
   * taking it): what a dashboard offers as buttons. Empty unless the agent is active. Takes the
   * agent's view (from `view`) so a caller that shows it too reads the store once.
   */
  acceptedEvents(view: AgentView): string[] {
    const machine = this.machines.get(view.machine);
    if (view.status !== 'active' || !machine) return [];
    const snapshot =
      this.live.get(view.id)?.snapshot() ??
      (machine.machine.resolveState({ value: view.state as never, context: view.context as never }) as AnyMachineSnapshot);
    return machine.eventTypes.filter((type) => {
      try {
        return snapshot.can({ type });
      } catch {
        return true;
      }
    });
  }

  /** Figures for gauges: agents by status (store), live agents by top-level state, inbox depth. */
  async stats(): Promise<{ agentsByStatus: Record<string, number>; liveByState: Record<string, number>; inboxDepth: number; live: number }> {
    const { agentsByStatus, inboxDepth } = await this.store.stats();
    const liveByState: Record<string, number> = {};
    for (const host of this.live.values()) {
      const state = topLevelState(host.latest?.state);
      liveByState[state] = (liveByState[state] ?? 0) + 1;
    }
    return { agentsByStatus, liveByState, inboxDepth, live: this.live.size };
  }

  /** Calls `listener` with the agent's view after each committed transition; returns the unsubscribe. */
  watch(agentId: string, listener: ViewListener): () => void {
    let set = this.listeners.get(agentId);
    if (!set) this.listeners.set(agentId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size > 0) return;
      this.listeners.delete(agentId);
      this.remote.delete(agentId);
    };
  }

  /** Restores every active agent from its last checkpoint and resumes it. */
  async recover(): Promise<{ restored: number; quarantined: number }> {
    const skipResting = this.passivateAfterMs !== undefined;
    const counts = await this.adopt(await this.store.loadActiveAgents({ skipResting }));
    if (counts.restored + counts.quarantined > 0) this.log.info(counts, 'recovered active agents');
    return counts;
  }

  /** Takes this process's lease on the shared store and adopts every agent no live process runs. */
  async startLeases(): Promise<void> {
    const adopted = await this.leaseKeeper!.start();
    this.log.info({ processId: this.store.leases!.processId, adopted }, 'lease taken; adopted the agents no live process ran');
  }

  /** Stops every actor (in-flight calls are aborted and re-run after restart), commits what is queued, closes the store. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.leaseKeeper?.stop();
    this.dropAll();
    await this.committer.drain();
    // Committed what it had: its agents may go to another process at once, without waiting for the lease.
    await this.leaseKeeper?.resign().catch((err: unknown) => this.log.warn({ err }, 'could not end the lease; it will run out'));
    await this.store.close();
  }

  // --- HostOwner --------------------------------------------------------------------------------

  commit(write: Write): Promise<unknown> {
    return this.committer.enqueue(write);
  }

  findEffect(idempotencyKey: string) {
    return this.store.findEffect(idempotencyKey);
  }

  committed(host: AgentHost, checkpoint: CommittedCheckpoint): void {
    // Only what views show: the checkpoint's action (an LLM call's input and answer) is not kept alive.
    const { state, status, progress, context, at } = checkpoint;
    host.latest = { state, status, progress, context, at };
    if (this.observer.transitionCommitted) {
      this.observe('transitionCommitted', () =>
        this.observer.transitionCommitted!({
          agentId: host.agentId,
          machine: host.machine.name,
          seq: checkpoint.seq,
          eventType: checkpoint.eventType,
          state: checkpoint.state,
          status: checkpoint.status,
          action: checkpoint.action,
          actor: checkpoint.actor,
          at: checkpoint.transitionAt,
        }),
      );
    }
    if (checkpoint.status !== 'active' && this.live.get(host.agentId) === host) this.live.delete(host.agentId);
    else if (this.passivateAfterMs !== undefined && host.isResting()) this.schedulePassivation(host);
    const listeners = this.listeners.get(host.agentId);
    if (listeners?.size) {
      const view = liveView(host, host.latest);
      listeners.forEach((listener) => listener(view));
    }
  }

  failed(host: AgentHost, reason: 'commit' | 'actor', err: unknown): void {
    if (this.live.get(host.agentId) === host) this.live.delete(host.agentId);
    if (this.closing) return;
    if (err instanceof FencedError) {
      // Not a failure of the agent: another process runs it now (or it was stopped); let it go.
      this.log.info({ agentId: host.agentId }, 'agent taken over by another process or stopped elsewhere; let go here');
      this.observe('ownershipChanged', () => this.observer.ownershipChanged?.({ change: 'fenced', agents: 1 }));
      return;
    }
    this.observe('agentFailed', () => this.observer.agentFailed?.({ agentId: host.agentId, reason, error: serializeError(err) }));
    if (reason === 'actor') {
      this.log.error({ agentId: host.agentId, err }, 'agent crashed inside its statechart; marked error');
      void this.writeStatus(host.agentId, 'error', serializeError(err)).catch((e: unknown) =>
        this.log.error({ agentId: host.agentId, err: e }, 'could not record the agent error'),
      );
      return;
    }
    this.log.error({ agentId: host.agentId, err }, 'checkpoint commit failed; reloading the agent from its last checkpoint');
    setTimeout(() => void this.reload(host.agentId), this.reloadDelayMs).unref();
  }

  // --- internals --------------------------------------------------------------------------------

  /** Restores agents read (or claimed) from the store, skipping any already live. */
  private async adopt(agents: readonly RestorableAgent[]): Promise<{ restored: number; quarantined: number }> {
    let restored = 0;
    let quarantined = 0;
    for (const { agent, checkpoint } of agents) {
      if (this.live.has(agent.id)) continue;
      const host = await this.activate(agent, checkpoint);
      if (host) restored++;
      else if (this.machines.has(agent.machine)) quarantined++;
    }
    return { restored, quarantined };
  }

  /** Stops a live agent here and forgets it, writing nothing (its stored state stays as it is). */
  private unload(host: AgentHost): void {
    clearTimeout(host.passivationTimer);
    host.stop();
    if (this.live.get(host.agentId) === host) this.live.delete(host.agentId);
  }

  /** Unloads every live agent (closing, or the lease ran out). */
  private dropAll(): void {
    for (const host of [...this.live.values()]) this.unload(host);
  }

  /**
   * An event committed to an agent's inbox, maybe by another process (shared store): a live agent
   * reads what it has not seen. One not in memory is woken only by the process that holds it
   * (passivated here); any other holder is alive and acts itself, and an agent that had none, or a
   * dead one, was claimed by the process that took the event.
   */
  private async pullInbox(agentId: string, seq: number, owner: string | null): Promise<void> {
    try {
      const host = this.live.get(agentId);
      if (!host) {
        if (owner === this.store.leases?.processId) await this.wake(agentId);
        return;
      }
      if (!host.knows(seq)) host.offer(await this.store.eventsAfter(agentId, host.inboxPosition));
    } catch (err) {
      this.log.warn({ agentId, err }, 'could not read new inbox events; the next lease tick retries');
    }
  }

  /** Its status changed (stopped from any process, or an error where it ran): a copy running here must end, and watchers here see it. */
  private async statusChanged(agentId: string): Promise<void> {
    const host = this.live.get(agentId);
    if (!host && !this.listeners.get(agentId)?.size) return;
    try {
      const agent = await this.store.getAgent(agentId);
      if (host && agent?.status !== 'active') this.unload(host);
      if (!this.live.has(agentId)) this.notify(agentId);
    } catch (err) {
      this.log.warn({ agentId, err }, 'could not read the status of an agent changed elsewhere');
    }
  }

  private async activate(agent: RestorableAgent['agent'], checkpoint: RestorableCheckpoint | undefined): Promise<AgentHost | undefined> {
    const machine = this.machines.get(agent.machine);
    if (!machine) {
      this.log.warn({ agentId: agent.id, machine: agent.machine }, 'agent left as is: its machine is not registered here');
      return undefined;
    }
    let host: AgentHost;
    try {
      const snapshot = checkpoint && parseSnapshot(checkpoint, machine);
      host = new AgentHost(
        agent.id,
        agent.createdAt,
        machine,
        this,
        checkpoint ? { kind: 'restore', snapshot, seq: checkpoint.seq } : { kind: 'fresh', input: agent.input },
        agent.inboxPosition,
      );
      if (checkpoint && snapshot) {
        // State and context from the snapshot itself: the checkpoint's state column is a copy of its value.
        host.latest = {
          state: snapshot.value, status: 'active', progress: checkpoint.progress, context: snapshot.context ?? null, at: checkpoint.createdAt,
        };
      }
      this.live.set(agent.id, host);
      const failure = host.start();
      if (failure) {
        this.live.delete(agent.id);
        throw failure.error instanceof Error ? failure.error : new Error(String(failure.error));
      }
    } catch (err) {
      await this.quarantine(agent.id, err);
      return undefined;
    }
    if (agent.eventSeq > agent.inboxPosition) host.offer(await this.store.eventsAfter(agent.id, agent.inboxPosition));
    // Whatever brought it here (recovery, a wake, a fork), an agent that turns out to rest leaves again;
    // the timer re-checks once its commits have settled.
    this.schedulePassivation(host);
    return host;
  }

  private async reload(agentId: string): Promise<void> {
    try {
      await this.wake(agentId);
    } catch (err) {
      this.log.error({ agentId, err }, 'reload failed; retrying');
      setTimeout(() => void this.reload(agentId), this.reloadDelayMs).unref();
    }
  }

  /** Brings an active agent that is not in memory back from its last checkpoint (once, however many ask). */
  private wake(agentId: string): Promise<AgentHost | undefined> {
    const live = this.live.get(agentId);
    if (live || this.closing) return Promise.resolve(live);
    let waking = this.waking.get(agentId);
    if (!waking) {
      waking = (async () => {
        // One read for the agent and its last checkpoint. Events committed meanwhile are not lost: their
        // senders offer them to the host this wake returns, and activate reads those already pending.
        // On a shared store, only when no other live process runs it (it is then this process's).
        const leases = this.store.leases;
        const found = leases ? await leases.claim(agentId) : await this.store.loadRestorable(agentId);
        const restorable = found === 'elsewhere' ? undefined : found;
        if (!restorable || this.closing) return undefined;
        return this.live.get(agentId) ?? (await this.activate(restorable.agent, restorable.checkpoint));
      })().finally(() => this.waking.delete(agentId));
      this.waking.set(agentId, waking);
    }
    return waking;
  }

  /**
   * Another process committed checkpoints of an agent (shared store). Watchers here get one view per
   * transition, read from the store in order; the first notification after `watch` shows its newest.
   */
  private followRemote(agentId: string, newest: number): void {
    const listeners = this.listeners.get(agentId);
    if (!listeners?.size || this.live.has(agentId)) return;
    let follow = this.remote.get(agentId);
    if (!follow) this.remote.set(agentId, (follow = { seen: undefined, reading: Promise.resolve() }));
    const current = follow;
    current.reading = current.reading.then(async () => {
      const from = current.seen === undefined ? newest : current.seen + 1;
      if (from > newest) return;
      const agent = await this.agentOrThrow(agentId);
      for (let seq = from; seq <= newest; seq++) {
        const checkpoint = await this.store.getCheckpoint(agentId, seq);
        if (!checkpoint) continue;
        const view = toAgentView(
          { ...agent, status: checkpoint.status as AgentRecord['status'] },
          { ...checkpoint, context: contextOf(checkpoint), updatedAt: checkpoint.createdAt },
        );
        listeners.forEach((listener) => listener(view));
      }
      current.seen = newest;
    }).catch((err: unknown) => this.log.warn({ agentId, err }, 'could not read the checkpoints of an agent run elsewhere'));
  }

  /** With passivation on, (re)starts the host's countdown to leaving memory. */
  private schedulePassivation(host: AgentHost): void {
    const afterMs = this.passivateAfterMs;
    if (afterMs === undefined) return;
    clearTimeout(host.passivationTimer);
    host.passivationTimer = setTimeout(() => {
      void host.settled().then(() => {
        // Re-checked after the last commit: an event or a transition may have come in meanwhile.
        if (this.live.get(host.agentId) !== host || !host.isResting() || this.closing) return;
        this.unload(host);
      });
    }, afterMs);
    host.passivationTimer.unref();
  }

  /** State corruption is its own failure domain: this agent is parked in `error`, the others go on. */
  private async quarantine(agentId: string, err: unknown): Promise<void> {
    const error = new CorruptStateError(agentId, err instanceof Error ? err.message : String(err));
    this.log.error({ agentId, err: error }, 'agent quarantined: its stored state cannot be restored');
    this.observe('agentFailed', () => this.observer.agentFailed?.({ agentId, reason: 'corrupt', error: serializeError(error) }));
    await this.writeStatus(agentId, 'error', serializeError(error));
  }

  private async writeStatus(agentId: string, status: 'stopped' | 'error', error: ReturnType<typeof serializeError> | null) {
    await this.committer.enqueue({ kind: 'status', agentId, status, error, at: new Date().toISOString() });
    this.notify(agentId);
  }

  private observe(what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.log.warn({ err, observer: what }, 'runtime observer threw; ignored');
    }
  }

  private notify(agentId: string): void {
    const set = this.listeners.get(agentId);
    if (!set?.size) return;
    this.view(agentId).then(
      (view) => set.forEach((listener) => listener(view)),
      (err: unknown) => this.log.warn({ agentId, err }, 'could not build a view for watchers'),
    );
  }

  /** The registered machine of that name; NotFoundError (`machine`) if there is none. */
  machine(name: string): RegisteredMachine {
    const machine = this.machines.get(name);
    if (!machine) throw new NotFoundError('machine', name);
    return machine;
  }

  /** The agent's stored row; NotFoundError (`agent`) if there is none. */
  async agentOrThrow(agentId: string): Promise<AgentRecord> {
    const agent = await this.store.getAgent(agentId);
    if (!agent) throw new NotFoundError('agent', agentId);
    return agent;
  }
}

function validateEvent(machine: RegisteredMachine, event: InboxEvent): InboxEvent {
  if (!machine.eventTypes.includes(event.type)) {
    throw new InvalidEventError(machine.name, event.type, machine.eventTypes);
  }
  const schema = machine.events[event.type];
  if (!schema) return event;
  const result = schema.safeParse(event);
  if (!result.success) {
    throw new InvalidEventError(machine.name, event.type, machine.eventTypes, `Invalid "${event.type}" event: ${describeIssues(result.error)}.`);
  }
  return result.data as InboxEvent;
}

function parseWith(schema: RegisteredMachine['input'], value: unknown, what: string): unknown {
  if (!schema) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new InvalidInputError(`Invalid ${what}: ${describeIssues(result.error)}.`);
}

function parseSnapshot(checkpoint: RestorableCheckpoint, machine: RegisteredMachine): PersistedSnapshotJson {
  const version = checkpoint.machineVersion;
  const upgrade = version !== machine.version && Object.hasOwn(machine.upgrades, version) ? machine.upgrades[version] : undefined;
  if (version !== machine.version && !upgrade) {
    throw new Error(`its checkpoint was written by version ${checkpoint.machineVersion} of "${machine.name}", this process runs ${machine.version} and has no upgrade from it`);
  }
  let snapshot: unknown;
  try {
    snapshot = JSON.parse(checkpoint.snapshot);
  } catch (err) {
    throw new Error(`its snapshot is not valid JSON (${(err as Error).message})`);
  }
  if (!isPersistedSnapshot(snapshot)) throw new Error('its snapshot is not an XState persisted snapshot');
  if (upgrade) {
    snapshot = upgrade(snapshot);
    if (!isPersistedSnapshot(snapshot)) throw new Error(`the upgrade from version ${checkpoint.machineVersion} did not return a persisted snapshot`);
  }
  // XState's restore silently drops a child whose src is not in the machine's actors (no error, the
  // snapshot stays active), leaving the agent stuck forever in the invoking state: refuse it here,
  // loudly (test/runtime/corruption.test.ts).
  const parsed = snapshot;
  const children = parsed.children ?? {};
  const known = machine.durable.implementations.actors;
  for (const [id, child] of Object.entries(children)) {
    if (typeof child?.src !== 'string' || !(child.src in known)) {
      throw new Error(`its snapshot has a running actor "${id}" whose logic "${String(child?.src)}" is not registered`);
    }
  }
  return parsed;
}

function isPersistedSnapshot(value: unknown): value is PersistedSnapshotJson {
  return typeof value === 'object' && value !== null && 'value' in value && 'status' in value;
}

function liveView(host: AgentHost, latest: LatestState): AgentView {
  return {
    id: host.agentId,
    machine: host.machine.name,
    status: latest.status,
    state: latest.state,
    context: latest.context,
    progress: latest.progress,
    createdAt: host.createdAt,
    updatedAt: latest.at,
  };
}

function contextOf(checkpoint: CheckpointRecord): unknown {
  try {
    return (JSON.parse(checkpoint.snapshot) as { context?: unknown }).context ?? null;
  } catch {
    return null;
  }
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON: reported by the caller
  }
  return undefined;
}
