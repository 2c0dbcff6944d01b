import { canonicalJson, stateLabel } from './format.js';
import { PathTestError } from './path-test-error.js';
import type { PathRunResult } from './run-path.js';
import type { StateValue } from 'xstate';

/**
 * A crash after step k must change nothing but what a crash has to repeat: the final state value,
 * status, context, action log and effect records equal the uninterrupted run's, and the actor
 * starts are the uninterrupted run's plus exactly one re-start of each child that was running in
 * the checkpoint restored from. So no actor whose result was committed is started again: for an
 * LLM call, no second call once its answer is persisted. The child agents spawned are the same, by
 * the same steps: none is spawned again by the restore, none is lost with the crash.
 */
export interface Comparable {
  context: (context: unknown) => unknown;
  input: (src: string, input: unknown) => unknown;
  spawnInput: (machine: string, input: unknown) => unknown;
}

export function checkCrashRun(reference: PathRunResult, crashed: PathRunResult, k: number, comparable: Comparable): void {
  const at = `after a crash at step ${k}`;
  if (canonicalJson(crashed.state) !== canonicalJson(reference.state) || crashed.status !== reference.status) {
    throw new PathTestError(
      `${at} the path ends in ${stateLabel(crashed.state as StateValue)} (${crashed.status}), not ${stateLabel(reference.state as StateValue)} (${reference.status})`,
      { state: reference.state, status: reference.status },
      { state: crashed.state, status: crashed.status },
    );
  }
  const expectedContext = comparable.context(reference.context);
  const actualContext = comparable.context(crashed.context);
  if (canonicalJson(actualContext) !== canonicalJson(expectedContext)) {
    throw new PathTestError(
      `${at} the final context differs from the uninterrupted run's:\n  expected ${canonicalJson(expectedContext)}\n  actual   ${canonicalJson(actualContext)}`,
      expectedContext,
      actualContext,
    );
  }
  const keyOf = (s: { id: string; src: string; input: unknown }) => `${s.id} (${s.src}) with input ${canonicalJson(comparable.input(s.src, s.input))}`;
  const remaining = new Map<string, number>();
  const add = (key: string, n: number) => remaining.set(key, (remaining.get(key) ?? 0) + n);
  for (const s of reference.starts) add(keyOf(s), 1);
  for (const s of crashed.restarted) add(keyOf(s), 1);
  const extra: string[] = [];
  for (const s of crashed.starts) {
    const key = keyOf(s);
    if ((remaining.get(key) ?? 0) > 0) add(key, -1);
    else extra.push(`${key}, started by process ${s.incarnation} after step ${s.afterStep}`);
  }
  const missing = [...remaining].filter(([, n]) => n > 0).map(([key, n]) => `${key}${n > 1 ? ` ×${n}` : ''}`);
  if (extra.length > 0) {
    throw new PathTestError(
      `${at} an actor was started again although its result was already committed (or never needed):\n  ${extra.join('\n  ')}` +
        `\n  (running at the crash, so rightly re-started: ${crashed.restarted.map(keyOf).join('; ') || 'none'})`,
    );
  }
  if (missing.length > 0) {
    throw new PathTestError(`${at} these actor starts of the uninterrupted run (or re-starts of children running at the crash) never happened:\n  ${missing.join('\n  ')}`);
  }
  const actions = (run: PathRunResult) =>
    run.actions.map((a) => {
      const payload = a.payload as { input?: unknown } | null;
      return payload && typeof payload === 'object' && 'input' in payload ? { ...a, payload: { ...payload, input: comparable.input(a.action, payload.input) } } : a;
    });
  if (canonicalJson(actions(crashed)) !== canonicalJson(actions(reference))) {
    throw new PathTestError(
      `${at} the action log differs from the uninterrupted run's:\n  expected ${canonicalJson(actions(reference))}\n  actual   ${canonicalJson(actions(crashed))}`,
      actions(reference),
      actions(crashed),
    );
  }
  const spawns = (run: PathRunResult) =>
    run.spawns.map((s) => `step ${s.step}: ${s.id} (${s.machine}) with input ${canonicalJson(comparable.spawnInput(s.machine, s.input))}`);
  if (canonicalJson(spawns(crashed)) !== canonicalJson(spawns(reference))) {
    throw new PathTestError(
      `${at} the child agents spawned differ from the uninterrupted run's:\n  expected ${spawns(reference).join('; ') || 'none'}\n  actual   ${spawns(crashed).join('; ') || 'none'}`,
      spawns(reference),
      spawns(crashed),
    );
  }
  if (canonicalJson(crashed.effects) !== canonicalJson(reference.effects)) {
    throw new PathTestError(`${at} the effect keys differ: expected ${reference.effects.join(', ')}, got ${crashed.effects.join(', ')}`);
  }
}
