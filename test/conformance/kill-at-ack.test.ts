// The crash the conformance runs leave out: a kill -9 the moment an event is acknowledged, while the
// transition it causes may be half done (its checkpoint not committed, an actor it invoked not
// started, another it left not yet stopped). Every case with an actor (the `actor-` and `defect-`
// groups) is run so, each event killed at its ack and taken again by the next process, and must
// end each step as XState does: the same state, context, status and output. Traces are not
// compared: a transition taken again runs its actions again (at-least-once), which is allowed.
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { allCases } from './cases/index.js';
import { runKilled } from './run-killed.js';
import type { CaseOutcome } from './run-runtime.js';
import { runInXState, type CaseRun } from './run-xstate.js';
import { pool } from './pool.js';
import type { ConformanceCase } from './case.js';

/**
 * Cases where a restart shows, as it does under XState's own restore: an observable started again
 * emits its snapshots again, and this chart keeps every one in its context (a kill after the first
 * was committed and before the last leaves one seen twice).
 */
const RESTART_VISIBLE = new Set(['actor-observable-finite']);

const cases = allCases.filter((c) => !c.refused && !RESTART_VISIBLE.has(c.id) && /^(actor|defect)-/.test(c.id) && c.steps.some((step) => 'send' in step));
const results = new Map<string, { xstate: CaseRun; killed: CaseOutcome } | { failed: unknown }>();

beforeAll(async () => {
  const dir = tempDir('kill-at-ack-');
  const oracle = new Map<string, CaseRun>();
  await pool(cases, 16, async (c) => void oracle.set(c.id, await runInXState(c)));
  const run = async (c: ConformanceCase, xstate: CaseRun, where: string) => {
    try {
      results.set(c.id, { xstate, killed: await runKilled(c, where, { atAck: true }) });
    } catch (err) {
      results.set(c.id, { failed: err });
    }
  };
  await pool(cases, 4, (c) => run(c, oracle.get(c.id)!, dir));
  // As the conformance suite does: a case that differed under the others' load is run once more, alone, and said.
  for (const c of cases.filter(differs)) {
    await run(c, await runInXState(c), tempDir('kill-at-ack-again-'));
    console.log(`kill-at-ack: ${c.id} differed when run with the others; run alone it ${differs(c) ? 'differs again' : 'matches'}`);
  }
}, 10 * 60_000);

const strip = (o: { value: unknown; context: unknown; status: string; output: unknown }) => ({ value: o.value, context: o.context, status: o.status, output: o.output });

function differs(c: ConformanceCase): boolean {
  const result = results.get(c.id);
  if (!result || 'failed' in result || 'refused' in result.killed) return true;
  return JSON.stringify(result.killed.observations.map(strip)) !== JSON.stringify(result.xstate.observations.map(strip));
}

describe('killed the moment an event is acknowledged', () => {
  it('covers the cases with actors', () => {
    expect(cases.length).toBeGreaterThanOrEqual(50);
  });

  it.each(cases.map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const result = results.get(c.id);
    if (!result) throw new Error('not run');
    if ('failed' in result) throw result.failed;
    if ('refused' in result.killed) throw new Error(`refused: ${result.killed.refused.join(', ')}`);
    expect(result.killed.observations.map(strip)).toEqual(result.xstate.observations.map(strip));
  });
});
