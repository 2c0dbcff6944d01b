// The conformance suite: every case run four ways (plain XState; the runtime in-process; reopened
// after every step and mid-wait; SIGKILLed after every step and mid-wait) and compared step by step.
// A case the linter refuses must be refused by every runtime run, with the code the case names.
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { allCases } from './cases/index.js';
import type { ConformanceCase } from './case.js';
import { differences } from './compare.js';
import { pool } from './pool.js';
import { runKilled } from './run-killed.js';
import { runInRuntime, type CaseOutcome } from './run-runtime.js';
import { runInXState, type CaseRun } from './run-xstate.js';

interface CaseResults {
  xstate: CaseRun;
  live: CaseOutcome;
  reopen: CaseOutcome;
  killed: CaseOutcome;
}

const results = new Map<string, CaseResults | { failed: unknown }>();

async function runInRuntimeWays(c: ConformanceCase, dir: string, xstate: CaseRun): Promise<void> {
  try {
    // The in-process ways side by side (they wait, mostly), the killed one on its own processes.
    const [live, reopen, killed] = await Promise.all([runInRuntime(c, dir, 'live'), runInRuntime(c, dir, 'reopen'), runKilled(c, dir)]);
    results.set(c.id, { xstate, live, reopen, killed });
  } catch (err) {
    results.set(c.id, { failed: err });
  }
}

beforeAll(async () => {
  const dir = tempDir('conformance-');
  const started = Date.now();
  // XState first, on its own: the oracle's timing is then its own, not that of a loaded process.
  const oracle = new Map<string, CaseRun>();
  await pool(allCases, 16, async (c) => void oracle.set(c.id, await runInXState(c)));
  await pool(allCases, Number(process.env.CONFORMANCE_CONCURRENCY ?? 4), (c) => runInRuntimeWays(c, dir, oracle.get(c.id)!));
  // The runs compare timing to tens of ms, on a machine that other work may load: a case that
  // differed is run once more, alone (XState too), and judged on that run. A divergence of the
  // runtime's shows again; each one re-run is printed, so that one which passes only alone is seen.
  const differed = allCases.filter((c) => !c.refused && caseDiffers(c));
  for (const c of differed) {
    await runInRuntimeWays(c, tempDir('conformance-again-'), await runInXState(c));
    console.log(`conformance: ${c.id} differed when run with the others; run alone it ${caseDiffers(c) ? 'differs again' : 'matches'}`);
  }
  const refused = allCases.filter((c) => c.refused).length;
  console.log(
    `conformance: ${allCases.length} machines (${allCases.length - refused} run four ways, ${refused} refused at registration), ` +
      `${differed.length} run again alone, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}, 15 * 60_000);

/** Whether a way's run of the case differs from XState's (or failed). */
function caseDiffers(c: ConformanceCase): boolean {
  const result = results.get(c.id);
  if (!result || 'failed' in result) return true;
  return (['live', 'reopen', 'killed'] as const).some((way) => {
    const outcome = result[way];
    return 'refused' in outcome || differences(result.xstate.observations, outcome.observations).length > 0;
  });
}

describe('conformance with XState', () => {
  it('has at least 100 machines', () => {
    expect(allCases.length).toBeGreaterThanOrEqual(100);
  });

  it.each(allCases.map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const result = results.get(c.id);
    if (!result) throw new Error('not run');
    if ('failed' in result) throw result.failed;
    for (const way of ['live', 'reopen', 'killed'] as const) {
      const outcome = result[way];
      if (c.refused) {
        expect('refused' in outcome ? outcome.refused : 'registered', `${way}: refused at registration`).toContain(c.refused);
        continue;
      }
      if ('refused' in outcome) throw new Error(`${way}: the runtime refused the machine (${outcome.refused.join(', ')})`);
      expect(differences(result.xstate.observations, outcome.observations), `${way} differs from XState (from ${c.from.file}: ${c.from.test})`).toEqual([]);
    }
  });
});
