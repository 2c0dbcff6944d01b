// The runtime's public API in one class, so that a reader sees every command and query in one place;
// each method is a few lines over LiveAgents, Watchers, the store or ownership, which do the work.
import { LlmGate } from '../llm/flow/llm-gate.js';
import { toolLimits, type ToolLimits } from '../core/tool-limits.js';
import { reportKey, type ChildEvent } from '../durable/child-events.js';
import type { AnyMachineSnapshot, InspectionEvent } from 'xstate';
import {
  AgentInErrorError, AgentsError, ConflictError, CorruptStateError, InboxFullError, InvalidInputError, NotFoundError, PrunedError, ReadOnlyStoreError, RuntimeClosedError, truncate,
} from '../core/errors.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { topLevelState } from '../core/state-value.js';
import type { MachineDefinition } from '../durable/definition.js';
import type {
  ActionRecord, AgentQuery, AgentRecord, CheckpointRecord, CheckpointSummary, HistoryOptions, InboxEvent, Page, Store,
} from '../store/store.js';
import { GroupCommitter } from './committer.js';
import { StoreHealth, StoreProbe, type StoreReadiness, type StoreRetryOptions } from './store-health.js';
import { assertValidId, generateId } from '../core/ids.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { LiveAgents } from './live-agents.js';
import type { AgentHost } from './agent-host.js';
import type { Observe, RuntimeObserver } from './observer.js';
import { Pruner, type RetentionPolicy } from './pruner.js';
import { createOwnership } from './ownership.js';
import { acceptedEventTypes, registerMachine, validateEvent, validateInput, type RegisteredMachine } from './registered-machine.js';
import { parseJsonObject } from './restore.js';
import { liveView, storedView, type AgentView } from './views.js';
import { MachineAgents, type SpawnInputOf } from './typed-agents.js';
import { agentErrorView } from './agent-error.js';
import { toAgentSummary, type AgentSummary } from './agent-summary.js';
import { eventBodyHash } from '../store/event-hash.js';
import { Watchers, type ViewListener } from './watchers.js';
import { TokenStreams, type TokenStreamLimits } from './token-streams.js';
import { Wakeups, type WakeupOptions } from './wakeups.js';
import { AgentEventFeed, type AgentEvent, type AgentEventSources, type StreamPosition } from './agent-events.js';

export interface RuntimeOptions {
  store: Store;
  machines: readonly MachineDefinition[];
  logger?: Logger;
  /** How agents not in memory are found and woken for their delays (wakeups.ts has the defaults). */
  wakeups?: WakeupOptions;
  /** What is kept of streamed LLM text for clients that reconnect (see token-streams.ts for the defaults). */
  tokenLimits?: Partial<TokenStreamLimits>;
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
  /**
   * `create` (default): a machine's `spawnAgent` creates the child. `ignore`: spawns are dropped,
   * nothing is created or reported; for runs that stand in for the children themselves (the
   * path-test runner records the spawns and delivers the children's reports with `report`).
   */
  childAgents?: 'create' | 'ignore';
  /** Metrics and traces hook in here. */
  observer?: RuntimeObserver;
  /**
   * What to prune, in the background, in small transactions (see `RetentionPolicy`; a machine's own
   * `retention` takes precedence for its agents). Unset: everything is kept.
   */
  retention?: RetentionPolicy;
  /** XState's `inspect` option for every agent actor, e.g. a Stately inspector's (see observability/inspector.ts). */
  inspect?: (event: InspectionEvent) => void;
  /**
   * How held writes are retried while the store takes none (disk full, file gone, database out of
   * reach): exponential backoff with jitter from `baseDelayMs` (default 250) up to `maxDelayMs`
   * (default 8,000); `seed` pins the jitter (tests). See docs/guarantees.md.
   */
  storeRetry?: StoreRetryOptions;
  /**
   * Serve what is stored and run nothing: no recovery, no lease, no wakeups, no pruning; views,
   * lists, history and streams read the store, and spawn, send, stop, fork and report throw a
   * `ReadOnlyStoreError`. Default: the store's own `readOnly` (a store opened read-only forces it).
   */
  readOnly?: boolean;
  /**
   * The gate in front of the LLM, for every call of an actor a machine declares `llm`: calls in
   * flight at once (default 16; it adapts down on the provider's 429s and back up), requests and
   * tokens per minute (unset: no limit). `false`: no gate, calls go straight to the provider.
   */
  llmLimits?: { concurrency?: number; rpm?: number; tpm?: number } | false;
  /**
   * Events waiting in one agent's inbox, at most (default 1000): beyond it `send` throws an
   * `InboxFullError` (HTTP 429 with Retry-After) and stores nothing. An inbox that fills is an agent
   * that cannot keep up: its senders slow down instead of piling up work it will take hours to do.
   */
  maxInbox?: number;
  /**
   * Where the reference agent's tool calls wait under their tools' `concurrency` (default: the
   * process's own line, shared by every runtime in it). A test that plays two processes in one
   * gives each its own.
   */
  toolLimits?: ToolLimits;
}

