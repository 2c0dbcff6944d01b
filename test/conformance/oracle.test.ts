// Each case checked against plain XState alone: its expectations hold (it exercises what its note
// says), and two runs agree (it is deterministic enough to compare with). Quick to run while writing cases.
import { describe, expect, it } from 'vitest';
import { allCases } from './cases/index.js';
import { runInXState } from './run-xstate.js';
import type { Expectation } from './case.js';
import type { Observation } from './observation.js';

function check(observation: Observation, expectation: Expectation | undefined, where: string): void {
  if (!expectation) return;
  if ('value' in expectation) expect(observation.value, `${where}: value`).toEqual(expectation.value);
  if (expectation.status) expect(observation.status, `${where}: status`).toBe(expectation.status);
  if (expectation.trace) {
    const entries = observation.trace.map((t) => t.entry);
    let from = 0;
    for (const wanted of expectation.trace) {
      const found = entries.indexOf(wanted, from);
      expect(found, `${where}: trace ${JSON.stringify(entries)} has ${wanted} (in order)`).toBeGreaterThanOrEqual(0);
      from = found + 1;
    }
  }
}

describe('conformance cases in plain XState', () => {
  it('have unique ids', () => {
    const ids = allCases.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9-]+$/);
  });

  it.concurrent.each(allCases.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const [first, second] = await Promise.all([runInXState(c), runInXState(c)]);
    check(first.observations[0]!, c.expectStart, 'start');
    c.steps.forEach((step, i) => check(first.observations[i + 1]!, step.expect, `step ${i + 1}`));
    const strip = (o: Observation) => ({ ...o, trace: o.trace.map((t) => t.entry) });
    expect(second.observations.map(strip)).toEqual(first.observations.map(strip));
  });
});
