/** The oracle: a case run in plain XState, observed after start and after each step. */
import { createActor } from 'xstate';
import type { ConformanceCase } from './case.js';
import { normalize, planOf, quiet, sleep, type Observation, type TraceEntry } from './observation.js';

export interface CaseRun {
  /** After start, then after each step. */
  observations: Observation[];
}

export async function runInXState(c: ConformanceCase): Promise<CaseRun> {
  const caseStart = Date.now();
  let lastActivity = Date.now();
  let trace: TraceEntry[] = [];
  const machine = c.machine((entry) => {
    lastActivity = Date.now();
    trace.push({ entry, at: lastActivity - caseStart });
  });
  const actor = createActor(machine, c.input === undefined ? {} : { input: c.input });
  actor.subscribe({
    next: () => (lastActivity = Date.now()),
    error: () => (lastActivity = Date.now()),
  });
  const observations: Observation[] = [];
  const observe = () => {
    const snapshot = actor.getSnapshot();
    observations.push({
      value: normalize(snapshot.value),
      context: normalize(snapshot.context) ?? null,
      status: snapshot.status,
      output: normalize(snapshot.output) ?? null,
      trace,
    });
    trace = [];
  };
  actor.start();
  await quiet(() => lastActivity);
  observe();
  const plan = planOf(c.steps);
  for (const [k, step] of c.steps.entries()) {
    await sleep(caseStart + plan[k]! - Date.now());
    if ('send' in step) actor.send(step.send);
    else await sleep(caseStart + plan[k + 1]! - Date.now());
    await quiet(() => lastActivity);
    observe();
  }
  actor.stop();
  return { observations };
}
