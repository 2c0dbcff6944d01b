/**
 * Makes any flat XState machine durable without changing it:
 *
 * - its `transition` and `getInitialSnapshot` are wrapped, so every macrostep hands its new snapshot
 *   to the agent's host *before* XState runs the deferred effects. XState starts invoked children in
 *   `Actor.update()`, after `transition` returns and before subscribers are told, so a subscriber is
 *   too late to persist first; wrapping `transition` is the one hook that runs in between (the path
 *   tests' crash cases and test/runtime/persist-before-act.test.ts fail if this ordering breaks);
 * - every actor it invokes by name is gated: its `start` waits until the checkpoint in which it was
 *   invoked is committed. "Persist, then act" therefore holds for every store and every machine,
 *   and many agents' checkpoints can share one transaction (group commit).
 */
import {
  createActor,
  type Actor,
  type ActorOptions,
  type AnyActorLogic,
  type AnyActorRef,
  type AnyActorScope,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
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
  /** Resolves when the invoking checkpoint is committed; rejects if it never will be. */
  gate(child: AnyActorRef, input: unknown): Promise<void>;
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

/** Wraps a machine so its transitions are reported and its invoked actors start only after commit. */
export function makeDurable<T extends AnyStateMachine>(machine: T): T {
  const actors = machine.implementations.actors as Record<string, AnyActorLogic>;
  const gated = Object.fromEntries(Object.entries(actors).map(([name, logic]) => [name, gateStart(logic)]));
  const base = machine.provide({ actors: gated } as never) as T;

  return Object.assign(Object.create(Object.getPrototypeOf(base) as object) as T, base, {
    getInitialSnapshot(scope: AnyActorScope, input: unknown) {
      const snapshot = base.getInitialSnapshot(scope as never, input as never) as AnyMachineSnapshot;
      compactContext(snapshot);
      const sink = sinkOf(scope);
      if (sink && snapshot.status !== 'error') {
        sink.onTransition(undefined, snapshot, { type: 'xstate.init' }, base.getPersistedSnapshot(snapshot));
      }
      return snapshot;
    },
    transition(snapshot: AnyMachineSnapshot, event: AnyEventObject, scope: AnyActorScope) {
      const next = base.transition(snapshot as never, event as never, scope as never) as AnyMachineSnapshot;
      const sink = sinkOf(scope);
      // A stop is not a state of the agent: `actor.stop()` runs `transition` with `xstate.stop`, and a
      // persisted `stopped` snapshot restores as a dead actor.
      if (!sink || event.type === 'xstate.stop') return next;
      if (next === snapshot) sink.onIgnored(event);
      else sink.onTransition(snapshot, next, event, base.getPersistedSnapshot(next));
      return next;
    },
  });
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

function gateStart(logic: AnyActorLogic): AnyActorLogic {
  const start = logic.start?.bind(logic);
  // Child *machines* keep their own state and invoke their own actors, which this gate cannot see: agents are flat.
  if (!start || 'root' in logic) return logic;
  return {
    ...logic,
    start(state: { input?: unknown }, scope: AnyActorScope) {
      const sink = agentOfSystem<TransitionSink>(scope.system);
      if (!sink) return start(state as never, scope);
      sink.gate(scope.self, state.input).then(
        () => {
          if (scope.self.getSnapshot().status === 'active') start(state as never, scope);
        },
        () => {
          // The checkpoint was not committed: the host is going down and will restore from the store.
        },
      );
    },
  } as AnyActorLogic;
}
