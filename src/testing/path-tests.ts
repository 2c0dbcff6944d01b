import type { AnyActorLogic, AnyEventObject, AnyStateMachine, AnyStateNode, EventObject } from 'xstate';
import { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from '../durable/commit-barrier.js';
import { CHILD_EVENT_TYPES } from '../durable/child-events.js';
import type { MachineDefinition } from '../durable/definition.js';
import { eventSchema, isEventDescriptor, registerMachine, takesEventType } from '../runtime/registered-machine.js';
import type { SpawnedAgent } from './agent-probe.js';
import { checkChildKeys, childReportEvents, uniqueChildren, type ChildReports } from './child-reports.js';
import { checkCrashRun } from './crash-check.js';
import { afterEvents } from './delays.js';
import { ambiguousTypes, defaultSerializeState, eventLabel, parseSynthetic, stateLabel, type StateView } from './format.js';
import { generatePaths, withoutPrefixes, type PathOrigin } from './generate-paths.js';
import { checkOutcomeKeys, findInvokes, syntheticEvents, type InvokeInfo, type InvokeOutcomes } from './invokes.js';
import { coverageOf, inertMachine, replayPath, type Coverage, type Replay } from './replay.js';
import { runPath, type PathRunResult, type PathStep, type RunPlan } from './run-path.js';

export interface PathTestOptions {
  /**
   * The machine, or its registration (`MachineDefinition`, e.g. `agentDefinition({ llm })`), whose
   * name, version and input/event schemas are then used exactly as in production.
   */
  machine: AnyStateMachine | MachineDefinition;
  /** Registry name and title of the suite (default: the definition's name, else the machine id). */
  name?: string;
  /** The spawn input (default `{}`); the traversal starts from the same input. */
  input?: unknown;
  /**
   * Your own events, each with a payload sample; list a type twice to explore two samples. Each is
   * tried in every state. Do not list `xstate.*` events: the done/error events of the invokes are
   * derived from the machine (see `outcomes`).
   */
  events: readonly AnyEventObject[];
  /** Per invoke id (or actor src) the done outputs and error values to explore. */
  outcomes?: Readonly<Record<string, InvokeOutcomes>>;
  /**
   * What the child agents the chart spawns (`spawnAgent`) may report, by their machine name: each
   * sample becomes one `agent.done` / `agent.failed` / `agent.response` event per child of that
   * machine the paths spawn, with the child's `agentId`, explored like your events. Children do
   * not exist in path runs (the runtime never sees the spawns; each step's spawns are checked), so
   * nothing else reports. The reports go into the agent's inbox under the keys the runtime uses.
   */
  children?: Readonly<Record<string, ChildReports>>;
  /**
   * Actor implementations to provide, by src, instead of the controlled stand-ins. A faked actor
   * runs on its own, so no path settles it: only for actors whose invokes have no onDone/onError
   * (fire and forget), or that are spawned rather than invoked. Default: none.
   */
  fakes?: Readonly<Record<string, AnyActorLogic>>;
  /**
   * Which snapshots count as the same state (default `defaultSerializeState`: value + a coarse
   * context summary). Keep what your guards read and nothing unbounded.
   */
  serializeState?: (view: StateView) => string;
  /** Also explore every simple path of at most this many events (default 4; 0: none). */
  simplePathDepth?: number;
  /** Traversal budget before generation gives up with advice (default 10,000). */
  limit?: number;
  /**
   * What must be equal between the uninterrupted run and a crashed one (default: everything). The
   * two are separate runs, so a value read from the wall clock, such as a backoff deadline,
   * legitimately differs: map it out of the final context and of the actors' inputs here.
   */
  comparable?: {
    context?: (context: any) => unknown;
    input?: (src: string, input: any) => unknown;
    /** A spawned child's input, also as checked against the expected one at its step. */
    spawnInput?: (machine: string, input: any) => unknown;
  };
  /** How long a step may take to commit before the case fails (default 5,000 ms). */
  stepTimeoutMs?: number;
  /** The agent id used in every run (default `path-agent`). */
  agentId?: string;
}

/** One generated path, runnable as a test. */
export interface PathTestCase {
  /** `#03 task.add → llm.done → runtime.committed ⇒ sideEffect.requesting` */
  name: string;
  /** steps[0] is the initial state after spawn (event `xstate.init`). */
  steps: PathStep[];
  origin: PathOrigin;
  /** Runs the path on a real runtime and store; throws `PathTestError` on the first wrong step. */
  run(): Promise<PathRunResult>;
}

/** One path with a crash after step `crashAfter` (0: right after spawn). */
export interface CrashTestCase {
  name: string;
  path: PathTestCase;
  crashAfter: number;
  /**
   * Runs the path with the crash and a restore from the store, then checks it against the
   * uninterrupted run (run once per path and shared): same final state, context, action log and
   * effect records, and the only extra actor starts are the children that were running at the
   * crash (an actor whose result was committed is never started again).
   */
  run(): Promise<{ reference: PathRunResult; crashed: PathRunResult }>;
}

export interface PathTestSuite {
  name: string;
  invokes: InvokeInfo[];
  /**
   * Every event explored: yours, then the children's reports (`children`), then the derived
   * `xstate.done.actor.*` / `xstate.error.actor.*`, then one `xstate.after.<delay>.<state>` per
   * delayed transition (a "time passes" step: the run makes the runtime's delay due), then
   * `runtime.committed` if a state is a commit barrier (the runtime sends it; paths wait for it).
   */
  events: EventObject[];
  /** The child agents the paths spawn, each once, in order of first spawn. */
  spawned: SpawnedAgent[];
  paths: PathTestCase[];
  /** For every path, one case per step k = 0 … n: crash once step k is committed. */
  crashCases: CrashTestCase[];
  /** States and transitions of the definition the paths take (computed when generating). */
  coverage: Coverage;
}

/**
 * Generates path tests from a statechart: shortest paths to every state and simple paths up to a
 * bound, over your events, the done/error events of every invoke, its `after` delays and its
 * children's reports, each runnable on the real runtime with a real SQLite store.
 *
 * @example
 * const suite = pathTests({ machine: approvalDefinition, events: [{ type: 'approve', by: 'ana' }] });
 * describe(suite.name, () => {
 *   for (const path of suite.paths) it(path.name, () => path.run());
 *   for (const c of suite.crashCases) it(c.name, () => c.run());
 * });
 */
export function pathTests(options: PathTestOptions): PathTestSuite {
  const definition = toDefinition(options.machine, options.name);
  const registered = registerMachine(definition);
  const machine = definition.machine;
  const fakes = options.fakes ?? {};
  const outcomes = options.outcomes ?? {};
  for (const src of Object.keys(fakes)) {
    if (!(src in machine.implementations.actors)) throw new Error(`fakes.${src}: the machine registers no actor "${src}" in setup({ actors }).`);
  }
  const invokes = findInvokes(machine, fakes);
  checkOutcomeKeys(invokes, outcomes);
  checkUserEvents(options.events, registered);
  const input = registered.input ? registered.input.parse(options.input ?? {}) : (options.input ?? {});
  const serializeState = options.serializeState ?? defaultSerializeState;
  const agentId = options.agentId ?? 'path-agent';
  const derived = [...syntheticEvents(invokes, outcomes), ...afterEvents(machine), ...(hasCommitBarrier(machine) ? [{ type: COMMITTED_EVENT }] : [])];
  const inert = inertMachine(machine);
  const children = options.children ?? {};

  // The children's reports need their ids, which only running the chart tells: generate, replay,
  // derive the reports of the children spawned, and again until no path spawns a new child.
  let reports: EventObject[] = [];
  let replays: (Replay & { origin: PathOrigin })[];
  let spawned: SpawnedAgent[];
  for (let round = 1; ; round++) {
    const sequences = generatePaths(machine, {
      input,
      agentId,
      events: [...options.events, ...reports, ...derived],
      serializeState,
      simplePathDepth: options.simplePathDepth ?? 4,
      limit: options.limit ?? 10_000,
    });
    const played: (Replay & { origin: PathOrigin; events: EventObject[] })[] = [];
    for (const sequence of sequences) {
      const replay = replayPath(inert, { input, agentId, serializeState }, sequence.events);
      // A cut path (an event that changed nothing once replayed exactly) keeps its valid prefix,
      // unless another path has it all (the traversal's state was a like one, not the same).
      if (replay.steps.length > 1) played.push({ ...replay, origin: sequence.origin, events: replay.steps.slice(1).map((s) => s.event) });
    }
    replays = withoutPrefixes(played);
    // The initial state's spawns too, when no path leaves it.
    const initial = replayPath(inert, { input, agentId, serializeState }, []).steps;
    spawned = uniqueChildren([...initial, ...replays.flatMap((r) => r.steps)].flatMap((s) => s.spawns));
    const next = childReportEvents(children, spawned);
    if (next.length === reports.length) break; // reports only grow with the children: none is new
    if (round === 10) throw new Error('children: every round of paths spawns new children (ten rounds); a chart that spawns without end cannot be covered.');
    reports = next;
  }
  checkChildKeys(children, spawned);
  checkReports(reports, registered, machine);
  const events = [...options.events, ...reports, ...derived];

  const plan: RunPlan = {
    definition,
    controlled: Object.keys(machine.implementations.actors).filter((src) => !(src in fakes)),
    fakes,
    input,
    agentId,
    serializeState,
    spawnInput: options.comparable?.spawnInput ?? ((_machine: string, i: unknown) => i),
    stepTimeoutMs: options.stepTimeoutMs ?? 5_000,
  };
  const comparable = {
    context: options.comparable?.context ?? ((c: unknown) => c),
    input: options.comparable?.input ?? ((_src: string, i: unknown) => i),
    spawnInput: plan.spawnInput,
  };
  const ambiguous = ambiguousTypes(events);
  const width = String(replays.length).length;
  // The uninterrupted run of each path, shared by its crash cases (the path's own test usually ran it first).
  const references: (Promise<PathRunResult> | undefined)[] = [];
  const paths = replays.map((replay, i): PathTestCase => {
    const last = replay.steps.at(-1)!;
    const name = `#${String(i + 1).padStart(width, '0')} ${replay.steps
      .slice(1)
      .map((s) => eventLabel(s.event, ambiguous))
      .join(' → ')} ⇒ ${stateLabel(last.state)}${last.status === 'active' ? '' : ` (${last.status})`}`;
    return {
      name,
      steps: replay.steps,
      origin: replay.origin,
      run: () => (references[i] = runPath(plan, replay.steps)),
    };
  });
  const crashCases = paths.flatMap((path, i) =>
    path.steps.map((step, k): CrashTestCase => ({
      name: `${path.name} | crash after ${k}/${path.steps.length - 1} in ${stateLabel(step.state)}`,
      path,
      crashAfter: k,
      run: async () => {
        const reference = await (references[i] ?? path.run()).catch((err: unknown) => {
          throw new Error(`the uninterrupted run of this path failed, so there is nothing to compare with: ${(err as Error).message}`);
        });
        const crashed = await runPath(plan, path.steps, k);
        checkCrashRun(reference, crashed, k, comparable);
        return { reference, crashed };
      },
    })),
  );
  return {
    name: definition.name,
    invokes,
    events,
    spawned,
    paths,
    crashCases,
    coverage: coverageOf(inert, replays),
  };
}

function toDefinition(machine: AnyStateMachine | MachineDefinition, name: string | undefined): MachineDefinition {
  if ('root' in machine && 'transition' in machine) return { name: name ?? machine.id, machine };
  return name ? { ...machine, name } : machine;
}

/** Every event type some state node takes (the registration's list leaves out the runtime's own). */
function handledTypes(machine: AnyStateMachine): Set<string> {
  const types = new Set<string>();
  const visit = (node: AnyStateNode) => {
    for (const type of node.transitions.keys()) types.add(type);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return types;
}

function hasCommitBarrier(machine: AnyStateMachine): boolean {
  const visit = (node: AnyStateNode): boolean => node.tags.includes(AWAIT_COMMIT_TAG) || Object.values(node.states).some(visit);
  return visit(machine.root);
}

/** A report must be one the chart takes, and fit its schema if it has one. */
function checkReports(reports: readonly EventObject[], registered: ReturnType<typeof registerMachine>, machine: AnyStateMachine): void {
  const handled = handledTypes(machine);
  for (const report of reports) {
    if (!handled.has(report.type)) {
      throw new Error(`children: no state of "${registered.name}" handles "${report.type}"; drop those samples.`);
    }
    const parsed = registered.events[report.type]?.safeParse(report);
    if (parsed && !parsed.success) {
      throw new Error(`children: the report ${JSON.stringify(report)} is refused by the machine's schema for "${report.type}": ${parsed.error.message}`);
    }
  }
}

function checkUserEvents(events: readonly EventObject[], registered: ReturnType<typeof registerMachine>): void {
  for (const event of events) {
    if (typeof event?.type !== 'string') throw new Error(`events: ${JSON.stringify(event)} has no "type".`);
    if (event.type.startsWith('runtime.')) {
      throw new Error(`events: "${event.type}" is the runtime's own event; it is explored wherever it can happen, do not list it.`);
    }
    if ((CHILD_EVENT_TYPES as readonly string[]).includes(event.type)) {
      throw new Error(`events: "${event.type}" is a child agent's report, which only the runtime sends; describe what children report with \`children\`.`);
    }
    if (event.type.startsWith('xstate.') || parseSynthetic(event.type)) {
      throw new Error(`events: "${event.type}" is XState's own event; list only yours (done/error events are derived from the invokes: use outcomes).`);
    }
    if (isEventDescriptor(event.type)) {
      throw new Error(`events: "${event.type}" is an event descriptor, not an event; list events of the types it matches.`);
    }
    if (!takesEventType(registered, event.type)) {
      throw new Error(`events: no state of "${registered.name}" handles "${event.type}" (it handles: ${registered.eventTypes.join(', ')}).`);
    }
    const schema = eventSchema(registered, event.type);
    const parsed = schema?.safeParse(event);
    if (parsed && !parsed.success) {
      throw new Error(`events: the sample ${JSON.stringify(event)} is refused by the machine's schema for "${event.type}": ${parsed.error.message}`);
    }
  }
}
