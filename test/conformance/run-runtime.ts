/**
 * A case run by the runtime in this process: `live` as it is, or `reopen`: the runtime closed and
 * opened again on the same file after every step and in the middle of every wait, so the agent is
 * restored from its checkpoint each time (its delays re-armed from the store).
 */
import path from 'node:path';
import type { ConformanceCase } from './case.js';
import { AGENT_ID, observeCaseAgent, openCaseRuntime, sendCaseEvent, spawnCaseAgent } from './case-runtime.js';
import { PlanSlip, planOf, quiet, sleep, type Observation, type TraceEntry } from './observation.js';
import type { Runtime } from '../../src/runtime/runtime.js';

export type CaseOutcome =
  | { observations: Observation[]; restoreTrace: string[]; refusals: string[] }
  | { refused: string[] };

export async function runInRuntime(c: ConformanceCase, dir: string, mode: 'live' | 'reopen'): Promise<CaseOutcome> {
  const file = path.join(dir, `${c.id}-${mode}.db`);
  const caseStart = Date.now();
  let lastActivity = Date.now();
  let trace: TraceEntry[] = [];
  let restoring = false;
  const restoreTrace: string[] = [];
  const refusals: string[] = [];
  const onTrace = (entry: string) => {
    lastActivity = Date.now();
    if (restoring) restoreTrace.push(entry);
    else trace.push({ entry, at: lastActivity - caseStart - slip.ms });
  };
  const slip = new PlanSlip();
  const planned = (at: number) => caseStart + at + slip.ms;

  let runtime: Runtime;
  let busy = () => false;
  let unwatch: () => void = () => {};
  const open = async (): Promise<string[] | undefined> => {
    const opened = await openCaseRuntime(
      c,
      file,
      onTrace,
      () => (lastActivity = Date.now()),
      (type) => slip.delivered(type, Date.now()),
    );
    if ('refused' in opened) return opened.refused;
    runtime = opened.runtime;
    busy = opened.busy;
    unwatch = runtime.watch(AGENT_ID, () => (lastActivity = Date.now()));
    return undefined;
  };
  const reopen = async () => {
    restoring = true;
    unwatch();
    await runtime.close();
    await open();
    restoring = false;
  };

  const refused = await open();
  if (refused) return { refused };
  const observations: Observation[] = [];
  const observe = async () => {
    await quiet(() => lastActivity, () => busy());
    observations.push({ ...(await observeCaseAgent(runtime)), trace });
    trace = [];
  };
  try {
    slip.expect('xstate.init', caseStart);
    await spawnCaseAgent(runtime!, c);
    await observe();
    const plan = planOf(c.steps);
    for (const [k, step] of c.steps.entries()) {
      if (mode === 'reopen') await reopen();
      await sleep(planned(plan[k]!) - Date.now());
      if ('send' in step) {
        slip.expect(step.send.type, Date.now());
        const refusal = await sendCaseEvent(runtime!, step.send);
        if (refusal) {
          slip.cancel();
          refusals.push(refusal);
        }
      } else {
        // A wait ends at its time in the plan: the steps before it (their quiet periods, the
        // reopens) do not push it back, so its deadlines mean what they mean in XState's run.
        const until = planned(plan[k + 1]!);
        if (mode === 'reopen') {
          await sleep((until - Date.now()) / 2);
          await reopen();
        }
        await sleep(until - Date.now());
      }
      await observe();
    }
  } finally {
    unwatch();
    await runtime!.close();
  }
  return { observations, restoreTrace, refusals };
}