/** The contract's `--max-inbox` default. */
export const DEFAULT_MAX_INBOX = 1000;

/** LLM calls in flight at once when `llmLimits` does not say (the contract's `--llm-concurrency` default). */
export const DEFAULT_LLM_CONCURRENCY = 16;

export type { ViewListener };

export interface WaitForOptions {
  /** Reject with a `WaitForError` after this long (default: Infinity, no timeout, as XState's `waitFor`). */
  timeoutMs?: number;
  /** Aborting it rejects the wait with a `WaitForError`. */
  signal?: AbortSignal;
}

/**
 * `runtime.waitFor` gave up: timed out, the agent ended without the condition holding (`view` is
 * its last view), the wait was aborted, or the runtime closed.
 */
export class WaitForError extends AgentsError {
  readonly code = 'wait_failed';
  constructor(
    readonly agentId: string,
    readonly reason: string,
    readonly view?: AgentView,
  ) {
    super(`Waiting for agent "${truncate(agentId, 128)}": ${reason}.`);
  }
}

/**
 * The runtime's API: commands (spawn, send, stop, fork), queries (views, history, machines) and
 * watching. The work is done by its parts: `LiveAgents` (the agents in memory, restore, passivation,
 * failure policy), `Watchers` (views after commits, here or in other processes), ownership (leases
 * and adoption on a shared store: `createOwnership`), and the `GroupCommitter` every write goes
 * through.
 *
 * @example
 * const runtime = await createRuntime({ store: await openSqliteStore('./data/agents.db'), machines: [agentDefinition({ llm })] });
 * await runtime.spawn('agent', { id: 'a1', input: { tasks: ['Summarize …'] } });
 * await runtime.send('a1', { type: 'task.add', task: 'Extract entities …' });
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const runtime = new Runtime(options);
  if (runtime.readOnly) return runtime; // restores nothing: the agents are another process's, or no one's
  // On a shared store, recovery is taking the lease and adopting the agents no live process runs.
  if (runtime.leaseKeeper) await runtime.startLeases();
  else if (options.recover !== false) await runtime.recover();
  return runtime;
}

export class Runtime {
  readonly store: Store;
  readonly log: Logger;
  readonly machines: ReadonlyMap<string, RegisteredMachine>;
  /** Present on a store shared by many processes: this process runs only the agents it holds. */
  readonly leaseKeeper: LeaseKeeper | undefined;
  private readonly committer: GroupCommitter;
  private readonly watchers: Watchers;
  /** The text of LLM calls as it is generated, for streams (and, on a shared store, for other processes' streams). */
  readonly tokens: TokenStreams;
  private readonly live: LiveAgents;
  private readonly observer: RuntimeObserver;
  private readonly skipResting: boolean;
  private closing = false;
  /** Each pending `waitFor`'s rejection at close. */
  private readonly waits = new Set<() => void>();
  private openFeeds = 0;
  private readonly wakeups: Wakeups | undefined;
  private readonly pruner: Pruner | undefined;
  /** Checks about every second that the store still takes writes (store-health.ts). */
  private readonly storeProbe: StoreProbe;
  /** Runs nothing and takes no command (`RuntimeOptions.readOnly`). */
  readonly readOnly: boolean;
  /** The gate in front of the LLM for every agent here (none with `llmLimits: false`). */
  readonly llmGate: LlmGate | undefined;
  /** Where tool calls wait under their tools' `concurrency` (this process's, shared by its runtimes). */
  readonly toolLimits: ToolLimits;
  private readonly maxInbox: number;

  constructor(options: RuntimeOptions) {
    const { store } = options;
    this.toolLimits = options.toolLimits ?? toolLimits;
    this.store = store;
    if (store.readOnly && options.readOnly === false) throw new InvalidInputError('The store was opened read-only: a runtime on it cannot run agents.');
    this.readOnly = options.readOnly ?? store.readOnly === true;
    this.log = options.logger ?? silentLogger;
    this.observer = options.observer ?? {};
    const names = options.machines.map((def) => def.name);
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) throw new InvalidInputError(`Two machines are named "${twice}": each machine given to createRuntime needs a name of its own.`);
    this.machines = new Map(options.machines.map((def) => [def.name, registerMachine(def)]));
    for (const m of this.machines.values()) for (const w of m.lintWarnings) this.log.warn({ machine: m.name, path: w.path, code: w.code }, w.message);
    this.maxInbox = options.maxInbox ?? DEFAULT_MAX_INBOX;
    const limits = options.llmLimits ?? {};
    this.llmGate = limits === false ? undefined : new LlmGate({ ...limits, concurrency: limits.concurrency ?? DEFAULT_LLM_CONCURRENCY });
    const health = new StoreHealth(this.log, options.storeRetry);
    health.onChange = () => {
      const readiness = health.readiness();
      this.observe('storeAvailability', readiness.ready ? { ready: true } : { ready: false, reason: readiness.reason });
    };
    this.committer = new GroupCommitter(store, health);
    this.committer.onBatch = (size, ms) => this.observe('batchCommitted', { size, ms });
    this.committer.onHeld = (writes) => this.observe('writesHeld', { writes });
    this.committer.onRetry = (outcome) => this.observe('heldWritesRetried', { outcome });
    this.storeProbe = new StoreProbe(store, health, () => this.committer.holding, this.log);
    // Not for a store opened read-only: it says so itself (storeReadiness).
    if (!this.readOnly) void this.storeProbe.start();
    this.watchers = new Watchers(store, this.log);
    this.tokens = new TokenStreams(this.log, store.leases?.relay, options.tokenLimits);
    this.skipResting = options.passivateAfterMs !== undefined;
    const inspect = options.inspect;
    const leases = store.leases;
    this.live = new LiveAgents({
      store,
      machines: this.machines,
      committer: this.committer,
      watchers: this.watchers,
      tokens: this.tokens,
      log: this.log,
      observe: this.observe,
      // XState calls it inside the agent's transition: a throw there would put the agent in error.
      inspect: inspect && ((event) => this.guarded('inspect', () => inspect(event))),
      // On a shared store, only when no other live process runs it (it is then this process's).
      load: (agentId) => (leases ? leases.claim(agentId) : store.loadRestorable(agentId)),
      reloadDelayMs: options.reloadDelayMs ?? 1000,
      passivateAfterMs: options.passivateAfterMs,
      ignoreSpawns: options.childAgents === 'ignore',
      llmGate: this.llmGate,
      llmSlots: store.llmSlots,
      toolLimits: this.toolLimits,
      toolSlots: store.toolSlots,
    });
    this.leaseKeeper =
      leases && !this.readOnly
        ? createOwnership({ leases, store, live: this.live, watchers: this.watchers, log: this.log, observe: this.observe, skipResting: this.skipResting })
        : undefined;
    // Agents not in memory (passivated, left on disk, orphaned elsewhere) are woken for their delays.
    if (!this.readOnly && (this.skipResting || this.leaseKeeper)) {
      this.wakeups = new Wakeups(store, (id) => this.live.holds(id), (id) => this.live.wake(id), this.log, options.wakeups);
      this.wakeups.start();
    }
    this.observe('machinesRegistered', [...this.machines.values()]);
    const retention = options.retention;
    const machineRetention = (name: string) => this.machines.get(name)?.retention;
    if (!this.readOnly && (retention || [...this.machines.values()].some((m) => m.retention))) {
      this.pruner = new Pruner(store, retention ?? {}, machineRetention, (id) => this.live.holds(id), this.log, (totals) => this.observe('pruned', totals));
      this.pruner.start();
    }
  }

  /** Runs the retention policy once now (it also runs on its timer); nothing without a policy. */
  async prune(now?: number): Promise<void> {
    this.assertWritable('prune');
    await this.pruner?.runOnce(now);
  }

  get liveAgents(): number {
    return this.live.size;
  }

  // --- commands ---------------------------------------------------------------------------------

  /** Creates an agent; the same id again with the same machine returns the existing one. */
  async spawn(machineName: string, options: { id?: string; input?: unknown } = {}): Promise<{ view: AgentView; created: boolean }> {
    this.assertWritable('spawn an agent');
    this.committer.assertAccepting();
    const machine = this.machine(machineName);
    const id = options.id ?? generateId();
    assertValidId(id);
    const input = validateInput(machine, options.input ?? {});
    const { agent, created } = await this.store
      .createAgent({
        id,
        machine: machine.name,
        machineVersion: machine.version,
        input,
        createdAt: new Date().toISOString(),
      })
      .catch((err: unknown) => this.committer.requestFailed(err));
    if (agent.machine !== machine.name) {
      throw new ConflictError(`Agent "${id}" already exists with machine "${agent.machine}".`);
    }
    if (created) {
      const host = await this.live.activate({ ...agent, input }, undefined);
      // Its row is committed, so it is acknowledged: a first checkpoint held while the store takes
      // no writes commits later (or, after a crash, the agent starts afresh from its row).
      if (host) await Promise.race([host.settled(), this.committer.whenHolding()]);
    }
    return { view: created ? await this.ownView(id) : await this.view(id), created };
  }

  /** Commits an event to the agent's inbox; the agent processes its inbox in order, each event once. */
  async send(agentId: string, event: InboxEvent, idempotencyKey?: string): Promise<{ seq: number; duplicate: boolean }> {
    this.assertWritable('send to an agent');
    const host = this.live.get(agentId);
    const row = host ? undefined : await this.takingEvents(agentId);
    const machine = host?.machine ?? this.machine(row!.machine);
    const checked = validateEvent(machine, event);
    this.assertInboxRoom(agentId, host, row, machine);
    const refuse = machine.refuse?.[checked.type];
    if (refuse) {
      const view = await this.ownView(agentId);
      const refusal = view.status === 'active' ? refuse(checked, { state: view.state, context: view.context }) : undefined;
      if (refusal) throw new ConflictError(refusal);
    }
    // Through the group committer: under load, many requests' events share one transaction (one fsync).
    const result = (await this.committer
      .enqueue({
        kind: 'event',
        agentId,
        event: checked,
        idempotencyKey: idempotencyKey ?? null,
        // Kept with the key: the same key again with another body is refused, not taken for a retry.
        ...(idempotencyKey === undefined ? {} : { bodyHash: eventBodyHash(checked) }),
        at: new Date().toISOString(),
      })
      .catch((err: unknown) => this.refusedEvent(agentId, err))) as { seq: number; duplicate: boolean };
    if (!result.duplicate) await this.live.handOver(agentId, result.seq, checked, idempotencyKey ?? null);
    return result;
  }

  /**
   * The row of an agent not in memory, when it takes events. One in error does not
   * (AgentInErrorError). An active one is brought into memory first (its event's hand-over would
   * wake it anyway): if its stored state cannot be used it is quarantined now, and the event is
   * refused rather than stranded in an inbox nobody will read.
   */
  private async takingEvents(agentId: string): Promise<AgentRecord> {
    let agent = await this.agentOrThrow(agentId);
    if (agent.status === 'active' && !(await this.live.wake(agentId))) agent = await this.agentOrThrow(agentId);
    if (agent.status === 'error') throw new AgentInErrorError(agentId, agentErrorView(agent.error));
    return agent;
  }

  /** An event the store refused: for an agent that went into error meanwhile, says so (409 agent_in_error). */
  private async refusedEvent(agentId: string, err: unknown): Promise<never> {
    if (err instanceof ConflictError) {
      const agent = await this.store.getAgent(agentId);
      if (agent?.status === 'error') throw new AgentInErrorError(agentId, agentErrorView(agent.error));
    }
    throw err;
  }

  /**
   * Refuses an event to an agent that has `maxInbox` waiting: events in its inbox (stored and not
   * consumed, or handed over and not delivered) and the work its machine says it accepted and has
   * not done (`backlog`). Checked before the commit, so concurrent sends may pass it by a few.
   */
  private assertInboxRoom(agentId: string, host: AgentHost | undefined, row: AgentRecord | undefined, machine: RegisteredMachine): void {
    let waiting: number;
    if (host) {
      // The actor's own context, ahead of its last commit: the events handed to it are in it.
      waiting = host.waitingEvents + (machine.backlog ? machine.backlog(host.actor.getSnapshot().context) : 0);
    } else {
      waiting = row!.eventSeq - row!.inboxPosition;
    }
    if (waiting >= this.maxInbox) throw new InboxFullError(agentId, waiting, this.maxInbox);
  }

  /**
   * Puts a child agent's report into its parent's inbox, under the key the runtime files it under
   * (`reportKey`: a repeated one is a duplicate), and delivers it, as a child's own report is. For
   * what stands in for a child (path tests, a child run outside this runtime); never reachable over
   * HTTP, where these types are refused.
   */
  async report(parentId: string, report: ChildEvent): Promise<{ seq: number; duplicate: boolean }> {
    this.assertWritable('report to an agent');
    return (await this.live.sendEvent(parentId, report, reportKey(report), 'request')) as { seq: number; duplicate: boolean };
  }

  /**
   * Stops an active agent for good (its last checkpoint stays), and its active child agents with it,
   * theirs too; other statuses are left as they are. A child stopped on its own is reported to its
   * parent (`agent.failed`, code `stopped`).
   */
  async stop(agentId: string): Promise<void> {
    this.assertWritable('stop an agent');
    // Before letting go of it here: a stop the store cannot record would leave it running nowhere.
    this.committer.assertAccepting();
    const agent = await this.agentOrThrow(agentId);
    this.unloadHere(agentId);
    if (agent.status === 'active') await this.live.writeStatus(agentId, 'stopped', null, agent.parent ?? undefined);
    // A level at a time, each read once the level above is stopped: a stopped agent's checkpoints are
    // refused from then on (in any process), so none of them can spawn a child this read misses.
    const seen = new Set([agentId]);
    for (let level = [agentId]; level.length > 0; ) {
      const children = (await Promise.all(level.map((id) => this.activeChildren(id)))).flat().filter((id) => !seen.has(id));
      for (const id of children) seen.add(id), this.unloadHere(id);
      await Promise.all(children.map((id) => this.live.writeStatus(id, 'stopped', null)));
      level = children;
    }
  }

  private unloadHere(agentId: string): void {
    const host = this.live.get(agentId);
    if (host) this.live.unload(host);
  }

  private async activeChildren(parent: string): Promise<string[]> {
    const found: string[] = [];
    for (let cursor: string | undefined; ; ) {
      const page = await this.store.listAgents({ parent, status: 'active', limit: 1000, ...(cursor ? { cursor } : {}) });
      found.push(...page.items.map((a) => a.id));
      if (!page.nextCursor) return found;
      cursor = page.nextCursor;
    }
  }

  /** A new agent restored from one checkpoint of another, started. */
  async fork(agentId: string, seq: number, newId: string = generateId()): Promise<AgentView> {
    this.assertWritable('fork an agent');
    this.committer.assertAccepting();
    assertValidId(newId);
    const source = await this.agentOrThrow(agentId);
    const checkpoint = await this.store.getCheckpoint(agentId, seq);
    if (!checkpoint) throw this.missingCheckpoint(source, seq);
    if (checkpoint.unreadable !== undefined) throw new CorruptStateError(agentId, `checkpoint ${seq} cannot be read: ${checkpoint.unreadable}.`);
    const { unreadable: _unreadable, ...whole } = checkpoint;
    const { agent, created } = await this.store
      .createAgent({
        id: newId,
        machine: source.machine,
        machineVersion: checkpoint.machineVersion,
        input: await this.store.getInput(agentId),
        createdAt: new Date().toISOString(),
        snapshot: { ...whole, status: checkpoint.status === 'done' ? 'done' : 'active' },
      })
      .catch((err: unknown) => this.committer.requestFailed(err));
    if (!created) throw new ConflictError(`An agent with id "${newId}" already exists.`);
    if (agent.status === 'active') {
      // A source in error never takes the events it acknowledged and had not read: the fork does.
      const carried = source.status === 'error' ? await this.carryInbox(source, newId) : 0;
      await this.live.activate({ ...agent, eventSeq: carried }, { ...checkpoint, agentId: newId, seq: 1 });
    }
    return this.ownView(newId); // a new agent: no children
  }

  /**
   * Copies the events an agent accepted and never read (after its inbox position) into a new
   * fork's inbox, in order and under their keys (a sender retrying against the fork is answered
   * as a duplicate), in one batch; their number. The source keeps them: each fork gets them.
   */
  private async carryInbox(source: AgentRecord, forkId: string): Promise<number> {
    const unread = await this.store.eventsAfter(source.id, source.inboxPosition);
    const at = new Date().toISOString();
    // Enqueued in one turn: one batch, one transaction.
    await Promise.all(
      unread.map(({ event, idempotencyKey }) =>
        this.committer.enqueue({ kind: 'event', agentId: forkId, event, idempotencyKey, ...(idempotencyKey === null ? {} : { bodyHash: eventBodyHash(event) }), at }),
      ),
    );
    return unread.length;
  }

  // --- queries ----------------------------------------------------------------------------------

  /**
   * The agent's view, with the ids of the agents it spawned (the first 1,000). `row`: its stored row,
   * when the caller holds it already (it is not read again).
   */
  async view(agentId: string, row?: AgentRecord): Promise<AgentView> {
    this.assertOpen('view an agent');
    const [view, children] = await Promise.all([row ? this.viewOf(row) : this.ownView(agentId), this.store.listAgents({ parent: agentId, limit: 1000 })]);
    return {
      ...view,
      ...(children.items.length > 0 ? { children: children.items.map((c) => c.id) } : {}),
      ...(this.llmGate?.isWaiting(agentId) ? { waiting: 'llm_capacity' as const } : this.toolLimits.isWaiting(agentId) ? { waiting: 'tool_capacity' as const } : {}),
    };
  }

  /** The view without its children (a new agent has none: spawning does not ask). */
  private async ownView(agentId: string): Promise<AgentView> {
    return (await this.live.currentView(agentId)).view;
  }

  /** The view of an agent whose row the caller already holds: only an agent not in memory needs its checkpoint read. */
  async viewOf(agent: AgentRecord): Promise<AgentView> {
    this.assertOpen('view an agent');
    const host = this.live.get(agent.id);
    return (host && liveView(host)) ?? storedView(this.store, agent);
  }

  /**
   * One page of agents, oldest first: summaries, from their rows alone (no checkpoint is read); with
   * `include: 'context'`, whole views (each agent not in memory has its last checkpoint read).
   */
  list(query: AgentQuery): Promise<Page<AgentSummary>>;
  list(query: AgentQuery, options: { include: 'context' }): Promise<Page<AgentView>>;
  list(query: AgentQuery, options?: { include?: 'context' }): Promise<Page<AgentSummary | AgentView>>;
  async list(query: AgentQuery, options: { include?: 'context' } = {}): Promise<Page<AgentSummary | AgentView>> {
    this.assertOpen('list agents');
    const page = await this.store.listAgents(query);
    if (options.include !== 'context') return { items: page.items.map(toAgentSummary), nextCursor: page.nextCursor };
    const items = await Promise.all(page.items.map((agent) => this.viewOf(agent)));
    return { items, nextCursor: page.nextCursor };
  }

  /** One page of stored agent rows, no checkpoint read: for a list that shows only row fields (the dashboard's). */
  async agents(query: AgentQuery): Promise<Page<AgentRecord>> {
    this.assertOpen('list agents');
    return this.store.listAgents(query);
  }

  /**
   * The agents of one registered definition, typed by its machine (typed-agents.ts): `spawn`,
   * `send`, `view` and `waitFor` as here, with the machine's events, context and input, refusing
   * an agent of another machine. Keeps its types when the definition does (`{ … } satisfies
   * MachineDefinition`). Not named `agents`: that is the row listing above.
   *
   * @example
   * const counters = runtime.agentsOf(counterDefinition);
   * await counters.send('c1', { type: 'inc' }); // { type: 'nope' } does not compile
   * const count: number = (await counters.view('c1')).context.count;
   */
  agentsOf<TDefinition extends MachineDefinition>(definition: TDefinition): MachineAgents<TDefinition['machine'], SpawnInputOf<TDefinition>> {
    return new MachineAgents(this, definition);
  }

  /** The agent's stored row; NotFoundError (`agent`) if there is none. */
  async agentOrThrow(agentId: string): Promise<AgentRecord> {
    this.assertOpen('read an agent');
    const agent = await this.store.getAgent(agentId);
    if (!agent) throw new NotFoundError('agent', agentId);
    return agent;
  }

  /** The agent's checkpoints, oldest first (with `newest: n`, the last n); NotFoundError for an unknown agent. */
  async checkpoints(agentId: string, options: HistoryOptions = {}): Promise<CheckpointSummary[]> {
    this.assertOpen('read checkpoints');
    const checkpoints = await this.store.listCheckpoints(agentId, options);
    if (checkpoints.length === 0) await this.agentOrThrow(agentId); // an unknown agent is an error, not an empty list
    return checkpoints;
  }

  /** One checkpoint whole, its snapshot parsed; NotFoundError for an unknown agent or seq, CorruptStateError for a damaged snapshot. */
  async checkpoint(agentId: string, seq: number): Promise<Omit<CheckpointRecord, 'snapshot'> & { snapshot: Record<string, unknown> }> {
    this.assertOpen('read a checkpoint');
    const checkpoint = await this.store.getCheckpoint(agentId, seq);
    if (!checkpoint) throw this.missingCheckpoint(await this.agentOrThrow(agentId), seq);
    if (checkpoint.unreadable !== undefined) throw new CorruptStateError(agentId, `checkpoint ${seq} cannot be read: ${checkpoint.unreadable}.`);
    const snapshot = parseJsonObject(checkpoint.snapshot);
    if (!snapshot) throw new CorruptStateError(agentId, `checkpoint ${seq} does not hold a JSON snapshot object.`);
    return { ...checkpoint, snapshot };
  }

  /** Checkpoints before this seq were pruned by the retention policy (0: none); NotFoundError for an unknown agent. */
  async prunedBefore(agentId: string): Promise<number> {
    this.assertOpen('read an agent');
    return (await this.agentOrThrow(agentId)).prunedBefore;
  }

  private missingCheckpoint(agent: AgentRecord, seq: number): Error {
    return seq < agent.prunedBefore ? new PrunedError(agent.id, seq, agent.prunedBefore) : new NotFoundError('checkpoint', `${agent.id}@${seq}`);
  }

  /** The agent's action log, oldest first (with `newest: n`, the last n); NotFoundError for an unknown agent. */
  async actions(agentId: string, options: HistoryOptions = {}): Promise<ActionRecord[]> {
    this.assertOpen('read the action log');
    const actions = await this.store.listActions(agentId, options);
    if (actions.length === 0) await this.agentOrThrow(agentId);
    return actions;
  }

  /** The registered machine of that name; NotFoundError (`machine`) if there is none. */
  machine(name: string): RegisteredMachine {
    const machine = this.machines.get(name);
    if (!machine) throw new NotFoundError('machine', name);
    return machine;
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
    return acceptedEventTypes(machine, snapshot);
  }

  /** Figures for gauges: agents by status (store), live agents by top-level state, inbox depth. */
  async stats(): Promise<{ agentsByStatus: Record<string, number>; liveByState: Record<string, number>; inboxDepth: number; live: number }> {
    this.assertOpen('read stats');
    const { agentsByStatus, inboxDepth } = await this.store.stats();
    const liveByState: Record<string, number> = {};
    for (const host of this.live.all()) {
      const state = topLevelState(host.latest?.state);
      liveByState[state] = (liveByState[state] ?? 0) + 1;
    }
    return { agentsByStatus, liveByState, inboxDepth, live: this.live.size };
  }

  /** What the store takes on disk: read by the metrics at each scrape, not by `stats` (every dashboard page reads that). */
  async storeBytes(): Promise<number> {
    this.assertOpen('read the size of the store');
    return this.store.sizeBytes();
  }

  /**
   * Opens what one client of `GET /agents/:id/stream` receives: snapshots, tokens and restarts, from
   * `from` (a position an earlier event's id named) or from now. Throws NotFoundError for an unknown agent.
   */
  async openEventFeed(agentId: string, from: StreamPosition | undefined, emit: (event: AgentEvent) => void): Promise<AgentEventFeed> {
    this.assertOpen('stream an agent');
    const sources: AgentEventSources = {
      store: this.store,
      tokens: this.tokens,
      current: (id) => this.live.currentView(id),
      watch: (id, listener) => this.watchers.watch(id, listener),
      runsElsewhere: (id) => this.leaseKeeper !== undefined && !this.live.holds(id),
    };
    const feed = await AgentEventFeed.open(sources, agentId, from, emit);
    this.openFeeds++;
    void feed.closed.then(() => this.openFeeds--);
    return feed;
  }

  /** Open event feeds (stream clients) and the streamed text kept for them: for gauges. */
  streams(): { clients: number; heldChars: number } {
    return { clients: this.openFeeds, heldChars: this.tokens.heldChars };
  }

  /** Calls `listener` with the agent's view after each committed transition; returns the unsubscribe. */
  watch(agentId: string, listener: ViewListener): () => void {
    this.assertOpen('watch an agent');
    return this.watchers.watch(agentId, listener);
  }

  /**
   * Resolves with the agent's view as soon as `predicate(view)` holds, as XState's `waitFor` does:
   * on its current view first (an agent already there, e.g. one that finished before this process
   * started, resolves at once), then on the view after each committed transition (here, or in another
   * process on a shared store). Rejects with a `WaitForError` when `timeoutMs` passes (default: no
   * timeout, XState's `Infinity`), when the agent ends (done, error or stopped) in a view the
   * predicate refuses, when `signal` aborts, or when the runtime closes; with NotFoundError for an
   * unknown agent. The views are those `watch` shows (no `children`); a predicate that throws rejects.
   *
   * @example
   * const view = await runtime.waitFor('a1', (v) => v.state === 'idle' && v.progress >= 2, { timeoutMs: 60_000 });
   */
  waitFor(agentId: string, predicate: (view: AgentView) => boolean, options: WaitForOptions = {}): Promise<AgentView> {
    const { timeoutMs = Infinity, signal } = options;
    return new Promise<AgentView>((resolve, reject) => {
      if (this.closing) return reject(new RuntimeClosedError(`wait for agent "${truncate(agentId, 128)}"`));
      if (signal?.aborted) return reject(new WaitForError(agentId, 'the wait was aborted'));
      /** The seq of the newest view looked at. */
      let seen = -1;
      let ended = false;
      const end = (outcome: () => void) => {
        if (ended) return;
        ended = true;
        unwatch();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waits.delete(onClose);
        outcome();
      };
      // A watcher's view is never older than the one before it (a stop keeps the seq); the current view,
      // read while commits go on, is looked at only if no watcher showed one as new.
      const look = (view: AgentView, seq: number, current = false) => {
        if (ended || seq < seen || (current && seq === seen)) return;
        seen = seq;
        let holds: boolean;
        try {
          holds = predicate(view);
        } catch (err) {
          return end(() => reject(err));
        }
        if (holds) end(() => resolve(view));
        else if (view.status !== 'active') end(() => reject(new WaitForError(agentId, `the agent ended (status "${view.status}") without the condition holding`, view)));
      };
      const onAbort = () => end(() => reject(new WaitForError(agentId, 'the wait was aborted')));
      const onClose = () => end(() => reject(new WaitForError(agentId, 'the runtime closed')));
      // Watch before reading the current view: a commit in between is seen by the watcher.
      const unwatch = this.watchers.watch(agentId, look);
      const timer =
        Number.isFinite(timeoutMs) && timeoutMs >= 0
          ? setTimeout(() => end(() => reject(new WaitForError(agentId, `the condition did not hold within ${timeoutMs} ms`))), timeoutMs)
          : undefined;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waits.add(onClose);
      this.live.currentView(agentId).then(
        ({ view, seq }) => look(view, seq, true),
        (err: unknown) => end(() => reject(err)),
      );
    });
  }

  // --- life cycle -------------------------------------------------------------------------------

  /** Restores every active agent from its last checkpoint and resumes it. */
  async recover(): Promise<{ restored: number; quarantined: number }> {
    this.assertWritable('recover agents');
    const counts = await this.live.adopt(await this.store.loadActiveAgents({ skipResting: this.skipResting }));
    if (counts.restored + counts.quarantined > 0) this.log.info(counts, 'recovered active agents');
    return counts;
  }

  /** Takes this process's lease on the shared store and adopts every agent no live process runs. */
  async startLeases(): Promise<void> {
    this.assertWritable('take the lease');
    const adopted = await this.leaseKeeper!.start();
    this.log.info({ processId: this.store.leases!.processId, adopted }, 'lease taken; adopted the agents no live process ran');
  }

  /** Stops every actor (in-flight calls are aborted and re-run after restart), commits what is queued, closes the store. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const reject of [...this.waits]) reject();
    await this.pruner?.stop();
    await this.wakeups?.stop();
    await this.leaseKeeper?.stop();
    await this.storeProbe.stop();
    this.live.close();
    this.llmGate?.close();
    this.tokens.close();
    // Writes still held (the store takes none) are given up: their agents restore from what is committed.
    this.committer.close();
    await this.committer.drain();
    // Committed what it had: its agents may go to another process at once, without waiting for the lease.
    await this.leaseKeeper?.resign().catch((err: unknown) => this.log.warn({ err }, 'could not end the lease; it will run out'));
    await this.store.close();
  }

  /**
   * Every command and query after \`close()\` (or during it) throws a \`RuntimeClosedError\` (in an
   * async method: rejects) rather than reaching a closed store.
   */
  private assertOpen(operation: string): void {
    if (this.closing) throw new RuntimeClosedError(operation);
  }

  /** A command: the runtime must be open, and not read-only. */
  private assertWritable(operation: string): void {
    this.assertOpen(operation);
    if (this.readOnly) throw new ReadOnlyStoreError(operation);
  }

  /**
   * Whether the store takes writes (`GET /readyz`): ready, or why not and when to try again, with
   * the agents' writes held meanwhile. A store opened read-only is never ready to take writes.
   */
  storeReadiness(): StoreReadiness & { heldWrites: number } {
    const heldWrites = this.committer.heldWrites;
    if (this.readOnly) {
      return { ready: false, reason: 'read_only', message: 'This process opened the store read-only.', since: '', attempts: 0, retryAfterSeconds: 60, heldWrites };
    }
    return { ...this.committer.health.readiness(), heldWrites };
  }

  /** Observers are called on the agents' path: one that throws is logged and ignored. */
  private readonly observe: Observe = (what, event) => {
    const call = this.observer[what] as ((e: typeof event) => void) | undefined;
    if (call) this.guarded(what, () => call.call(this.observer, event));
  };

  private guarded(what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.log.warn({ err, observer: what }, 'runtime observer threw; ignored');
    }
  }
}
