import { createActor, type AnyActorScope, type AnyMachineSnapshot, type AnyStateMachine, type EventObject } from 'xstate';
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import { awaitsCommit, COMMITTED_EVENT } from '../durable/commit-barrier.js';
import { parseAfter } from './delays.js';
import { jsonReplacer, parseSynthetic, type StateView } from './format.js';
import { isActive, viewOf } from './replay.js';

export interface TraversalOptions {
  input: unknown;
  /** The agent's id: what `self.id` is in the chart (a context or a child's id may be made of it). */
  agentId: string;
  /** User events, synthetic done/error and `after` events: each is tried in every state where it can happen. */
  events: readonly EventObject[];
  serializeState: (view: StateView) => string;
  /** Simple paths of at most this many events are added to the shortest paths (0: none). */
  simplePathDepth: number;
  /** Traversal budget (states dequeued) before giving up. */
  limit: number;
}

/** xstate/graph's adjacency map, keyed by serialized state and serialized event. */
type Adjacency = Record<string, { state: AnyMachineSnapshot; transitions: Record<string, { event: EventObject; state: AnyMachineSnapshot }> }>;

export type PathOrigin = 'shortest' | 'transition' | 'simple';

export interface EventSequence {
  events: EventObject[];
  /** Shortest path to a state, shortest path through a transition, or a bounded simple path. */
  origin: PathOrigin;
}

/** Serializes events for the graph: errors keep their fields, so two error samples stay two. */
export const serializeEvent = (event: EventObject): string => JSON.stringify(event, jsonReplacer);

/**
 * Shortest paths to every (projected) state; for every transition of the state graph, the shortest
 * path to its source followed by it (a transition back into an already-seen state, such as
 * `sideEffect → idle`, is on no shortest or simple path otherwise); and every simple path of at
 * most `simplePathDepth` events. Exact duplicates and paths that are a prefix of another are
 * removed: running the longer path checks every state of the shorter one.
 *
 * Simple paths come from a depth-bounded walk of xstate/graph's adjacency map rather than from
 * `getSimplePaths`, which enumerates every simple path of any length before one could filter them:
 * 2,803 paths in 1.1 s for the small `agent` chart, and exponential in general.
 */
export function generatePaths(chart: AnyStateMachine, options: TraversalOptions): EventSequence[] {
  const { machine, fromState } = asAgent(chart, options.agentId, options.input);
  const traversal = {
    input: options.input as never,
    fromState,
    events: (snapshot: AnyMachineSnapshot) => eventsIn(snapshot, options.events),
    serializeState: (snapshot: AnyMachineSnapshot) => options.serializeState(viewOf(snapshot)),
    serializeEvent: serializeEvent as never,
    limit: options.limit,
  };
  const shortestPaths = withLimitAdvice(() => getShortestPaths(machine, traversal as never));
  const shortest = shortestPaths.map((p): EventSequence => ({ events: p.steps.slice(1).map((s) => s.event as EventObject), origin: 'shortest' }));
  const adjacency = withLimitAdvice(() => getAdjacencyMap(machine, traversal as never)) as unknown as Adjacency;
  const shortestTo = new Map(shortestPaths.map((p, i) => [traversal.serializeState(p.state as AnyMachineSnapshot), shortest[i]!.events]));
  const transitions: EventSequence[] = [];
  for (const [key, node] of Object.entries(adjacency)) {
    const prefix = shortestTo.get(key);
    if (!prefix) continue;
    for (const { event, state } of Object.values(node.transitions)) {
      if (traversal.serializeState(state) !== key) transitions.push({ events: [...prefix, event], origin: 'transition' });
    }
  }
  const simple =
    options.simplePathDepth > 0
      ? boundedSimplePaths(adjacency, traversal.serializeState, options.simplePathDepth).map((events): EventSequence => ({ events, origin: 'simple' }))
      : [];
  const finishBarrier = finishAtBarrier(adjacency, traversal.serializeState);
  return withoutPrefixes([...shortest, ...transitions, ...simple].map(finishBarrier));
}

/**
 * The chart as xstate/graph will drive it, but run as the agent: xstate/graph makes its snapshots
 * with an anonymous actor as `self`, and a chart may name things after its own id (a child agent's
 * id, kept in context, that a guard then compares with a report's `agentId`). The actor stands in
 * for the agent and is never started; like xstate/graph's own, the scope runs no effect.
 */
