import {
  createActor,
  fromPromise,
  type AnyActorLogic,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  type EventObject,
  type StateValue,
} from 'xstate';
import { getStateNodes } from 'xstate/graph';
import { guardName } from '../durable/definition.js';
import { SPAWN_EVENT, type SpawnEmit } from '../durable/spawn-agent.js';
import type { SpawnedAgent } from './agent-probe.js';
import { afterLabel } from './delays.js';
import { isChildReport, reportKey } from './report-delivery.js';
import { toJsonValue, type StateView } from './format.js';
import type { PathStep } from './run-path.js';

export interface CoverageList {
  /** Everything the machine's definition has. */
  all: string[];
  covered: string[];
  missing: string[];
}

/** Which state nodes and which transitions of the definition the generated paths take. */
export interface Coverage {
  /** State node ids (the root excluded). */
  states: CoverageList;
  /**
   * One entry per transition candidate, guarded alternatives counted apart, e.g.
   * `agent.failed: retry #1 [failedAtLlm] → agent.callingLLM`.
   */
  transitions: CoverageList;
}

/** A path played in memory: the exact expected steps, and what it touched. */
export interface Replay {
  /** steps[0] is the initial state (event `xstate.init`). */
  steps: PathStep[];
  states: Set<string>;
  transitions: Set<string>;
  /** Index of the first event that changed nothing (or a report the inbox would drop), if any: the path is cut there. */
  ignoredAt: number | undefined;
}

/** Every state node id and transition label of a machine, from its definition. */
export function definitionOf(machine: AnyStateMachine): { states: string[]; transitions: string[] } {
  const nodes = [machine.root, ...getStateNodes(machine.root)];
  return {
    states: nodes.filter((n) => n !== machine.root).map((n) => n.id),
    transitions: nodes.flatMap((n) => transitionsOf(n).map(transitionLabel)),
  };
}

export function coverageOf(machine: AnyStateMachine, replays: readonly Pick<Replay, 'states' | 'transitions'>[]): Coverage {
  const definition = definitionOf(machine);
  const list = (all: string[], pick: (r: Pick<Replay, 'states' | 'transitions'>) => Set<string>): CoverageList => {
    const covered = new Set(replays.flatMap((r) => [...pick(r)]));
    return { all, covered: all.filter((x) => covered.has(x)), missing: all.filter((x) => !covered.has(x)) };
  };
  return { states: list(definition.states, (r) => r.states), transitions: list(definition.transitions, (r) => r.transitions) };
}

/** The machine with every registered actor replaced by one that never settles: the path settles them. */
export function inertMachine(machine: AnyStateMachine): AnyStateMachine {
  const never = fromPromise(() => new Promise<never>(() => {}));
  const actors = Object.fromEntries(Object.keys(machine.implementations.actors).map((src) => [src, never as AnyActorLogic]));
  return machine.provide({ actors } as never);
}

/**
 * Plays a path's events on a real in-memory actor, as the agent it will be (same id, same input),
 * and records each resulting snapshot, the child agents each step spawns (`spawnAgent` emits
 * them) and, through XState's inspection API, every microstep's transitions and every state node
 * entered, eventless (`always`) steps included. The graph
 * traversal stands for a state by the first snapshot it met with that projection; the replay gives
 * the exact snapshots this event sequence produces, so the expectations are exact.
 */
export function replayPath(
  inert: AnyStateMachine,
  options: { input: unknown; agentId: string; serializeState: (view: StateView) => string },
  events: readonly EventObject[],
): Replay {
  const nodes = getStateNodes(inert.root);
  const states = new Set<string>();
  const transitions = new Set<string>();
  const visit = (value: StateValue) => {
    for (const node of nodes) if (isActive(value, node.path)) states.add(node.id);
  };
  const errors: unknown[] = [];
  const actor = createActor(inert, {
    id: options.agentId,
    input: options.input as never,
    inspect: (event) => {
      if (event.type !== '@xstate.microstep' || event.actorRef !== actor) return;
      for (const t of event._transitions) transitions.add(transitionLabel(t));
      visit((event.snapshot as AnyMachineSnapshot).value);
    },
  });
  actor.subscribe({ error: (err) => void errors.push(err) });
  let spawns: SpawnedAgent[] = [];
  actor.on(SPAWN_EVENT, (emitted) => {
    const { machine, id, input } = emitted as unknown as SpawnEmit;
    spawns.push({ machine, id, input: toJsonValue(input) ?? null });
  });
  const stepOf = (event: EventObject, snapshot: AnyMachineSnapshot): PathStep => {
    const view = viewOf(snapshot);
    const step = { event, state: view.value, status: view.status, key: options.serializeState(view), spawns };
    spawns = [];
    return step;
  };
  try {
    actor.start();
    const initial = actor.getSnapshot() as AnyMachineSnapshot;
    visit(initial.value);
    const steps = [stepOf({ type: 'xstate.init' }, initial)];
    let ignoredAt: number | undefined;
    const reported = new Set<string>();
    for (const [i, event] of events.entries()) {
      const before = actor.getSnapshot();
      if (before.status !== 'active') break;
      // A child ends once and answers each task once: the inbox drops a second report under a key
      // (the traversal cannot tell, its states do not say which reports came), so the path ends there.
      if (isChildReport(event)) {
        const key = reportKey(event);
        if (reported.has(key)) {
          ignoredAt = i + 1;
          break;
        }
        reported.add(key);
      }
      actor.send(event as never);
      const after = actor.getSnapshot() as AnyMachineSnapshot;
      if (after === before) {
        ignoredAt = i + 1;
        break;
      }
      steps.push(stepOf(event, after));
    }
    return { steps, states, transitions, ignoredAt };
  } finally {
    actor.stop();
  }
}

/** The plain view a projection sees, from a live snapshot. */
export function viewOf(snapshot: AnyMachineSnapshot): StateView {
  return {
    value: toJsonValue(snapshot.value),
    context: toJsonValue(snapshot.context),
    status: snapshot.status as StateView['status'],
  };
}

function transitionsOf(node: AnyStateNode): AnyTransitionDefinition[] {
  return [...node.transitions.values()].flat().concat(node.always ?? []);
}

function transitionLabel(t: AnyTransitionDefinition): string {
  const source = t.source;
  const candidates = t.eventType === '' ? (source.always ?? []) : (source.transitions.get(t.eventType) ?? []);
  const event = t.eventType === '' ? 'always' : (afterLabel(t.eventType) ?? t.eventType);
  const nth = candidates.length > 1 ? ` #${candidates.indexOf(t) + 1}` : '';
  const guard = t.guard ? ` [${guardName(t.guard)}]` : '';
  const targets = t.target?.length ? t.target.map((n) => n.id).join(', ') : '(no target)';
  return `${source.id}: ${event}${nth}${guard} → ${targets}`;
}


/** Is the node at `path` active in `value`? */
export function isActive(value: StateValue, path: readonly string[]): boolean {
  let current: StateValue | undefined = value;
  for (const key of path) {
    if (current === undefined) return false;
    if (typeof current === 'string') {
      if (current !== key) return false;
      current = undefined;
      continue;
    }
    if (!(key in current)) return false;
    current = current[key] as StateValue | undefined;
  }
  return true;
}
