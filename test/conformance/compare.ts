/** Where a runtime run of a case differs from plain XState's, step by step, as sentences. */
import { QUIET_MS, type Observation } from './observation.js';

/**
 * How far a traced entry may be from XState's, in ms since the run began: later by up to
 * TIMING_LATE (restores, commits, a loaded machine), earlier by no more than TIMING_EARLY. A step
 * sent right after a wait goes out once the wait's quiet period is over (QUIET_MS), which XState's
 * run spends in real time and the killed run does not (its clock stands still while it is observed),
 * so what that step runs may come that much earlier; a delay fired before its deadline would be
 * earlier by far more (the crash tests check deadlines to the millisecond).
 */
export const TIMING_LATE = 1_000;
export const TIMING_EARLY = QUIET_MS + 25;

export function differences(expected: readonly Observation[], actual: readonly Observation[]): string[] {
  const found: string[] = [];
  if (expected.length !== actual.length) found.push(`${actual.length} observations, XState made ${expected.length}`);
  const n = Math.min(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const where = i === 0 ? 'after start' : `after step ${i}`;
    const x = expected[i]!;
    const r = actual[i]!;
    for (const key of ['status', 'value', 'context', 'output'] as const) {
      if (JSON.stringify(x[key]) !== JSON.stringify(r[key])) found.push(`${where}: ${key} ${JSON.stringify(r[key])}, XState ${JSON.stringify(x[key])}`);
    }
    const xEntries = x.trace.map((t) => t.entry);
    const rEntries = r.trace.map((t) => t.entry);
    if (JSON.stringify(xEntries) !== JSON.stringify(rEntries)) {
      found.push(`${where}: trace ${JSON.stringify(rEntries)}, XState ${JSON.stringify(xEntries)}`);
      continue;
    }
    x.trace.forEach((t, j) => {
      const at = r.trace[j]!.at;
      if (at < t.at - TIMING_EARLY || at > t.at + TIMING_LATE) found.push(`${where}: "${t.entry}" at +${at} ms, XState at +${t.at} ms`);
    });
  }
  return found;
}
