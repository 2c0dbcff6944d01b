/**
 * Makes any flat XState machine durable without changing it:
 *
 * - its `transition` and `getInitialSnapshot` are wrapped, so every macrostep hands its new snapshot
 *   to the agent's host *before* XState runs the deferred effects. XState starts invoked children in
 *   `Actor.update()`, after `transition` returns and before subscribers are told, so a subscriber is
 *   too late to persist first; wrapping `transition` is the one hook that runs in between (the path
 *   tests' crash cases and test/runtime/persist-before-act.test.ts fail if this ordering breaks);
 * - every actor it invokes, by name or inline, is gated: its `start` waits until the checkpoint in
 *   which it was invoked is committed. "Persist, then act" therefore holds for every store and every
 *   machine, and many agents' checkpoints can share one transaction (group commit);
 * - what XState would run in the same list as those starts (the initial state's custom actions, a
 *   child's stop, events sent to a child not started yet) keeps its place in that list, so a chart
 *   runs its actions in XState's order (test/conformance/ compares them with plain XState's).
 */
import {
  createActor,
  fromPromise,
  type Actor,
  type ActorOptions,
  type AnyActorLogic,
  type AnyActorRef,
  type AnyActorScope,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type Snapshot,
} from 'xstate';
import { agentOfSystem, registerAgentSystem, type DurableAgentHandle } from '../durable/current-agent.js';

/** What a durable machine reports to, one per live agent. */
export interface TransitionSink extends DurableAgentHandle {
  /**
   * A macrostep produced a new snapshot; `persisted` is `getPersistedSnapshot(next)`. Called inside
   * `transition`: what it throws (a context JSON cannot hold) puts this one actor in error, which
   * its host reports and isolates, instead of storing something that cannot be restored.
   */
  onTransition(previous: AnyMachineSnapshot | undefined, next: AnyMachineSnapshot, event: AnyEventObject, persisted: unknown): void;
  /** An event changed nothing (XState returns the same snapshot object). */
  onIgnored(event: AnyEventObject): void;
  /**
   * Runs `start` once the checkpoint whose transition invoked `child` is committed: at once when it
   * is, else after the commit together with what else that checkpoint's effects deferred (see
   * `runAfterCommit`); never if the commit fails (the host goes down and restores from the store).
   * `quiet`: its start sends the agent nothing (a promise settles later), so it needs no macrostep.
   */
  startAfterCommit(child: AnyActorRef, input: unknown, start: () => void, quiet: boolean): void;
  /**
   * Runs `run` once the newest checkpoint is committed, in order with the actor starts it waits
   * with. They all run inside one macrostep of the agent (an event `AFTER_COMMIT_EVENT` that changes
   * nothing and defers them): what they send the agent waits until they have all run, as it does
   * when XState runs a macrostep's deferred effects.
   */
  runAfterCommit(run: () => void): void;
  /** Runs `run` with the starts waiting for the newest checkpoint's commit, if some wait; else at once. */
  afterPendingStarts(run: () => void): void;
  /**
   * An event was sent to `child` before its start: the checkpoint of the transition that sent it
   * keeps it (with the agent's delays, due at once), so that a restore delivers it to the child
   * started again, as the child got it right after its start. Returns its id for `heldDelivered`.
   */
  heldForStart(child: AnyActorRef, event: AnyEventObject): string;
  /** The held event was delivered after the child's start: the next checkpoint no longer keeps it. */
  heldDelivered(heldId: string): void;
  /**
   * Runs an LLM call (an actor the machine declares `llm`) through the runtime's LLM gate: it waits
   * for capacity there, in the line by when this agent's step began, and is asked again when the
   * provider refuses it for its rate (see src/llm/flow/).
   */
  throughLlmGate<T>(input: unknown, signal: AbortSignal, call: () => Promise<T>): Promise<T>;
}

// createActor computes the initial snapshot inside its constructor, before we can register the sink
// under the new actor's system: this slot bridges that one synchronous call.
let constructing: TransitionSink | undefined;

function sinkOf(scope: AnyActorScope): TransitionSink | undefined {
  const found = agentOfSystem<TransitionSink>(scope.system);
  if (found || !constructing) return found;
  registerAgentSystem(scope.system, constructing);
  return constructing;
}