function asAgent(chart: AnyStateMachine, agentId: string, input: unknown): { machine: AnyStateMachine; fromState: AnyMachineSnapshot } {
  const self = createActor(chart, { id: agentId, input: input as never });
  const scope = {
    self,
    id: agentId,
    sessionId: self.sessionId,
    system: self.system,
    logger: () => {},
    defer: () => {},
    stopChild: () => {},
    emit: () => {},
    actionExecutor: () => {},
  } as unknown as AnyActorScope;
  const machine = Object.assign(Object.create(chart) as AnyStateMachine, {
    transition: (snapshot: AnyMachineSnapshot, event: EventObject) => chart.transition(snapshot as never, event as never, scope as never),
  });
  return { machine, fromState: chart.getInitialSnapshot(scope as never, input as never) as AnyMachineSnapshot };
}

/**
 * A path never ends at a commit barrier: the runtime releases it as soon as its checkpoint is
 * committed, so what a run would see next is that release. Such paths get the committed event added.
 */
function finishAtBarrier(adjacency: Adjacency, serialize: (snapshot: AnyMachineSnapshot) => string) {
  const start = Object.keys(adjacency)[0];
  const committed: EventObject = { type: COMMITTED_EVENT };
  return (sequence: EventSequence): EventSequence => {
    let key = start;
    let state: AnyMachineSnapshot | undefined;
    for (const event of sequence.events) {
      const next = key === undefined ? undefined : adjacency[key]?.transitions[serializeEvent(event)];
      if (!next) return sequence;
      state = next.state;
      key = serialize(next.state);
    }
    const events = [...sequence.events];
    // Bounded: a chart whose barriers lead only to barriers would otherwise never finish.
    for (let i = 0; i < 10 && state && awaitsCommit(state) && key !== undefined; i++) {
      const next = adjacency[key]?.transitions[serializeEvent(committed)];
      if (!next) break;
      events.push(next.event);
      state = next.state;
      key = serialize(next.state);
    }
    return { ...sequence, events };
  };
}

/**
 * A synthetic done/error event can only happen while its child runs, an `after` event while its
 * state is active (entering it armed the delay, leaving it cancels it); at a commit barrier, only
 * the runtime's committed event (it is sent the moment the checkpoint commits: another event landing
 * first is a race no run could reproduce); nothing happens to a machine that is no longer active
 * (the runtime refuses events for it).
 */
function eventsIn(snapshot: AnyMachineSnapshot, events: readonly EventObject[]): EventObject[] {
  if (snapshot.status !== 'active') return [];
  const atBarrier = awaitsCommit(snapshot);
  return events.filter((e) => {
    if (atBarrier || e.type === COMMITTED_EVENT) return atBarrier && e.type === COMMITTED_EVENT;
    const after = parseAfter(e.type);
    if (after) return isActive(snapshot.value, snapshot.machine.getStateNodeById(after.stateId).path);
    const synthetic = parseSynthetic(e.type);
    return !synthetic || synthetic.id in snapshot.children;
  });
}

function boundedSimplePaths(
  adjacency: Adjacency,
  serialize: (snapshot: AnyMachineSnapshot) => string,
  depth: number,
): EventObject[][] {
  const start = Object.keys(adjacency)[0]; // the traversal's first state is the initial one
  if (start === undefined) return [];
  const found: EventObject[][] = [];
  const onPath = new Set([start]);
  const walk = (key: string, events: EventObject[]) => {
    if (events.length > 0) found.push(events);
    if (events.length >= depth) return;
    for (const { event, state } of Object.values(adjacency[key]?.transitions ?? {})) {
      const next = serialize(state);
      if (onPath.has(next)) continue;
      onPath.add(next);
      walk(next, [...events, event]);
      onPath.delete(next);
    }
  };
  walk(start, []);
  return found;
}

/** Drops exact duplicates and sequences that are a prefix of another: running the longer one checks every step of the shorter. */
export function withoutPrefixes<T extends { events: readonly EventObject[] }>(sequences: readonly T[]): T[] {
  const keyed = sequences.map((s) => ({ s, keys: s.events.map(serializeEvent) }));
  const longestFirst = [...keyed].sort((a, b) => b.keys.length - a.keys.length);
  const kept = new Set<(typeof keyed)[number]>();
  for (const candidate of longestFirst) {
    const covered = [...kept].some((k) => candidate.keys.every((key, i) => k.keys[i] === key));
    if (!covered) kept.add(candidate);
  }
  // Back to generation order: shortest paths first, in the order the graph listed them.
  return keyed.filter((k) => kept.has(k)).map((k) => k.s);
}

function withLimitAdvice<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof Error && err.message === 'Traversal limit exceeded') {
      throw new Error(
        'Path generation explored more states than `limit` allows. The state projection probably keeps an unbounded ' +
          'value (a counter, a list, a free text): pass a `serializeState` that keeps only what your guards read, or raise `limit`.',
      );
    }
    throw err;
  }
}
