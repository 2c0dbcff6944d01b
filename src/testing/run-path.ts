import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AnyActorLogic, AnyEventObject, AnyStateMachine, EventObject, StateValue } from 'xstate';
import type { AgentRecord, PendingTimer } from '../store/store.js';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.js';
import { COMMITTED_EVENT } from '../durable/commit-barrier.js';
import type { MachineDefinition } from '../durable/definition.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { AgentProbe, type SpawnedAgent, type SpawnRecord } from './agent-probe.js';
import { ControlledActors, type ActorStart } from './controlled-actors.js';
import type { DelayArm } from './controlled-delays.js';
import { crashableStore } from './crashable-store.js';
import { afterLabel, parseAfter } from './delays.js';
import { canonicalJson, parseSynthetic, stateLabel, type StateView } from './format.js';
import { PathTestError } from './path-test-error.js';
import { isChildReport, reportKey } from './report-delivery.js';

export { PathTestError };

/** One step of a generated path: the event, then what must be committed after it. */
export interface PathStep {
  event: AnyEventObject;
  /** The expected state value. */
  state: StateValue;
  status: StateView['status'];
  /** The expected projection (`serializeState`) of the committed state. */
  key: string;
  /** The child agents its transition spawns (`spawnAgent`), in order. */
  spawns: SpawnedAgent[];
}

/** Everything a run needs to know about the machine under test. */
export interface RunPlan {
  definition: MachineDefinition;
  /** Actor srcs replaced by controlled actors (every registered actor but the `fakes`). */
  controlled: readonly string[];
  fakes: Readonly<Record<string, AnyActorLogic>>;
  input: unknown;
  agentId: string;
  serializeState: (view: StateView) => string;
  /** What of a spawn's input must match (the expected one, another run's): see `comparable.spawnInput`. */
  spawnInput: (machine: string, input: unknown) => unknown;
  stepTimeoutMs: number;
}

/** What a finished run left in the store, for comparing runs. */
export interface PathRunResult {
  state: StateValue;
  status: string;
  /** The final context, as committed (JSON). */
  context: unknown;
  /** Committed checkpoints (the first one, at spawn, included). */
  checkpoints: number;
  /** The action log (timings left out). */
  actions: { seq: number; action: string; payload: unknown; result: unknown }[];
  /** Idempotency keys of the effect records. */
  effects: string[];
  /** Every start of a controlled actor, in order. */
  starts: ActorStart[];
  /** The children that were running in the checkpoint a crash restored from (re-run by design). */
  restarted: { id: string; src: string; input: unknown }[];
  /**
   * The child agents spawned, by the step that spawned them: a step up to the crash counts in the
   * process that committed it, a later one in the restored process (a spawn is created with its
   * checkpoint: one the crash cut off never happened).
   */
  spawns: SpawnRecord[];
  /** Every delay the agent armed, in every process (a restored one re-arms those of its checkpoint). */
  delays: DelayArm[];
  /** The delays pending in the checkpoint a crash restored from: the restored process armed each again. */
  rearmed: Pick<PendingTimer, 'id' | 'at'>[];
}

interface Process {
  runtime: Runtime;
  raw: SqliteStore;
  probe: AgentProbe;
  crash(): void;
  crashBeforeCheckpoint(seq: number): void;
}

const NEVER_MS = 2 ** 31 - 1;

/**
 * Runs one path on a real runtime over a real SQLite file in a fresh temp folder, checking the
 * committed checkpoint after every step. With `crashAfter: k`, the process "crashes" once step k is
 * committed (see `crashableStore`: the old runtime is abandoned, not closed) and a new runtime on
 * the same file restores the agent through its normal recovery, then finishes the path.
 */