/** Creates the actor of a durable machine bound to its sink. */
export function createDurableActor<T extends AnyStateMachine>(
  logic: T,
  sink: TransitionSink,
  options: ActorOptions<T>,
): Actor<T> {
  constructing = sink;
  try {
    const actor = createActor(logic, options);
    registerAgentSystem(actor.system, sink);
    return actor;
  } finally {
    constructing = undefined;
  }
}

/**
 * Wraps a machine so its transitions are reported and its invoked actors start only after commit:
 * those registered by name (`setup({ actors })`) and those written inline in an invoke
 * (`src: fromPromise(...)`), which XState finds again by their place in the chart.
 */
export function makeDurable<T extends AnyStateMachine>(machine: T, llmActors: ReadonlySet<string> = new Set()): T {
  const actors = machine.implementations.actors as Record<string, AnyActorLogic>;
  const gated = Object.fromEntries(
    Object.entries(actors).map(([name, logic]) => [name, gateStart(llmActors.has(name) ? throughLlmGate(logic) : logic)]),
  );
  const withInline = withGatedInlineInvokes(machine);
  const base = withInline.provide({ actors: gated } as never) as T;

  return Object.assign(Object.create(Object.getPrototypeOf(base) as object) as T, base, {
    getInitialSnapshot(scope: AnyActorScope, input: unknown) {
      const sink = sinkOf(scope);
      if (sink) routeDeferredActions(scope, sink);
      initializing = sink ? scope : undefined;
      let snapshot: AnyMachineSnapshot;
      try {
        snapshot = base.getInitialSnapshot(scope as never, input as never) as AnyMachineSnapshot;
      } finally {
        initializing = undefined;
      }
      compactContext(snapshot);
      if (sink && snapshot.status !== 'error') {
        sink.onTransition(undefined, snapshot, { type: 'xstate.init' }, base.getPersistedSnapshot(snapshot));
      }
      return snapshot;
    },
    transition(snapshot: AnyMachineSnapshot, event: AnyEventObject, scope: AnyActorScope) {
      if (event.type === AFTER_COMMIT_EVENT) {
        // The effects that waited for a commit, as this macrostep's deferred effects: no transition.
        scope.defer((event as unknown as { run: () => void }).run);
        return snapshot;
      }
      const sink = sinkOf(scope);
      if (sink) routeDeferredActions(scope, sink);
      const next = base.transition(snapshot as never, event as never, scope as never) as AnyMachineSnapshot;
      // A stop is not a state of the agent: `actor.stop()` runs `transition` with `xstate.stop`, and a
      // persisted `stopped` snapshot restores as a dead actor.
      if (!sink || event.type === 'xstate.stop') return next;
      if (next === snapshot) sink.onIgnored(event);
      else sink.onTransition(snapshot, next, event, base.getPersistedSnapshot(assertNamedChildren(next)));
      return next;
    },
  });
}

/**
 * The snapshot, if every child in it names its logic. A child spawned with inline logic
 * (`spawn(fromPromise(…))` in `assign`, which the linter cannot see) has none: XState's development
 * build throws while persisting it, its production build writes the logic's definition, which
 * restores as a broken child. Either way the agent fails at this step, with this message.
 */
function assertNamedChildren(snapshot: AnyMachineSnapshot): AnyMachineSnapshot {
  const children = snapshot.children as Record<string, AnyActorRef | undefined>;
  for (const id in children) {
    if (typeof children[id]?.src !== 'string') {
      throw new Error(
        `The child "${id}" was spawned with inline logic, which a checkpoint cannot name: register the logic in setup({ actors }) and spawn it by name.`,
      );
    }
  }
  return snapshot;
}

/** The event that runs the effects that waited for a commit inside a macrostep of the agent (see `runAfterCommit`). */
export const AFTER_COMMIT_EVENT = 'runtime.afterCommit';

/**
 * The machine with every inline invoked logic gated. XState resolves an inline invoke's logic from
 * the state node's config (`xstate.invoke.<index>.<node id>` names it in snapshots and events), so
 * the gated logic goes into a copy of the config at the same place: the names, and so the
 * checkpoints, are those of the user's machine. Unchanged (the same object) when nothing is inline.
 */
