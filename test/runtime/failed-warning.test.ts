// An agent that parks in a top-level state named `failed` (the reference agent's, or any machine's)
// is logged as a warning, once per entry into it, with its context's `lastError` when it has one:
// not again for events it takes while it stays there, nor when a restart restores it there.
import { describe, expect, it, vi } from 'vitest';
import { assign, createMachine } from 'xstate';
import { StepError } from '../../src/core/errors.js';
import type { AgentView } from '../../src/runtime/views.js';
import { recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

const PARKED = 'agent parked in failed; it waits for an event (the reference agent: retry or task.skip)';

const parkedLines = (logs: Record<string, unknown>[]) => logs.filter((line) => line.msg === PARKED);

/** A machine with no `lastError`: `break` parks it in `failed`, `poke` (counted) keeps it there, `fix` takes it out. */
const kettle = {
  name: 'kettle',
  machine: createMachine({
    id: 'kettle',
    types: {} as { context: { pokes: number } },
    context: { pokes: 0 },
    initial: 'ok',
    states: {
      ok: { on: { break: 'failed' } },
      failed: { on: { poke: { actions: assign({ pokes: ({ context }) => context.pokes + 1 }) }, fix: 'ok' } },
    },
  }),
};

const poked = (n: number) => (v: AgentView) => v.state === 'failed' && (v.context as { pokes: number }).pokes === n;

describe('the warning when an agent parks in failed', () => {
  const start = runtimesClosedAfterEach();

  it("logs the reference agent's entry into failed once, with agentId, machine and lastError; again after a retry fails", async () => {
    const { llm, calls } = recordingLlm(() => {
      throw new StepError('permanent', 'llm_rejected', 'The key was refused.', { status: 401 });
    });
    const t = await start({ llm, logs: 'captured', defaults: { maxAttempts: 1 } });
    await t.runtime.spawn('agent', { id: 'f1', input: { tasks: ['Summarize the report'] } });
    await waitForView(t.runtime, 'f1', (v) => v.state === 'failed');

    expect(parkedLines(t.logs)).toEqual([
      expect.objectContaining({
        level: 40,
        agentId: 'f1',
        machine: 'agent',
        lastError: expect.objectContaining({ kind: 'permanent', step: 'llm', code: 'llm_rejected', status: 401 }),
      }),
    ]);

    // Taken while it stays in failed: no second warning.
    await t.runtime.send('f1', { type: 'task.add', task: 'Extract the entities' });
    await waitForView(t.runtime, 'f1', (v) => (v.context as { queue: unknown[] }).queue.length === 1);
    expect(parkedLines(t.logs)).toHaveLength(1);

    // Out of failed and back in: a second entry, a second warning.
    await t.runtime.send('f1', { type: 'retry' });
    await vi.waitFor(() => expect(parkedLines(t.logs)).toHaveLength(2), { timeout: 5000, interval: 10 });
    expect(calls).toHaveLength(2);
    expect((await t.runtime.view('f1')).state).toBe('failed');
  });

  it("logs any machine's top-level failed, without lastError when its context has none, and not again after a restart", async () => {
    const t = await start({ machines: [kettle], logs: 'captured' });
    await t.runtime.spawn('kettle', { id: 'k1' });
    await t.runtime.send('k1', { type: 'break' });
    await waitForView(t.runtime, 'k1', (v) => v.state === 'failed');
    await t.runtime.send('k1', { type: 'poke' });
    await waitForView(t.runtime, 'k1', poked(1));

    const lines = parkedLines(t.logs);
    expect(lines).toEqual([expect.objectContaining({ level: 40, agentId: 'k1', machine: 'kettle' })]);
    expect(lines[0]).not.toHaveProperty('lastError');
    await t.runtime.close();

    // Restored in failed: warned of already. Poked there: still no warning; fixed and broken again: one.
    const again = await start({ machines: [kettle], logs: 'captured', file: t.file });
    await again.runtime.send('k1', { type: 'poke' });
    await waitForView(again.runtime, 'k1', poked(2));
    expect(parkedLines(again.logs)).toEqual([]);
    await again.runtime.send('k1', { type: 'fix' });
    await waitForView(again.runtime, 'k1', (v) => v.state === 'ok');
    await again.runtime.send('k1', { type: 'break' });
    await waitForView(again.runtime, 'k1', (v) => v.state === 'failed');
    expect(parkedLines(again.logs)).toEqual([expect.objectContaining({ agentId: 'k1', machine: 'kettle' })]);
  });
});