export async function runPath(plan: RunPlan, steps: readonly PathStep[], crashAfter?: number): Promise<PathRunResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-agents-paths-'));
  const file = path.join(dir, 'agents.db');
  const actors = new ControlledActors(plan.controlled);
  const raws: SqliteStore[] = [];
  const probes: AgentProbe[] = [];
  let live: Process | undefined;
  let passed = false;
  const last = steps.length - 1;
  let at = 0;

  /** A process whose agent's first snapshot is step `firstStep` (0: it is spawned; k: restored from step k). */
  const start = async (firstStep: number): Promise<Process> => {
    // A path checks what a process crash leaves, not a power loss: at NORMAL a commit is acknowledged
    // as soon as it is written, so what the store shows is exactly what the runtime has acted on.
    const raw = await openSqliteStore(file, { synchronous: 'normal' });
    raws.push(raw);
    const { store, crash, crashBeforeCheckpoint } = crashableStore(raw);
    const machine = (plan.definition.machine as AnyStateMachine).provide({
      actors: { ...actors.actorsFor(actors.incarnation), ...plan.fakes },
    } as never);
    const probe = new AgentProbe(plan.agentId, actors.incarnation, firstStep);
    probes.push(probe);
    const runtime = await createRuntime({
      store,
      machines: [{ ...plan.definition, machine }],
      reloadDelayMs: NEVER_MS,
      inspect: probe.inspect,
      // The path stands in for the children: it records the spawns and delivers their reports.
      childAgents: 'ignore',
    });
    return { runtime, raw, probe, crash, crashBeforeCheckpoint };
  };
  /** Step k's transition is one the runtime makes by itself once step k - 1 is committed (a commit barrier's). */
  const automatic = (k: number) => steps[k]?.event.type === COMMITTED_EVENT;

  try {
    live = await start(0);
    // Nothing past the crash point may be committed, not even what the runtime does on its own.
    if (crashAfter !== undefined) live.crashBeforeCheckpoint(crashAfter + 2);
    actors.atStep(0);
    await live.runtime.spawn(plan.definition.name, { id: plan.agentId, input: plan.input });
    let restarted: PathRunResult['restarted'] = [];
    let rearmed: PathRunResult['rearmed'] = [];
    for (at = 0; at <= last; at++) {
      if (at > 0) {
        actors.atStep(at);
        await drive(live, steps[at]!.event);
      }
      await expectCommitted(live, at);
      if (crashAfter === at) {
        restarted = await runningChildren(live);
        rearmed = await pendingDelays(live);
        await untilRunning(restarted.map((c) => c.id));
        live.crash();
        actors.crash();
        live = await start(at);
        await expectRestored(live, at, rearmed);
      }
    }
    at = last;
    // A spawn counts in the process that committed its step (see PathRunResult.spawns).
    const spawns = probes.flatMap((p, i) => p.spawns.filter((s) => i === probes.length - 1 || s.step <= (crashAfter ?? last)));
    const delays = probes.flatMap((p) => p.delays.arms);
    const result = { ...(await collect(live.raw, plan.agentId, actors.starts, restarted)), spawns, delays, rearmed };
    passed = true;
    return result;
  } catch (err) {
    const where = `step ${at}/${last}${at > 0 ? ` (${describeEvent(steps[at]!.event)})` : ' (spawn)'}`;
    const crash = crashAfter === undefined ? '' : `, crash after step ${crashAfter}`;
    const message = err instanceof Error ? err.message : String(err);
    const now = await live?.raw.getAgent(plan.agentId).catch(() => undefined);
    const wrapped = new PathTestError(`${where}${crash}: ${message}\n  the agent is now ${describeAgent(now)}\n  database kept for inspection: ${file}`);
    if (err instanceof PathTestError) Object.assign(wrapped, { expected: err.expected, actual: err.actual });
    throw wrapped;
  } finally {
    await live?.runtime.close().catch(() => undefined);
    for (const raw of raws) await raw.close().catch(() => undefined);
    if (passed) fs.rmSync(dir, { recursive: true, force: true });
  }

  async function drive(process: Process, event: EventObject): Promise<void> {
    if (event.type === COMMITTED_EVENT) return; // the runtime sends it once the barrier's checkpoint is committed
    if (parseAfter(event.type)) {
      process.probe.delays.fire(event.type); // time passes: the delay the runtime armed is due
      return;
    }
    if (isChildReport(event)) {
      // Into the inbox as a real child's report goes (no child exists in a path run: the path stands in for it).
      const { duplicate } = await process.runtime.report(plan.agentId, event);
      if (duplicate) {
        throw new PathTestError(
          `the inbox already holds ${event.type} from ${event.agentId} (key ${reportKey(event)}): a child ends once and answers each task once, ` +
            'so no run gets this report twice (generated paths end before such a report)',
        );
      }
      return;
    }
    const synthetic = parseSynthetic(event.type);
    if (!synthetic) {
      await process.runtime.send(plan.agentId, event as { type: string });
      return;
    }
    const outcome =
      synthetic.kind === 'done'
        ? { done: true as const, output: (event as { output?: unknown }).output }
        : { done: false as const, error: (event as { error?: unknown }).error };
    await actors.settle(synthetic.id, outcome, plan.stepTimeoutMs);
  }

  /** Waits for the checkpoint of step k (seq k + 1: the spawn commits seq 1) and checks it. */
  async function expectCommitted(process: Process, k: number): Promise<void> {
    const step = steps[k]!;
    const seq = k + 1;
    const agent = await until(
      async () => {
        const a = await process.raw.getAgent(plan.agentId);
        return a && (a.lastSeq >= seq || a.status === 'error') ? a : undefined;
      },
      async () => {
        const a = await process.raw.getAgent(plan.agentId);
        return `expected the transition to ${label(step)} to be committed within ${plan.stepTimeoutMs} ms, but the agent is still ${describeAgent(a)}`;
      },
    );
    await expectCheckpoint(process, seq, step, agent);
    expectSpawns(process, k);
    if (automatic(k + 1)) return; // the next transition is already under way, by design
    // Anything the step set off (a child's start, an event it sends back) is committed within a few
    // turns of the event loop: give it those turns, then the step must still be the last transition.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    const after = await process.raw.getAgent(plan.agentId);
    if (after && after.lastSeq > seq) {
      const extra = await process.raw.getCheckpoint(plan.agentId, seq + 1);
      throw new PathTestError(
        `expected exactly one transition for this step, but another one was committed (seq ${seq + 1}, event ${extra?.eventType}, state ${label(extra)})`,
      );
    }
  }

  async function expectCheckpoint(process: Process, seq: number, step: PathStep, agent: AgentRecord): Promise<void> {
    const checkpoint = await process.raw.getCheckpoint(plan.agentId, seq);
    if (!checkpoint) {
      throw new PathTestError(`expected ${label(step)}, but no checkpoint ${seq} was committed (agent ${describeAgent(agent)})`);
    }
    if (canonicalJson(checkpoint.state) !== canonicalJson(step.state) || checkpoint.status !== step.status) {
      throw new PathTestError(
        `expected state ${label(step)}, but checkpoint ${seq} (after ${checkpoint.eventType}) holds ${label(checkpoint)}`,
        { value: step.state, status: step.status },
        { value: checkpoint.state, status: checkpoint.status },
      );
    }
    const context = (JSON.parse(checkpoint.snapshot) as { context?: unknown }).context;
    const key = plan.serializeState({ value: checkpoint.state as StateValue, context, status: checkpoint.status as StateView['status'] });
    if (key !== step.key) {
      throw new PathTestError(`expected the projection ${step.key}, but checkpoint ${seq} projects to ${key}`, step.key, key);
    }
  }

  /** The step spawned exactly the children the replay of the chart did (a spawn is emitted within its transition). */
  function expectSpawns(process: Process, k: number): void {
    if (process.probe.problem) throw new PathTestError(process.probe.problem);
    const shown = (spawns: readonly SpawnedAgent[]) =>
      spawns.map((s) => `${s.id} (${s.machine}) with input ${canonicalJson(plan.spawnInput(s.machine, s.input))}`).join('; ') || 'none';
    const expected = shown(steps[k]!.spawns);
    const actual = shown(process.probe.spawnsAt(k));
    if (actual !== expected) {
      throw new PathTestError(`expected this step to spawn ${expected}, but it spawned ${actual}`, steps[k]!.spawns, process.probe.spawnsAt(k));
    }
  }

  /** After a restore, the agent must be live again (not quarantined), at the same checkpoint, with its delays armed again. */
  async function expectRestored(process: Process, k: number, rearmed: PathRunResult['rearmed']): Promise<void> {
    if (process.probe.problem) throw new PathTestError(process.probe.problem);
    const step = steps[k]!;
    const agent = await process.raw.getAgent(plan.agentId);
    if (!agent) throw new PathTestError('the agent is gone after the restore');
    if (step.status === 'active' && agent.status !== 'active') {
      throw new PathTestError(`the restore did not bring the agent back: it is ${describeAgent(agent)}${agent.error ? ` (${agent.error.message})` : ''}`);
    }
    // At a commit barrier the restored agent moves on by itself (the next step checks where to).
    const extra = automatic(k + 1) ? agent.lastSeq < k + 1 : agent.lastSeq !== k + 1;
    if (extra) throw new PathTestError(`the restore committed a transition of its own (seq ${agent.lastSeq}, expected ${k + 1})`);
    await expectCheckpoint(process, k + 1, step, agent);
    const armed = new Set(process.probe.delays.arms.filter((a) => a.step === k).map((a) => a.id));
    const lost = rearmed.filter((t) => !armed.has(t.id)).map((t) => afterLabel(t.id) ?? t.id);
    if (lost.length > 0) {
      throw new PathTestError(`the restored agent did not arm again the delays its checkpoint holds: ${lost.join(', ')}`);
    }
  }

  /** The delays the last committed checkpoint holds (what a restore must arm again). */
  async function pendingDelays(process: Process): Promise<PathRunResult['rearmed']> {
    const restorable = await process.raw.loadRestorable(plan.agentId);
    return (restorable?.checkpoint?.timers ?? []).map(({ id, at }) => ({ id, at }));
  }

  /** Children running in the last committed checkpoint whose actors the path controls. */
  async function runningChildren(process: Process): Promise<PathRunResult['restarted']> {
    const agent = await process.raw.getAgent(plan.agentId);
    const checkpoint = agent && (await process.raw.getCheckpoint(plan.agentId, agent.lastSeq));
    if (!checkpoint) return [];
    const children = (JSON.parse(checkpoint.snapshot) as { children?: Record<string, { src?: unknown; snapshot?: { status?: unknown; input?: unknown } }> })
      .children ?? {};
    return Object.entries(children)
      .filter(([, c]) => c.snapshot?.status === 'active' && typeof c.src === 'string' && plan.controlled.includes(c.src))
      .map(([id, c]) => ({ id, src: c.src as string, input: c.snapshot?.input ?? null }));
  }

  /** The crash comes once the children of the committed state have started, as they would have. */
  async function untilRunning(ids: readonly string[]): Promise<void> {
    await until(
      async () => (ids.every((id) => actors.running().includes(id)) ? true : undefined),
      async () => `expected the invoked actors ${ids.join(', ')} to start once their checkpoint was committed; running: ${actors.running().join(', ') || 'none'}`,
    );
  }

  async function until<T>(probe: () => Promise<T | undefined>, timeoutMessage: () => Promise<string>): Promise<T> {
    const deadline = Date.now() + plan.stepTimeoutMs;
    for (let round = 0; ; round++) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new PathTestError(await timeoutMessage());
      await new Promise((resolve) => (round < 20 ? setImmediate(resolve) : setTimeout(resolve, 2)));
    }
  }
}