function withGatedInlineInvokes<T extends AnyStateMachine>(machine: T): T {
  let changed = false;
  const copy = (node: StateNodeConfig): StateNodeConfig => {
    const next: StateNodeConfig = { ...node };
    if (node.invoke !== undefined) {
      const invokes = (Array.isArray(node.invoke) ? node.invoke : [node.invoke]) as { src?: unknown }[];
      const gatedInvokes = invokes.map((invoke) => {
        if (typeof invoke.src !== 'object' || invoke.src === null) return invoke;
        changed = true;
        return { ...invoke, src: gateStart(invoke.src as AnyActorLogic) };
      });
      next.invoke = Array.isArray(node.invoke) ? gatedInvokes : gatedInvokes[0];
    }
    if (node.states) next.states = Object.fromEntries(Object.entries(node.states).map(([key, child]) => [key, copy(child)]));
    return next;
  };
  const config = copy(machine.config as StateNodeConfig);
  if (!changed) return machine;
  const Machine = machine.constructor as new (config: unknown, implementations: unknown) => T;
  return new Machine(config, machine.implementations);
}

interface StateNodeConfig {
  invoke?: unknown;
  states?: Record<string, StateNodeConfig>;
  [key: string]: unknown;
}

interface ExecutableAction {
  type: string;
  info: unknown;
  params: unknown;
  exec?: (info: unknown, params: unknown) => void;
}

interface RoutedScope {
  actionExecutor: (action: ExecutableAction) => void;
  defer: (fn: () => void) => void;
}

/** The agent's scope while it computes its initial snapshot. */
let initializing: AnyActorScope | undefined;
const routedScopes = new WeakSet<object>();

/**
 * Keeps XState's order between the effects of one macrostep when some of them (actor starts) must
 * wait for the commit of its checkpoint, by routing the others that XState runs in the same list:
 *
 * - The initial state's custom actions. XState defers every action of the initial state to the
 *   actor's start, custom actions and actor starts alike, and runs them in the chart's order (an
 *   invoked actor may start before an entry action written after it). The custom actions wait with
 *   the starts. XState's own actions (`xstate.*`: scheduling a delay, sending, emitting) still run
 *   at the start, so what they add goes with the initial checkpoint. Custom actions change nothing a
 *   checkpoint holds (the runtime's rule: no effects in inline actions): running them after the
 *   commit stores nothing different.
 * - Stopping a child, when starts wait: the stop runs after them, as in XState's list.
 *
 * Installed once per agent, on its actor scope (XState's microsteps wrap the executor they find).
 */
function routeDeferredActions(scope: AnyActorScope, sink: TransitionSink): void {
  if (routedScopes.has(scope)) return;
  routedScopes.add(scope);
  const routed = scope as unknown as RoutedScope;
  const execute = routed.actionExecutor;
  routed.actionExecutor = (action) => {
    const exec = action.exec;
    if (!exec) return execute(action);
    if (action.type === 'xstate.stopChild') {
      return execute({
        ...action,
        exec: (info, params) => {
          const defer = routed.defer;
          routed.defer = (fn) => defer(() => sink.afterPendingStarts(fn));
          try {
            exec(info, params);
          } finally {
            routed.defer = defer;
          }
        },
      });
    }
    if (initializing === scope && !action.type.startsWith('xstate.')) {
      return execute({ ...action, exec: (info, params) => sink.runAfterCommit(() => exec(info, params)) });
    }
    execute(action);
  };
}

/**
 * XState builds the initial context by adding the factory's keys one by one to an empty object
 * (`Object.assign({}, {}, context)`), which V8 turns into a dictionary past a dozen keys: 1.6 KB
 * per idle agent for the reference agent's 25 keys, in memory for as long as the agent rests. A
 * copy made by spreading is a compact object with the same keys and values (by reference).
 * Before anything else holds the snapshot: nothing but XState has seen it yet.
 */
function compactContext(snapshot: AnyMachineSnapshot): void {
  const context: unknown = snapshot.context;
  if (context && typeof context === 'object' && !Array.isArray(context)) {
    (snapshot as { context: unknown }).context = { ...(context as Record<string, unknown>) };
  }
}

