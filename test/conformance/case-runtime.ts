/**
 * One case's agent in a runtime on a SQLite file: registering its machine, spawning its agent,
 * sending its events, and reading what the suite compares. Used in-process and by the worker that
 * the kill -9 runs start (case-worker.ts), so every way reads the runtime alike.
 */
import { silentLogger } from '../../src/core/logger.js';
import { ConflictError, InvalidEventError, MachineNotDurableError } from '../../src/core/errors.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ConformanceCase, Trace } from './case.js';
import { normalize, type Observation } from './observation.js';

export const AGENT_ID = 'case-agent';

export type OpenResult = { runtime: Runtime; busy: () => boolean } | { refused: string[] };

/**
 * Opens (or reopens, restoring its agent) the runtime of a case on `file`; the linter may refuse
 * the machine. `activity` hears of everything that moves the agent: each XState event and
 * transition of its actor system (the runtime's `inspect` hook), and each commit as it starts and
 * ends, with whether a commit is in flight (also `busy()`). A step is over when nothing moved for a while
 * and nothing is being committed (an fsync can outlast any quiet period on a loaded machine).
 */
export async function openCaseRuntime(
  c: ConformanceCase,
  file: string,
  trace: Trace,
  activity: (busy: boolean) => void = () => {},
  /** The agent's actor took an event (XState's `@xstate.event` for it): its type. */
  delivered: (type: string) => void = () => {},
): Promise<OpenResult> {
  // WAL at NORMAL: a commit is in the OS before it is acknowledged, so it survives a kill -9 (what
  // the suite does); only an fsync per commit is left out, whose latency on a loaded disk would
  // show as a late step (the chart's timing is what is compared, not the disk's).
  const store = await openSqliteStore(file, { synchronous: 'normal' });
  let inFlight = 0;
  const commit = store.commit.bind(store);
  store.commit = async (writes) => {
    inFlight++;
    activity(true);
    try {
      return await commit(writes);
    } finally {
      inFlight--;
      activity(inFlight > 0);
    }
  };
  try {
    const runtime = await createRuntime({
      store,
      machines: [{ name: c.id, machine: c.machine(trace), ...(c.events ? { events: c.events } : {}) }],
      logger: silentLogger,
      inspect: (event) => {
        activity(inFlight > 0);
        if (event.type === '@xstate.event' && (event.actorRef as { id?: string }).id === AGENT_ID) delivered(event.event.type);
      },
    });
    return { runtime, busy: () => inFlight > 0 };
  } catch (err) {
    await store.close();
    if (err instanceof MachineNotDurableError) return { refused: err.errors.map((e) => e.code) };
    throw err;
  }
}

export async function spawnCaseAgent(runtime: Runtime, c: ConformanceCase): Promise<void> {
  await runtime.spawn(c.id, { id: AGENT_ID, ...(c.input === undefined ? {} : { input: c.input }) });
}

/**
 * Sends one of the case's events, once committed to the inbox. An event the runtime refuses at the
 * door (no state of the machine takes its type: 422; the agent has ended: 409) changes nothing, as
 * XState ignores it: that is reported, not thrown.
 */
export async function sendCaseEvent(runtime: Runtime, event: { type: string }): Promise<string | undefined> {
  try {
    await runtime.send(AGENT_ID, event as never);
    return undefined;
  } catch (err) {
    if (err instanceof InvalidEventError || err instanceof ConflictError) return `${err.name}: ${err.message}`;
    throw err;
  }
}

/** What the suite compares, but the trace: from the agent's view, and its output from its last checkpoint. */
export async function observeCaseAgent(runtime: Runtime): Promise<Omit<Observation, 'trace'>> {
  const view = await runtime.view(AGENT_ID);
  let output: unknown = null;
  if (view.status === 'done') {
    const [last] = await runtime.checkpoints(AGENT_ID, { newest: 1 });
    if (last) output = (await runtime.checkpoint(AGENT_ID, last.seq)).snapshot.output ?? null;
  }
  return { value: normalize(view.state), context: normalize(view.context) ?? null, status: view.status, output: normalize(output) ?? null };
}
