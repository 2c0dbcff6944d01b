/**
 * A case run by the runtime in this process: `live` as it is, or `reopen`: the runtime closed and
 * opened again on the same file after every step and in the middle of every wait, so the agent is
 * restored from its checkpoint each time (its delays re-armed from the store).
 */
import path from 'node:path';
import type { ConformanceCase } from './case.js';
import { AGENT_ID, observeCaseAgent, openCaseRuntime, sendCaseEvent, spawnCaseAgent } from './case-runtime.js';
import { planOf, quiet, sleep, type Observation, type TraceEntry } from './observation.js';
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
    else trace.push({ entry, at: lastActivity - caseStart });
  };

  let runtime: Runtime;
  let busy = () => false;
  let unwatch: () => void = () => {};
  const open = async (): Promise<string[] | undefined> => {
    const opened = await openCaseRuntime(c, file, onTrace, () => (lastActivity = Date.now()));
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
    await spawnCaseAgent(runtime!, c);
    await observe();
    const plan = planOf(c.steps);
    for (const [k, step] of c.steps.entries()) {
      if (mode === 'reopen') await reopen();
      await sleep(caseStart + plan[k]! - Date.now());
      if ('send' in step) {
        const refusal = await sendCaseEvent(runtime!, step.send);
        if (refusal) refusals.push(refusal);
      } else {
        const until = caseStart + plan[k + 1]!;
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