/**
 * An event the runtime sends a gated actor whose start threw: its logic then takes the error status,
 * and XState reports the failure to the agent as `xstate.error.actor.<id>`, as it does when a
 * start throws at once.
 */
const START_FAILED = 'runtime.actorStartFailed';

/** A gated actor not started yet: the events sent to it meanwhile, delivered once it starts. */
interface HeldStart {
  started: boolean;
  held: { event: AnyEventObject; id: string }[];
}

const heldStarts = new WeakMap<AnyActorRef, HeldStart>();

/**
 * The logic whose `start` waits for the commit of the checkpoint that invoked it. Until then XState
 * sees a started actor: what is sent to it (a `sendTo` in the entry of the very state that invokes
 * it) is held and delivered, in order, right after the real start, as XState delivers it right
 * after its start; a stop before the start stops it without starting it; a start that throws
 * fails the actor (the invoke's `onError`), as in XState, instead of escaping as a rejection.
 */
function gateStart(logic: AnyActorLogic): AnyActorLogic {
  const start = logic.start?.bind(logic);
  const transition = logic.transition.bind(logic);
  // Child *machines* keep their own state and invoke their own actors, which this gate cannot see: agents are flat.
  if (!start || 'root' in logic) return logic;
  const quiet = isPromiseLogic(logic);
  return {
    ...logic,
    start(state: { input?: unknown }, scope: AnyActorScope) {
      const sink = agentOfSystem<TransitionSink>(scope.system);
      if (!sink) return start(state as never, scope);
      const self = scope.self;
      const waiting: HeldStart = { started: false, held: [] };
      heldStarts.set(self, waiting);
      sink.startAfterCommit(self, state.input, () => {
        heldStarts.delete(self);
        if (self.getSnapshot().status !== 'active') return;
        waiting.started = true;
        try {
          start(state as never, scope);
        } catch (error) {
          self.send({ type: START_FAILED, error });
          return;
        }
        for (const { event, id } of waiting.held) {
          self.send(event);
          sink.heldDelivered(id);
        }
      }, quiet);
    },
    transition(state: Snapshot<unknown>, event: AnyEventObject, scope: AnyActorScope) {
      if (event.type === START_FAILED) return { ...state, status: 'error', error: (event as { error?: unknown }).error };
      const waiting = heldStarts.get(scope.self);
      if (waiting && !waiting.started) {
        if (event.type !== 'xstate.stop') {
          const sink = agentOfSystem<TransitionSink>(scope.system)!;
          waiting.held.push({ event, id: sink.heldForStart(scope.self, event) });
          return state;
        }
        heldStarts.delete(scope.self);
        return { ...state, status: 'stopped', error: undefined };
      }
      return transition(state as never, event as never, scope as never);
    },
  } as AnyActorLogic;
}

/**
 * An LLM actor's promise logic whose calls go through the runtime's LLM gate. Only promise logic:
 * its creator is the call, and asking again is calling it again (a callback or observable LLM actor
 * runs ungated).
 */
function throughLlmGate(logic: AnyActorLogic): AnyActorLogic {
  if (!isPromiseLogic(logic)) return logic;
  const create = (logic as unknown as { config: (args: PromiseCreatorArgs) => PromiseLike<unknown> }).config;
  return fromPromise<unknown, unknown>((args) => {
    const agent = agentOfSystem<TransitionSink>(args.system as object);
    const call = () => Promise.resolve(create(args as PromiseCreatorArgs));
    return agent ? agent.throughLlmGate(args.input, args.signal, call) : call();
  });
}

type PromiseCreatorArgs = Parameters<Parameters<typeof fromPromise>[0]>[0];

/** The source of XState's promise logic's `transition`: the same text for every `fromPromise(...)`. */
const PROMISE_TRANSITION = String(fromPromise(() => Promise.resolve()).transition);

/** XState's promise logic: its start calls the creator and returns; what it sends comes later, from the promise. */
function isPromiseLogic(logic: AnyActorLogic): boolean {
  return String(logic.transition) === PROMISE_TRANSITION;
}