async function collect(
  raw: SqliteStore,
  agentId: string,
  starts: readonly ActorStart[],
  restarted: PathRunResult['restarted'],
): Promise<Omit<PathRunResult, 'spawns' | 'delays' | 'rearmed'>> {
  const agent = (await raw.getAgent(agentId))!;
  const checkpoint = (await raw.getCheckpoint(agentId, agent.lastSeq))!;
  const actions = (await raw.listActions(agentId)).map(({ seq, action, payload, result }) => ({ seq, action, payload, result: withoutTimings(result) }));
  const effects = (raw.db.prepare('select idempotency_key as k from effects where agent_id = ? order by k').all(agentId) as { k: string }[]).map((r) => r.k);
  return {
    state: checkpoint.state as StateValue,
    status: agent.status,
    context: (JSON.parse(checkpoint.snapshot) as { context?: unknown }).context ?? null,
    checkpoints: agent.lastSeq,
    actions,
    effects,
    starts: [...starts],
    restarted,
  };
}

function withoutTimings(result: unknown): unknown {
  if (!result || typeof result !== 'object') return result;
  const { ms: _ms, ...rest } = result as { ms?: unknown };
  return rest;
}

function label(x: { state?: unknown; status?: unknown } | undefined): string {
  if (!x) return '(nothing)';
  const value = 'state' in x ? x.state : undefined;
  const text = typeof value === 'string' || (value && typeof value === 'object') ? stateLabel(value as StateValue) : String(value);
  return x.status && x.status !== 'active' ? `${text} (${String(x.status)})` : text;
}

function describeAgent(agent: AgentRecord | undefined): string {
  return agent ? `${label({ state: agent.state, status: agent.status })} at checkpoint ${agent.lastSeq}` : 'missing';
}

function describeEvent(event: EventObject): string {
  const after = parseAfter(event.type);
  if (after) return `${afterLabel(event.type)} in ${after.stateId}`;
  const synthetic = parseSynthetic(event.type);
  return synthetic ? `${synthetic.id}.${synthetic.kind}` : event.type;
}
