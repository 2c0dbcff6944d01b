import { describe, expect, it } from 'vitest';
import { isIdleWithProgress, startRuntime, waitForView } from '../helpers/runtime.js';

describe('runtime observer', () => {
  it('reports committed transitions with the action that caused them, batches, and failures', async () => {
    const transitions: { seq: number; eventType: string; action?: string }[] = [];
    const batches: number[] = [];
    const { runtime } = await startRuntime({
      observer: {
        transitionCommitted: (e) => transitions.push({ seq: e.seq, eventType: e.eventType, ...(e.action ? { action: e.action.action } : {}) }),
        batchCommitted: (e) => batches.push(e.size),
      },
    });
    await runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(runtime, 'a1', isIdleWithProgress(1));
    await runtime.close();
    expect(transitions).toEqual([
      { seq: 1, eventType: 'xstate.init' },
      { seq: 2, eventType: 'xstate.done.actor.llm', action: 'callLlm' },
      { seq: 3, eventType: 'runtime.committed' },
      { seq: 4, eventType: 'xstate.done.actor.effect', action: 'runSideEffect' },
    ]);
    expect(batches.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(5); // 4 checkpoints + the effect record
  });
});
